#pragma once
// A blocking HTTP GET for the small JSON endpoints agents serve (/progress,
// /healthz): used by the local runner and by tests.

#include <string>

#include "core/status.h"

namespace edgetrain::http {

struct HttpReply {
  int status = 0;
  std::string body;
};

// `address` is "HOST:PORT". Unavailable when nothing answers there.
StatusOr<HttpReply> HttpGet(const std::string& address, const std::string& path);

}  // namespace edgetrain::http

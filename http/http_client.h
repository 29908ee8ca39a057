#pragma once
// A blocking HTTP GET for the small JSON endpoints agents serve (/progress,
// /healthz): used by the local runner and by tests.

#include <chrono>
#include <string>

#include "core/status.h"

namespace edgetrain::http {

struct HttpReply {
  int status = 0;
  std::string body;
};

// A dead peer must not hang a poll loop: connecting, sending and reading
// each give up after `timeout`.
inline constexpr std::chrono::milliseconds kHttpGetTimeout{3000};

// `address` is "HOST:PORT". Unavailable when nothing answers there.
StatusOr<HttpReply> HttpGet(const std::string& address, const std::string& path,
                            std::chrono::milliseconds timeout = kHttpGetTimeout);

}  // namespace edgetrain::http

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
// each give up after `timeout`, and the answer's body must be in within
// twice it.
inline constexpr std::chrono::milliseconds kHttpGetTimeout{3000};
// An answer's body, at most: /progress of a large team is tens of KiB.
inline constexpr size_t kMostReplyBytes = size_t{8} << 20;

// `address` is "HOST:PORT". Unavailable when nothing answers there, or when
// its answer is longer than kMostReplyBytes or slower than the above.
StatusOr<HttpReply> HttpGet(const std::string& address, const std::string& path,
                            std::chrono::milliseconds timeout = kHttpGetTimeout);

}  // namespace edgetrain::http

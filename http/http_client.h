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

// A dead peer must not hang a poll loop, nor a hostile one (what answers
// /progress is a job's own image) hold it or fill its memory: connecting,
// sending and each read give up after `timeout`, and the whole answer, its
// head and body, must be in within twice it.
inline constexpr std::chrono::milliseconds kHttpGetTimeout{3000};
// An answer's body, at most: /progress of a large team is tens of KiB.
inline constexpr size_t kMostReplyBytes = size_t{8} << 20;

// `address` is "HOST:PORT". Unavailable when nothing answers there, or when
// its answer is longer than kMostReplyBytes (its head, 64 KiB), or slower
// than the above. HTTP/1.1, Content-Length or chunked, one request a
// connection.
StatusOr<HttpReply> HttpGet(const std::string& address, const std::string& path,
                            std::chrono::milliseconds timeout = kHttpGetTimeout);

}  // namespace edgetrain::http

#pragma once
// Files read whole (a manifest, a cluster profile, a trace) read only so
// far: `edgetrain validate /dev/zero` read on until the allocator gave up
// and aborted with std::bad_alloc (a user's trial), and a pipe can be as
// endless.

#include <cstddef>
#include <istream>
#include <optional>
#include <string>

namespace edgetrain::api {

// No manifest or cluster profile comes near this: one of 5,000 nodes is
// under a megabyte, and the API server takes requests of 3 MiB.
inline constexpr size_t kMostManifestBytes = size_t{16} << 20;
// A trace of a day at one reading every 10 ms is about 200 MB.
inline constexpr size_t kMostTraceBytes = size_t{256} << 20;

// All of `in` if it holds at most `most` bytes; nullopt if it holds more.
inline std::optional<std::string> ReadAtMost(std::istream& in, size_t most) {
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    if (text.size() + static_cast<size_t>(in.gcount()) > most) return std::nullopt;
    text.append(chunk, static_cast<size_t>(in.gcount()));
  }
  return text;
}

}  // namespace edgetrain::api

// The Kubernetes watch stream as the operator's informers read it
// (operator/kube/kube_client.h, WatchDecoder): any bytes from the API, cut in
// chunks anywhere, give events or an error, never a crash; the same bytes give
// the same events however they were cut.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "operator/kube/kube_client.h"

namespace {

using namespace edgetrain;

// Feeds `bytes` in chunks of `chunk` (0: whole), until the first error.
std::vector<std::string> Decode(std::string_view bytes, size_t chunk, bool& failed) {
  kube::WatchDecoder decoder;
  std::vector<std::string> events;
  failed = false;
  for (size_t at = 0; at < bytes.size() && !failed;) {
    const size_t n = chunk == 0 ? bytes.size() : std::min(chunk, bytes.size() - at);
    failed = !decoder
                  .Feed(bytes.substr(at, n),
                        [&](kube::WatchEvent e) { events.push_back(kube::NameOf(e.type) + e.object.dump()); })
                  .ok();
    at += n;
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = data[0] % 17 + 1;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  bool whole_failed = false, cut_failed = false;
  const std::vector<std::string> whole = Decode(bytes, 0, whole_failed);
  const std::vector<std::string> cut = Decode(bytes, chunk, cut_failed);
  // Up to the first malformed event, the same events; and it is malformed however the stream was cut.
  if (whole_failed != cut_failed || whole != cut) {
    std::fprintf(stderr, "watch_stream_fuzzer: %zu events whole (%s), %zu in chunks of %zu (%s)\n", whole.size(),
                 whole_failed ? "failed" : "ok", cut.size(), chunk, cut_failed ? "failed" : "ok");
    std::abort();
  }
  return 0;
}

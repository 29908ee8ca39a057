// A bandwidth trace (core/bandwidth_trace.h), the CSV a link is shaped by:
// any bytes, an error or a trace whose rate is finite and not negative at any
// time, never a crash.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/bandwidth_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace edgetrain;
  const std::string_view csv(reinterpret_cast<const char*>(data), size);
  StatusOr<BandwidthTrace> trace = BandwidthTrace::Parse(csv, "fuzz.csv");
  if (!trace.ok()) return 0;
  for (double t : {0.0, 0.5, 1.0, 7.25, 60.0, 3600.0, 1e9}) {
    const double mbps = trace->MbpsAt(t);
    const BandwidthTrace::Segment segment = trace->SegmentAt(t);
    if (!std::isfinite(mbps) || mbps < 0 || !(segment.until > t)) {
      std::fprintf(stderr, "bandwidth_trace_fuzzer: %f Mbit/s at %f s, until %f s\n", mbps, t, segment.until);
      std::abort();
    }
  }
  const double mean = trace->MeanMbps();
  if (!std::isfinite(mean) || mean < 0 || mean > trace->PeakMbps() * (1 + 1e-9)) {
    std::fprintf(stderr, "bandwidth_trace_fuzzer: mean %f Mbit/s, peak %f\n", mean, trace->PeakMbps());
    std::abort();
  }
  return 0;
}

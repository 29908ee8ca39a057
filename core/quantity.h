#pragma once
// Kubernetes resource quantities ("500m", "2", "8Gi", "1.5G", "1e3"), as the API
// server accepts them in requests, limits and a node's allocatable. Placement
// compares them exactly, so they are held as integers of thousandths (milli-units):
// "500m" CPU is 500, "8Gi" of memory 8 * 2^30 * 1000.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace edgetrain {

// InvalidArgument for what the API server would refuse, and for amounts beyond
// 2^63 milli-units (9.2e15 units: more memory or CPU than any node has).
StatusOr<int64_t> ParseQuantityMillis(std::string_view text);

// Whole units, rounded up as the scheduler rounds a request ("1500m" -> 2): for
// what is counted in units (bytes, pods).
StatusOr<int64_t> ParseQuantityUnits(std::string_view text);

// A quantity in milli-units as people write it: 1500 -> "1500m", 2000 -> "2".
std::string FormatQuantityMillis(int64_t millis);
// CPU so: "1500m" -> "1500m", 2000 -> "2".
std::string FormatCpuMillis(int64_t millis);
// Bytes in the largest binary unit that divides them: "8Gi", "512Mi", "1000".
std::string FormatBytes(int64_t bytes);

}  // namespace edgetrain

#pragma once
// Durations as people write them in manifests (Go/Kubernetes style: "90s", "10m",
// "1h30m", "250ms") and as a progress bar shows them ("02:05", "1:02:05").

#include <string>
#include <string_view>

#include "core/status.h"
#include "core/time.h"

namespace edgetrain {

// Units: ms, s, m, h; each number may have a fraction. "0" alone is zero.
StatusOr<Duration> ParseDuration(std::string_view text);
// The longest ParseDuration takes: 100000h.
inline constexpr Duration kLongestDuration = std::chrono::hours(100000);

// Whole seconds as MM:SS, or H:MM:SS from one hour on: a time shown running.
std::string FormatClock(Duration d);
// As a manifest writes it: "2m", "1h30m", "90s" is "1m30s", "250ms".
std::string FormatDuration(Duration d);

}  // namespace edgetrain

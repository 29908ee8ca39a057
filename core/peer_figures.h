#pragma once
// A peer's figures as the one who reads them can trust them. An agent's
// reports (a worker's to its coordinator, a stage's to its head) carry
// counts and measures that are summed into the job's: one that is not
// finite, is negative or is past any a device reaches is taken as none. A
// NaN loss kept the team's shown loss NaN for good, a rate of 1e-300 Mbit/s
// made a time past any duration, a negative count rolled the job's samples
// back, and a NaN energy never reached an energy budget (found in review:
// a peer's gradients were checked, its figures were not).

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/duration_text.h"
#include "core/time.h"

namespace edgetrain {

// `v` when it is finite and in (0, most], else 0.
inline double Measure(double v, double most) { return std::isfinite(v) && v > 0 && v <= most ? v : 0; }
// Times: within the longest duration edgetrain counts.
inline const double kLongestSeconds = ToSeconds(kLongestDuration);
// Joules a device may say it has drawn: past any device's life.
inline constexpr double kMostJoules = 1e15;
// A count in [0, most].
inline int64_t Count(int64_t v, int64_t most) { return std::clamp<int64_t>(v, 0, most); }

}  // namespace edgetrain

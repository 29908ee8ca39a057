#pragma once
// Kubernetes timestamps (metav1.Time): RFC 3339 in UTC to the second,
// "2026-11-22T19:01:53Z". Conditions, events and a job's start and completion
// times carry them; they are wall time, so they survive the operator's restarts.

#include <chrono>
#include <optional>
#include <string>

#include "core/utc_time_text.h"

namespace edgetrain::kube {

using edgetrain::WallTime;

std::string FormatKubeTime(WallTime t);
// To the millisecond where `t` has a fraction of a second, else as
// FormatKubeTime: for the times a recovery is counted from (a worker's
// silentSince, the coordinator's last read), which to the second dated a
// loss before the kill that caused it (a new user's trial).
std::string FormatKubeTimePrecise(WallTime t);
// Also reads fractional seconds, to the microsecond, and "+hh:mm" offsets
// (MicroTime, other writers).
std::optional<WallTime> ParseKubeTime(const std::string& text);

}  // namespace edgetrain::kube

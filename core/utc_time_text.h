#pragma once
// Wall-clock instants as RFC 3339 in UTC, the one form every edgetrain text
// gives them in: Kubernetes' timestamps, a certificate's dates, and the
// operator's and agents' log lines.

#include <chrono>
#include <string>

namespace edgetrain {

using WallTime = std::chrono::system_clock::time_point;

// To the second: "2026-11-22T19:01:53Z".
std::string UtcText(WallTime t);
// To the millisecond: "2026-11-22T19:01:53.123Z" (log lines, whose events
// come many to a second).
std::string UtcTextMillis(WallTime t);
// What each line of the operator's and agents' logs begins with, so that one
// grep or parser reads both: "time=2026-11-22T19:01:53.123Z ".
std::string LogLineStamp(WallTime t);

}  // namespace edgetrain

#pragma once
// Durations and points in time as the engine counts them, apart from the
// Clock that reads and waits on them (core/clock.h): what most of core needs,
// without the threads and locks a clock's waits bring.

#include <chrono>

namespace edgetrain {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::steady_clock::time_point;

inline double ToSeconds(Duration d) { return std::chrono::duration<double>(d).count(); }
// Saturated at the clock's ends, and 0 for a NaN: a cast of 1e10 s overflowed
// its nanoseconds, and an evaluation every 1e10 s came every step (found in review).
inline Duration FromSeconds(double s) {
  constexpr double kMostNanoseconds = 9.2e18;  // under 2^63, with room for the cast's rounding
  if (!(s == s)) return Duration::zero();
  if (s * 1e9 >= kMostNanoseconds) return Duration::max();
  if (s * 1e9 <= -kMostNanoseconds) return Duration::min();
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}
inline constexpr TimePoint kNever = TimePoint::max();

}  // namespace edgetrain

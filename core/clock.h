#pragma once
// Time is injected (Envoy's TimeSource model): scheduling, estimation and budgets
// take a Clock&, never read the wall clock themselves, so tests drive them with a
// SimulatedClock and run in microseconds, deterministically.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

namespace edgetrain {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::steady_clock::time_point;

inline double ToSeconds(Duration d) { return std::chrono::duration<double>(d).count(); }
inline Duration FromSeconds(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time; only differences between two readings mean anything.
  virtual TimePoint Now() const = 0;
  // Blocks the calling thread until Now() >= deadline.
  virtual void SleepUntil(TimePoint deadline) = 0;
  void SleepFor(Duration d) { SleepUntil(Now() + d); }
};

class RealClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  void SleepUntil(TimePoint deadline) override;
};

// A clock that moves only when a test tells it to. Sleepers (on other threads)
// wake when Advance() carries the time past their deadline.
class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(TimePoint start = TimePoint{} + std::chrono::hours(1)) : now_(start) {}

  TimePoint Now() const override;
  void SleepUntil(TimePoint deadline) override;

  void Advance(Duration d);
  // Jumps to the earliest deadline a thread sleeps towards, waking it; false
  // when no thread sleeps towards a time still ahead. Drives code that sleeps on
  // the clock exactly from one of its deadlines to the next.
  bool AdvanceToNextDeadline();
  // Number of threads currently blocked in SleepUntil: lets a test wait until the
  // code under test has gone to sleep before it advances time.
  int sleepers() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable changed_;
  TimePoint now_;                      // guarded by mu_
  std::multiset<TimePoint> deadlines_;  // of sleeping threads; guarded by mu_
};

}  // namespace edgetrain

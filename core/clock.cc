#include "core/clock.h"

#include <thread>

namespace edgetrain {

void RealClock::SleepUntil(TimePoint deadline) { std::this_thread::sleep_until(deadline); }

TimePoint SimulatedClock::Now() const {
  std::lock_guard lock(mu_);
  return now_;
}

void SimulatedClock::SleepUntil(TimePoint deadline) {
  std::unique_lock lock(mu_);
  ++sleepers_;
  changed_.notify_all();
  changed_.wait(lock, [&] { return now_ >= deadline; });
  --sleepers_;
}

void SimulatedClock::Advance(Duration d) {
  {
    std::lock_guard lock(mu_);
    now_ += d;
  }
  changed_.notify_all();
}

int SimulatedClock::sleepers() const {
  std::lock_guard lock(mu_);
  return sleepers_;
}

}  // namespace edgetrain

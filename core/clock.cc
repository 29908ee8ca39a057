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
  auto entry = deadlines_.insert(deadline);
  changed_.notify_all();
  changed_.wait(lock, [&] { return now_ >= deadline; });
  deadlines_.erase(entry);
}

void SimulatedClock::Advance(Duration d) {
  {
    std::lock_guard lock(mu_);
    now_ += d;
  }
  changed_.notify_all();
}

bool SimulatedClock::AdvanceToNextDeadline() {
  {
    std::lock_guard lock(mu_);
    auto next = deadlines_.upper_bound(now_);
    if (next == deadlines_.end()) return false;
    now_ = *next;
  }
  changed_.notify_all();
  return true;
}

int SimulatedClock::sleepers() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(deadlines_.size());
}

}  // namespace edgetrain

#include "core/clock.h"

#include <thread>

namespace edgetrain {

struct ClockThread::State {
  explicit State(Clock& clock) : ended(clock) {}
  std::mutex mu;
  ClockCondition ended;
  bool finished = false;  // guarded by mu
};

ClockThread::ClockThread(ClockThread&&) noexcept = default;

ClockThread& ClockThread::operator=(ClockThread&& other) noexcept {
  if (this != &other) {
    Join();
    state_ = std::move(other.state_);
    thread_ = std::move(other.thread_);
  }
  return *this;
}

ClockThread::~ClockThread() { Join(); }

void ClockThread::Join() {
  if (!state_) return;
  {
    std::unique_lock lock(state_->mu);
    state_->ended.Wait(lock, [&] { return state_->finished; });
  }
  // The body has returned; what is left of the thread is its exit.
  thread_.join();
  state_.reset();
}

ClockThread Clock::StartThread(std::string name, std::function<void()> body) {
  ClockThread t;
  t.state_ = std::make_shared<ClockThread::State>(*this);
  const uint64_t id = RegisterThread(name);
  t.thread_ = std::thread([this, id, state = t.state_, body = std::move(body)] {
    ThreadBegins(id);
    body();
    {
      std::lock_guard lock(state->mu);
      state->finished = true;
      state->ended.NotifyAll();
    }
    ThreadEnds(id);
  });
  return t;
}

void RealClock::SleepUntil(TimePoint deadline) { std::this_thread::sleep_until(deadline); }

void RealClock::WaitOnce(ClockCondition& condition, std::unique_lock<std::mutex>& lock, TimePoint deadline) {
  if (deadline == kNever) {
    condition.native_.wait(lock);
  } else {
    condition.native_.wait_until(lock, deadline);
  }
}

void RealClock::NotifyAll(ClockCondition& condition) { condition.native_.notify_all(); }

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

void SimulatedClock::WaitOnce(ClockCondition& condition, std::unique_lock<std::mutex>& lock, TimePoint deadline) {
  // Taken while the waiter's lock is still held: a notification made after the
  // waiter looked at its predicate comes after this reading, so it is not lost.
  std::unique_lock own(mu_);
  const uint64_t seen = condition.notifications_;
  auto entry = deadline == kNever ? deadlines_.end() : deadlines_.insert(deadline);
  lock.unlock();
  changed_.notify_all();  // sleepers() changed
  changed_.wait(own, [&] { return now_ >= deadline || condition.notifications_ != seen; });
  if (entry != deadlines_.end()) deadlines_.erase(entry);
  own.unlock();
  lock.lock();
}

void SimulatedClock::NotifyAll(ClockCondition& condition) {
  {
    std::lock_guard lock(mu_);
    ++condition.notifications_;
  }
  changed_.notify_all();
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

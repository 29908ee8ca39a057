#pragma once
// Time is injected (Envoy's TimeSource model): scheduling, estimation, budgets
// and every wait of the engine take a Clock&, never read the wall clock or
// sleep themselves, so tests drive them with a simulated clock and run in
// milliseconds, deterministically.
//
// Three things block a thread, and all three go through the clock:
//   - sleeping until a time (SleepUntil);
//   - waiting on a condition until it holds or a time passes (ClockCondition);
//   - waiting for another thread to end (ClockThread::Join).
// That is what lets DeterministicClock (core/deterministic_clock.h) run a whole
// team of threads one at a time and move time only when all of them wait.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "core/time.h"

namespace edgetrain {

class Clock;
class ClockCondition;

// A thread started by a clock, which the clock may schedule. Join() is a wait
// like any other: on a simulated clock the joining thread lets others run.
class ClockThread {
 public:
  ClockThread() = default;
  ClockThread(ClockThread&&) noexcept;
  ClockThread& operator=(ClockThread&&) noexcept;
  ~ClockThread();  // joins a thread still running

  bool joinable() const { return state_ != nullptr; }
  void Join();

 private:
  friend class Clock;
  struct State;
  std::shared_ptr<State> state_;
  std::thread thread_;
};

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time; only differences between two readings mean anything.
  virtual TimePoint Now() const = 0;
  // Blocks the calling thread until Now() >= deadline.
  virtual void SleepUntil(TimePoint deadline) = 0;
  void SleepFor(Duration d) { SleepUntil(Now() + d); }

  // Runs `body` on a new thread. `name` says what it does, for diagnostics.
  ClockThread StartThread(std::string name, std::function<void()> body);

 protected:
  friend class ClockCondition;
  // One wait on `condition`, entered and left with `lock` held (released while
  // blocked): returns once notified, once `deadline` has passed, or spuriously.
  virtual void WaitOnce(ClockCondition& condition, std::unique_lock<std::mutex>& lock, TimePoint deadline) = 0;
  virtual void NotifyAll(ClockCondition& condition) = 0;

  // A clock that schedules its threads hears of each: registered on the
  // starting thread, then told on the new thread when it begins and ends.
  virtual uint64_t RegisterThread(const std::string& /*name*/) { return 0; }
  virtual void ThreadBegins(uint64_t /*id*/) {}
  virtual void ThreadEnds(uint64_t /*id*/) {}
};

// A condition variable whose waits follow a Clock: time-outs are in the clock's
// time, and a simulated clock knows who waits on what. Notify with the waiters'
// mutex held, or after changing what they wait for under it, as with
// std::condition_variable.
class ClockCondition {
 public:
  explicit ClockCondition(Clock& clock) : clock_(clock) {}
  ClockCondition(const ClockCondition&) = delete;
  ClockCondition& operator=(const ClockCondition&) = delete;

  void NotifyAll() { clock_.NotifyAll(*this); }

  // Waits until `holds()`, or until `deadline`; returns `holds()`.
  template <typename Predicate>
  bool WaitUntil(std::unique_lock<std::mutex>& lock, TimePoint deadline, Predicate holds) {
    while (!holds()) {
      if (clock_.Now() >= deadline) return holds();
      clock_.WaitOnce(*this, lock, deadline);
    }
    return true;
  }
  template <typename Predicate>
  bool WaitFor(std::unique_lock<std::mutex>& lock, Duration timeout, Predicate holds) {
    return WaitUntil(lock, clock_.Now() + timeout, std::move(holds));
  }
  template <typename Predicate>
  void Wait(std::unique_lock<std::mutex>& lock, Predicate holds) {
    WaitUntil(lock, kNever, std::move(holds));
  }
  // One wait of at most `timeout`, ended early by a notification: for loops
  // that look again at the world either way.
  void WaitFor(std::unique_lock<std::mutex>& lock, Duration timeout) {
    clock_.WaitOnce(*this, lock, clock_.Now() + timeout);
  }

  Clock& clock() const { return clock_; }

 private:
  friend class RealClock;
  friend class SimulatedClock;
  friend class DeterministicClock;
  Clock& clock_;
  std::condition_variable native_;  // the real clock's
  uint64_t notifications_ = 0;      // simulated clocks'; guarded by their mutex
};

class RealClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  void SleepUntil(TimePoint deadline) override;

 protected:
  void WaitOnce(ClockCondition& condition, std::unique_lock<std::mutex>& lock, TimePoint deadline) override;
  void NotifyAll(ClockCondition& condition) override;
};

// A clock that moves only when a test tells it to. Sleepers and condition
// waiters (on other threads) wake when Advance() carries the time past their
// deadline. For a whole team of threads, DeterministicClock moves by itself.
class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(TimePoint start = TimePoint{} + std::chrono::hours(1)) : now_(start) {}

  TimePoint Now() const override;
  void SleepUntil(TimePoint deadline) override;

  void Advance(Duration d);
  // Jumps to the earliest deadline a thread waits towards, waking it; false
  // when no thread waits towards a time still ahead. Drives code that sleeps on
  // the clock exactly from one of its deadlines to the next.
  bool AdvanceToNextDeadline();
  // Number of threads currently blocked on the clock with a deadline: lets a
  // test wait until the code under test has gone to sleep before it advances time.
  int sleepers() const;

 protected:
  void WaitOnce(ClockCondition& condition, std::unique_lock<std::mutex>& lock, TimePoint deadline) override;
  void NotifyAll(ClockCondition& condition) override;

 private:
  mutable std::mutex mu_;
  std::condition_variable changed_;
  TimePoint now_;                      // guarded by mu_
  std::multiset<TimePoint> deadlines_;  // of waiting threads; guarded by mu_
};

}  // namespace edgetrain

#pragma once
// A simulated clock for a whole team of threads, after gloo's N-ranks-in-one-
// process tests and deterministic simulation: its threads run one at a time,
// and time moves only when every one of them waits on the clock, straight to
// the earliest deadline any of them waits for. Which thread runs next is fixed
// (the next in the order they were started, round the circle), so a run is a
// function of its inputs alone: nothing is left to the OS scheduler, and an
// hour of a team's life takes milliseconds.
//
// A thread takes part when it is started with StartThread, or when a test runs
// code on its own thread with Run. Taking part means blocking only through the
// clock (SleepUntil, a ClockCondition, ClockThread::Join) and never waiting on
// the clock while holding a mutex that another of its threads takes. Start
// threads from a thread that takes part, so that none runs before its team is
// complete. When every thread waits and none has a deadline, nothing can wake
// them: the clock prints each thread's name and what it waits for, and aborts.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/clock.h"

namespace edgetrain {

class DeterministicClock final : public Clock {
 public:
  explicit DeterministicClock(TimePoint start = TimePoint{} + std::chrono::hours(1));
  ~DeterministicClock() override;

  TimePoint Now() const override;
  void SleepUntil(TimePoint deadline) override;

  // Runs `body` on the calling thread as one of the clock's threads.
  void Run(const std::string& name, const std::function<void()>& body);

  // How many times the turn passed from one thread to another: a measure of a
  // run's length in events, for tests that bound it.
  uint64_t hand_offs() const;

 protected:
  void WaitOnce(ClockCondition& condition, std::unique_lock<std::mutex>& lock, TimePoint deadline) override;
  void NotifyAll(ClockCondition& condition) override;
  uint64_t RegisterThread(const std::string& name) override;
  void ThreadBegins(uint64_t id) override;
  void ThreadEnds(uint64_t id) override;

 private:
  struct Actor;
  // The actor whose thread calls, or null for a thread that takes no part.
  Actor* Calling();
  // With mu_ held: `actor` waits (on `condition`, or only for `deadline`) until
  // it has the turn again.
  void Block(Actor& actor, ClockCondition* condition, TimePoint deadline, std::unique_lock<std::mutex>& own);
  // With mu_ held: the turn goes to the next ready actor, moving time if none is.
  void HandOff();
  Actor* NextReady();
  [[noreturn]] void ReportDeadlock();

  mutable std::mutex mu_;
  std::condition_variable outsiders_;  // threads that take no part, waiting on the clock
  TimePoint now_;                      // guarded by mu_
  std::map<uint64_t, std::unique_ptr<Actor>> actors_;  // by id, the order of starting; guarded by mu_
  uint64_t next_id_ = 1;               // guarded by mu_
  uint64_t turn_ = 0;                  // the actor running; 0: none; guarded by mu_
  uint64_t hand_offs_ = 0;             // guarded by mu_
};

}  // namespace edgetrain

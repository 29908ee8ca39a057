#include "core/deterministic_clock.h"

#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(DeterministicClockTest, TimeJumpsToTheEarliestDeadlineWhenAllWait) {
  DeterministicClock clock;
  const TimePoint start = clock.Now();
  std::vector<std::string> woke;
  clock.Run("test", [&] {
    std::vector<ClockThread> sleepers;
    for (int s : {3, 1, 2}) {
      sleepers.push_back(clock.StartThread("sleeper " + std::to_string(s), [&, s] {
        clock.SleepFor(seconds(s));
        woke.push_back(std::to_string(s) + "@" + std::to_string(ToSeconds(clock.Now() - start)));
      }));
    }
    for (auto& t : sleepers) t.Join();
  });
  EXPECT_EQ(woke, (std::vector<std::string>{"1@1.000000", "2@2.000000", "3@3.000000"}));
  EXPECT_EQ(clock.Now() - start, seconds(3));
}

TEST(DeterministicClockTest, TimeStandsStillWhileAnyThreadRuns) {
  DeterministicClock clock;
  const TimePoint start = clock.Now();
  std::mutex mu;
  ClockCondition changed(clock);
  int pings = 0;
  clock.Run("test", [&] {
    ClockThread ponger = clock.StartThread("ponger", [&] {
      std::unique_lock lock(mu);
      while (pings < 100) {
        changed.Wait(lock, [&] { return pings % 2 == 1; });
        ++pings;
        changed.NotifyAll();
      }
    });
    std::unique_lock lock(mu);
    while (pings < 100) {
      ++pings;
      changed.NotifyAll();
      changed.Wait(lock, [&] { return pings % 2 == 0; });
    }
    lock.unlock();
    ponger.Join();
  });
  EXPECT_EQ(pings, 100);
  EXPECT_EQ(clock.Now(), start) << "a notification is not a reason for time to pass";
}

TEST(DeterministicClockTest, TimedWaitWithoutNotificationEndsExactlyAtItsDeadline) {
  DeterministicClock clock;
  const TimePoint start = clock.Now();
  std::mutex mu;
  ClockCondition never(clock);
  bool held = true;
  clock.Run("test", [&] {
    std::unique_lock lock(mu);
    held = never.WaitFor(lock, milliseconds(250), [] { return false; });
  });
  EXPECT_FALSE(held);
  EXPECT_EQ(clock.Now() - start, milliseconds(250));
}

// Producers and consumers on one queue, each step taking simulated time: the
// order of events is the same on every run, whatever the OS does.
std::string Trace() {
  DeterministicClock clock;
  const TimePoint start = clock.Now();
  std::mutex mu;
  ClockCondition changed(clock);
  std::vector<int> queue;
  std::string trace;
  int consumed = 0;
  clock.Run("test", [&] {
    std::vector<ClockThread> threads;
    for (int p = 0; p < 3; ++p) {
      threads.push_back(clock.StartThread("producer", [&, p] {
        for (int i = 0; i < 20; ++i) {
          clock.SleepFor(milliseconds(7 + 3 * p));
          std::lock_guard lock(mu);
          queue.push_back(p * 100 + i);
          changed.NotifyAll();
        }
      }));
    }
    for (int c = 0; c < 2; ++c) {
      threads.push_back(clock.StartThread("consumer", [&, c] {
        std::unique_lock lock(mu);
        while (consumed < 60) {
          if (!changed.WaitFor(lock, milliseconds(5), [&] { return !queue.empty() || consumed == 60; })) continue;
          if (consumed == 60) break;
          const int item = queue.front();
          queue.erase(queue.begin());
          ++consumed;
          trace += std::to_string(c) + ":" + std::to_string(item) + "@" +
                   std::to_string(std::chrono::duration_cast<milliseconds>(clock.Now() - start).count()) + " ";
          changed.NotifyAll();
        }
      }));
    }
    for (auto& t : threads) t.Join();
  });
  return trace;
}

TEST(DeterministicClockTest, ATeamRunsTheSameWayEveryTime) {
  const std::string first = Trace();
  EXPECT_NE(first.find("0:0@7"), std::string::npos) << first;
  for (int r = 1; r < 20; ++r) ASSERT_EQ(Trace(), first) << "run " << r;
}

TEST(DeterministicClockTest, JoinLetsTheJoinedThreadRun) {
  DeterministicClock clock;
  int steps = 0;
  clock.Run("test", [&] {
    ClockThread worker = clock.StartThread("worker", [&] {
      for (int i = 0; i < 5; ++i) {
        clock.SleepFor(seconds(1));
        ++steps;
      }
    });
    EXPECT_EQ(steps, 0) << "a started thread runs only when the starter waits";
    worker.Join();
    EXPECT_EQ(steps, 5);
  });
}

TEST(DeterministicClockDeathTest, EveryThreadWaitingForeverIsReportedByName) {
  EXPECT_DEATH(
      {
        DeterministicClock clock;
        std::mutex mu;
        ClockCondition never(clock);
        clock.Run("stuck test", [&] {
          std::unique_lock lock(mu);
          never.Wait(lock, [] { return false; });
        });
      },
      "deadlock.*stuck test");
}

}  // namespace
}  // namespace edgetrain

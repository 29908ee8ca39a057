#include "core/clock.h"

#include <cmath>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(SimulatedClockTest, MovesOnlyWhenAdvanced) {
  SimulatedClock clock;
  TimePoint t0 = clock.Now();
  EXPECT_EQ(clock.Now(), t0);
  clock.Advance(seconds(3));
  EXPECT_EQ(clock.Now() - t0, seconds(3));
}

TEST(SimulatedClockTest, SleeperWakesWhenTimePassesItsDeadline) {
  SimulatedClock clock;
  TimePoint start = clock.Now();
  TimePoint woke{};
  std::thread sleeper([&] {
    clock.SleepFor(seconds(10));
    woke = clock.Now();
  });
  while (clock.sleepers() == 0) std::this_thread::yield();
  clock.Advance(seconds(4));
  EXPECT_EQ(clock.sleepers(), 1) << "woke before its deadline";
  clock.Advance(seconds(7));
  sleeper.join();
  EXPECT_EQ(woke - start, seconds(11));
  EXPECT_EQ(clock.sleepers(), 0);
}

TEST(SimulatedClockTest, AdvancesFromDeadlineToDeadline) {
  SimulatedClock clock;
  const TimePoint start = clock.Now();
  std::vector<Duration> woke;
  std::thread sleeper([&] {
    clock.SleepFor(seconds(2));
    woke.push_back(clock.Now() - start);
    clock.SleepFor(milliseconds(500));
    woke.push_back(clock.Now() - start);
  });
  while (woke.size() < 2) clock.AdvanceToNextDeadline();
  sleeper.join();
  EXPECT_EQ(woke, (std::vector<Duration>{seconds(2), milliseconds(2500)}));
  EXPECT_FALSE(clock.AdvanceToNextDeadline());
}

TEST(SimulatedClockTest, ConditionWaitEndsAtItsDeadlineOrWhenNotified) {
  SimulatedClock clock;
  std::mutex mu;
  ClockCondition changed(clock);
  bool ready = false;
  bool timed_out_holds = true;
  std::thread waiter([&] {
    std::unique_lock lock(mu);
    timed_out_holds = changed.WaitFor(lock, seconds(5), [&] { return ready; });
  });
  while (clock.sleepers() == 0) std::this_thread::yield();
  clock.Advance(seconds(5));
  waiter.join();
  EXPECT_FALSE(timed_out_holds);

  bool notified_holds = false;
  std::thread notified([&] {
    std::unique_lock lock(mu);
    notified_holds = changed.WaitFor(lock, seconds(5), [&] { return ready; });
  });
  while (clock.sleepers() == 0) std::this_thread::yield();
  {
    std::lock_guard lock(mu);
    ready = true;
  }
  changed.NotifyAll();
  notified.join();
  EXPECT_TRUE(notified_holds);
}

TEST(RealClockTest, ConditionWaitTimesOutAndIsWokenByNotify) {
  RealClock clock;
  std::mutex mu;
  ClockCondition changed(clock);
  bool ready = false;
  {
    std::unique_lock lock(mu);
    EXPECT_FALSE(changed.WaitFor(lock, milliseconds(2), [&] { return ready; }));
  }
  ClockThread setter = clock.StartThread("setter", [&] {
    std::lock_guard lock(mu);
    ready = true;
    changed.NotifyAll();
  });
  std::unique_lock lock(mu);
  changed.Wait(lock, [&] { return ready; });
  lock.unlock();
  setter.Join();
  EXPECT_FALSE(setter.joinable());
}

TEST(RealClockTest, IsMonotonicAndSleeps) {
  RealClock clock;
  TimePoint a = clock.Now();
  clock.SleepFor(milliseconds(2));
  EXPECT_GE(clock.Now() - a, milliseconds(2));
}

TEST(SecondsTest, RoundTrips) {
  EXPECT_DOUBLE_EQ(ToSeconds(FromSeconds(1.25)), 1.25);
  EXPECT_EQ(FromSeconds(0.5), milliseconds(500));
  // Saturated where the nanoseconds would overflow: 1e10 s was a negative time.
  EXPECT_EQ(FromSeconds(1e10), Duration::max());
  EXPECT_EQ(FromSeconds(1e300), Duration::max());
  EXPECT_EQ(FromSeconds(-1e300), Duration::min());
  EXPECT_EQ(FromSeconds(std::nan("")), Duration::zero());
  EXPECT_EQ(FromSeconds(9e9), std::chrono::seconds(9'000'000'000));
}

}  // namespace
}  // namespace edgetrain

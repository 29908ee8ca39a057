#include "core/clock.h"

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

TEST(RealClockTest, IsMonotonicAndSleeps) {
  RealClock clock;
  TimePoint a = clock.Now();
  clock.SleepFor(milliseconds(2));
  EXPECT_GE(clock.Now() - a, milliseconds(2));
}

TEST(SecondsTest, RoundTrips) {
  EXPECT_DOUBLE_EQ(ToSeconds(FromSeconds(1.25)), 1.25);
  EXPECT_EQ(FromSeconds(0.5), milliseconds(500));
}

}  // namespace
}  // namespace edgetrain

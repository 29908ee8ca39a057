#include "core/budget.h"

#include <gtest/gtest.h>

#include "core/clock.h"

namespace edgetrain {
namespace {

using std::chrono::seconds;

BudgetSpec Spec(std::optional<int> wall_s, std::optional<int> epochs, std::optional<double> target) {
  BudgetSpec b;
  if (wall_s) b.wall_clock = seconds(*wall_s);
  b.epochs = epochs;
  b.target_accuracy = target;
  return b;
}

TEST(BudgetTest, EndsAtWhicheverLimitComesFirst) {
  SimulatedClock clock;
  TimePoint start = clock.Now();
  struct Case {
    BudgetSpec spec;
    int advance_s;
    int64_t samples;
    std::optional<StopReason> want;
  } cases[] = {
      {Spec(60, std::nullopt, std::nullopt), 59, 10'000, std::nullopt},
      {Spec(60, std::nullopt, std::nullopt), 60, 10, StopReason::kWallClock},
      {Spec(60, 2, std::nullopt), 10, 199, std::nullopt},  // 100 samples an epoch
      {Spec(60, 2, std::nullopt), 10, 200, StopReason::kEpochs},
      {Spec(std::nullopt, 1, 0.9), 1000, 50, std::nullopt},
  };
  for (const auto& c : cases) {
    Budget budget(c.spec, 100, start);
    EXPECT_EQ(budget.Exhausted(start + seconds(c.advance_s), {c.samples}), c.want)
        << c.advance_s << " s, " << c.samples << " samples";
  }
}

// The wall clock's time left, whatever the epochs say; none without one.
TEST(BudgetTest, TheWallClocksTimeLeftIsItsAloneAndNeverBelowZero) {
  const TimePoint start{};
  const Budget both(Spec(60, 1, std::nullopt), 100, start);
  EXPECT_EQ(both.WallClockLeft(start + seconds(45)), seconds(15));
  EXPECT_EQ(both.WallClockLeft(start + seconds(75)), Duration::zero());
  const Budget epochs(Spec(std::nullopt, 1, std::nullopt), 100, start);
  EXPECT_FALSE(epochs.WallClockLeft(start + seconds(1)).has_value());
}

TEST(BudgetTest, TargetIsReachedAtOrAboveIt) {
  Budget with(Spec(60, std::nullopt, 0.85), 10, TimePoint{});
  EXPECT_FALSE(with.TargetReached(0.8499));
  EXPECT_TRUE(with.TargetReached(0.85));
  Budget without(Spec(60, std::nullopt, std::nullopt), 10, TimePoint{});
  EXPECT_FALSE(without.TargetReached(1.0));
}

TEST(BudgetTest, FractionAndEtaFollowTheNearestLimit) {
  TimePoint start{};
  Budget budget(Spec(100, 1, std::nullopt), 1000, start);
  // 10 s in, 50 of 1000 samples: time says 10%, epochs 5%; the pace says
  // 190 s more for the epoch, the clock 90 s.
  EXPECT_DOUBLE_EQ(budget.Fraction(start + seconds(10), {50}), 0.10);
  EXPECT_EQ(budget.Eta(start + seconds(10), {50}), seconds(90));
  // 10 s in, 500 samples: epochs say 50%, 10 s more.
  EXPECT_DOUBLE_EQ(budget.Fraction(start + seconds(10), {500}), 0.5);
  EXPECT_EQ(budget.Eta(start + seconds(10), {500}), seconds(10));

  Budget epochs_only(Spec(std::nullopt, 2, std::nullopt), 100, start);
  EXPECT_FALSE(epochs_only.Eta(start, {0}).has_value());
  EXPECT_EQ(epochs_only.Eta(start + seconds(4), {100}), seconds(4));
  EXPECT_DOUBLE_EQ(epochs_only.Fraction(start + seconds(4), {300}), 1.0);

  // 100,000 epochs of 60,000 samples: 6e9 left, times the ticks elapsed,
  // overflowed an int64 of nanoseconds into an ETA of 0.
  Budget vast(Spec(12, 100000, std::nullopt), 60000, start);
  EXPECT_EQ(vast.Eta(start + std::chrono::milliseconds(2670), {132992}), std::chrono::milliseconds(9330));
  Budget vast_epochs_only(Spec(std::nullopt, 100000, std::nullopt), 60000, start);
  const std::optional<Duration> eta = vast_epochs_only.Eta(start + std::chrono::milliseconds(2670), {132992});
  ASSERT_TRUE(eta.has_value());
  EXPECT_NEAR(ToSeconds(*eta), 2.67 * (6e9 - 132992) / 132992, 1.0);
}

// A silent worker is counted at the watts it drew so far for as long as it
// has been silent; a worker just heard from adds its last moment's worth, a
// pipeline's device (its clock its busy time) nothing.
TEST(BudgetTest, ASilentWorkerIsCountedAtItsWattsSoFar) {
  JobProgress p;
  WorkerProgress heard, silent, stage;
  heard.wall_s = 10;
  heard.energy_joules = 100;  // 10 W
  heard.silent_s = 0.02;
  silent.wall_s = 20;
  silent.energy_joules = 100;  // 5 W
  silent.silent_s = 9;
  stage.wall_s = 3;
  stage.energy_joules = 100;
  stage.silent_s = 30;
  stage.layers = std::pair{0, 2};
  p.workers = {heard, silent, stage};
  EXPECT_DOUBLE_EQ(UnreportedEnergy(p), 0.2 + 45);
  EXPECT_DOUBLE_EQ(UnreportedEnergy(JobProgress{}), 0);
  // Heard from, but with no figures for seconds: a push's later parts
  // crawling through a dip carry none (it was counted for the 0.01 s since
  // the last part, 84 J of a robot's draw short: a user's trial).
  WorkerProgress crawling = heard;
  crawling.silent_s = 0.01;
  crawling.unreported_s = 11;
  p.workers = {crawling};
  EXPECT_DOUBLE_EQ(UnreportedEnergy(p), 110);
}

// An energy budget ends the job once its modelled energy reaches it, and
// its share and pace count in the fraction and the ETA like the others'.
TEST(BudgetTest, AnEnergyBudgetEndsTheJobAtItsJoulesAndSetsThePaceWhenNearest) {
  const TimePoint start{};
  BudgetSpec spec = Spec(100, std::nullopt, std::nullopt);
  spec.energy_joules = 500;
  const Budget budget(spec, 100, start);
  EXPECT_EQ(budget.Exhausted(start + seconds(10), {10, 499.9}), std::nullopt);
  EXPECT_EQ(budget.Exhausted(start + seconds(10), {10, 500}), StopReason::kEnergy);
  // 10 s in, 200 J of 500: energy says 40%, the clock 10%; at 20 J a
  // second, 15 s more, where the clock has 90.
  EXPECT_DOUBLE_EQ(budget.Fraction(start + seconds(10), {10, 200}), 0.4);
  EXPECT_EQ(budget.Eta(start + seconds(10), {10, 200}), seconds(15));
  // Nothing drawn yet: no pace, so the clock's ETA alone.
  EXPECT_EQ(budget.Eta(start + seconds(10), {10, 0}), seconds(90));
  // Spent past it (the last push's report came late): 100%, nothing left.
  EXPECT_DOUBLE_EQ(budget.Fraction(start + seconds(30), {30, 650}), 1.0);
  EXPECT_EQ(budget.Eta(start + seconds(30), {30, 650}), Duration::zero());
  // The wall clock, spent at once with the energy, is the reason given.
  EXPECT_EQ(budget.Exhausted(start + seconds(100), {100, 900}), StopReason::kWallClock);

  // A budget too far off to reach says no ETA of its own (it overflowed
  // the clock's ticks into 0).
  BudgetSpec vast = Spec(100, std::nullopt, std::nullopt);
  vast.energy_joules = 1e308;
  EXPECT_EQ(Budget(vast, 100, start).Eta(start + seconds(10), {10, 1}), seconds(90));

  // 0 is no energy limit, whatever is drawn.
  const Budget unlimited(Spec(100, std::nullopt, std::nullopt), 100, start);
  EXPECT_EQ(unlimited.Exhausted(start + seconds(10), {10, 1e9}), std::nullopt);
  EXPECT_DOUBLE_EQ(unlimited.Fraction(start + seconds(10), {10, 1e9}), 0.1);
}

}  // namespace
}  // namespace edgetrain

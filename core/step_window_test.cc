#include "core/step_window.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

StepWindow Of(std::initializer_list<double> steps) {
  StepWindow w;
  for (double s : steps) w.Add(s);
  return w;
}

// A device slowed tenfold four steps ago has drifted, and takes its new time
// a step now; one odd step does not make a drift.
TEST(StepWindowTest, AChangeThatLastedItsStepsIsADriftAndItsPaceIsTheNewOne) {
  const StepWindow slowed = Of({1, 1.1, 0.9, 1, 1, 10, 10, 9, 11});
  EXPECT_TRUE(slowed.Drifted(1.3));
  EXPECT_EQ(slowed.Now(1.3), 10);
  // Half of a longer window still before the change: its last steps count.
  EXPECT_EQ(Of({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 10, 10, 10, 10}).Now(1.3), 10);
  const StepWindow odd = Of({1, 1.1, 0.9, 1, 1, 1, 10, 1, 1});
  EXPECT_FALSE(Of({1, 1.1, 0.9, 1, 1, 1, 1, 10, 10}).Drifted(1.3)) << "two odd steps";
  EXPECT_TRUE(Of({1, 1.1, 0.9, 1, 1, 1, 10, 10, 10}).Drifted(1.3)) << "three of four";
  EXPECT_FALSE(odd.Drifted(1.3));
  EXPECT_EQ(odd.Now(1.3), 1);
  // Sped up counts as much as slowed down.
  EXPECT_TRUE(Of({10, 10, 10, 10, 1, 1, 1, 1}).Drifted(1.3));
  // Judged against the steps just before, however many the window holds.
  StepWindow long_one;
  for (int i = 0; i < 1000; ++i) long_one.Add(1);
  for (size_t i = 0; i < StepWindow::kBefore; ++i) long_one.Add(10);
  EXPECT_FALSE(long_one.Drifted(1.3)) << "10 for the last kBefore steps: what it takes now";
}

// Steady, it is the median of its last half; with fewer than two recent
// spans of steps nothing can have drifted.
TEST(StepWindowTest, SteadyItIsTheMedianOfItsLastHalfAndTooFewStepsNeverDrift) {
  EXPECT_EQ(Of({5, 1, 2, 3, 2, 2, 3, 1, 2, 2}).Now(1.3), 2);
  EXPECT_FALSE(Of({1, 1, 1, 10, 10, 10, 10}).Drifted(1.3)) << "7 steps: fewer than 2 x kRecent";
  EXPECT_EQ(Of({3, 1}).Now(1.3), 2);  // the mean of the two middle ones (core/median.h)
  EXPECT_EQ(StepWindow().Now(1.3), 0);
  EXPECT_FALSE(Of({0, 0, 0, 0, 0, 0, 0, 0}).Drifted(1.3)) << "a device dealt nothing";
}

}  // namespace
}  // namespace edgetrain

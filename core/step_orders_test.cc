#include "core/step_orders.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(StepOrders, SaysNothingUntilEnoughStepsAreSeen) {
  StepOrders orders;
  for (size_t i = 0; i + 1 < StepOrders::kMinSteps; ++i) orders.Observe(2e-3, 1.5e-3);
  EXPECT_EQ(orders.Seconds(), 0);
  orders.Observe(2e-3, 1.5e-3);
  EXPECT_NEAR(orders.Seconds(), 0.5e-3, 1e-12);
}

TEST(StepOrders, AStepLengthenedByACheckpointDoesNotMoveTheMedian) {
  StepOrders orders;
  for (int i = 0; i < 20; ++i) orders.Observe(i == 7 ? 0.250 : 2.0e-3 + 1e-6 * i, 1.5e-3);
  EXPECT_NEAR(orders.Seconds(), 0.5e-3 + 11e-6, 1e-9);  // the upper of the two middle ones
}

TEST(StepOrders, KeepsOnlyTheLastWindowOfSteps) {
  StepOrders orders(/*window=*/8);
  for (int i = 0; i < 8; ++i) orders.Observe(5e-3, 1e-3);  // 4 ms, contended
  for (int i = 0; i < 8; ++i) orders.Observe(2e-3, 1e-3);  // 1 ms, once it is not
  EXPECT_NEAR(orders.Seconds(), 1e-3, 1e-12);
  EXPECT_EQ(orders.steps(), 16u);
  EXPECT_EQ(orders.counted(), 8u);
}

TEST(StepOrders, AStageHeldLongerThanThePeriodCountsAsNoOrders) {
  // The stage times its held seconds on its own clock: by a little, they can exceed the head's period.
  StepOrders orders;
  for (size_t i = 0; i < StepOrders::kMinSteps; ++i) orders.Observe(1e-3, 1.1e-3);
  EXPECT_EQ(orders.Seconds(), 0);
}

}  // namespace
}  // namespace edgetrain

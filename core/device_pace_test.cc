#include "core/device_pace.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(DevicePace, TheProfileStandsUntilEnoughStepsAreSeen) {
  DevicePace pace;
  for (size_t i = 0; i + 1 < DevicePace::kMinSteps; ++i) pace.Observe(0, 1.4e-3, 1.15e-3);
  EXPECT_FALSE(pace.Learned(0));
  EXPECT_EQ(pace.Of(0), 1);
  pace.Observe(0, 1.4e-3, 1.15e-3);
  EXPECT_TRUE(pace.Learned(0));
  EXPECT_NEAR(pace.Of(0), 1.4 / 1.15, 1e-12);
}

TEST(DevicePace, EachDeviceHasItsOwn) {
  DevicePace pace;
  for (size_t i = 0; i < DevicePace::kMinSteps; ++i) {
    pace.Observe(0, 2e-3, 1e-3);
    pace.Observe(3, 0.9e-3, 1e-3);
  }
  EXPECT_NEAR(pace.Of(0), 2.0, 1e-12);
  EXPECT_NEAR(pace.Of(3), 0.9, 1e-12);
  EXPECT_EQ(pace.Of(1), 1);  // never seen
}

TEST(DevicePace, AStepLengthenedByAReplicaDoesNotMoveIt) {
  DevicePace pace;
  for (int i = 0; i < 20; ++i) pace.Observe(0, i == 5 ? 30e-3 : 1.2e-3, 1e-3);
  EXPECT_NEAR(pace.Of(0), 1.2, 1e-12);
}

TEST(DevicePace, ForgetsWhatNoLongerHolds) {
  DevicePace pace(/*window=*/8);
  for (int i = 0; i < 8; ++i) pace.Observe(0, 3e-3, 1e-3);  // while three processes shared two cores
  for (int i = 0; i < 8; ++i) pace.Observe(0, 1.1e-3, 1e-3);
  EXPECT_NEAR(pace.Of(0), 1.1, 1e-12);
}

// Its own cost a step stays as it was when it takes other layers: a device
// at 15 times its one small layer's prediction, given ten times the work, is
// planned at 2.4 times (1 + 14 / 10), not 15, until its steps on them teach
// its pace afresh.
TEST(DevicePace, APaceCarriedToOtherLayersKeepsTheDevicesOwnCostAStep) {
  DevicePace pace;
  for (int i = 0; i < 8; ++i) pace.Observe(2, 15e-3, 1e-3);
  ASSERT_DOUBLE_EQ(pace.Of(2), 15);
  pace.Carry(2, 1e-3, 10e-3);
  EXPECT_TRUE(pace.Learned(2));
  EXPECT_DOUBLE_EQ(pace.Of(2), 2.4);
  for (int i = 0; i < 7; ++i) pace.Observe(2, 12e-3, 10e-3);
  EXPECT_DOUBLE_EQ(pace.Of(2), 2.4) << "until enough steps on its new layers";
  pace.Observe(2, 12e-3, 10e-3);
  EXPECT_DOUBLE_EQ(pace.Of(2), 1.2);
  // Nothing learned, nothing carried.
  pace.Carry(5, 1e-3, 10e-3);
  EXPECT_FALSE(pace.Learned(5));
  pace.Forget(2);
  EXPECT_FALSE(pace.Learned(2));
}

TEST(DevicePace, AStepPredictedAtNothingSaysNothing) {
  DevicePace pace;
  for (size_t i = 0; i < 2 * DevicePace::kMinSteps; ++i) pace.Observe(0, 1e-4, 0);  // dealt no sample
  EXPECT_FALSE(pace.Learned(0));
}

}  // namespace
}  // namespace edgetrain

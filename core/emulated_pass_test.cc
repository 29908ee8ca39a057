#include "core/emulated_pass.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(EmulatedPass, OnTheClockAloneThePassIsSleptSlowdownLessOneTimesAgain) {
  const EmulatedPass p = EmulatePass(4, 0.010, std::nullopt);
  EXPECT_DOUBLE_EQ(p.cost_s, 0.010);
  EXPECT_DOUBLE_EQ(p.device_s, 0.040);
  EXPECT_DOUBLE_EQ(p.sleep_s, 0.030);
}

TEST(EmulatedPass, AWaitForASharedCoreIsNotMultipliedByTheSlowdown) {
  // 10 ms of CPU over 16 ms of clock: 6 ms waiting while a neighbour held
  // the core. On its own device the pass takes 4 x 10 ms, whoever computed
  // beside it; on the clock's time it would have taken 4 x 16.
  const EmulatedPass p = EmulatePass(4, 0.016, 0.010);
  EXPECT_DOUBLE_EQ(p.cost_s, 0.010);
  EXPECT_DOUBLE_EQ(p.device_s, 0.040);
  EXPECT_NEAR(p.sleep_s, 0.024, 1e-15);
}

TEST(EmulatedPass, AWaitLongerThanTheEmulatedPassIsNotUndone) {
  // A pass held 50 ms for 10 ms of CPU: nothing to sleep, and the device took
  // what the clock saw.
  const EmulatedPass p = EmulatePass(2, 0.050, 0.010);
  EXPECT_DOUBLE_EQ(p.device_s, 0.050);
  EXPECT_DOUBLE_EQ(p.own_s, 0.020) << "on a device of its own: no wait";
  EXPECT_DOUBLE_EQ(p.sleep_s, 0);
}

TEST(EmulatedPass, ThisMachineItselfNeverSleeps) {
  EXPECT_DOUBLE_EQ(EmulatePass(1, 0.010, 0.008).sleep_s, 0);
  EXPECT_DOUBLE_EQ(EmulatePass(0.5, 0.010, std::nullopt).sleep_s, 0);
}

TEST(EmulatedPass, CpuBeyondTheClockCountsNoMoreThanTheClock) {
  const EmulatedPass p = EmulatePass(3, 0.010, 0.0101);
  EXPECT_DOUBLE_EQ(p.cost_s, 0.010);
  EXPECT_DOUBLE_EQ(p.device_s, 0.030);
}

}  // namespace
}  // namespace edgetrain

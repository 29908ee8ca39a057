#include "core/device_slowdown.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(DeviceSlowdown, EachChangeHoldsFromItsTimeUntilTheNext) {
  const DeviceSlowdown device{4, {{30, 12}, {90, 6}}};
  EXPECT_EQ(device.At(0), 4);
  EXPECT_EQ(device.At(29.999), 4);
  EXPECT_EQ(device.At(30), 12);
  EXPECT_EQ(device.At(89), 12);
  EXPECT_EQ(device.At(90), 6);
  EXPECT_EQ(device.At(1e6), 6);
}

TEST(DeviceSlowdown, SaysItsChangesInOrder) {
  EXPECT_EQ((DeviceSlowdown{3, {{15, 30}, {90, 4.5}}}).Said(), "slowdown 3, then 30 from 15s, 4.5 from 1m30s");
  EXPECT_EQ((DeviceSlowdown{3, {{3.6e8, 30}}}).Said(), "slowdown 3, then 30 from 100000h");
  EXPECT_EQ((DeviceSlowdown{2, {}}).Said(), "slowdown 2");
}

TEST(DeviceSlowdown, WithoutChangesItIsTheInitialOne) {
  EXPECT_EQ((DeviceSlowdown{2.5, {}}).At(100), 2.5);
}

}  // namespace
}  // namespace edgetrain

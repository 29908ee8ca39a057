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

TEST(DeviceSlowdown, WithoutChangesItIsTheInitialOne) {
  EXPECT_EQ((DeviceSlowdown{2.5, {}}).At(100), 2.5);
}

}  // namespace
}  // namespace edgetrain

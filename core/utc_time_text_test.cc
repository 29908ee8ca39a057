#include "core/utc_time_text.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(UtcTimeTextTest, SaysAnInstantInUtcToTheSecondOrTheMillisecond) {
  const WallTime t = std::chrono::system_clock::from_time_t(1795374113);  // 2026-11-22T19:01:53Z
  EXPECT_EQ(UtcText(t), "2026-11-22T19:01:53Z");
  EXPECT_EQ(UtcText(t + std::chrono::milliseconds(999)), "2026-11-22T19:01:53Z") << "the second it is in";
  EXPECT_EQ(UtcTextMillis(t), "2026-11-22T19:01:53.000Z");
  EXPECT_EQ(UtcTextMillis(t + std::chrono::microseconds(7999)), "2026-11-22T19:01:53.007Z");
  EXPECT_EQ(LogLineStamp(t), "time=2026-11-22T19:01:53.000Z ");
}

}  // namespace
}  // namespace edgetrain

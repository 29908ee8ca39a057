#include "core/quantity.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

int64_t Millis(std::string_view text) {
  StatusOr<int64_t> m = ParseQuantityMillis(text);
  EXPECT_TRUE(m.ok()) << text << ": " << m.status().ToString();
  return m.ok() ? *m : -1;
}

TEST(QuantityTest, ReadsEveryFormTheApiServerAccepts) {
  constexpr int64_t kGi = int64_t{1} << 30;
  EXPECT_EQ(Millis("500m"), 500);
  EXPECT_EQ(Millis("2"), 2000);
  EXPECT_EQ(Millis("1.5"), 1500);
  EXPECT_EQ(Millis(".5"), 500);
  EXPECT_EQ(Millis("+3"), 3000);
  EXPECT_EQ(Millis("-1"), -1000);
  EXPECT_EQ(Millis("8Gi"), 8 * kGi * 1000);
  EXPECT_EQ(Millis("512Mi"), (int64_t{512} << 20) * 1000);
  EXPECT_EQ(Millis("1.5Gi"), 3 * (kGi / 2) * 1000);
  EXPECT_EQ(Millis("1k"), 1000 * 1000);
  EXPECT_EQ(Millis("1G"), int64_t{1000000000} * 1000);
  EXPECT_EQ(Millis("1e3"), 1000 * 1000);
  EXPECT_EQ(Millis("1E-3"), 1);
  EXPECT_EQ(Millis("100u"), 1) << "below a thousandth rounds up";
  EXPECT_EQ(Millis("1n"), 1);
  EXPECT_EQ(Millis("0"), 0);
}

TEST(QuantityTest, RefusesWhatItCannotReadExactly) {
  for (std::string_view bad : {"", "m", "1.2.3", "5 Gi", "5gi", "1Q", "Gi", "1e", "99999999999999999999", "9E"}) {
    StatusOr<int64_t> m = ParseQuantityMillis(bad);
    EXPECT_FALSE(m.ok()) << "\"" << bad << "\" read as " << (m.ok() ? *m : 0);
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(QuantityTest, CountsWholeUnitsRoundingUpAsTheSchedulerDoes) {
  EXPECT_EQ(*ParseQuantityUnits("1500m"), 2);
  EXPECT_EQ(*ParseQuantityUnits("4Gi"), int64_t{4} << 30);
  EXPECT_EQ(*ParseQuantityUnits("110"), 110);
}

TEST(QuantityTest, WritesAmountsAsPeopleDo) {
  EXPECT_EQ(FormatCpuMillis(1500), "1500m");
  EXPECT_EQ(FormatCpuMillis(2000), "2");
  EXPECT_EQ(FormatBytes(int64_t{8} << 30), "8Gi");
  EXPECT_EQ(FormatBytes(int64_t{1536} << 20), "1536Mi");
  EXPECT_EQ(FormatBytes(1000), "1000");
  EXPECT_EQ(FormatBytes(0), "0");
}

}  // namespace
}  // namespace edgetrain

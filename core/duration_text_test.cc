#include "core/duration_text.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(ParseDurationTest, AcceptsKubernetesStyleDurations) {
  struct Case {
    const char* text;
    double seconds;
  } cases[] = {{"0", 0}, {"90s", 90}, {"10m", 600}, {"1h30m", 5400},
               {"250ms", 0.25}, {"1.5h", 5400}, {"2m3s", 123}};
  for (const auto& c : cases) {
    auto d = ParseDuration(c.text);
    ASSERT_TRUE(d.ok()) << c.text << ": " << d.status().ToString();
    EXPECT_DOUBLE_EQ(ToSeconds(*d), c.seconds) << c.text;
  }
}

TEST(ParseDurationTest, RejectsMalformedDurationsWithExamples) {
  for (const char* text : {"", "10", "m", "10x", "1..5s", "-5s", "5 s"}) {
    auto d = ParseDuration(text);
    ASSERT_FALSE(d.ok()) << text;
    EXPECT_NE(d.status().message().find("examples: 90s"), std::string::npos) << d.status().message();
  }
  // "-5s" is a number, only negative (a new user's trial).
  EXPECT_NE(ParseDuration("-5s").status().message().find("a duration is not negative"), std::string::npos);
  // Past what a Duration holds it wrapped negative, and past 1,300,000h a
  // node-loss grace doubled overflowed (two security reviews): 100000h at most.
  EXPECT_TRUE(ParseDuration("100000h").ok());
  for (const char* text : {"100000h1s", "1300000h", "2562048h", "99999999999999999999h"}) {
    EXPECT_NE(ParseDuration(text).status().message().find("longer than edgetrain counts (at most 100000h, 11 years)"),
              std::string::npos)
        << text;
  }
}

TEST(FormatDurationTest, WritesDurationsAsManifestsDo) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  EXPECT_EQ(FormatDuration(std::chrono::minutes(2)), "2m");
  EXPECT_EQ(FormatDuration(seconds(90)), "1m30s");
  EXPECT_EQ(FormatDuration(seconds(5400)), "1h30m");
  EXPECT_EQ(FormatDuration(seconds(3601)), "1h1s");
  EXPECT_EQ(FormatDuration(milliseconds(250)), "250ms");
  EXPECT_EQ(FormatDuration(milliseconds(2500)), "2.5s");
  EXPECT_EQ(FormatDuration(seconds(0)), "0s");
  for (const char* text : {"2m", "1m30s", "1h30m", "250ms", "2.5s"}) {
    EXPECT_EQ(FormatDuration(*ParseDuration(text)), text) << "round trip";
  }
}

TEST(FormatClockTest, ShowsMinutesAndHours) {
  EXPECT_EQ(FormatClock(std::chrono::seconds(0)), "00:00");
  EXPECT_EQ(FormatClock(std::chrono::seconds(125)), "02:05");
  EXPECT_EQ(FormatClock(std::chrono::seconds(3725)), "1:02:05");
  EXPECT_EQ(FormatClock(std::chrono::seconds(-3)), "00:00");
}

}  // namespace
}  // namespace edgetrain

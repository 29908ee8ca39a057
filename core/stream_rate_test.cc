#include "core/stream_rate.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(StreamRateTest, AConstantRateDeliversItsIntegral) {
  StreamRate rate = StreamRate::Constant(2.5);
  EXPECT_DOUBLE_EQ(rate.ArrivedBy(0), 0);
  EXPECT_DOUBLE_EQ(rate.ArrivedBy(2), 5);
  EXPECT_DOUBLE_EQ(rate.ArrivedBy(100.4), 251);
  EXPECT_DOUBLE_EQ(rate.WhenArrived(5), 2);
  EXPECT_DOUBLE_EQ(rate.WhenArrived(1), 0.4);
  EXPECT_DOUBLE_EQ(rate.MeanPerSecond(), 2.5);
}

TEST(StreamRateTest, ATraceHoldsEachRateUntilTheNextRowAndRepeats) {
  // 10/s for 2 s, a pause of 1 s, 4/s for 1 s (the last row lasts as long as
  // the one before): 24 samples a 4 s period.
  auto rate = StreamRate::Parse("seconds,samples_per_s\n0,10\n2,0\n3,4\n", "walk.csv");
  ASSERT_TRUE(rate.ok()) << rate.status().message();
  EXPECT_DOUBLE_EQ(rate->ArrivedBy(1), 10);
  EXPECT_DOUBLE_EQ(rate->ArrivedBy(2.5), 20);
  EXPECT_DOUBLE_EQ(rate->ArrivedBy(3.5), 22);
  EXPECT_DOUBLE_EQ(rate->ArrivedBy(4), 24);
  EXPECT_DOUBLE_EQ(rate->ArrivedBy(9), 24 * 2 + 10);
  EXPECT_DOUBLE_EQ(rate->MeanPerSecond(), 6);
  // The 21st sample waits out the pause.
  EXPECT_DOUBLE_EQ(rate->WhenArrived(20), 2);
  EXPECT_DOUBLE_EQ(rate->WhenArrived(21), 3.25);
  EXPECT_DOUBLE_EQ(rate->WhenArrived(24), 4);
  EXPECT_DOUBLE_EQ(rate->WhenArrived(25), 4.1);
  for (double n : {0.5, 7.0, 19.0, 23.0, 48.0, 61.0, 1000.0}) {
    EXPECT_NEAR(rate->ArrivedBy(rate->WhenArrived(n)), n, 1e-9) << n;
  }
}

// A resumed run's stream goes on where the run it resumes left it: from 2.5 s
// in, the pause first, then 4/s, then the next period's 10/s.
TEST(StreamRateTest, AStreamBegunFurtherInGoesOnAlongItsTrace) {
  auto trace = StreamRate::Parse("seconds,samples_per_s\n0,10\n2,0\n3,4\n", "walk.csv");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const StreamRate rate = trace->From(2.5);
  EXPECT_DOUBLE_EQ(rate.ArrivedBy(0.5), 0) << "in the pause";
  EXPECT_DOUBLE_EQ(rate.ArrivedBy(1.5), 4);
  EXPECT_DOUBLE_EQ(rate.ArrivedBy(2.5), 14) << "4 of the first period, 10 of the next";
  EXPECT_DOUBLE_EQ(rate.WhenArrived(1), 0.75);
  EXPECT_DOUBLE_EQ(rate.MeanPerSecond(), 6);
  for (double n : {0.5, 7.0, 19.0, 23.0, 48.0}) {
    EXPECT_NEAR(rate.ArrivedBy(rate.WhenArrived(n)), n, 1e-9) << n;
  }
  EXPECT_DOUBLE_EQ(trace->From(0).ArrivedBy(1), 10) << "from the start";
}

TEST(StreamRateTest, RefusesATraceThatIsNotOneOrNeverDelivers) {
  auto wrong_header = StreamRate::Parse("seconds,mbps\n0,1\n", "r.csv");
  ASSERT_FALSE(wrong_header.ok());
  EXPECT_EQ(wrong_header.status().message(), "r.csv:1: expected the header \"seconds,samples_per_s\", got \"seconds,mbps\"");
  auto negative = StreamRate::Parse("seconds,samples_per_s\n0,1\n1,-2\n", "r.csv");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("r.csv:3: samples_per_s must be >= 0"), std::string::npos);
  auto silent = StreamRate::Parse("seconds,samples_per_s\n0,0\n5,0\n", "r.csv");
  ASSERT_FALSE(silent.ok());
  EXPECT_NE(silent.status().message().find("never deliver a sample"), std::string::npos);
}

}  // namespace
}  // namespace edgetrain

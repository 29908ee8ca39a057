#include "core/bandwidth_estimator.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(BandwidthEstimatorTest, LearnsFromTransfersAndSmoothsThem) {
  BandwidthEstimator est(10.0, 0.5);
  EXPECT_DOUBLE_EQ(est.Mbps(), 10.0);
  est.Observe(1'000'000, seconds(1));  // 8 Mbit/s replaces the prior
  EXPECT_DOUBLE_EQ(est.Mbps(), 8.0);
  est.Observe(500'000, seconds(1));    // 4 Mbit/s, half weight
  EXPECT_DOUBLE_EQ(est.Mbps(), 6.0);
  est.Observe(0, seconds(1));          // nothing measured
  est.Observe(100, Duration::zero());
  EXPECT_DOUBLE_EQ(est.Mbps(), 6.0);
  EXPECT_EQ(est.observations(), 2);
}

TEST(BandwidthEstimatorTest, ASendThatHungOnADeadLinkDrivesTheEstimateDown) {
  BandwidthEstimator est(10.0, 0.5);
  est.Observe(1'000'000, seconds(1));   // 8 Mbit/s
  est.Observe(100'000, seconds(100));   // 0.008 Mbit/s: the link was down
  est.Observe(100'000, seconds(100));
  EXPECT_LT(est.Mbps(), 2.1);
  EXPECT_LT(est.BytesIn(milliseconds(100)), 30'000);
}

TEST(BandwidthEstimatorTest, BudgetsBytesForATimeWindow) {
  BandwidthEstimator est;
  est.Observe(1'000'000, seconds(1));  // 1 MB/s
  EXPECT_EQ(est.BytesIn(milliseconds(100)), 100'000);
  EXPECT_EQ(est.BytesIn(milliseconds(1), 5000), 5000);
}

}  // namespace
}  // namespace edgetrain

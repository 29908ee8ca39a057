#include "core/batch_sizing.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(BatchSizingTest, BatchesFollowSpeedAndKeepTheTeamsAggregate) {
  // Slowdowns 1:2:4:8 at a millisecond a sample: speeds 8:4:2:1 of 15.
  const std::vector<double> seconds = {0.001, 0.002, 0.004, 0.008};
  const std::vector<int64_t> batches = ComputeWeightedBatches(seconds, 32, 128);
  EXPECT_EQ(batches, (std::vector<int64_t>{68, 34, 17, 9}));
  int64_t total = 0;
  for (int64_t b : batches) total += b;
  EXPECT_EQ(total, 4 * 32);
}

TEST(BatchSizingTest, AWorkerNotYetMeasuredKeepsTheBatchAndBatchesStayInBounds) {
  EXPECT_EQ(ComputeWeightedBatches(std::vector<double>{0, 0.001, 0.003}, 32, 48),
            (std::vector<int64_t>{32, 48, 16}));  // 48 of 64 would be its share, the most allowed
  EXPECT_EQ(ComputeWeightedBatches(std::vector<double>{0.001, 1.0}, 8, 64), (std::vector<int64_t>{16, 1}));
  EXPECT_EQ(ComputeWeightedBatches(std::vector<double>{0, 0}, 8, 64), (std::vector<int64_t>{8, 8}));
}

}  // namespace
}  // namespace edgetrain

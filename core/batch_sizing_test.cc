#include "core/batch_sizing.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

std::vector<StepTime> PerSample(std::vector<double> seconds) {
  std::vector<StepTime> costs;
  for (double s : seconds) costs.push_back({0, s});
  return costs;
}

int64_t Sum(const std::vector<int64_t>& v) {
  int64_t total = 0;
  for (int64_t b : v) total += b;
  return total;
}

TEST(BatchSizingTest, WithoutFixedCostsBatchesFollowSpeedAndKeepTheTeamsAggregate) {
  // Slowdowns 1:2:4:8 at a millisecond a sample: speeds 8:4:2:1 of 15.
  const std::vector<int64_t> batches = ComputeWeightedBatches(PerSample({0.001, 0.002, 0.004, 0.008}), 32, 128);
  EXPECT_EQ(batches, (std::vector<int64_t>{68, 34, 17, 9}));
  EXPECT_EQ(Sum(batches), 4 * 32);
}

TEST(BatchSizingTest, ADeviceThatOneSampleHoldsPastTheOthersStepsSetsTheRoundAndTheOthersFillIt) {
  // Slowdowns 1:4:16 of 2 ms a step and 0.1 ms a sample. In proportion to
  // per-sample speed alone (16:4:1) the slowest device's step would take
  // 16 x (2 + 0.1 x 5) = 40 ms against the fastest's 2 + 0.1 x 81 = 10 ms.
  const std::vector<StepTime> costs = {{0.002, 0.0001}, {0.008, 0.0004}, {0.032, 0.0016}};
  const std::vector<int64_t> batches = ComputeWeightedBatches(costs, 32, 128);
  // Equal steps would be 10.8 ms (88 and 7 samples), but the slowest device's
  // fixed cost alone is 32 ms: it is held at one sample, and its 33.6 ms is
  // every round's. The others fill it: the fastest up to its most (316 would
  // fit), the next one 64 samples' worth (63 whole in floating point).
  EXPECT_EQ(batches, (std::vector<int64_t>{128, 63, 1}));
  for (size_t w = 0; w < costs.size(); ++w) {
    EXPECT_LE(costs[w].fixed_seconds + static_cast<double>(batches[w]) * costs[w].sample_seconds, 0.0336 + 1e-9);
  }
}

TEST(BatchSizingTest, StepsEqualWhenTheFixedCostsLeaveRoom) {
  const std::vector<StepTime> costs = {{0.001, 0.0001}, {0.002, 0.0002}};
  const std::vector<int64_t> batches = ComputeWeightedBatches(costs, 30, 120);
  // Steps of 5.33 ms: 43.3 and 16.7 samples, whole ones 1 + 4.3 and 2 + 3.4 ms.
  EXPECT_EQ(batches, (std::vector<int64_t>{43, 17}));
}

TEST(BatchSizingTest, AWorkerNotYetMeasuredKeepsTheBatchAndBatchesStayInBounds) {
  EXPECT_EQ(ComputeWeightedBatches(PerSample({0, 0.001, 0.003}), 32, 48),
            (std::vector<int64_t>{32, 48, 16}));  // 48 of 64 would be its share, the most allowed
  // A second a sample: the other fills that second, up to its most.
  EXPECT_EQ(ComputeWeightedBatches(PerSample({0.001, 1.0}), 8, 64), (std::vector<int64_t>{64, 1}));
  EXPECT_EQ(ComputeWeightedBatches(PerSample({0, 0}), 8, 64), (std::vector<int64_t>{8, 8}));
}

}  // namespace
}  // namespace edgetrain

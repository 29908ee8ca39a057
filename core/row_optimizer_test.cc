#include "core/row_optimizer.h"

#include <cmath>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

const RowLayout kLayout({{2, 16}, {3}}, SyncGranularity::kRow);  // rows of 16, 16, 3

TEST(RowOptimizerTest, PlainSgdWithWeightDecay) {
  RowOptimizer opt({OptimizerKind::kSgd, 0.1, std::nullopt, 0.5}, kLayout);
  std::vector<float> p = {1, 2, 3}, g = {1, 0, -1};
  opt.Apply(2, p, g);
  // p - lr * (g + decay * p)
  EXPECT_FLOAT_EQ(p[0], 1 - 0.1f * (1 + 0.5f));
  EXPECT_FLOAT_EQ(p[1], 2 - 0.1f * (0 + 1.0f));
  EXPECT_FLOAT_EQ(p[2], 3 - 0.1f * (-1 + 1.5f));
}

TEST(RowOptimizerTest, MomentumKeepsAStatePerRow) {
  RowOptimizer opt({OptimizerKind::kSgd, 1.0, 0.9, 0}, kLayout);
  std::vector<float> p(3, 0), g(3, 1);
  opt.Apply(2, p, g);
  EXPECT_FLOAT_EQ(p[0], -1);       // buffer = g
  opt.Apply(2, p, g);
  EXPECT_FLOAT_EQ(p[0], -1 - 1.9f);  // buffer = 0.9 * 1 + 1
  EXPECT_EQ(opt.state().steps[2], 2);
  EXPECT_EQ(opt.state().steps[0], 0);
}

TEST(RowOptimizerTest, AMeanOverKIterationsStepsAsTheScalingRulesSay) {
  std::vector<float> g = {1, -2, 4};
  // SGD: k times the step.
  RowOptimizer sgd({OptimizerKind::kSgd, 0.1, std::nullopt, 0}, kLayout);
  std::vector<float> p(3, 0);
  sgd.Apply(2, p, g, 4.0);
  for (size_t i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(p[i], -0.4f * g[i]) << i;
  // Adam: its first step is +-lr; over a mean of 4 iterations, +-2 lr.
  RowOptimizer adam({OptimizerKind::kAdam, 0.01, std::nullopt, 0}, kLayout);
  std::vector<float> q(3, 1);
  adam.Apply(2, q, g, 4.0);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(q[i], 1 - 0.02f * (g[i] > 0 ? 1 : -1), 1e-6) << i;
}

TEST(RowOptimizerTest, AdamFirstStepMovesByTheLearningRate) {
  RowOptimizer opt({OptimizerKind::kAdam, 0.01, std::nullopt, 0}, kLayout);
  std::vector<float> p(16, 1), g(16);
  for (size_t i = 0; i < 16; ++i) g[i] = (i % 2 ? -1.0f : 1.0f) * static_cast<float>(i + 1);
  opt.Apply(0, p, g);
  // With bias correction, Adam's first step is lr * g / |g| = +-lr.
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(p[i], 1 - 0.01f * (i % 2 ? -1 : 1), 1e-6) << i;
  // Rows are independent: row 1's state is untouched.
  EXPECT_EQ(opt.state().steps[1], 0);
  EXPECT_EQ(opt.state().first[16], 0);
}

}  // namespace
}  // namespace edgetrain

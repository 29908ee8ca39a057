#include "core/pass_costs.h"

#include <vector>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(PassCosts, APassCrowdedByOthersIsCostedAtWhatItsLikeCostAlone) {
  PassCosts costs;
  const PassWorkload step{PassWork::kStep, 128};
  // Alone 2.8 ms, beside the others 4.5: half the passes of each.
  for (int i = 0; i < 8; ++i) {
    costs.Uncontended(step, 0.0028);
    costs.Uncontended(step, 0.0045);
  }
  EXPECT_DOUBLE_EQ(costs.Uncontended(step, 0.0045), 0.0028);
  // One cheaper than its like ones is noise about the same cost, not a
  // cheaper device: costed at the quartile too.
  EXPECT_DOUBLE_EQ(costs.Uncontended(step, 0.0026), 0.0028);
}

TEST(PassCosts, TheFourthLikePassIsTheFirstCostedAtItsLikeOnes) {
  PassCosts costs;
  const PassWorkload step{PassWork::kStep, 32};
  for (size_t i = 0; i + 1 < PassCosts::kLeastKnown; ++i) EXPECT_DOUBLE_EQ(costs.Uncontended(step, 0.001), 0.001);
  EXPECT_DOUBLE_EQ(costs.Uncontended(step, 0.005), 0.001);
}

TEST(PassCosts, AKindSeenTooFewTimesIsCostedAtWhatItMeasured) {
  PassCosts costs;
  const PassWorkload forward{PassWork::kForward, 8};
  for (size_t i = 0; i + 1 < PassCosts::kLeastKnown; ++i) {
    const double measured = 0.001 * static_cast<double>(i + 1);
    EXPECT_DOUBLE_EQ(costs.Uncontended(forward, measured), measured);
  }
}

TEST(PassCosts, KindsAndSizesAreRememberedApart) {
  PassCosts costs;
  for (int i = 0; i < 8; ++i) costs.Uncontended({PassWork::kForward, 4}, 0.001);
  // A pass of twice the samples, or a backward, is not costed as those were.
  EXPECT_DOUBLE_EQ(costs.Uncontended({PassWork::kForward, 8}, 0.003), 0.003);
  EXPECT_DOUBLE_EQ(costs.Uncontended({PassWork::kBackward, 4}, 0.003), 0.003);
}

TEST(PassCosts, ABatchReDealtAFewSamplesEitherWayIsLikeTheOthersASample) {
  // A team re-deals batches to its workers' paces (computeWeighted) every
  // round: 124 to 132 samples here, each size seen once or twice.
  PassCosts costs;
  const std::vector<int64_t> sizes{124, 128, 132, 126, 130, 125, 129, 131};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double per_sample = i % 2 ? 30e-6 : 20e-6;  // every other one crowded
    costs.Uncontended({PassWork::kStep, sizes[i]}, per_sample * static_cast<double>(sizes[i]));
  }
  EXPECT_DOUBLE_EQ(costs.Uncontended({PassWork::kStep, 127}, 30e-6 * 127), 20e-6 * 127);
  // 10% fewer samples is another band, whose own passes cost what they measured.
  EXPECT_DOUBLE_EQ(costs.Uncontended({PassWork::kStep, 115}, 30e-6 * 115), 30e-6 * 115);
}

TEST(PassCosts, AnOptimizersStepOverNoSamplesIsCostedWhole) {
  PassCosts costs;
  for (int i = 0; i < 4; ++i) costs.Uncontended({PassWork::kOptimizerStep, 0}, 0.002);
  EXPECT_DOUBLE_EQ(costs.Uncontended({PassWork::kOptimizerStep, 0}, 0.009), 0.002);
}

TEST(PassCosts, WhatIsForgottenCostsWhatItMeasuresAgain) {
  // A stage that took more layers: its passes' cost before says nothing of
  // them, and it would be costed at the old, cheaper one for a dozen passes.
  PassCosts costs;
  const PassWorkload forward{PassWork::kForward, 16};
  for (int i = 0; i < 8; ++i) costs.Uncontended(forward, 0.001);
  costs.Forget();
  EXPECT_DOUBLE_EQ(costs.Uncontended(forward, 0.004), 0.004);
}

TEST(PassCosts, APassThatGotDearerForGoodIsCostedSoWithinItsMemory) {
  // The work itself grew (a device's layers changed): once the older passes
  // have left its memory, the quartile is of the new cost.
  PassCosts costs;
  const PassWorkload step{PassWork::kStep, 64};
  for (size_t i = 0; i < PassCosts::kRemembered; ++i) costs.Uncontended(step, 0.001);
  double costed = 0;
  for (size_t i = 0; i < PassCosts::kRemembered; ++i) costed = costs.Uncontended(step, 0.004);
  EXPECT_DOUBLE_EQ(costed, 0.004);
}

}  // namespace
}  // namespace edgetrain

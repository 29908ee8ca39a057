#include "core/pass_costs.h"

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
  EXPECT_DOUBLE_EQ(costs.Uncontended(step, 0.0027), 0.0027) << "a pass cheaper than the quartile keeps its own";
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
  EXPECT_DOUBLE_EQ(costs.Uncontended({PassWork::kForward, 8}, 0.002), 0.002);
  EXPECT_DOUBLE_EQ(costs.Uncontended({PassWork::kBackward, 4}, 0.003), 0.003);
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

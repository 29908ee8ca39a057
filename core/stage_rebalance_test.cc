#include "core/stage_rebalance.h"

#include <gtest/gtest.h>

#include <string>

namespace edgetrain {
namespace {

using Cuts = std::vector<std::pair<int, int>>;

// Two stages of two equal layers each, on devices equally fast: nothing to move.
TEST(StageRebalanceTest, BalancedStagesStayAsTheyAre) {
  const std::vector<StageMeasure> stages = {{0, 2, 1.0}, {2, 4, 1.0}};
  const std::vector<double> weights(4, 1.0);
  EXPECT_FALSE(RebalanceStages(stages, weights, 0.1).has_value());
}

// The second stage's device slowed threefold: a layer moves to the first
// stage, and the step is paced by the slower stage's one layer at its pace.
TEST(StageRebalanceTest, ASlowedStageGivesLayersToItsNeighbour) {
  const std::vector<StageMeasure> stages = {{0, 2, 1.0}, {2, 4, 3.0}};
  const std::vector<double> weights(4, 1.0);
  auto cuts = RebalanceStages(stages, weights, 0.1);
  ASSERT_TRUE(cuts.has_value());
  EXPECT_EQ(cuts->layers, (Cuts{{0, 3}, {3, 4}}));
  EXPECT_DOUBLE_EQ(cuts->predicted_s, 1.5);  // max(3 layers at 0.5 s, 1 layer at 1.5 s)
  EXPECT_DOUBLE_EQ(cuts->now_s, 3.0);
}

// Moved as proposed, the stages then measure what was predicted, and nothing
// moves again: one move for one slowdown, not a series.
TEST(StageRebalanceTest, TheCutsItProposesAreStable) {
  const std::vector<double> weights = {4, 1, 2, 8, 1, 1};
  const std::vector<double> paces = {0.1, 0.5, 0.2};  // seconds a unit of weight, each stage's group
  std::vector<StageMeasure> stages = {{0, 2, 0}, {2, 4, 0}, {4, 6, 0}};
  auto measure = [&] {
    for (size_t s = 0; s < stages.size(); ++s) {
      double w = 0;
      for (int l = stages[s].first_layer; l < stages[s].end_layer; ++l) w += weights[l];
      stages[s].seconds = paces[s] * w;
    }
  };
  measure();
  auto cuts = RebalanceStages(stages, weights, 0.1);
  ASSERT_TRUE(cuts.has_value());
  for (size_t s = 0; s < stages.size(); ++s) std::tie(stages[s].first_layer, stages[s].end_layer) = cuts->layers[s];
  measure();
  double slowest = 0;
  for (const auto& s : stages) slowest = std::max(slowest, s.seconds);
  EXPECT_NEAR(slowest, cuts->predicted_s, 1e-12);
  EXPECT_FALSE(RebalanceStages(stages, weights, 0.1).has_value());
}

// A gain inside `min_gain` is not worth a move; every stage keeps a layer.
TEST(StageRebalanceTest, ASmallGainMovesNothingAndNoStageIsLeftEmpty) {
  const std::vector<double> weights(4, 1.0);
  EXPECT_FALSE(RebalanceStages(std::vector<StageMeasure>{{0, 2, 1.0}, {2, 4, 1.1}}, weights, 0.1).has_value());
  auto cuts = RebalanceStages(std::vector<StageMeasure>{{0, 2, 1.0}, {2, 4, 100.0}}, weights, 0.1);
  ASSERT_TRUE(cuts.has_value());
  EXPECT_EQ(cuts->layers, (Cuts{{0, 3}, {3, 4}}));
}

// Of cuts equally fast, those that move the fewest stages' first layers: a
// stage whose layers change is rebuilt and sent their state.
TEST(StageRebalanceTest, OfEquallyFastCutsTheOneThatMovesFewestStages) {
  const std::vector<double> weights(8, 1.0);
  const std::vector<StageMeasure> stages = {{0, 1, 1}, {1, 4, 3}, {4, 6, 2}, {6, 8, 8}};  // paces 1, 1, 1, 4
  auto cuts = RebalanceStages(stages, weights, 0.1);
  ASSERT_TRUE(cuts.has_value());
  EXPECT_DOUBLE_EQ(cuts->predicted_s, 4.0);
  EXPECT_EQ(cuts->layers, (Cuts{{0, 1}, {1, 4}, {4, 7}, {7, 8}})) << "only the last cut moves";
}

// What it cannot judge it leaves: a stage that measured nothing, cuts that do
// not cover the layers.
TEST(StageRebalanceTest, NothingIsProposedFromMeasuresItCannotUse) {
  const std::vector<double> weights(4, 1.0);
  EXPECT_FALSE(RebalanceStages(std::vector<StageMeasure>{{0, 2, 0.0}, {2, 4, 3.0}}, weights, 0.1).has_value());
  EXPECT_FALSE(RebalanceStages(std::vector<StageMeasure>{{0, 2, 1.0}, {2, 3, 3.0}}, weights, 0.1).has_value());
  EXPECT_FALSE(RebalanceStages(std::vector<StageMeasure>{{0, 4, 1.0}}, weights, 0.1).has_value());
}

// Four layers alike (3 ms a sample forward and back; the third's output
// `third_out` bytes a sample), a batch of 8 in 4 micro-batches, two stages
// of two layers on devices of speeds 1 and `second_speed`, the second's link
// `second_link` bytes a second each way (0: not limited).
PipelineProblem TwoDeviceProblem(double second_speed, double second_link, int64_t third_out) {
  PipelineProblem problem;
  for (int l = 0; l < 4; ++l) {
    problem.layers.push_back({"layer" + std::to_string(l), 1e-3, 2e-3, 400, l == 2 ? third_out : 10, {}, 0, ""});
  }
  problem.devices = {{"fast", 1, 0, 0, 0}, {"slowed", second_speed, 0, second_link, second_link}};
  problem.batch_size = 8;
  return problem;
}

const std::vector<PipelineStage> kTwoByTwo = {{0, 2, {0}}, {2, 4, {1}}};

// The second device measured at a quarter of its speed: the cost model moves
// a layer off it, as compute alone would, and predicts the whole step.
TEST(StageRecutTest, ASlowedStageGivesALayerToItsNeighbourByTheCostModel) {
  const PipelineProblem problem = TwoDeviceProblem(0.25, 0, 10);
  const PipelineCostModel model(problem);
  auto cuts = RecutStages(model, kTwoByTwo, 4, 0.1);
  ASSERT_TRUE(cuts.has_value());
  EXPECT_EQ(cuts->layers, (Cuts{{0, 3}, {3, 4}}));
  std::vector<PipelineStage> moved = kTwoByTwo;
  moved[0].end_layer = moved[1].first_layer = 3;
  EXPECT_DOUBLE_EQ(cuts->predicted_s, model.Plan(moved, 4)->step_s);
  EXPECT_DOUBLE_EQ(cuts->now_s, model.Plan(kTwoByTwo, 4)->step_s);
  EXPECT_LT(cuts->predicted_s, 0.6 * cuts->now_s);
  // Moved, nothing moves again.
  EXPECT_FALSE(RecutStages(model, moved, 4, 0.1).has_value());
}

// The same device on a thin link, where cutting after the third layer would
// send its outputs, 10 kB a sample, and their gradients over it: compute
// alone moves the layer (RebalanceStages), the cost model keeps it.
TEST(StageRecutTest, ACutThatWouldSendMoreThanTheLinkCarriesIsNotProposed) {
  const PipelineProblem problem = TwoDeviceProblem(0.25, 1e4, 10'000);
  const PipelineCostModel model(problem);
  EXPECT_FALSE(RecutStages(model, kTwoByTwo, 4, 0.1).has_value());
  const std::vector<StageMeasure> measured = {{0, 2, 1.0}, {2, 4, 4.0}};
  EXPECT_TRUE(RebalanceStages(measured, std::vector<double>(4, 1.0), 0.1).has_value()) << "compute alone would";
  // With the third layer's outputs as small as the others', it moves.
  const PipelineProblem small = TwoDeviceProblem(0.25, 1e4, 10);
  ASSERT_TRUE(RecutStages(PipelineCostModel(small), kTwoByTwo, 4, 0.1).has_value());
}

// Balanced stages stay; stages that do not cover the layers, or a
// micro-batch count that does not divide the batch, propose nothing.
TEST(StageRecutTest, NothingIsProposedForBalancedStagesOrWhatItCannotScore) {
  const PipelineProblem problem = TwoDeviceProblem(1, 0, 10);
  const PipelineCostModel model(problem);
  EXPECT_FALSE(RecutStages(model, kTwoByTwo, 4, 0.1).has_value());
  const PipelineProblem slowed = TwoDeviceProblem(0.25, 0, 10);
  const PipelineCostModel slowed_model(slowed);
  EXPECT_FALSE(RecutStages(slowed_model, kTwoByTwo, 3, 0.1).has_value());
  EXPECT_FALSE(RecutStages(slowed_model, std::vector<PipelineStage>{{0, 2, {0}}, {2, 3, {1}}}, 4, 0.1).has_value());
}

}  // namespace
}  // namespace edgetrain

#include "core/chained_passes.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

LayerCost Timed(const char* name, std::vector<LayerPass> passes) {
  LayerCost layer;
  layer.name = name;
  layer.passes = std::move(passes);
  return layer;
}

// A stage of the last layer alone costs its layer and the stage's own: the
// difference, never below 0, at the sizes both were timed.
TEST(ChainedPassesTest, AStagesOwnPassIsTheLastLayerAloneLessItsLayer) {
  const LayerCost last = Timed("fc", {{1, 1e-4, 2e-4}, {4, 2e-4, 3e-4}});
  const std::vector<LayerPass> alone = {{1, 6e-4, 9e-4}, {2, 7e-4, 1e-3}, {4, 1e-4, 8e-4}};
  StagePassCost own;
  own.passes = StageOwnPasses(last, alone);
  ASSERT_EQ(own.passes.size(), 2u) << "2 samples: the layer was not timed there";
  EXPECT_EQ(own.passes[0].samples, 1);
  EXPECT_DOUBLE_EQ(own.passes[0].forward_s, 5e-4);
  EXPECT_DOUBLE_EQ(own.passes[0].backward_s, 7e-4);
  EXPECT_EQ(own.passes[1].samples, 4);
  EXPECT_DOUBLE_EQ(own.passes[1].forward_s, 0) << "a stage measured faster than its layer costs nothing of its own";
  EXPECT_DOUBLE_EQ(own.passes[1].backward_s, 5e-4);
}

// The chain less the stage's own cost back to back, shared by the layers'
// time; a size too large to chain takes the ratios of the largest chained
// below it. The stage's own after a pause is never less than back to back.
TEST(ChainedPassesTest, TheLayersSumToTheChainLessTheStagesOwn) {
  std::vector<LayerCost> layers = {Timed("conv", {{1, 1e-3, 2e-3}, {2, 2e-3, 4e-3}, {4, 4e-3, 8e-3}}),
                                   Timed("fc", {{1, 1e-3, 2e-3}, {2, 2e-3, 4e-3}, {4, 4e-3, 8e-3}})};
  const std::vector<LayerPass> chained = {{1, 5e-3, 9e-3}, {2, 7e-3, 12e-3}};
  StagePassCost own;
  own.back_to_back = {{1, 1e-3, 1e-3}, {2, 1e-3, 2e-3}};
  own.passes = {{1, 3e-3, 4e-3}, {2, 0.5e-3, 5e-3}};
  ScaleToTheChain(layers, chained, own);
  EXPECT_DOUBLE_EQ(own.passes[0].forward_s, 3e-3) << "after a pause as timed";
  EXPECT_DOUBLE_EQ(own.passes[1].forward_s, 1e-3) << "lifted to back to back's";
  // 1 sample: (5 - 1) ms forward over 2 ms of layers, 2x; (9 - 1) over 4, 2x.
  EXPECT_DOUBLE_EQ(layers[0].passes[0].forward_s, 2e-3);
  EXPECT_DOUBLE_EQ(layers[1].passes[0].backward_s, 4e-3);
  // 2 samples: (7 - 1) over 4, 1.5x; (12 - 2) over 8, 1.25x.
  EXPECT_DOUBLE_EQ(layers[0].passes[1].forward_s + layers[1].passes[1].forward_s, 6e-3);
  EXPECT_DOUBLE_EQ(layers[0].passes[1].backward_s + layers[1].passes[1].backward_s, 10e-3);
  // 4 samples, not chained: 2 samples' ratios.
  EXPECT_DOUBLE_EQ(layers[0].passes[2].forward_s, 6e-3);
  EXPECT_DOUBLE_EQ(layers[0].passes[2].backward_s, 10e-3);
  EXPECT_DOUBLE_EQ(layers[0].forward_s, 6e-3 / 4) << "a sample's, at the largest pass";
}

// A stage's own cost back to back is held to what the chain measured beyond
// the layers: a stage of one cheap layer timed as dear as the whole chain is
// noise, and the layers keep their own time.
TEST(ChainedPassesTest, TheStagesOwnIsHeldToWhatTheChainMeasuredBeyondTheLayers) {
  std::vector<LayerCost> layers = {Timed("conv", {{1, 2e-3, 2e-3}}), Timed("fc", {{1, 2e-3, 2e-3}})};
  const std::vector<LayerPass> chained = {{1, 5e-3, 3e-3}};
  StagePassCost own;
  own.back_to_back = {{1, 2e-3, 0.5e-3}};
  own.passes = {{1, 3.5e-3, 1e-3}};
  ScaleToTheChain(layers, chained, own);
  EXPECT_DOUBLE_EQ(own.back_to_back[0].forward_s, 1e-3) << "5 ms chained beyond the layers' 4";
  EXPECT_DOUBLE_EQ(own.back_to_back[0].backward_s, 0) << "the chain measured less than the layers";
  EXPECT_DOUBLE_EQ(own.passes[0].forward_s, 3.5e-3) << "after a pause, as timed";
  EXPECT_DOUBLE_EQ(layers[0].passes[0].forward_s, 2e-3) << "(5 - 1) over 4 ms: as timed";
  EXPECT_DOUBLE_EQ(layers[0].passes[0].backward_s, 1.5e-3) << "3 over 4 ms: the chain's, as before a stage's own";
}

// A size the chain could not train on (a BatchNorm1d on one sample), with
// no chained size below it, stays as timed; no chain at all changes nothing.
TEST(ChainedPassesTest, SizesBelowEveryChainedOneStayAsTimed) {
  std::vector<LayerCost> layers = {Timed("bn", {{1, 1e-3, 1e-3}, {2, 1e-3, 1e-3}})};
  StagePassCost none;
  ScaleToTheChain(layers, std::vector<LayerPass>{{2, 3e-3, 2e-3}}, none);
  EXPECT_DOUBLE_EQ(layers[0].passes[0].forward_s, 1e-3);
  EXPECT_DOUBLE_EQ(layers[0].passes[1].forward_s, 3e-3);
  std::vector<LayerCost> unchained = {Timed("fc", {{1, 1e-3, 1e-3}})};
  ScaleToTheChain(unchained, {}, none);
  EXPECT_DOUBLE_EQ(unchained[0].passes[0].backward_s, 1e-3);
}

}  // namespace
}  // namespace edgetrain

#include "core/layer_cost.h"

#include <gtest/gtest.h>

#include "core/job_spec.h"

namespace edgetrain {
namespace {

TEST(LayerCostTest, TheWireFormatReadsBackWhatWasWritten) {
  const std::vector<LayerCost> layers = {
      {"conv1", 1.5e-4, 3.25e-4, 640, 50176, {{1, 4e-4, 5e-4}, {8, 1.2e-3, 2.6e-3}}, 2.5e-6, ""},
      {"classifier", 5e-7, 0, 5160, 40, {}, 0, "net.pt is a TwoPaths, whose forward may use its children in any order"}};
  const auto back = DecodeLayerCosts(EncodeLayerCosts(layers));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 2u);
  for (size_t i = 0; i < layers.size(); ++i) {
    EXPECT_EQ((*back)[i].name, layers[i].name);
    EXPECT_EQ((*back)[i].forward_s, layers[i].forward_s);
    EXPECT_EQ((*back)[i].backward_s, layers[i].backward_s);
    EXPECT_EQ((*back)[i].parameter_bytes, layers[i].parameter_bytes);
    EXPECT_EQ((*back)[i].activation_bytes, layers[i].activation_bytes);
    EXPECT_EQ((*back)[i].optimizer_s, layers[i].optimizer_s);
    EXPECT_EQ((*back)[i].cannot_cut, layers[i].cannot_cut);
    ASSERT_EQ((*back)[i].passes.size(), layers[i].passes.size());
    for (size_t k = 0; k < layers[i].passes.size(); ++k) {
      EXPECT_EQ((*back)[i].passes[k].samples, layers[i].passes[k].samples);
      EXPECT_EQ((*back)[i].passes[k].forward_s, layers[i].passes[k].forward_s);
      EXPECT_EQ((*back)[i].passes[k].backward_s, layers[i].passes[k].backward_s);
    }
  }
}

// The agent's messages, timed beside the layers, travel with them; a profile
// without them (an older agent's) plans them as free; a figure that is not a
// time or a rate is refused by its name.
TEST(LayerCostTest, TheTransportsFiguresTravelWithTheLayers) {
  const std::vector<LayerCost> layers = {{"fc", 5e-7, 1e-6, 5160, 40, {}, 0, ""}};
  const auto back = DecodeTransportCost(EncodeLayerCosts(layers, {3.4e-5, 1.36e9}));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->message_s, 3.4e-5);
  EXPECT_EQ(back->bytes_per_s, 1.36e9);
  const auto fitted = EncodeLayerCostsWithin(layers, 4096, {3.4567e-5, 1.36789e9});
  ASSERT_TRUE(fitted.ok());
  EXPECT_DOUBLE_EQ(DecodeTransportCost(*fitted)->message_s, 3.46e-5) << *fitted;
  const auto none = DecodeTransportCost(EncodeLayerCosts(layers));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->message_s, 0);
  EXPECT_EQ(none->bytes_per_s, 0);
  EXPECT_EQ(EncodeLayerCosts(layers).find("transport"), std::string::npos);
  const auto bad = DecodeTransportCost(R"({"layers":[],"transport":{"messageSeconds":-1}})");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("transport.messageSeconds"), std::string::npos) << bad.status().ToString();
}

// A stage's own passes travel with the layers; to fit a pod's message they
// are thinned first, to one size, never to nothing.
TEST(LayerCostTest, AStagesOwnPassesTravelWithTheLayers) {
  std::vector<LayerCost> layers = {{"fc", 5e-7, 1e-6, 5160, 40, {}, 0, ""}};
  for (int samples = 1; samples <= 64; samples *= 2) layers[0].passes.push_back({samples, 1e-5, 2e-5});
  StagePassCost stage;
  for (int samples = 1; samples <= 64; samples *= 2) {
    stage.passes.push_back({samples, 2.5e-4, 3.0e-4 + samples * 1e-6});
    stage.back_to_back.push_back({samples, 1.5e-4, 1.0e-4});
  }
  stage.pause_s = 0.02;
  const std::string json = EncodeLayerCosts(layers, {}, stage);
  const auto back = DecodeStagePassCost(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->passes.size(), 7u);
  EXPECT_EQ(back->passes[6].samples, 64);
  EXPECT_DOUBLE_EQ(back->passes[6].backward_s, 3.64e-4);
  ASSERT_EQ(back->back_to_back.size(), 7u);
  EXPECT_DOUBLE_EQ(back->pause_s, 0.02);
  EXPECT_TRUE(DecodeStagePassCost(EncodeLayerCosts(layers))->passes.empty()) << "not measured: none";
  EXPECT_EQ(EncodeLayerCosts(layers).find("stagePasses"), std::string::npos);

  // A little too long: the stage's thinned first, the layers' kept.
  auto fitted = EncodeLayerCostsWithin(layers, json.size() - 60, {}, stage);
  ASSERT_TRUE(fitted.ok()) << fitted.status().ToString();
  EXPECT_EQ(DecodeLayerCosts(*fitted)->at(0).passes.size(), 7u);
  EXPECT_LT(DecodeStagePassCost(*fitted)->passes.size(), 7u);
  EXPECT_GE(DecodeStagePassCost(*fitted)->passes.size(), 1u);
  // Too long for any of the layers' passes: the stage's at one size each.
  const std::vector<LayerCost> untimed = {{"fc", 5e-7, 1e-6, 5160, 40, {}, 0, ""}};
  const size_t bare = EncodeLayerCosts(untimed).size();
  fitted = EncodeLayerCostsWithin(layers, bare + 200, {}, stage);
  ASSERT_TRUE(fitted.ok()) << fitted.status().ToString();
  EXPECT_TRUE(DecodeLayerCosts(*fitted)->at(0).passes.empty());
  const auto thinned = DecodeStagePassCost(*fitted);
  ASSERT_TRUE(thinned.ok());
  ASSERT_EQ(thinned->passes.size(), 1u) << *fitted;
  EXPECT_EQ(thinned->passes.front().samples, 1);
  EXPECT_EQ(thinned->back_to_back.size(), 1u);

  // Between the sizes and outside them.
  EXPECT_DOUBLE_EQ(StagePassSeconds(back->passes, 0), 0);
  EXPECT_DOUBLE_EQ(StagePassSeconds(back->passes, 0.5), 2.5e-4 + 3.01e-4) << "below the first size, the first's";
  EXPECT_DOUBLE_EQ(StagePassSeconds(back->passes, 3), 2.5e-4 + 3.03e-4) << "halfway from 2 samples' to 4's";
  EXPECT_DOUBLE_EQ(StagePassSeconds(back->passes, 100), 2.5e-4 + 3.64e-4) << "past the last, the last's";
  EXPECT_DOUBLE_EQ(StagePassSeconds(std::vector<LayerPass>{}, 8), 0);

  const auto bad = DecodeStagePassCost(R"({"layers":[],"stagePasses":[{"samples":2,"forwardSeconds":-1}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("stagePasses[0].forwardSeconds"), std::string::npos) << bad.status().ToString();
  EXPECT_FALSE(DecodeStagePassCost(R"({"stagePauseSeconds":-0.02})").ok());
}

// Linear between the passes timed, in proportion outside them; a layer whose
// passes were not timed is in proportion at its per-sample figures.
TEST(LayerCostTest, APassCostsWhatWasTimedAndLinearlyBetween) {
  const LayerCost timed{"conv", 1e-3, 2e-3, 0, 0, {{2, 1e-3, 3e-3}, {8, 2e-3, 6e-3}}, 0, ""};
  EXPECT_DOUBLE_EQ(PassSeconds(timed, 0), 0);
  EXPECT_DOUBLE_EQ(PassSeconds(timed, 1), 2e-3) << "half of 2 samples' 4 ms";
  EXPECT_DOUBLE_EQ(PassSeconds(timed, 2), 4e-3);
  EXPECT_DOUBLE_EQ(PassSeconds(timed, 5), 6e-3) << "halfway from 4 ms to 8 ms";
  EXPECT_DOUBLE_EQ(PassSeconds(timed, 8), 8e-3);
  EXPECT_DOUBLE_EQ(PassSeconds(timed, 16), 16e-3) << "at 8 samples' 1 ms a sample";
  const LayerCost plain{"fc", 1e-3, 2e-3, 0, 0, {}, 0, ""};
  EXPECT_DOUBLE_EQ(PassSeconds(plain, 4), 12e-3);
}

// A pod's termination message holds 4096 bytes: the layers are written to
// three figures, then with fewer timed passes (the fewest and most samples
// kept), then without them, and refused when even that is too long.
TEST(LayerCostTest, LayersFitALimitByFiguresThenPassesThenNotAtAll) {
  std::vector<LayerCost> layers;
  for (int l = 0; l < 12; ++l) {
    LayerCost layer{"conv" + std::to_string(l + 1), 7.3293125e-06, 8.357109375e-06, 640, 50176, {}, 0, ""};
    for (int samples = 1; samples <= 64; samples *= 2) {
      layer.passes.push_back({samples, 6.9243123e-05 * samples, 5.1626987e-05 * samples});
    }
    layers.push_back(layer);
  }
  const size_t whole = EncodeLayerCosts(layers).size();

  auto fitted = EncodeLayerCostsWithin(layers, whole);
  ASSERT_TRUE(fitted.ok()) << fitted.status().ToString();
  auto back = DecodeLayerCosts(*fitted);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_LT(fitted->size(), whole) << "to three figures";
  EXPECT_EQ((*back)[0].passes.size(), 7u);
  EXPECT_DOUBLE_EQ((*back)[0].forward_s, 7.33e-06);
  EXPECT_DOUBLE_EQ((*back)[0].passes[2].backward_s, 2.07e-04) << "5.1626987e-05 x 4";

  fitted = EncodeLayerCostsWithin(layers, 4096);
  ASSERT_TRUE(fitted.ok()) << fitted.status().ToString();
  EXPECT_LE(fitted->size(), 4096u);
  back = DecodeLayerCosts(*fitted);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 12u);
  const auto& passes = (*back)[11].passes;
  ASSERT_GE(passes.size(), 2u);
  ASSERT_LT(passes.size(), 7u);
  EXPECT_EQ(passes.front().samples, 1);
  EXPECT_EQ(passes.back().samples, 64);
  EXPECT_EQ((*back)[11].parameter_bytes, 640);

  fitted = EncodeLayerCostsWithin(layers, 1500);
  ASSERT_TRUE(fitted.ok()) << fitted.status().ToString();
  back = DecodeLayerCosts(*fitted);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE((*back)[0].passes.empty()) << "only the per-sample figures fit";

  fitted = EncodeLayerCostsWithin(layers, 200);
  ASSERT_FALSE(fitted.ok());
  EXPECT_EQ(fitted.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(fitted.status().message().find("12 layers"), std::string::npos) << fitted.status().message();
}

TEST(LayerCostTest, AnythingElseIsRefusedNamingTheField) {
  struct Case {
    const char* json;
    const char* error;
  } cases[] = {
      {"not json", "layers: not a JSON object"},
      {R"({"layers": []})", "layers: expected a non-empty array"},
      {R"({"layers": [{"forwardSeconds": 1, "backwardSeconds": 1, "parameterBytes": 1, "activationBytes": 1}]})",
       "layers[0].name: expected the layer's name"},
      {R"({"layers": [{"name": "a", "forwardSeconds": -1, "backwardSeconds": 1, "parameterBytes": 1,
                       "activationBytes": 1}]})",
       "layers[0].forwardSeconds: expected seconds"},
      {R"({"layers": [{"name": "a", "forwardSeconds": 1, "backwardSeconds": 1, "parameterBytes": 1.5,
                       "activationBytes": 1}]})",
       "layers[0].parameterBytes: expected bytes"},
      {R"({"layers": [{"name": "a", "forwardSeconds": 1, "backwardSeconds": 1, "parameterBytes": 1}]})",
       "layers[0].activationBytes: expected bytes"},
      {R"({"layers": [{"name": "a", "forwardSeconds": 1, "backwardSeconds": 1, "parameterBytes": 1,
                       "activationBytes": 1, "passes": {}}]})",
       "layers[0].passes: expected an array of timed passes"},
      {R"({"layers": [{"name": "a", "forwardSeconds": 1, "backwardSeconds": 1, "parameterBytes": 1,
                       "activationBytes": 1, "passes": [{"samples": 0, "forwardSeconds": 1, "backwardSeconds": 1}]}]})",
       "layers[0].passes[0].samples: expected a whole number of samples >= 1"},
      {R"({"layers": [{"name": "a", "forwardSeconds": 1, "backwardSeconds": 1, "parameterBytes": 1,
                       "activationBytes": 1, "passes": [{"samples": 4, "forwardSeconds": 1, "backwardSeconds": 1},
                                                        {"samples": 2, "forwardSeconds": 1, "backwardSeconds": 1}]}]})",
       "layers[0].passes[1].samples: passes go from fewest samples to most, each once"},
      {R"({"layers": [{"name": "a", "forwardSeconds": 1, "backwardSeconds": 1, "parameterBytes": 1,
                       "activationBytes": 1, "passes": [{"samples": 4, "forwardSeconds": 1}]}]})",
       "layers[0].passes[0].backwardSeconds: expected seconds"},
      {R"({"layers": [{"name": "a", "forwardSeconds": 1, "backwardSeconds": 1, "parameterBytes": 1,
                       "activationBytes": 1, "optimizerSeconds": "1"}]})",
       "layers[0].optimizerSeconds: expected seconds"},
  };
  for (const Case& c : cases) {
    const auto decoded = DecodeLayerCosts(c.json);
    ASSERT_FALSE(decoded.ok()) << c.json;
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(decoded.status().message().find(c.error), std::string::npos) << decoded.status().message();
  }
}

// The model alone, as `edgetrain-agent profile-layers --model` takes it.
TEST(LayerCostTest, AModelSpecDecodesAloneWithItsFieldsNamed) {
  const auto vgg = DecodeModelSpec(R"({"name": "vgg", "widths": [8, 16]})");
  ASSERT_TRUE(vgg.ok()) << vgg.status().ToString();
  EXPECT_EQ(vgg->kind, ModelKind::kVgg);
  EXPECT_EQ(vgg->widths, (std::vector<int>{8, 16}));
  EXPECT_EQ(DecodeModelSpec(R"({"name": "rnn"})").status().message(), "model.name: unknown value \"rnn\"");
  EXPECT_EQ(DecodeModelSpec("[]").status().message(), "model: not a JSON object");
}

// The data alone as a manifest writes it, as `--data` takes it: what the CRD
// defaults is filled in (it was refused for its partition's kind: a new
// user's trial).
TEST(LayerCostTest, ADataSpecDecodesAloneAsAManifestWritesIt) {
  const auto written = DecodeDataSpec(R"({"dataset": "digits"})");
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written->dataset, DatasetName::kDigits);
  EXPECT_EQ(written->batch_size, 64) << "the CRD's default";
  EXPECT_EQ(written->partition.kind, PartitionKind::kIid);
  const auto skewed = DecodeDataSpec(R"({"dataset": "digits", "batchSize": 32, "partition": {"alpha": 0.5}})");
  ASSERT_TRUE(skewed.ok()) << skewed.status().ToString();
  EXPECT_EQ(skewed->batch_size, 32);
  EXPECT_EQ(DecodeDataSpec("[]").status().message(), "data: not a JSON object");
}

}  // namespace
}  // namespace edgetrain

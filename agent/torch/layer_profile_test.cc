#include "agent/torch/layer_profile.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>

#include <gtest/gtest.h>

#include "agent/torch/test_models.h"
#include "agent/torch/trainer.h"

namespace edgetrain::agent {
namespace {

using testing::Cnn;
using testing::kDigits;
using testing::kFashion;
using testing::Mlp;
using testing::Vgg;

// Every reading of the time is one tick after the last: each timed pass, which
// reads it before and after, takes exactly one tick, whatever the machine does.
class TickingClock final : public Clock {
 public:
  explicit TickingClock(Duration tick) : tick_(tick) {}
  TimePoint Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_ += tick_;
  }
  void SleepUntil(TimePoint) override {}

 protected:
  void WaitOnce(ClockCondition&, std::unique_lock<std::mutex>&, TimePoint) override {}
  void NotifyAll(ClockCondition&) override {}

 private:
  const Duration tick_;
  mutable std::mutex mu_;
  mutable TimePoint now_{};
};

std::vector<LayerCost> Profile(const ModelSpec& spec, const DatasetInfo& data, LayerProfileOptions options = {}) {
  auto layers = ProfileLayers(spec, data, options);
  EXPECT_TRUE(layers.ok()) << layers.status().ToString();
  return layers.ok() ? *layers : std::vector<LayerCost>{};
}

std::vector<std::string> Names(const std::vector<LayerCost>& layers) {
  std::vector<std::string> names;
  for (const auto& l : layers) names.push_back(l.name);
  return names;
}

// Quick to time: a few samples, one timed pass.
LayerProfileOptions Quick() {
  LayerProfileOptions o;
  o.batch_size = 4;
  o.repetitions = 1;
  return o;
}

TEST(LayerProfileTest, EachModelKindsLayersInOrderByName) {
  EXPECT_EQ(Names(Profile(Mlp({32, 16}), kDigits, Quick())), (std::vector<std::string>{"fc1", "fc2", "classifier"}));
  EXPECT_EQ(Names(Profile(Cnn({4, 8}), kDigits, Quick())), (std::vector<std::string>{"conv1", "conv2", "classifier"}));
  EXPECT_EQ(Names(Profile(Vgg({4, 4, 8}), kDigits, Quick())),
            (std::vector<std::string>{"conv1", "conv2", "conv3", "classifier"}));
  EXPECT_EQ(Profile(Vgg({}), kFashion, Quick()).size(), 9u) << "the default: eight convs and the classifier";
}

TEST(LayerProfileTest, ParameterBytesSumToTheWholeModels) {
  for (const auto& [spec, data] : {std::pair{Mlp({32, 16}), kDigits}, std::pair{Cnn({4, 8}), kDigits},
                                   std::pair{Vgg({4, 4, 8}), kDigits}, std::pair{Vgg({}), kFashion}}) {
    SCOPED_TRACE(std::string(NameOf(spec.kind)));
    std::vector<LayerCost> layers = Profile(spec, data, Quick());
    auto trainer = CreateTrainer({spec, data, 1, 1});
    ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
    int64_t bytes = 0;
    for (const auto& l : layers) bytes += l.parameter_bytes;
    EXPECT_EQ(bytes, 4 * (*trainer)->ParameterCount());
  }
}

TEST(LayerProfileTest, ASmallVggsSizesAsComputedByHand) {
  // 8x8 digits: conv1 keeps 8x8; conv2 ends the first block, pooled to 4x4;
  // conv3, a last block of one, pooled to 2x2; then 8 * 2 * 2 features -> 10.
  std::vector<LayerCost> layers = Profile(Vgg({4, 6, 8}), kDigits, Quick());
  ASSERT_EQ(layers.size(), 4u);
  std::vector<int64_t> activations, parameters;
  for (const auto& l : layers) {
    activations.push_back(l.activation_bytes);
    parameters.push_back(l.parameter_bytes);
  }
  EXPECT_EQ(activations, (std::vector<int64_t>{4 * 4 * 8 * 8, 4 * 6 * 4 * 4, 4 * 8 * 2 * 2, 4 * 10}));
  EXPECT_EQ(parameters, (std::vector<int64_t>{4 * (1 * 4 * 9 + 4), 4 * (4 * 6 * 9 + 6), 4 * (6 * 8 * 9 + 8),
                                              4 * (8 * 2 * 2 * 10 + 10)}));
}

TEST(LayerProfileTest, EveryLayerTakesTime) {
  for (const auto& l : Profile(Vgg({4, 4, 8}), kDigits, Quick())) {
    EXPECT_GT(l.forward_s, 0) << l.name;
    EXPECT_GT(l.backward_s, 0) << l.name;
  }
}

TEST(LayerProfileTest, ASlowerDeviceTakesSlowdownTimesTheMeasuredTime) {
  const Duration tick = std::chrono::milliseconds(8);
  LayerProfileOptions options = Quick();
  options.repetitions = 3;
  options.chained = false;  // each layer's passes as timed (the chain's scaling: below)
  TickingClock plain_clock(tick), slow_clock(tick);
  options.clock = &plain_clock;
  std::vector<LayerCost> plain = Profile(Vgg({4, 4, 8}), kDigits, options);
  options.clock = &slow_clock;
  options.slowdown = 3;
  std::vector<LayerCost> slow = Profile(Vgg({4, 4, 8}), kDigits, options);
  ASSERT_EQ(plain.size(), slow.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    SCOPED_TRACE(plain[i].name);
    // A pass takes one tick, over 4 samples.
    EXPECT_DOUBLE_EQ(plain[i].forward_s, 0.008 / 4);
    EXPECT_DOUBLE_EQ(plain[i].backward_s, 0.008 / 4);
    EXPECT_DOUBLE_EQ(slow[i].forward_s, 3 * plain[i].forward_s);
    EXPECT_DOUBLE_EQ(slow[i].backward_s, 3 * plain[i].backward_s);
    // Each pass, whatever its size, took the tick.
    ASSERT_EQ(slow[i].passes.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(slow[i].passes[k].samples, 1 << k);
      EXPECT_DOUBLE_EQ(plain[i].passes[k].forward_s, 0.008);
      EXPECT_DOUBLE_EQ(slow[i].passes[k].backward_s, 3 * 0.008);
    }
    EXPECT_EQ(slow[i].parameter_bytes, plain[i].parameter_bytes) << "a slower device holds the same layer";
    EXPECT_EQ(slow[i].activation_bytes, plain[i].activation_bytes);
  }
}

// Each size's layers scaled so that they sum to the whole model's chained
// pass at that size, forward and backward apart, on a slower device too: on
// a clock where every pass takes a tick, a chain of three layers takes one
// tick forward and one back, and each layer a third of each; a size too
// large to chain takes the ratios of the largest chained.
TEST(LayerProfileTest, EachSizesLayersSumToTheWholeModelsChainedPass) {
  const Duration tick = std::chrono::milliseconds(9);
  LayerProfileOptions options = Quick();
  options.repetitions = 3;
  options.slowdown = 2;
  TickingClock clock(tick);
  options.clock = &clock;
  // Outputs of 32, 16 and 10 floats: 928 bytes a sample kept, as estimated.
  // Only the pass of 1 sample is chained; those of 2 and 4 take its ratios.
  options.chain_stash_bytes = 1000;
  // The last layer's passes as a stage of its own after a pause (and again
  // back to back, as the chain's): 4 passes (one untimed) of 10 ms at least.
  options.pause_s = 0.01;
  StagePassCost own;
  const auto began = std::chrono::steady_clock::now();
  auto profiled = ProfileLayers(Mlp({32, 16}), kDigits, options, &own);
  EXPECT_GE(std::chrono::steady_clock::now() - began, std::chrono::milliseconds(40)) << "the pauses were slept";
  ASSERT_TRUE(profiled.ok()) << profiled.status().ToString();
  const std::vector<LayerCost>& layers = *profiled;
  // The last layer alone as a stage takes a tick each way, as the layer
  // did: nothing of the stage's own, at the one size chained.
  ASSERT_EQ(own.passes.size(), 1u);
  EXPECT_EQ(own.passes[0].samples, 1);
  EXPECT_DOUBLE_EQ(own.passes[0].forward_s, 0);
  EXPECT_DOUBLE_EQ(own.passes[0].backward_s, 0);
  ASSERT_EQ(own.back_to_back.size(), 1u);
  EXPECT_DOUBLE_EQ(own.back_to_back[0].forward_s, 0);
  EXPECT_DOUBLE_EQ(own.pause_s, 0.01);
  ASSERT_EQ(layers.size(), 3u);
  ASSERT_EQ(layers[0].passes.size(), 3u);
  for (size_t k = 0; k < layers[0].passes.size(); ++k) {
    double forward = 0, backward = 0;
    for (const LayerCost& l : layers) {
      EXPECT_DOUBLE_EQ(l.passes[k].forward_s, 2 * 0.009 / 3) << l.name << " at " << l.passes[k].samples;
      forward += l.passes[k].forward_s;
      backward += l.passes[k].backward_s;
    }
    EXPECT_DOUBLE_EQ(forward, 2 * 0.009) << "the chain's forward, at the device's slowdown";
    EXPECT_DOUBLE_EQ(backward, 2 * 0.009);
  }
  EXPECT_DOUBLE_EQ(layers[0].forward_s, layers[0].passes.back().forward_s / 4) << "a sample's, at the whole batch";
}

OptimizerSpec Adam() {
  OptimizerSpec adam;
  adam.kind = OptimizerKind::kAdam;
  adam.learning_rate = 0.001;
  return adam;
}

TEST(LayerProfileTest, TheOptimizersStepIsTimedOnlyWhenNamedAndSlowsWithTheDevice) {
  const Duration tick = std::chrono::milliseconds(8);
  LayerProfileOptions options = Quick();
  options.chained = false;
  TickingClock plain_clock(tick), slow_clock(tick);
  options.clock = &plain_clock;
  for (const LayerCost& l : Profile(Mlp({32, 16}), kDigits, options)) EXPECT_EQ(l.optimizer_s, 0) << l.name;
  options.optimizer = Adam();
  options.slowdown = 3;
  options.clock = &slow_clock;
  for (const LayerCost& l : Profile(Mlp({32, 16}), kDigits, options)) {
    // A step over every row of the layer reads the clock before and after.
    EXPECT_DOUBLE_EQ(l.optimizer_s, 3 * 0.008) << l.name;
  }
}

TEST(LayerProfileTest, TheOptimizersStepGrowsWithTheLayersWeights) {
  LayerProfileOptions options = Quick();
  options.repetitions = 5;
  options.optimizer = Adam();
  // fc1 holds 784 x 256 weights, the classifier 128 x 10: 150 times fewer.
  const std::vector<LayerCost> layers = Profile(Mlp({256, 128}), kFashion, options);
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_GT(layers[2].optimizer_s, 0);
  EXPECT_GT(layers[0].optimizer_s, 10 * layers[2].optimizer_s);
}

TEST(LayerProfileTest, PassesAreTimedAtEachPowerOfTwoAndTheWholeBatch) {
  EXPECT_EQ(PassSizes(1), (std::vector<int>{1}));
  EXPECT_EQ(PassSizes(4), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(PassSizes(48), (std::vector<int>{1, 2, 4, 8, 16, 32, 48}));
}

// The point of vgg: its layers are uneven enough that where a pipeline cuts
// matters. Computed, its convs differ 16x in multiply-adds, 1,400x with the
// classifier; the timing is held to 10x, two orders of magnitude of margin.
TEST(LayerProfileTest, VggsLayersDifferTenfoldInCostAndSize) {
  std::vector<LayerCost> layers = Profile(Vgg({}), kFashion);
  ASSERT_EQ(layers.size(), 9u);
  auto spread = [&](auto field) {
    std::vector<double> v;
    for (const auto& l : layers) v.push_back(static_cast<double>(field(l)));
    return *std::max_element(v.begin(), v.end()) / *std::min_element(v.begin(), v.end());
  };
  EXPECT_GE(spread([](const LayerCost& l) { return l.activation_bytes; }), 10);
  EXPECT_GE(spread([](const LayerCost& l) { return l.parameter_bytes; }), 10);
  EXPECT_GE(spread([](const LayerCost& l) { return l.forward_s + l.backward_s; }), 10);
  // Where data is big the weights are small, and the reverse.
  EXPECT_GT(layers.front().activation_bytes, 50 * layers[7].activation_bytes);
  EXPECT_LT(layers.front().parameter_bytes * 50, layers[7].parameter_bytes);
}

TEST(LayerProfileTest, RefusesWhatItCannotProfile) {
  LayerProfileOptions faster = Quick();
  faster.slowdown = 0.5;
  EXPECT_EQ(ProfileLayers(Vgg({4}), kDigits, faster).status().code(), StatusCode::kInvalidArgument);
  LayerProfileOptions empty = Quick();
  empty.batch_size = 0;
  EXPECT_EQ(ProfileLayers(Vgg({4}), kDigits, empty).status().code(), StatusCode::kInvalidArgument);
  auto unfit = ProfileLayers(Vgg({}), kDigits, Quick());  // 4 pools on 8x8
  EXPECT_EQ(unfit.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unfit.status().message().find("spec.model.widths"), std::string::npos) << unfit.status().message();
}

}  // namespace
}  // namespace edgetrain::agent

#include "agent/torch/stage_trainer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "agent/data/dataset.h"
#include "agent/torch/test_models.h"
#include "agent/torch/trainer.h"
#include "core/model_shape.h"

namespace edgetrain::agent {
namespace {

using testing::Cnn;
using testing::kDigits;
using testing::kFashion;
using testing::Mlp;
using testing::Vgg;

constexpr uint64_t kSeed = 3;

struct Batch {
  std::vector<float> features;  // n samples laid out as Dataset's
  std::vector<int64_t> labels;
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
};

// A fixed pattern in [0, 1) and labels cycling through the classes: enough for
// fashion-mnist's shapes, whose files the tests do not need.
Batch Pattern(const DatasetInfo& data, int64_t n) {
  Batch b;
  b.features.resize(static_cast<size_t>(n * data.channels * data.height * data.width));
  for (size_t i = 0; i < b.features.size(); ++i) b.features[i] = static_cast<float>((i * 7919) % 256) / 256.0f;
  for (int64_t i = 0; i < n; ++i) b.labels.push_back(i % data.classes);
  return b;
}

// max |a - b| / max |b|: how far a computed vector is from the reference one.
double RelativeDifference(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    diff = std::max(diff, std::abs(double{a[i]} - double{b[i]}));
    scale = std::max(scale, std::abs(double{b[i]}));
  }
  return scale > 0 ? diff / scale : diff;
}

using Stages = std::vector<std::unique_ptr<StageTrainer>>;

// The model cut at `bounds`: stage k runs layers [bounds[k], bounds[k + 1]).
Stages Split(const ModelSpec& spec, const DatasetInfo& data, const std::vector<int>& bounds) {
  Stages stages;
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    auto stage = CreateStageTrainer({spec, data, kSeed, 1, bounds[k], bounds[k + 1]});
    EXPECT_TRUE(stage.ok()) << stage.status().ToString();
    if (!stage.ok()) return {};
    stages.push_back(std::move(*stage));
  }
  return stages;
}

std::string Describe(const std::vector<int>& bounds) {
  std::string s = "layers";
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    s += " [" + std::to_string(bounds[k]) + "," + std::to_string(bounds[k + 1]) + ")";
  }
  return s;
}

std::unique_ptr<Trainer> WholeModel(const ModelSpec& spec, const DatasetInfo& data) {
  auto trainer = CreateTrainer({spec, data, kSeed, 1});
  EXPECT_TRUE(trainer.ok()) << trainer.status().ToString();
  return trainer.ok() ? std::move(*trainer) : nullptr;
}

enum class Schedule {
  kFillThenDrain,          // every forward in order, then every backward in reverse (GPipe)
  kOneForwardOneBackward,  // 1F1B: stage s of S forwards S - s - 1 ahead, then alternates
};

// One stage's operations in a step: (forward?, micro-batch).
std::vector<std::pair<bool, int>> Operations(Schedule schedule, int stage, int stages, int micro_batches) {
  std::vector<std::pair<bool, int>> ops;
  if (schedule == Schedule::kFillThenDrain) {
    for (int i = 0; i < micro_batches; ++i) ops.emplace_back(true, i);
    for (int i = micro_batches - 1; i >= 0; --i) ops.emplace_back(false, i);
    return ops;
  }
  const int warmup = std::min(stages - stage - 1, micro_batches);
  for (int i = 0; i < warmup; ++i) ops.emplace_back(true, i);
  for (int i = 0; i + warmup < micro_batches; ++i) {
    ops.emplace_back(true, i + warmup);
    ops.emplace_back(false, i);
  }
  for (int i = micro_batches - warmup; i < micro_batches; ++i) ops.emplace_back(false, i);
  return ops;
}

struct StepResult {
  double loss = 0;              // the micro-batches' losses weighted by their sizes
  std::vector<float> gradient;  // every stage's Gradients(), in stage order
  std::vector<int> most_in_flight;  // per stage
};

// One step of the pipeline on `batch`, cut into `micro_batches` parts as even
// as possible, each stage running its schedule as far as its inputs allow,
// round after round, as stages on their own devices would.
StepResult PipelineStep(Stages& stages, const Batch& batch, int micro_batches, Schedule schedule) {
  const int count = static_cast<int>(stages.size());
  const int64_t n = batch.size();
  std::vector<int64_t> first_sample, samples;
  for (int i = 0; i < micro_batches; ++i) {
    first_sample.push_back(n * i / micro_batches);
    samples.push_back(n * (i + 1) / micro_batches - first_sample.back());
  }
  const int64_t sample_floats = stages.front()->InputSize();
  // What arrived at stage s for micro-batch i: activations from s - 1, output
  // gradients from s + 1.
  std::vector<std::map<int, std::vector<float>>> activations(count), gradients(count);
  for (int i = 0; i < micro_batches; ++i) {
    auto begin = batch.features.begin() + first_sample[i] * sample_floats;
    activations[0][i].assign(begin, begin + samples[i] * sample_floats);
  }
  std::vector<std::vector<std::pair<bool, int>>> ops;
  std::vector<size_t> next(count, 0);
  for (int s = 0; s < count; ++s) ops.push_back(Operations(schedule, s, count, micro_batches));

  StepResult result;
  result.most_in_flight.assign(count, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < count; ++s) {
      StageTrainer& stage = *stages[s];
      for (; next[s] < ops[s].size(); ++next[s]) {
        const auto [forward, i] = ops[s][next[s]];
        const bool last = s + 1 == count;
        if (forward) {
          if (!activations[s].contains(i)) break;
          auto out = stage.Forward(i, activations[s][i]);
          EXPECT_TRUE(out.ok()) << out.status().ToString();
          if (!out.ok()) return result;
          EXPECT_EQ(static_cast<int64_t>(out->size()), samples[i] * stage.OutputSize());
          if (!last) activations[s + 1][i] = std::move(*out);
        } else if (last) {
          std::span<const int64_t> labels(batch.labels.data() + first_sample[i], static_cast<size_t>(samples[i]));
          auto back = stage.BackwardFromLoss(i, labels, static_cast<double>(samples[i]) / static_cast<double>(n));
          EXPECT_TRUE(back.ok()) << back.status().ToString();
          if (!back.ok()) return result;
          result.loss += back->loss * static_cast<double>(samples[i]) / static_cast<double>(n);
          EXPECT_EQ(back->input_gradient.size(), s == 0 ? 0u : static_cast<size_t>(samples[i] * stage.InputSize()));
          if (s > 0) gradients[s - 1][i] = std::move(back->input_gradient);
        } else {
          if (!gradients[s].contains(i)) break;
          auto back = stage.Backward(i, gradients[s][i]);
          EXPECT_TRUE(back.ok()) << back.status().ToString();
          if (!back.ok()) return result;
          EXPECT_EQ(back->size(), s == 0 ? 0u : static_cast<size_t>(samples[i] * stage.InputSize()));
          if (s > 0) gradients[s - 1][i] = std::move(*back);
        }
        result.most_in_flight[s] = std::max(result.most_in_flight[s], stage.InFlight());
        progress = true;
      }
    }
  }
  for (int s = 0; s < count; ++s) {
    EXPECT_EQ(next[s], ops[s].size()) << "stage " << s << " is stuck: the schedule deadlocked";
    EXPECT_EQ(stages[s]->InFlight(), 0) << "stage " << s;
    std::span<const float> g = stages[s]->Gradients();
    result.gradient.insert(result.gradient.end(), g.begin(), g.end());
  }
  return result;
}

// Every split in `splits`, at every micro-batch count, trains `batch` as the
// whole model does: the same loss and the same gradient.
void ExpectPipelineMatchesWholeModel(const ModelSpec& spec, const DatasetInfo& data, const Batch& batch,
                                     const std::vector<std::vector<int>>& splits,
                                     const std::vector<int>& micro_batch_counts, Schedule schedule) {
  std::unique_ptr<Trainer> whole = WholeModel(spec, data);
  ASSERT_TRUE(whole);
  std::vector<float> want(static_cast<size_t>(whole->ParameterCount()));
  auto want_loss = whole->ComputeGradient(batch.features.data(), batch.labels.data(), batch.size(), want);
  ASSERT_TRUE(want_loss.ok()) << want_loss.status().ToString();
  for (const std::vector<int>& bounds : splits) {
    Stages stages = Split(spec, data, bounds);
    ASSERT_EQ(stages.size() + 1, bounds.size());
    for (int m : micro_batch_counts) {
      SCOPED_TRACE(Describe(bounds) + ", " + std::to_string(m) + " micro-batches");
      for (auto& stage : stages) stage->ZeroGradients();
      StepResult got = PipelineStep(stages, batch, m, schedule);
      EXPECT_NEAR(got.loss, *want_loss, 1e-5 * *want_loss);
      EXPECT_LE(RelativeDifference(got.gradient, want), 1e-5);
      if (schedule == Schedule::kOneForwardOneBackward) {
        // 1F1B's point: stage s of S holds at most S - s micro-batches, however many there are.
        for (size_t s = 0; s < stages.size(); ++s) {
          EXPECT_LE(got.most_in_flight[s], std::min<int>(static_cast<int>(stages.size() - s), m)) << "stage " << s;
        }
      }
    }
  }
}

class StageTrainerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto split = LoadDataset(DatasetName::kDigits, DefaultDataSearchPath());
    ASSERT_TRUE(split.ok()) << split.status().ToString();
    const Dataset& train = split->train;
    digits_ = new Batch;
    digits_->features.resize(static_cast<size_t>(32 * train.SampleSize()));
    train.CopySamples(0, 32, digits_->features.data());
    digits_->labels.assign(train.labels.begin(), train.labels.begin() + 32);
  }
  static void TearDownTestSuite() { delete digits_; }

  static Batch* digits_;  // the first 32 training samples
};
Batch* StageTrainerTest::digits_ = nullptr;

// Every way to cut a model of three layers into one, two or three stages.
const std::vector<std::vector<int>> kThreeLayerSplits = {{0, 3}, {0, 1, 3}, {0, 2, 3}, {0, 1, 2, 3}};

TEST_F(StageTrainerTest, MlpStagesTrainAsTheWholeModel) {
  ExpectPipelineMatchesWholeModel(Mlp({32, 16}), kDigits, *digits_, kThreeLayerSplits, {1, 2, 4},
                                  Schedule::kFillThenDrain);
}

TEST_F(StageTrainerTest, CnnStagesTrainAsTheWholeModel) {
  ExpectPipelineMatchesWholeModel(Cnn({4, 8}), kDigits, *digits_, kThreeLayerSplits, {1, 2, 4},
                                  Schedule::kFillThenDrain);
}

TEST_F(StageTrainerTest, VggStagesTrainAsTheWholeModel) {
  // conv1, conv2 (pooled), conv3 (pooled), classifier: cuts before and after a pool.
  ExpectPipelineMatchesWholeModel(Vgg({4, 4, 8}), kDigits, *digits_,
                                  {{0, 4}, {0, 1, 4}, {0, 2, 4}, {0, 3, 4}, {0, 1, 2, 4}, {0, 1, 3, 4}, {0, 2, 3, 4}},
                                  {1, 2, 4}, Schedule::kFillThenDrain);
}

TEST_F(StageTrainerTest, OneForwardOneBackwardTrainsAsTheWholeModel) {
  // Three micro-batches of 32 are 10, 11 and 11 samples: the scale weighs them.
  ExpectPipelineMatchesWholeModel(Vgg({4, 4, 8}), kDigits, *digits_, {{0, 1, 3, 4}, {0, 1, 2, 3, 4}},
                                  {1, 2, 3, 4}, Schedule::kOneForwardOneBackward);
  ExpectPipelineMatchesWholeModel(Mlp({32, 16}), kDigits, *digits_, {{0, 1, 2, 3}}, {4},
                                  Schedule::kOneForwardOneBackward);
}

TEST_F(StageTrainerTest, DefaultVggOnFashionMnistShapesTrainsAsTheWholeModel) {
  ExpectPipelineMatchesWholeModel(Vgg({}), kFashion, Pattern(kFashion, 32), {{0, 9}, {0, 3, 9}, {0, 2, 6, 9}}, {1, 4},
                                  Schedule::kOneForwardOneBackward);
}

TEST_F(StageTrainerTest, StagesHoldTheWholeModelsInitialWeightsInOrder) {
  for (const auto& [spec, data, bounds] :
       {std::tuple{Mlp({32, 16}), kDigits, std::vector<int>{0, 1, 2, 3}},
        std::tuple{Cnn({4, 8}), kDigits, std::vector<int>{0, 2, 3}},
        std::tuple{Vgg({4, 4, 8}), kDigits, std::vector<int>{0, 1, 3, 4}},
        std::tuple{Vgg({}), kFashion, std::vector<int>{0, 2, 5, 8, 9}}}) {
    SCOPED_TRACE(std::string(NameOf(spec.kind)) + " " + Describe(bounds));
    std::unique_ptr<Trainer> whole = WholeModel(spec, data);
    ASSERT_TRUE(whole);
    Stages stages = Split(spec, data, bounds);
    std::vector<float> parameters;
    std::vector<std::vector<int64_t>> shapes;
    int64_t count = 0;
    for (auto& stage : stages) {
      std::span<float> p = stage->Parameters();
      parameters.insert(parameters.end(), p.begin(), p.end());
      for (auto& shape : stage->ParameterShapes()) shapes.push_back(shape);
      count += stage->ParameterCount();
      EXPECT_EQ(stage->Gradients().size(), p.size());
    }
    std::span<float> want = whole->Parameters();
    EXPECT_TRUE(std::equal(parameters.begin(), parameters.end(), want.begin(), want.end()));
    EXPECT_EQ(shapes, whole->ParameterShapes());
    EXPECT_EQ(count, whole->ParameterCount());
  }
}

TEST_F(StageTrainerTest, StepsThroughParametersKeepThePipelineWithTheWholeModel) {
  // Plain SGD written through Parameters() on both sides: the stages must read
  // their weights in place and ZeroGradients must start each step afresh.
  const ModelSpec spec = Cnn({4, 8});
  std::unique_ptr<Trainer> whole = WholeModel(spec, kDigits);
  ASSERT_TRUE(whole);
  Stages stages = Split(spec, kDigits, {0, 1, 2, 3});
  std::vector<float> gradient(static_cast<size_t>(whole->ParameterCount()));
  constexpr float kRate = 0.5f;
  for (int step = 0; step < 4; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    auto want = whole->ComputeGradient(digits_->features.data(), digits_->labels.data(), 32, gradient);
    ASSERT_TRUE(want.ok());
    for (auto& stage : stages) stage->ZeroGradients();
    StepResult got = PipelineStep(stages, *digits_, 2, Schedule::kOneForwardOneBackward);
    EXPECT_NEAR(got.loss, *want, 1e-5 * *want);
    std::span<float> w = whole->Parameters();
    for (size_t i = 0; i < w.size(); ++i) w[i] -= kRate * gradient[i];
    for (auto& stage : stages) {
      std::span<float> p = stage->Parameters();
      std::span<const float> g = stage->Gradients();
      for (size_t i = 0; i < p.size(); ++i) p[i] -= kRate * g[i];
    }
  }
  std::vector<float> parameters;
  for (auto& stage : stages) {
    std::span<float> p = stage->Parameters();
    parameters.insert(parameters.end(), p.begin(), p.end());
  }
  EXPECT_LE(RelativeDifference(parameters, whole->Parameters()), 1e-5);
}

TEST_F(StageTrainerTest, GradientsSumUntilZeroed) {
  Stages stages = Split(Mlp({16}), kDigits, {0, 1, 2});
  StepResult once = PipelineStep(stages, *digits_, 2, Schedule::kFillThenDrain);
  StepResult twice = PipelineStep(stages, *digits_, 2, Schedule::kFillThenDrain);
  std::vector<float> doubled = once.gradient;
  for (float& g : doubled) g *= 2;
  EXPECT_LE(RelativeDifference(twice.gradient, doubled), 1e-6);
  for (auto& stage : stages) {
    stage->ZeroGradients();
    for (float g : stage->Gradients()) ASSERT_EQ(g, 0.0f);
  }
}

TEST(StageTrainerShapesTest, EachStageSaysWhatFlowsInAndOut) {
  struct Want {
    int first, end;
    std::vector<int64_t> input, output;
  };
  for (const auto& [spec, layers, wants] : {
           std::tuple{Mlp({32, 16}), 3,
                      std::vector<Want>{{0, 1, {1, 8, 8}, {32}}, {1, 2, {32}, {16}}, {2, 3, {16}, {10}},
                                        {0, 3, {1, 8, 8}, {10}}}},
           // vgg's conv1 is not pooled, conv2 and conv3 are; the classifier flattens.
           std::tuple{Vgg({4, 4, 8}), 4,
                      std::vector<Want>{{0, 1, {1, 8, 8}, {4, 8, 8}}, {1, 2, {4, 8, 8}, {4, 4, 4}},
                                        {2, 3, {4, 4, 4}, {8, 2, 2}}, {3, 4, {8, 2, 2}, {10}}}},
       }) {
    for (const Want& want : wants) {
      SCOPED_TRACE(std::string(NameOf(spec.kind)) + " " + Describe({want.first, want.end}));
      auto stage = CreateStageTrainer({spec, kDigits, kSeed, 1, want.first, want.end});
      ASSERT_TRUE(stage.ok()) << stage.status().ToString();
      EXPECT_EQ((*stage)->InputShape(), want.input);
      EXPECT_EQ((*stage)->OutputShape(), want.output);
      int64_t in = 1, out = 1;
      for (int64_t d : want.input) in *= d;
      for (int64_t d : want.output) out *= d;
      EXPECT_EQ((*stage)->InputSize(), in);
      EXPECT_EQ((*stage)->OutputSize(), out);
      EXPECT_EQ((*stage)->IsFirst(), want.first == 0);
      EXPECT_EQ((*stage)->IsLast(), want.end == layers);
    }
  }
}

TEST(StageTrainerShapesTest, CountsEachModelsLayers) {
  EXPECT_EQ(CountLayers(Mlp({32, 16}), kDigits).value(), 3);
  EXPECT_EQ(CountLayers(Vgg({}), kFashion).value(), 9);
  // As the spec tells them, before LibTorch builds anything (a layout by
  // hand is judged against it as the manifest is read).
  for (const auto& [model, data] : {std::pair{Mlp({}), kDigits}, std::pair{Mlp({32, 16, 8}), kDigits},
                                    std::pair{Cnn({}), kDigits}, std::pair{Cnn({4, 4, 4}), kDigits},
                                    std::pair{Vgg({}), kFashion}, std::pair{Vgg({4, 4, 4}), kDigits},
                                    std::pair{Vgg({8}), kDigits}}) {
    EXPECT_EQ(CountLayers(model, data).value(), BuiltInLayerCount(model)) << NameOf(model.kind);
  }
  auto too_deep = CountLayers(Vgg({}), kDigits);  // four pools on 8x8
  ASSERT_FALSE(too_deep.ok());
  EXPECT_EQ(too_deep.status().code(), StatusCode::kInvalidArgument);
}

TEST(StageTrainerErrorsTest, LayerRangesOutsideTheModelAreRefused) {
  for (const auto& [first, end] :
       {std::pair{0, 0}, std::pair{-1, 2}, std::pair{0, 4}, std::pair{2, 1}, std::pair{3, 3}}) {
    auto stage = CreateStageTrainer({Mlp({32, 16}), kDigits, kSeed, 1, first, end});
    ASSERT_FALSE(stage.ok()) << first << ", " << end;
    EXPECT_EQ(stage.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(stage.status().message().find("3 layers"), std::string::npos) << stage.status().message();
  }
  auto unfit = CreateStageTrainer({Cnn({4, 4, 4, 4}), kDigits, kSeed, 1, 0, 1});
  ASSERT_FALSE(unfit.ok());
  EXPECT_EQ(unfit.status().code(), StatusCode::kInvalidArgument);
  auto threads = CreateStageTrainer({Mlp({32}), kDigits, kSeed, 0, 0, 1});
  ASSERT_FALSE(threads.ok());
  EXPECT_EQ(threads.status().code(), StatusCode::kInvalidArgument);
}

TEST(StageTrainerErrorsTest, MicroBatchesInFlightAndMisuse) {
  Stages stages = Split(Mlp({32, 16}), kDigits, {0, 1, 2, 3});
  ASSERT_EQ(stages.size(), 3u);
  StageTrainer& first = *stages[0];
  StageTrainer& middle = *stages[1];
  StageTrainer& last = *stages[2];
  const Batch batch = Pattern(kDigits, 4);

  // The caller's misuse is FailedPrecondition: InvalidArgument from a pass is
  // a user's module's raise alone, which a stage tells its head as the job's
  // fault. Inputs that are not whole samples:
  EXPECT_EQ(first.Forward(1, std::span(batch.features).first(65)).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(first.Forward(1, {}).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(first.InFlight(), 0);

  // Two micro-batches in flight; an id is taken until its backward.
  auto a1 = first.Forward(1, std::span(batch.features).first(2 * 64));
  auto a2 = first.Forward(2, std::span(batch.features).subspan(2 * 64));
  ASSERT_TRUE(a1.ok() && a2.ok());
  EXPECT_EQ(a1->size(), 2u * 32);
  EXPECT_EQ(first.InFlight(), 2);
  auto again = first.Forward(1, batch.features);
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("already in flight"), std::string::npos) << again.status().message();
  EXPECT_EQ(first.InFlight(), 2);

  auto h1 = middle.Forward(1, *a1);
  ASSERT_TRUE(h1.ok());
  auto logits = last.Forward(1, *h1);
  ASSERT_TRUE(logits.ok());
  EXPECT_EQ(logits->size(), 2u * 10);

  // Backward from the loss is the last stage's alone, and the reverse.
  EXPECT_EQ(middle.BackwardFromLoss(1, std::span(batch.labels).first(2), 1).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(last.Backward(1, std::vector<float>(20)).status().code(), StatusCode::kFailedPrecondition);

  // Unknown ids, wrong label counts, labels outside the classes: refused, and
  // the micro-batch stays in flight.
  auto unknown = last.BackwardFromLoss(9, std::span(batch.labels).first(2), 1);
  EXPECT_EQ(unknown.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(unknown.status().message().find("not in flight"), std::string::npos) << unknown.status().message();
  EXPECT_EQ(last.BackwardFromLoss(1, batch.labels, 1).status().code(), StatusCode::kFailedPrecondition);
  const std::vector<int64_t> out_of_range = {0, 10};
  EXPECT_EQ(last.BackwardFromLoss(1, out_of_range, 1).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(last.InFlight(), 1);

  auto from_loss = last.BackwardFromLoss(1, std::span(batch.labels).first(2), 1);
  ASSERT_TRUE(from_loss.ok()) << from_loss.status().ToString();
  EXPECT_GT(from_loss->loss, 0);
  EXPECT_EQ(from_loss->input_gradient.size(), 2u * 16);
  EXPECT_EQ(last.InFlight(), 0);
  EXPECT_EQ(last.BackwardFromLoss(1, std::span(batch.labels).first(2), 1).status().code(),
            StatusCode::kFailedPrecondition)
      << "a micro-batch is backwarded once";

  EXPECT_EQ(middle.Backward(1, std::vector<float>(3)).status().code(), StatusCode::kFailedPrecondition);
  auto g1 = middle.Backward(1, from_loss->input_gradient);
  ASSERT_TRUE(g1.ok()) << g1.status().ToString();
  EXPECT_EQ(g1->size(), 2u * 32);
  EXPECT_EQ(middle.Backward(7, *g1).status().code(), StatusCode::kFailedPrecondition);

  auto none = first.Backward(1, *g1);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty()) << "the first stage sends no gradient upstream";
  EXPECT_EQ(first.InFlight(), 1);
  EXPECT_TRUE(std::any_of(first.Gradients().begin(), first.Gradients().end(), [](float g) { return g != 0; }));
}

}  // namespace
}  // namespace edgetrain::agent

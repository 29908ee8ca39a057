// A user's TorchScript module, from PyTorch, trains as the built-in model of its
// shape does, is refused with the field at fault when it cannot be trained, and
// is saved as TorchScript that loads again with its trained weights.
#include "agent/torch/torchscript_trainer.h"

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>
#include <torch/script.h>

#include "agent/torch/layer_profile.h"
#include "agent/torch/stage_trainer.h"
#include "core/row_layout.h"
#include "core/row_optimizer.h"

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;

class TorchScriptTrainerTest : public testing::Test {
 protected:
  // The modules come from PyTorch (Debian's python3-torch, which scripts/deps
  // installs), as a user's would: written once for the suite.
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("torchscript-test-" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    const std::string command = "/usr/bin/python3 " EDGETRAIN_SOURCE_DIR "/agent/torch/testdata/make_modules.py " +
                                dir_->string();
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    auto split = LoadDataset(DatasetName::kDigits, DefaultDataSearchPath());
    ASSERT_TRUE(split.ok()) << split.status().ToString();
    digits_ = new TrainTestSplit(std::move(*split));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete digits_;
  }

  static std::string Module(const std::string& name) { return (*dir_ / name).string(); }

  static StatusOr<std::unique_ptr<Trainer>> Load(const std::string& path) {
    ModelSpec model;
    model.kind = ModelKind::kTorchScript;
    model.torchscript_path = path;
    return CreateTrainer({model, digits_->train.info, 1, 1});
  }

  // The layers a pipeline would cut `model` between, by name (as profiled).
  static std::vector<std::string> LayerNames(const ModelSpec& model) {
    auto layers = ProfileLayers(model, digits_->train.info, {.batch_size = 2, .repetitions = 1});
    EXPECT_TRUE(layers.ok()) << layers.status().ToString();
    std::vector<std::string> names;
    if (layers.ok()) {
      for (const LayerCost& l : *layers) names.push_back(l.name);
    }
    return names;
  }

  // `steps` batches of 64 in order, each a gradient and a step of the
  // engine's optimizer: what a job of one does.
  static void Train(Trainer& trainer, int steps) {
    const Dataset& d = digits_->train;
    const RowLayout layout(trainer.ParameterShapes(), SyncGranularity::kModel);
    RowOptimizer optimizer(OptimizerSpec{OptimizerKind::kAdam, 0.01, std::nullopt, 0}, layout);
    std::vector<float> gradient(static_cast<size_t>(layout.total_floats()));
    std::vector<float> x(static_cast<size_t>(64 * d.SampleSize()));
    for (int s = 0; s < steps; ++s) {
      const int64_t first = (s * 64) % (d.size() - 64);
      d.CopySamples(first, 64, x.data());
      auto loss = trainer.ComputeGradient(x.data(), d.labels.data() + first, 64, gradient);
      ASSERT_TRUE(loss.ok()) << loss.status().ToString();
      optimizer.Apply(0, trainer.Parameters(), gradient);
    }
  }

  static fs::path* dir_;
  static TrainTestSplit* digits_;
};
fs::path* TorchScriptTrainerTest::dir_ = nullptr;
TrainTestSplit* TorchScriptTrainerTest::digits_ = nullptr;

TEST_F(TorchScriptTrainerTest, TrainsAsTheBuiltInMlpOfTheSameShape) {
  auto own = Load(Module("digits_mlp.pt"));
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  auto builtin = CreateTrainer({{ModelKind::kMlp, {16}, {}}, digits_->train.info, 1, 1});
  ASSERT_TRUE(builtin.ok()) << builtin.status().ToString();
  EXPECT_EQ((*own)->ParameterShapes(), (*builtin)->ParameterShapes());
  EXPECT_EQ((*own)->ParameterCount(), 64 * 16 + 16 + 16 * 10 + 10);

  auto before = (*own)->Evaluate(digits_->test);
  ASSERT_TRUE(before.ok());
  Train(**own, 300);
  Train(**builtin, 300);
  auto own_after = (*own)->Evaluate(digits_->test);
  auto builtin_after = (*builtin)->Evaluate(digits_->test);
  ASSERT_TRUE(own_after.ok() && builtin_after.ok());
  EXPECT_LT(before->accuracy, 0.3) << "an untrained module guesses";
  EXPECT_GT(own_after->accuracy, 0.9);
  // Different initial weights (PyTorch's draw and LibTorch's), the same
  // layers and steps: the same accuracy within noise.
  EXPECT_NEAR(own_after->accuracy, builtin_after->accuracy, 0.04);
}

// A run's own model.pt of a built-in model has no code: named as what it is,
// with the manifest's words for it.
TEST_F(TorchScriptTrainerTest, ABuiltInModelsFileIsNamedAsOne) {
  auto builtin = CreateTrainer({{ModelKind::kMlp, {16}, {}}, digits_->train.info, 1, 1});
  ASSERT_TRUE(builtin.ok()) << builtin.status().ToString();
  const std::string path = Module("builtin_model.pt");
  ASSERT_TRUE((*builtin)->SaveModel(path).ok());
  auto loaded = Load(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(),
            "spec.model.torchscript.path: " + path + " is a built-in model edgetrain saved, mlp with hidden [16]: its "
            "parameters without code (docs/using-the-model.md), not a module; train that model with spec.model.name "
            "and its sizes in place of spec.model.torchscript");
}

// A softmax at the end trains, worse: said, and only of such a module.
TEST_F(TorchScriptTrainerTest, AModuleThatReturnsProbabilitiesIsCautioned) {
  auto softmax = Load(Module("softmax_output.pt"));
  ASSERT_TRUE(softmax.ok()) << softmax.status().ToString();
  EXPECT_NE((*softmax)->Caution().find("spec.model.torchscript: its forward returns probabilities"), std::string::npos)
      << (*softmax)->Caution();
  auto logits = Load(Module("digits_mlp.pt"));
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  EXPECT_EQ((*logits)->Caution(), "");
}

TEST_F(TorchScriptTrainerTest, AModuleThatCannotBeTrainedIsRefusedNamingTheField) {
  const struct {
    std::string file;
    std::string error;
  } cases[] = {
      {"missing.pt", "spec.model.torchscript.path: no file at "},
      {"text.pt", "spec.model.torchscript.path: " + Module("text.pt") + " is not a TorchScript module"},
      {"state_dict.pt", "is not a TorchScript module (save one with torch.jit.save(torch.jit.script(model), path))"},
      {"frozen.pt", "spec.model.torchscript: the module has no trainable parameters"},
      {"float64.pt", "spec.model.torchscript: a parameter of shape [16, 64] holds Double; edgetrain trains float32"},
      {"fashion_input.pt", "spec.model.torchscript: its forward fails on a batch of the data's samples, of shape [1, 8, 8] (a check batch of 2, a tensor [2, 1, 8, 8]): RuntimeError: mat1 and mat2"},
      {"five_classes.pt", "spec.model.torchscript: its output for a batch of 2 is [2, 5], expected [2, 10]"},
      {"long_output.pt", "spec.model.torchscript: its output is Long, expected float32 logits"},
      {"half_output.pt", "spec.model.torchscript: its output is Half, expected float32 logits: this LibTorch's loss "
                         "has no kernel for it on the CPU (end the forward with .float())"},
      {"tuple_output.pt", "spec.model.torchscript: its forward returns a Tuple, expected one tensor of logits: return "
                          "the logits alone"},
      {"two_inputs.pt", "(edgetrain calls forward with one tensor, a batch of samples: a module of several inputs "
                        "needs a wrapper that takes one)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    auto trainer = Load(Module(c.file));
    ASSERT_FALSE(trainer.ok());
    EXPECT_EQ(trainer.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(trainer.status().message().find(c.error), std::string::npos) << trainer.status().message();
  }
}

// A module that passed its check and raises on a batch fails the same way
// when run again: the job's fault (exit 2), said so, with the module's words.
TEST_F(TorchScriptTrainerTest, AModuleThatRaisesOnABatchIsTheJobsFault) {
  auto trainer = Load(Module("raises_on_three.pt"));
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  const Dataset& d = digits_->train;
  std::vector<float> gradient(static_cast<size_t>((*trainer)->ParameterCount()));
  std::vector<float> x(static_cast<size_t>(4 * d.SampleSize()));
  d.CopySamples(0, 4, x.data());
  ASSERT_TRUE((*trainer)->ComputeGradient(x.data(), d.labels.data(), 4, gradient).ok());
  auto failed = (*trainer)->ComputeGradient(x.data(), d.labels.data(), 3, gradient);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(failed.status().message().find("a batch of 3"), std::string::npos) << failed.status().message();
  EXPECT_NE(failed.status().message().find("it fails the same way when run again"), std::string::npos)
      << failed.status().message();
}

// What fails of the module in eval mode, or as its buffers are settled, is
// its own code too (exit 2), not the machine's: a run said to resume, and
// failed the same way again (found in review). A norm that keeps no running
// statistics has none to settle; a layer no gradient reaches is timed.
TEST_F(TorchScriptTrainerTest, AModulesEvalModeAndItsBuffersFailAsItsOwnCode) {
  auto eval_raises = Load(Module("raises_in_eval.pt"));
  ASSERT_TRUE(eval_raises.ok()) << eval_raises.status().ToString();
  auto evaluated = (*eval_raises)->Evaluate(digits_->test);
  ASSERT_FALSE(evaluated.ok());
  EXPECT_EQ(evaluated.status().code(), StatusCode::kInvalidArgument) << evaluated.status().ToString();
  EXPECT_NE(evaluated.status().message().find("evaluation failed (the module in eval mode): builtins.RuntimeError: "
                                              "eval-mode path broken (the module's own code"),
            std::string::npos)
      << evaluated.status().message();

  auto untracked = Load(Module("untracked_batch_norm.pt"));
  ASSERT_TRUE(untracked.ok()) << untracked.status().ToString();
  EXPECT_TRUE((*untracked)->SettleBuffers(SpreadSamples(digits_->train, 64), 8).ok());

  ModelSpec spare;
  spare.kind = ModelKind::kTorchScript;
  spare.torchscript_path = Module("spare_head.pt");
  auto layers = ProfileLayers(spare, digits_->train.info, {.batch_size = 4, .repetitions = 1});
  EXPECT_TRUE(layers.ok()) << layers.status().ToString();
}

// A weight two layers share is one parameter, sent and stepped once: it was
// listed twice (8,970 floats for 4,874), and the layer read one copy while
// the other was stepped too. Trained, saved and loaded, it scores the same.
TEST_F(TorchScriptTrainerTest, AWeightTwoLayersShareIsOneParameter) {
  auto trainer = Load(Module("tied.pt"));
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  EXPECT_EQ((*trainer)->ParameterCount(), 64 * 64 + 64 + 64 + 64 * 10 + 10);
  const auto before = (*trainer)->Evaluate(digits_->test);
  Train(**trainer, 50);
  const auto trained = (*trainer)->Evaluate(digits_->test);
  ASSERT_TRUE(before.ok() && trained.ok());
  EXPECT_GT(trained->accuracy, before->accuracy + 0.2);
  const std::string saved = Module("tied-trained.pt");
  ASSERT_TRUE((*trainer)->SaveModel(saved).ok());
  auto fresh = Load(Module("tied.pt"));
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE((*fresh)->LoadModel(saved).ok());
  const auto reloaded = (*fresh)->Evaluate(digits_->test);
  ASSERT_TRUE(reloaded.ok());
  EXPECT_EQ(reloaded->accuracy, trained->accuracy);
  EXPECT_EQ(reloaded->loss, trained->loss);
}

// A stage whose last layer hands on float64 sends float32, and the gradient
// comes back through the cast: it failed as the module's own code, where
// data parallelism trained it (found in review).
TEST_F(TorchScriptTrainerTest, AStageWhoseOutputIsNotFloat32SendsItAsFloat32) {
  ModelSpec model;
  model.kind = ModelKind::kTorchScript;
  model.torchscript_path = Module("double_tail.pt");
  auto stage = CreateStageTrainer({model, digits_->train.info, 1, 1, 0, 5});
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  auto sent = (*stage)->Forward(0, std::vector<float>(2 * 64, 0.5f));
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  EXPECT_EQ(sent->size(), 2u * 10);
  auto back = (*stage)->Backward(0, std::vector<float>(2 * 10, 0.1f));
  EXPECT_TRUE(back.ok()) << back.status().ToString();
}

// A module with dropout draws its masks from a generator seeded with the
// job's seed: the same every run (three runs of a user's ended at 0.830,
// 0.842 and 0.826).
TEST_F(TorchScriptTrainerTest, AModuleWithDropoutComputesTheSameEveryRun) {
  const Dataset& d = digits_->train;
  std::vector<float> x(static_cast<size_t>(8 * d.SampleSize()));
  d.CopySamples(0, 8, x.data());
  std::vector<std::vector<float>> gradients;
  for (int run = 0; run < 2; ++run) {
    auto trainer = Load(Module("dropout.pt"));
    ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
    std::vector<float> gradient(static_cast<size_t>((*trainer)->ParameterCount()));
    ASSERT_TRUE((*trainer)->ComputeGradient(x.data(), d.labels.data(), 8, gradient).ok());
    gradients.push_back(std::move(gradient));
    (void)at::rand({100});  // what ran in between draws nothing the next run sees
  }
  EXPECT_EQ(gradients[0], gradients[1]);
}

// A batch norm cannot train on one sample: the error says that an epoch's
// last batch of one is the likely cause, and the batch size the mend (it
// blamed the module's forward: a user's trial, 1,985 samples in 32s).
TEST_F(TorchScriptTrainerTest, ABatchNormOnABatchOfOneNamesTheBatchSize) {
  auto trainer = Load(Module("batch_norm.pt"));
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  const Dataset& d = digits_->train;
  std::vector<float> gradient(static_cast<size_t>((*trainer)->ParameterCount()));
  std::vector<float> x(static_cast<size_t>(d.SampleSize()));
  d.CopySamples(0, 1, x.data());
  auto failed = (*trainer)->ComputeGradient(x.data(), d.labels.data(), 1, gradient);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(failed.status().message().find("another batch size mends it"), std::string::npos)
      << failed.status().message();
}

// Timing the layers of a module that raises says on which layer and pass:
// "a layer of the module raised" alone left a user to guess.
TEST_F(TorchScriptTrainerTest, ALayerProfileTheModuleRaisesInSaysWhatItWasTiming) {
  ModelSpec model;
  model.kind = ModelKind::kTorchScript;
  model.torchscript_path = Module("raises_on_three.pt");
  auto layers = ProfileLayers(model, digits_->train.info, {.batch_size = 3, .repetitions = 1});
  ASSERT_FALSE(layers.ok());
  EXPECT_EQ(layers.status().code(), StatusCode::kInvalidArgument) << layers.status().ToString();
  EXPECT_NE(layers.status().message().find("layer profile failed: a layer of the module raised, timing layer 0 ("),
            std::string::npos)
      << layers.status().message();
  EXPECT_NE(layers.status().message().find("), a pass of 3 samples: "), std::string::npos) << layers.status().message();
  EXPECT_NE(layers.status().message().find("a batch of 3"), std::string::npos) << layers.status().message();
  EXPECT_EQ(layers.status().message().find('\n'), std::string::npos) << "its first line, no TorchScript stack";
}

TEST_F(TorchScriptTrainerTest, TheTrainedModuleIsSavedAsTorchScriptThatLoadsWithItsWeights) {
  auto trainer = Load(Module("digits_mlp.pt"));
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  Train(**trainer, 50);
  auto trained = (*trainer)->Evaluate(digits_->test);
  ASSERT_TRUE(trained.ok());
  const std::string saved = Module("trained.pt");
  ASSERT_TRUE((*trainer)->SaveModel(saved).ok());
  EXPECT_TRUE(*IsTorchScriptModule(saved));

  // Loaded as a job's model, and into an untrained one (a resume): the same
  // predictions, to the last bit.
  auto reloaded = Load(saved);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().ToString();
  auto fresh = Load(Module("digits_mlp.pt"));
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE((*fresh)->LoadModel(saved).ok());
  for (Trainer* t : {reloaded->get(), fresh->get()}) {
    auto e = t->Evaluate(digits_->test);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->accuracy, trained->accuracy);
    EXPECT_EQ(e->loss, trained->loss);
  }
  auto builtin = CreateTrainer({{ModelKind::kMlp, {8}, {}}, digits_->train.info, 1, 1});
  ASSERT_TRUE(builtin.ok());
  EXPECT_EQ((*builtin)->LoadModel(saved).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*fresh)->LoadModel(Module("missing.pt")).code(), StatusCode::kInvalidArgument);

  // A built-in model's file holds weights only: not a module to run.
  const std::string weights = Module("builtin.pt");
  ASSERT_TRUE((*builtin)->SaveModel(weights).ok());
  EXPECT_FALSE(*IsTorchScriptModule(weights));
}

// A scripted nn.Sequential is cut between its children: stages of it, their
// passes run back to back, compute the whole module's loss and gradient, and
// hold its weights in its order.
TEST_F(TorchScriptTrainerTest, AScriptedSequentialIsCutBetweenItsChildrenAndTrainsAsTheWhole) {
  ModelSpec model;
  model.kind = ModelKind::kTorchScript;
  model.torchscript_path = Module("digits_mlp.pt");
  EXPECT_EQ(LayerNames(model), (std::vector<std::string>{"0.Flatten", "1.Linear", "2.ReLU", "3.Linear"}));

  auto whole = Load(model.torchscript_path);
  ASSERT_TRUE(whole.ok());
  const Dataset& d = digits_->train;
  constexpr int64_t n = 32;
  std::vector<float> x(static_cast<size_t>(n * d.SampleSize()));
  d.CopySamples(0, n, x.data());
  std::vector<int64_t> labels(d.labels.begin(), d.labels.begin() + n);
  std::vector<float> want(static_cast<size_t>((*whole)->ParameterCount()));
  auto want_loss = (*whole)->ComputeGradient(x.data(), labels.data(), n, want);
  ASSERT_TRUE(want_loss.ok());

  for (const std::vector<int>& bounds : {std::vector<int>{0, 2, 4}, std::vector<int>{0, 1, 3, 4}}) {
    SCOPED_TRACE(::testing::PrintToString(bounds));
    std::vector<std::unique_ptr<StageTrainer>> stages;
    for (size_t k = 0; k + 1 < bounds.size(); ++k) {
      auto stage = CreateStageTrainer({model, d.info, 1, 1, bounds[k], bounds[k + 1]});
      ASSERT_TRUE(stage.ok()) << stage.status().ToString();
      stages.push_back(std::move(*stage));
    }
    std::vector<float> activation = x;
    for (auto& stage : stages) {
      auto out = stage->Forward(0, activation);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      activation = std::move(*out);
    }
    auto last = stages.back()->BackwardFromLoss(0, labels, 1.0);
    ASSERT_TRUE(last.ok()) << last.status().ToString();
    EXPECT_NEAR(last->loss, *want_loss, 1e-5 * *want_loss);
    std::vector<float> upstream = last->input_gradient;
    for (size_t k = stages.size() - 1; k-- > 0;) {
      auto back = stages[k]->Backward(0, upstream);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      upstream = std::move(*back);
    }
    std::vector<float> got, weights;
    for (auto& stage : stages) {
      got.insert(got.end(), stage->Gradients().begin(), stage->Gradients().end());
      weights.insert(weights.end(), stage->Parameters().begin(), stage->Parameters().end());
    }
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "gradient " << i;
    const std::span<float> whole_weights = (*whole)->Parameters();
    EXPECT_TRUE(std::equal(weights.begin(), weights.end(), whole_weights.begin(), whole_weights.end()));
  }
}

// TorchScript renames a class it has compiled before (___torch_mangle_N):
// an nn.Sequential scripted after another, or within one, is still cut.
TEST_F(TorchScriptTrainerTest, ASequentialWhoseClassNameTorchScriptMangledIsCutToo) {
  ModelSpec model;
  model.kind = ModelKind::kTorchScript;
  model.torchscript_path = Module("nested.pt");
  EXPECT_EQ(LayerNames(model), (std::vector<std::string>{"0.Flatten", "1.Sequential", "2.Linear"}));
}

// A layer that cannot train on one sample (BatchNorm1d) is timed on the
// passes it takes, 2 samples and more: the agent aborted on it, every
// pipeline or auto job of such a model failing (a user's trial).
TEST_F(TorchScriptTrainerTest, ALayerThatCannotTrainOnOneSampleIsTimedFromTwo) {
  ModelSpec model;
  model.kind = ModelKind::kTorchScript;
  model.torchscript_path = Module("batch_norm.pt");
  auto layers = ProfileLayers(model, digits_->train.info, {.batch_size = 8, .repetitions = 1});
  ASSERT_TRUE(layers.ok()) << layers.status().ToString();
  ASSERT_EQ(layers->size(), 5u);
  const LayerCost& norm = (*layers)[2];
  EXPECT_EQ(norm.name, "2.BatchNorm1d");
  ASSERT_FALSE(norm.passes.empty());
  EXPECT_EQ(norm.passes.front().samples, 2) << "one sample it cannot train on";
  EXPECT_EQ(norm.passes.back().samples, 8);
  EXPECT_EQ((*layers)[1].passes.front().samples, 1) << "the others from one";
  // Its stage measures its shapes on one blank image without training on it.
  auto stage = CreateStageTrainer({model, digits_->train.info, 1, 1, 0, 5});
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  EXPECT_EQ((*stage)->OutputSize(), 10);
  auto two = (*stage)->Forward(0, std::vector<float>(2 * 64, 0.5f));
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->size(), 2u * 10);
  // Its running statistics are buffers, which a team's coordinator does not
  // train: the agent warns of them (agent.cc); a plain MLP holds none.
  auto whole = Load(Module("batch_norm.pt"));
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_TRUE((*whole)->HoldsBuffers());
  auto plain = Load(Module("digits_mlp.pt"));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE((*plain)->HoldsBuffers());
}

// A stage's pass the module raises on is the job's fault, said as its own
// code's, as a job of one says it: a scripted layer's raise is no
// c10::Error, and aborted the stage's agent, which the head took for a lost
// device (a user's trial).
TEST_F(TorchScriptTrainerTest, AStagesPassTheModuleRaisesOnIsTheJobsFault) {
  ModelSpec model;
  model.kind = ModelKind::kTorchScript;
  model.torchscript_path = Module("batch_norm.pt");
  auto stage = CreateStageTrainer({model, digits_->train.info, 1, 1, 0, 5});
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  auto one = (*stage)->Forward(0, std::vector<float>(64, 0.5f));
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().code(), StatusCode::kInvalidArgument) << one.status().ToString();
  EXPECT_NE(one.status().message().find("forward of micro-batch 0 failed: builtins.ValueError: Expected more than 1 "
                                        "value per channel when training"),
            std::string::npos)
      << one.status().ToString();
  EXPECT_NE(one.status().message().find("(the module's own code, on a batch of 1 sample;"), std::string::npos)
      << one.status().ToString();
  EXPECT_EQ((*stage)->InFlight(), 0) << "nothing of it stashed";
}

// A team's coordinator and a pipeline's head train none of the model they
// evaluate and save: its batch norm's statistics are settled by passes over
// training samples, its weights untouched (a user's ResNet scored 0.26 with
// the first values, saved so).
TEST_F(TorchScriptTrainerTest, ABatchNormsStatisticsAreSettledOnTrainingSamples) {
  const Dataset samples = SpreadSamples(digits_->train, 64);
  // A module's saved statistics: its running mean and count of batches.
  auto saved = [&](Trainer& trainer, const std::string& name) {
    const fs::path path = *dir_ / name;
    EXPECT_TRUE(trainer.SaveModel(path.string()).ok());
    torch::Tensor mean;
    int64_t batches = -1;
    for (const auto& b : torch::jit::load(path.string()).named_buffers(/*recurse=*/true)) {
      if (b.name.ends_with("running_mean")) mean = b.value.clone();
      if (b.name.ends_with("num_batches_tracked")) batches = b.value.item<int64_t>();
    }
    return std::make_pair(mean, batches);
  };
  // Momentum 0.1: passes cycle over the samples until 1% of the statistics
  // before is left, 0.9^44.
  auto trainer = Load(Module("batch_norm.pt"));
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  const std::vector<float> before((*trainer)->Parameters().begin(), (*trainer)->Parameters().end());
  ASSERT_TRUE((*trainer)->SettleBuffers(samples, 8).ok());
  EXPECT_EQ(std::vector<float>((*trainer)->Parameters().begin(), (*trainer)->Parameters().end()), before)
      << "the weights are untouched";
  const auto [mean, batches] = saved(**trainer, "settled.pt");
  ASSERT_TRUE(mean.defined());
  EXPECT_GT(mean.abs().sum().item<double>(), 0) << "first values are zeros";
  EXPECT_EQ(batches, 44);
  ASSERT_TRUE((*trainer)->SettleBuffers(samples, 8).ok());
  const auto [again, more] = saved(**trainer, "settled-again.pt");
  EXPECT_TRUE(torch::allclose(mean, again, 0.02, 1e-4)) << "the same weights' statistics, within the 1% left";
  // Momentum None averages every batch since its count was 0: begun afresh
  // each time, not averaged with every earlier settling's (found in review).
  auto cumulative = Load(Module("batch_norm_cumulative.pt"));
  ASSERT_TRUE(cumulative.ok()) << cumulative.status().ToString();
  ASSERT_TRUE((*cumulative)->SettleBuffers(samples, 8).ok());
  const auto [first, counted] = saved(**cumulative, "cumulative.pt");
  EXPECT_EQ(counted, 8) << "64 samples in passes of 8";
  ASSERT_TRUE((*cumulative)->SettleBuffers(samples, 8).ok());
  const auto [second, recounted] = saved(**cumulative, "cumulative-again.pt");
  EXPECT_EQ(recounted, 8);
  EXPECT_TRUE(torch::allclose(first, second, 1e-6, 1e-7));
  auto plain = Load(Module("digits_mlp.pt"));
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE((*plain)->SettleBuffers(samples, 8).ok()) << "nothing to settle";
}

// A job of one's checkpoint keeps the module's buffers: a fresh module given
// them holds the trained one's statistics and count of batches, and what was
// another module's is refused before anything is written.
TEST_F(TorchScriptTrainerTest, ABatchNormsBuffersGoIntoACheckpointAndComeBack) {
  const Dataset samples = SpreadSamples(digits_->train, 64);
  auto buffers_of = [&](Trainer& trainer, const std::string& name) {
    const fs::path path = *dir_ / name;
    EXPECT_TRUE(trainer.SaveModel(path.string()).ok());
    std::vector<torch::Tensor> out;
    for (const auto& b : torch::jit::load(path.string()).named_buffers(/*recurse=*/true)) out.push_back(b.value);
    return out;
  };
  auto trained = Load(Module("batch_norm_cumulative.pt"));
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  ASSERT_TRUE((*trained)->SettleBuffers(samples, 8).ok());  // moves them as training would
  const StatusOr<std::string> bytes = (*trained)->SaveBuffers();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  ASSERT_FALSE(bytes->empty());

  auto resumed = Load(Module("batch_norm_cumulative.pt"));
  ASSERT_TRUE(resumed.ok());
  const std::vector<torch::Tensor> fresh = buffers_of(**resumed, "fresh.pt");
  ASSERT_TRUE((*resumed)->LoadBuffers(*bytes).ok());
  const std::vector<torch::Tensor> want = buffers_of(**trained, "trained.pt");
  const std::vector<torch::Tensor> got = buffers_of(**resumed, "resumed.pt");
  ASSERT_EQ(got.size(), 3u) << "running mean, running variance, count of batches";
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(torch::equal(got[i], want[i])) << i;
    EXPECT_FALSE(torch::equal(fresh[i], want[i])) << i << ": the trained statistics differ from the first ones";
  }

  auto plain = Load(Module("digits_mlp.pt"));
  ASSERT_TRUE(plain.ok());
  const StatusOr<std::string> none = (*plain)->SaveBuffers();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty()) << "nothing to keep";
  EXPECT_TRUE((*plain)->LoadBuffers("").ok());
  EXPECT_EQ((*plain)->LoadBuffers(*bytes).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*resumed)->LoadBuffers("not a pickle").code(), StatusCode::kInvalidArgument);
  const std::vector<torch::Tensor> kept = buffers_of(**resumed, "kept.pt");
  for (size_t i = 0; i < kept.size(); ++i) EXPECT_TRUE(torch::equal(kept[i], want[i])) << "untouched by a refusal";
}

// Any other module's forward may use its children in any order: it is one
// layer, which says why it is not cut, and a stage of it trains the whole
// module (auto runs it so on a device or a group; PipelineProblemOf refuses a
// pipeline of it).
// Layers that share a weight are not cut apart: stages of their own would
// each train a copy, and a pipeline of a tied module saved the model it began
// with (a new user's trial). A tie within one layer is its own, held once.
TEST_F(TorchScriptTrainerTest, LayersThatShareAWeightAreOneLayer) {
  ModelSpec model;
  model.kind = ModelKind::kTorchScript;
  const int64_t unique = 64 * 64 + 64 + 64 + 64 * 10 + 10;
  model.torchscript_path = Module("tied_across_layers.pt");
  auto across = ProfileLayers(model, digits_->train.info, {.batch_size = 4, .repetitions = 1});
  ASSERT_TRUE(across.ok()) << across.status().ToString();
  ASSERT_EQ(across->size(), 1u);
  EXPECT_EQ((*across)[0].cannot_cut, Module("tied_across_layers.pt") + "'s layers 1 and 3 share a weight, which "
                                                                       "stages of their own would train as two copies");
  EXPECT_EQ((*across)[0].parameter_bytes, 4 * unique);
  auto whole = Load(model.torchscript_path);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ((*whole)->ParameterCount(), unique);

  model.torchscript_path = Module("tied_within_a_layer.pt");
  auto within = ProfileLayers(model, digits_->train.info, {.batch_size = 4, .repetitions = 1});
  ASSERT_TRUE(within.ok()) << within.status().ToString();
  ASSERT_EQ(within->size(), 4u) << "cut between its children";
  int64_t bytes = 0;
  for (const LayerCost& layer : *within) bytes += layer.parameter_bytes;
  EXPECT_EQ(bytes, 4 * unique) << "the stages' parameters are the module's, each once";
}

TEST_F(TorchScriptTrainerTest, AnyOtherModuleIsOneLayerThatSaysWhyItIsNotCut) {
  ModelSpec model;
  model.kind = ModelKind::kTorchScript;
  model.torchscript_path = Module("two_paths.pt");
  EXPECT_TRUE(Load(model.torchscript_path).ok()) << "it trains whole";
  auto layers = ProfileLayers(model, digits_->train.info, {.batch_size = 4, .repetitions = 1});
  ASSERT_TRUE(layers.ok()) << layers.status().ToString();
  ASSERT_EQ(layers->size(), 1u);
  EXPECT_EQ((*layers)[0].name, "TwoPaths");
  EXPECT_EQ((*layers)[0].cannot_cut, Module("two_paths.pt") + " is a TwoPaths, whose forward may use its children in "
                                                              "any order");
  EXPECT_EQ((*layers)[0].parameter_bytes, 4 * (64 * 64 + 64 + 64 * 10 + 10)) << "every weight of the module";
  EXPECT_EQ((*layers)[0].activation_bytes, 4 * 10);
  // A stage of it runs the module's forward, skip connection and all.
  auto stage = CreateStageTrainer({model, digits_->train.info, 1, 1, 0, 1});
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  EXPECT_EQ((*stage)->OutputSize(), 10);
  auto out = (*stage)->Forward(0, std::vector<float>(2 * 64, 0.5f));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->size(), 2u * 10);
}

}  // namespace
}  // namespace edgetrain::agent

#include "agent/torch/trainer.h"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include <gtest/gtest.h>

#include "core/row_layout.h"
#include "core/row_optimizer.h"

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;

class TrainerTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto split = LoadDataset(DatasetName::kDigits, DefaultDataSearchPath());
    ASSERT_TRUE(split.ok()) << split.status().ToString();
    digits_ = new TrainTestSplit(std::move(*split));
  }
  static void TearDownTestSuite() { delete digits_; }

  static std::unique_ptr<Trainer> Make(ModelSpec model, uint64_t seed = 1) {
    auto trainer = CreateTrainer({model, digits_->train.info, seed, 1});
    EXPECT_TRUE(trainer.ok()) << trainer.status().ToString();
    return trainer.ok() ? std::move(*trainer) : nullptr;
  }

  // `steps` batches of 64 taken in order, wrapping around the training set,
  // each a gradient and a step of the engine's optimizer on the whole model.
  static std::vector<double> Train(Trainer& trainer, const OptimizerSpec& optimizer, int steps) {
    const Dataset& d = digits_->train;
    const RowLayout layout(trainer.ParameterShapes(), SyncGranularity::kModel);
    RowOptimizer step(optimizer, layout);
    std::vector<float> gradient(static_cast<size_t>(layout.total_floats()));
    std::vector<double> losses;
    for (int s = 0; s < steps; ++s) {
      int64_t first = (s * 64) % (d.size() - 64);
      std::vector<float> x(static_cast<size_t>(64 * d.SampleSize()));
      d.CopySamples(first, 64, x.data());
      auto loss = trainer.ComputeGradient(x.data(), d.labels.data() + first, 64, gradient);
      EXPECT_TRUE(loss.ok()) << loss.status().ToString();
      losses.push_back(loss.ok() ? *loss : 0);
      step.Apply(0, trainer.Parameters(), gradient);
    }
    return losses;
  }

  static TrainTestSplit* digits_;
};
TrainTestSplit* TrainerTest::digits_ = nullptr;

const OptimizerSpec kAdam{OptimizerKind::kAdam, 0.01, std::nullopt, 0};

TEST_F(TrainerTest, MlpLearnsDigits) {
  auto trainer = Make({ModelKind::kMlp, {64}, {}});
  ASSERT_TRUE(trainer);
  auto before = trainer->Evaluate(digits_->test);
  ASSERT_TRUE(before.ok());
  EXPECT_LT(before->accuracy, 0.3);
  Train(*trainer, kAdam, 300);
  auto after = trainer->Evaluate(digits_->test);
  ASSERT_TRUE(after.ok());
  EXPECT_GT(after->accuracy, 0.9);
  EXPECT_LT(after->loss, before->loss);
  EXPECT_EQ(trainer->ParameterCount(), 64 * 64 + 64 + 64 * 10 + 10);
}

TEST_F(TrainerTest, CnnWithSgdMomentumLearns) {
  auto trainer = Make({ModelKind::kCnn, {}, {8, 16}});
  ASSERT_TRUE(trainer);
  std::vector<double> losses = Train(*trainer, {OptimizerKind::kSgd, 0.05, 0.9, 0}, 200);
  double first = std::accumulate(losses.begin(), losses.begin() + 20, 0.0);
  double last = std::accumulate(losses.end() - 20, losses.end(), 0.0);
  EXPECT_LT(last, first / 3);
  auto eval = trainer->Evaluate(digits_->test);
  ASSERT_TRUE(eval.ok());
  EXPECT_GT(eval->accuracy, 0.85);
}

TEST_F(TrainerTest, VggTrainsOnFashionMnistShapedImages) {
  const DatasetInfo fashion = InfoOf(DatasetName::kFashionMnist);
  auto trainer = CreateTrainer({{ModelKind::kVgg, {}, {}, {}}, fashion, 1, 1});
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  // The default widths: eight 3x3 convs, pooled 28 -> 14 -> 7 -> 3 -> 1, then 128 -> 10.
  int64_t want = 0, in = 1;
  for (int64_t out : {16, 16, 32, 32, 64, 64, 128, 128}) {
    want += in * out * 9 + out;
    in = out;
  }
  want += 128 * 10 + 10;
  EXPECT_EQ((*trainer)->ParameterCount(), want);
  EXPECT_EQ((*trainer)->ParameterShapes().size(), 18u) << "a weight and a bias for each conv and the classifier";

  // One batch of noise, learned by heart: the loss must fall within a few steps.
  constexpr int64_t kBatch = 16;
  std::vector<float> x(static_cast<size_t>(kBatch * 28 * 28));
  std::vector<int64_t> y(kBatch);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 256) / 255.0f;
  for (int64_t i = 0; i < kBatch; ++i) y[static_cast<size_t>(i)] = i % 10;
  const RowLayout layout((*trainer)->ParameterShapes(), SyncGranularity::kModel);
  ASSERT_EQ(layout.total_floats(), want);
  RowOptimizer step(kAdam, layout);
  std::vector<float> gradient(static_cast<size_t>((*trainer)->ParameterCount()));
  std::vector<double> losses;
  for (int s = 0; s < 8; ++s) {
    auto loss = (*trainer)->ComputeGradient(x.data(), y.data(), kBatch, gradient);
    ASSERT_TRUE(loss.ok()) << loss.status().ToString();
    losses.push_back(*loss);
    step.Apply(0, (*trainer)->Parameters(), gradient);
  }
  EXPECT_TRUE(std::any_of(gradient.begin(), gradient.end(), [](float g) { return g != 0; }));
  EXPECT_LT(losses.back(), losses.front());
}

TEST_F(TrainerTest, SameSeedSameTraining) {
  auto a = Make({ModelKind::kMlp, {32}, {}}, 7);
  auto b = Make({ModelKind::kMlp, {32}, {}}, 7);
  auto c = Make({ModelKind::kMlp, {32}, {}}, 8);
  std::vector<double> la = Train(*a, kAdam, 20), lb = Train(*b, kAdam, 20), lc = Train(*c, kAdam, 20);
  EXPECT_EQ(la, lb);
  EXPECT_NE(la, lc);
}

TEST_F(TrainerTest, ModelThatCannotFitTheDataIsRefused) {
  auto trainer = CreateTrainer({{ModelKind::kCnn, {}, {4, 4, 4, 4}}, digits_->train.info, 1, 1});
  ASSERT_FALSE(trainer.ok());
  EXPECT_EQ(trainer.status().code(), StatusCode::kInvalidArgument);
  auto vgg = CreateTrainer({{ModelKind::kVgg, {}, {}, {}}, digits_->train.info, 1, 1});  // 4 pools on 8x8
  ASSERT_FALSE(vgg.ok());
  EXPECT_NE(vgg.status().message().find("spec.model.widths"), std::string::npos) << vgg.status().message();
}

TEST_F(TrainerTest, SavesLeaveNoTemporaryFilesBehind) {
  auto trainer = Make({ModelKind::kMlp, {16}, {}});
  fs::path dir = fs::path(testing::TempDir()) / "trainer-save";
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_TRUE(trainer->SaveModel((dir / "model.pt").string()).ok());
  EXPECT_GT(fs::file_size(dir / "model.pt"), 16u * 64 * 4);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos);
  }
  EXPECT_EQ(files, 1);
  Status bad = trainer->SaveModel((dir / "no-such-dir" / "model.pt").string());
  EXPECT_FALSE(bad.ok());
}

TEST_F(TrainerTest, ASavedModelLoadsBackWithItsShapeAndItsAccuracy) {
  const fs::path dir = fs::path(testing::TempDir()) / "trainer-load";
  fs::remove_all(dir);
  fs::create_directories(dir);
  struct Case {
    ModelSpec spec;
    const char* file;
  } cases[] = {{{ModelKind::kMlp, {32, 16}, {}}, "mlp.pt"},
               {{ModelKind::kCnn, {}, {4}}, "cnn.pt"},
               {{ModelKind::kCnn, {}, {4, 8}}, "cnn2.pt"},
               {{ModelKind::kVgg, {}, {}, {4, 4, 8}}, "vgg.pt"}};
  for (const auto& c : cases) {
    auto trained = Make(c.spec, 7);
    Train(*trained, kAdam, 60);
    const std::string path = (dir / c.file).string();
    ASSERT_TRUE(trained->SaveModel(path).ok());

    auto spec = ReadModelSpec(path);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->kind, c.spec.kind);
    EXPECT_EQ(spec->hidden, c.spec.hidden);
    EXPECT_EQ(spec->channels, c.spec.channels);
    EXPECT_EQ(spec->widths, c.spec.widths);

    auto fresh = Make(*spec, 99);  // other initial weights
    ASSERT_TRUE(fresh->LoadModel(path).ok());
    auto want = trained->Evaluate(digits_->test);
    auto got = fresh->Evaluate(digits_->test);
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_EQ(got->accuracy, want->accuracy);
    EXPECT_DOUBLE_EQ(got->loss, want->loss);
    const auto a = trained->Parameters(), b = fresh->Parameters();
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << "loaded in place, into the flat parameters";
  }
  auto other = Make({ModelKind::kMlp, {8}, {}});
  Status mismatch = other->LoadModel((dir / "mlp.pt").string());
  EXPECT_EQ(mismatch.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadModelSpec((dir / "absent.pt").string()).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace edgetrain::agent

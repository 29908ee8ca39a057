#include "agent/torch/trainer.h"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include <gtest/gtest.h>

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

  static std::unique_ptr<Trainer> Make(ModelSpec model, OptimizerSpec optimizer, uint64_t seed = 1) {
    auto trainer = CreateTrainer({model, optimizer, digits_->train.info, seed, 1});
    EXPECT_TRUE(trainer.ok()) << trainer.status().ToString();
    return trainer.ok() ? std::move(*trainer) : nullptr;
  }

  // `steps` batches of 64 taken in order, wrapping around the training set.
  static std::vector<double> Train(Trainer& trainer, int steps) {
    const Dataset& d = digits_->train;
    std::vector<double> losses;
    for (int s = 0; s < steps; ++s) {
      int64_t first = (s * 64) % (d.size() - 64);
      std::vector<float> x(static_cast<size_t>(64 * d.SampleSize()));
      d.CopySamples(first, 64, x.data());
      auto loss = trainer.TrainStep(x.data(), d.labels.data() + first, 64);
      EXPECT_TRUE(loss.ok()) << loss.status().ToString();
      losses.push_back(loss.ok() ? *loss : 0);
    }
    return losses;
  }

  static TrainTestSplit* digits_;
};
TrainTestSplit* TrainerTest::digits_ = nullptr;

const OptimizerSpec kAdam{OptimizerKind::kAdam, 0.01, std::nullopt, 0};

TEST_F(TrainerTest, MlpLearnsDigits) {
  auto trainer = Make({ModelKind::kMlp, {64}, {}}, kAdam);
  ASSERT_TRUE(trainer);
  auto before = trainer->Evaluate(digits_->test);
  ASSERT_TRUE(before.ok());
  EXPECT_LT(before->accuracy, 0.3);
  Train(*trainer, 300);
  auto after = trainer->Evaluate(digits_->test);
  ASSERT_TRUE(after.ok());
  EXPECT_GT(after->accuracy, 0.9);
  EXPECT_LT(after->loss, before->loss);
  EXPECT_EQ(trainer->ParameterCount(), 64 * 64 + 64 + 64 * 10 + 10);
}

TEST_F(TrainerTest, CnnWithSgdMomentumLearns) {
  auto trainer = Make({ModelKind::kCnn, {}, {8, 16}}, {OptimizerKind::kSgd, 0.05, 0.9, 0});
  ASSERT_TRUE(trainer);
  std::vector<double> losses = Train(*trainer, 200);
  double first = std::accumulate(losses.begin(), losses.begin() + 20, 0.0);
  double last = std::accumulate(losses.end() - 20, losses.end(), 0.0);
  EXPECT_LT(last, first / 3);
  auto eval = trainer->Evaluate(digits_->test);
  ASSERT_TRUE(eval.ok());
  EXPECT_GT(eval->accuracy, 0.85);
}

TEST_F(TrainerTest, SameSeedSameTraining) {
  auto a = Make({ModelKind::kMlp, {32}, {}}, kAdam, 7);
  auto b = Make({ModelKind::kMlp, {32}, {}}, kAdam, 7);
  auto c = Make({ModelKind::kMlp, {32}, {}}, kAdam, 8);
  std::vector<double> la = Train(*a, 20), lb = Train(*b, 20), lc = Train(*c, 20);
  EXPECT_EQ(la, lb);
  EXPECT_NE(la, lc);
}

TEST_F(TrainerTest, ModelThatCannotFitTheDataIsRefused) {
  auto trainer = CreateTrainer({{ModelKind::kCnn, {}, {4, 4, 4, 4}}, kAdam, digits_->train.info, 1, 1});
  ASSERT_FALSE(trainer.ok());
  EXPECT_EQ(trainer.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TrainerTest, SavesLeaveNoTemporaryFilesBehind) {
  auto trainer = Make({ModelKind::kMlp, {16}, {}}, kAdam);
  fs::path dir = fs::path(testing::TempDir()) / "trainer-save";
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_TRUE(trainer->SaveModel((dir / "model.pt").string()).ok());
  ASSERT_TRUE(trainer->SaveCheckpoint((dir / "checkpoint.pt").string()).ok());
  EXPECT_GT(fs::file_size(dir / "model.pt"), 16u * 64 * 4);
  EXPECT_GT(fs::file_size(dir / "checkpoint.pt"), fs::file_size(dir / "model.pt"));
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_NE(e.path().extension(), ".tmp");
  }
  EXPECT_EQ(files, 2);
  Status bad = trainer->SaveModel((dir / "no-such-dir" / "model.pt").string());
  EXPECT_FALSE(bad.ok());
}

TEST_F(TrainerTest, ASavedModelLoadsBackWithItsShapeAndItsAccuracy) {
  const fs::path dir = fs::path(testing::TempDir()) / "trainer-load";
  fs::remove_all(dir);
  fs::create_directories(dir);
  struct Case {
    ModelSpec spec;
  } cases[] = {{{ModelKind::kMlp, {32, 16}, {}}}, {{ModelKind::kCnn, {}, {4}}}};
  for (const auto& c : cases) {
    auto trained = Make(c.spec, kAdam, 7);
    Train(*trained, 60);
    const std::string path = (dir / (std::string(NameOf(c.spec.kind)) + ".pt")).string();
    ASSERT_TRUE(trained->SaveModel(path).ok());

    auto spec = ReadModelSpec(path);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->kind, c.spec.kind);
    EXPECT_EQ(spec->hidden, c.spec.hidden);
    EXPECT_EQ(spec->channels, c.spec.channels);

    auto fresh = Make(*spec, kAdam, 99);  // other initial weights
    ASSERT_TRUE(fresh->LoadModel(path).ok());
    auto want = trained->Evaluate(digits_->test);
    auto got = fresh->Evaluate(digits_->test);
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_EQ(got->accuracy, want->accuracy);
    EXPECT_DOUBLE_EQ(got->loss, want->loss);
    const auto a = trained->Parameters(), b = fresh->Parameters();
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << "loaded in place, into the flat parameters";
  }
  auto other = Make({ModelKind::kMlp, {8}, {}}, kAdam);
  Status mismatch = other->LoadModel((dir / "mlp.pt").string());
  EXPECT_EQ(mismatch.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadModelSpec((dir / "absent.pt").string()).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace edgetrain::agent

#include "agent/solo_training.h"

#include <filesystem>

#include <gtest/gtest.h>

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

// A trainer whose steps take one simulated second each and whose accuracy
// climbs by 0.1 per evaluation: the loop's budget logic, without LibTorch.
class ScriptedTrainer final : public Trainer {
 public:
  explicit ScriptedTrainer(SimulatedClock& clock) : clock_(clock) {}
  StatusOr<double> TrainStep(const float*, const int64_t*, int64_t n) override {
    clock_.Advance(seconds(1));
    samples_ += n;
    return 1.0 / static_cast<double>(++steps_);
  }
  StatusOr<Evaluation> Evaluate(const Dataset&) override {
    accuracy_ = std::min(1.0, accuracy_ + 0.1);
    return Evaluation{accuracy_, 1 - accuracy_};
  }
  StatusOr<double> ComputeGradient(const float*, const int64_t*, int64_t, std::span<float> gradient) override {
    std::fill(gradient.begin(), gradient.end(), 0.5f);
    return 1.0;
  }
  std::span<float> Parameters() override { return weights_; }
  std::vector<std::vector<int64_t>> ParameterShapes() const override { return {{2}}; }
  Status SaveModel(const std::string& path) override { return Touch(path); }
  Status SaveCheckpoint(const std::string& path) override {
    ++checkpoints_;
    return Touch(path);
  }
  int64_t ParameterCount() const override { return 1; }

  int steps_ = 0;
  int64_t samples_ = 0;
  int checkpoints_ = 0;

 private:
  static Status Touch(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return InternalError("cannot write " + path);
    std::fclose(f);
    return Status::Ok();
  }
  SimulatedClock& clock_;
  double accuracy_ = 0;
  std::vector<float> weights_ = {0, 0};
};

// 100 samples of 1x2x2 zeros: 4 steps per epoch at batch 32 (the last one of 4).
TrainTestSplit TinyData() {
  TrainTestSplit d;
  d.train.info = d.test.info = {1, 2, 2, 10, 100, 10};
  d.train.pixels.assign(100 * 4, 0);
  d.train.labels.assign(100, 3);
  d.test.pixels.assign(10 * 4, 0);
  d.test.labels.assign(10, 3);
  return d;
}

struct SoloTrainingTest : testing::Test {
  SoloTrainingOptions Options() {
    SoloTrainingOptions o;
    o.spec.data.batch_size = 32;
    o.spec.evaluation.every_iterations = 3;
    o.spec.seed = 1;
    o.output_dir = (fs::path(testing::TempDir()) / testing::UnitTest::GetInstance()->current_test_info()->name()).string();
    fs::remove_all(o.output_dir);
    return o;
  }
  StatusOr<JobProgress> Run(const SoloTrainingOptions& o) {
    return RunSoloTraining(o, trainer, data, clock, board, cancel);
  }
  SimulatedClock clock;
  ScriptedTrainer trainer{clock};
  TrainTestSplit data = TinyData();
  ProgressBoard board;
  std::atomic<bool> cancel{false};
};

TEST_F(SoloTrainingTest, StopsAfterItsEpochsAndSavesTheModel) {
  SoloTrainingOptions o = Options();
  o.spec.budget.epochs = 2;
  auto result = Run(o);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->iteration, 8);
  EXPECT_EQ(result->samples, 200);
  EXPECT_EQ(trainer.samples_, 200);
  EXPECT_EQ(result->stop_reason, "epochs");
  EXPECT_EQ(result->state, JobState::kSucceeded);
  EXPECT_FALSE(result->reached_target);
  // Evaluated at iterations 3 and 6, then once more at the end: 0.3.
  EXPECT_DOUBLE_EQ(*result->accuracy, 0.3);
  EXPECT_TRUE(fs::exists(o.output_dir + "/model.pt"));
  EXPECT_TRUE(fs::exists(o.output_dir + "/model.json"));
  EXPECT_EQ(result->model_path, o.output_dir + "/model.pt");
  JobProgress shown = board.Snapshot();
  EXPECT_EQ(shown.iteration, 8);
  EXPECT_EQ(shown.state, JobState::kSucceeded);
  EXPECT_DOUBLE_EQ(shown.fraction, 1.0);
  EXPECT_DOUBLE_EQ(shown.elapsed_s, 8);
  EXPECT_DOUBLE_EQ(shown.samples_per_second, 25);
}

TEST_F(SoloTrainingTest, StopsAtTheWallClockOnTheSimulatedClock) {
  SoloTrainingOptions o = Options();
  o.spec.budget.wall_clock = seconds(5);
  auto result = Run(o);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->iteration, 5);
  EXPECT_EQ(result->stop_reason, "wallClock");
  EXPECT_DOUBLE_EQ(*result->eta_s, 0);
}

TEST_F(SoloTrainingTest, StopsWhenAnEvaluationReachesTheTarget) {
  SoloTrainingOptions o = Options();
  o.spec.budget.wall_clock = seconds(1000);
  o.spec.budget.target_accuracy = 0.3;
  auto result = Run(o);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  // Evaluations at 3, 6, 9 give 0.1, 0.2, 0.3.
  EXPECT_EQ(result->iteration, 9);
  EXPECT_EQ(result->stop_reason, "target");
  EXPECT_TRUE(result->reached_target);
  EXPECT_DOUBLE_EQ(*result->accuracy, 0.3);
}

TEST_F(SoloTrainingTest, CheckpointsEveryNIterations) {
  SoloTrainingOptions o = Options();
  o.spec.budget.epochs = 3;
  o.spec.fault_tolerance.checkpoint_every = 5;
  auto result = Run(o);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(trainer.checkpoints_, 2);  // at 5 and 10 of 12
  EXPECT_TRUE(fs::exists(o.output_dir + "/checkpoint.pt"));
}

TEST_F(SoloTrainingTest, CancelStopsAtTheNextStepAndStillSaves) {
  SoloTrainingOptions o = Options();
  o.spec.budget.epochs = 100;
  cancel = true;
  auto result = Run(o);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->iteration, 1);
  EXPECT_EQ(result->stop_reason, "cancelled");
  EXPECT_TRUE(fs::exists(o.output_dir + "/model.pt"));
}

}  // namespace
}  // namespace edgetrain::agent

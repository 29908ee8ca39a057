// The job driver with a job of one (SoloEngine) training a fake model on a
// deterministic clock: budgets, schedules, the final model, and resuming.
#include "agent/job_driver.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/progress_board.h"
#include "agent/solo_engine.h"
#include "agent/storage/atomic_file.h"
#include "agent/storage/checkpoint.h"
#include "agent/testing/fake_trainer.h"
#include "core/deterministic_clock.h"

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A job of one that knows what its evaluation takes, as a pipeline's head
// does from its layers as profiled (PipelineHead::EvaluationGuess).
class GuessingEngine final : public TrainingEngine {
 public:
  GuessingEngine(TrainingEngine& inner, std::optional<double> guess, bool evaluation_fails = false,
                 std::function<void()> finished = {})
      : inner_(inner), guess_(guess), evaluation_fails_(evaluation_fails), finished_(std::move(finished)) {}
  std::optional<double> EvaluationGuess() const override { return guess_; }
  int64_t SamplesPerEpoch() const override { return inner_.SamplesPerEpoch(); }
  Status Restore(const JobCheckpoint& checkpoint) override { return inner_.Restore(checkpoint); }
  Status Start(const std::atomic<bool>& cancel) override { return inner_.Start(cancel); }
  Status Advance() override { return inner_.Advance(); }
  std::optional<TimePoint> JobClockStart() override { return inner_.JobClockStart(); }
  JobProgress Progress() override { return inner_.Progress(); }
  StatusOr<double> Evaluate() override {
    if (evaluation_fails_) return InternalError("the evaluation died with its process");
    return inner_.Evaluate();
  }
  int64_t TestSamples() const override { return inner_.TestSamples(); }
  void Snapshot(JobCheckpoint& into) override { inner_.Snapshot(into); }
  void Interrupted() override { inner_.Interrupted(); }
  Status Finish(FinalModel final) override {
    if (finished_) finished_();
    return inner_.Finish(final);
  }
  Status SaveModel(const std::string& path) override { return inner_.SaveModel(path); }

 private:
  TrainingEngine& inner_;
  std::optional<double> guess_;
  bool evaluation_fails_;
  std::function<void()> finished_;  // as training ends, before the final model and checkpoint
};

// An engine whose steps a test writes, for what a job of one never does (no
// step at all, a model that moves between iterations): each Advance runs
// `advance` on the progress it reports; each evaluation is counted and scored
// by `score` (1 for the first).
class ScriptedEngine final : public TrainingEngine {
 public:
  std::function<void(JobProgress&)> advance = [](JobProgress&) {};
  std::function<double(int)> score = [](int) { return 0.1; };
  JobProgress progress;
  int advanced = 0, evaluated = 0;

  int64_t SamplesPerEpoch() const override { return 160; }  // ten steps of 16
  Status Restore(const JobCheckpoint&) override { return Status::Ok(); }
  Status Start(const std::atomic<bool>&) override { return Status::Ok(); }
  Status Advance() override {
    ++advanced;
    advance(progress);
    return Status::Ok();
  }
  JobProgress Progress() override { return progress; }
  StatusOr<double> Evaluate() override { return score(++evaluated); }
  int64_t TestSamples() const override { return 10; }
  void Snapshot(JobCheckpoint&) override {}
  std::function<void(JobProgress&, FinalModel)> finish = [](JobProgress&, FinalModel) {};
  Status Finish(FinalModel final) override {
    finish(progress, final);
    return Status::Ok();
  }
  Status SaveModel(const std::string& path) override { return WriteFileAtomically(path, "scripted"); }
};

struct JobDriverTest : ::testing::Test {
  JobDriverTest() {
    plan.job = "solo";
    plan.output_dir = (fs::path(::testing::TempDir()) /
                       ("driver-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())))
                          .string();
    fs::remove_all(plan.output_dir);
    JobSpec& spec = plan.spec;
    spec.data.batch_size = 16;  // 160 samples: 10 steps an epoch
    spec.optimizer = {OptimizerKind::kSgd, 0.1, std::nullopt, 0};
    spec.evaluation.every_iterations = 5;
    spec.budget.epochs = 4;
    spec.seed = 1;
  }

  // A job run afresh, interrupted, and run again as it was resumes with
  // nothing said to have changed.
  void ExpectAResumeSaysNothingChanged() {
    fs::remove_all(plan.output_dir);
    ASSERT_TRUE(Run(milliseconds(123)).ok());
    auto same = Run();
    ASSERT_TRUE(same.ok());
    EXPECT_TRUE(same->resumed_from_iteration.has_value()) << "it resumed";
    EXPECT_TRUE(same->resumed_with_changes.empty());
  }

  // Runs the job on a fresh engine; `cancel_after` (simulated) interrupts it.
  StatusOr<JobProgress> Run(std::optional<Duration> cancel_after = std::nullopt) {
    StatusOr<JobProgress> result = InternalError("not run");
    DeterministicClock clock;
    clock.Run("test", [&] {
      testing::FakeTrainer trainer(model, clock);
      SoloEngine solo(plan.spec, trainer, data, {}, {}, clock);
      GuessingEngine engine(solo, evaluation_guess, evaluation_fails, training_finished);
      MetricsRegistry registry;
      CoordinatorMetrics metrics(registry, plan.job, 1);
      std::atomic<bool> cancel{false};
      ClockThread interrupter;
      if (cancel_after) {
        interrupter = clock.StartThread("interrupter", [&] {
          clock.SleepFor(*cancel_after);
          cancel = true;
        });
      }
      // A reader of the board every simulated millisecond, as /progress.
      std::atomic<bool> done{false};
      ClockThread reader;
      if (read_elapsed) {
        reader = clock.StartThread("reader", [&] {
          while (!done) {
            const JobProgress read = board.SnapshotAt(clock.Now());
            elapsed_read.push_back(read.elapsed_s);
            iterations_read.insert(read.iteration);
            if (read.evaluating) evaluation_read.push_back(read.evaluation_s);
            if (read.evaluating && read.stop_reason) stopped_while_evaluating = true;
            clock.SleepFor(milliseconds(1));
          }
        });
      }
      JobDriver driver(plan, engine, clock, board, metrics, log);
      if (publish_every) driver.SetPublishEvery(*publish_every);
      driver.NameClasses(class_names);
      result = driver.Run(cancel);
      done = true;
      metrics_text = registry.Render();
    });
    return result;
  }
  // Runs the job on `engine`, whose steps may sleep on `clock`.
  StatusOr<JobProgress> RunOn(TrainingEngine& engine, DeterministicClock& clock, const std::atomic<bool>& cancel) {
    StatusOr<JobProgress> result = InternalError("not run");
    clock.Run("test", [&] {
      MetricsRegistry registry;
      CoordinatorMetrics metrics(registry, plan.job, 1);
      JobDriver driver(plan, engine, clock, board, metrics, log);
      driver.NameClasses(class_names);
      result = driver.Run(cancel);
    });
    return result;
  }
  std::vector<std::string> class_names;  // as image folders name them; none by default
  // evaluations.csv's first line, and the iteration of each row after it.
  std::pair<std::string, std::vector<int64_t>> EvaluationRows() {
    std::istringstream rows(Evaluations());
    std::string header, row;
    std::getline(rows, header);
    std::vector<int64_t> iterations;
    while (std::getline(rows, row)) iterations.push_back(std::stoll(row.substr(row.find(',') + 1)));
    return {header, iterations};
  }
  std::string Evaluations() {
    std::ifstream in(plan.output_dir + "/evaluations.csv");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  JobPlan plan;
  testing::FakeModel model;
  TrainTestSplit data = testing::FakeData(160, 50, 10);
  ProgressBoard board;
  std::ostringstream log;
  std::optional<double> evaluation_guess;  // the engine's, where it has one
  bool evaluation_fails = false;  // every evaluation ends in an error, as a process killed during it
  std::function<void()> training_finished;  // what happens as training ends
  bool read_elapsed = false;
  std::vector<double> elapsed_read;  // the job's clock as the reader saw it
  std::set<int64_t> iterations_read;  // the iterations the reader saw
  std::optional<Duration> publish_every;  // the driver's own unless set
  std::vector<double> evaluation_read;  // evaluationSeconds while it said it evaluated
  bool stopped_while_evaluating = false;  // a read of the final evaluation said training had stopped
  std::string metrics_text;  // the job's metrics as the last Run() left them
};

TEST_F(JobDriverTest, TrainsToItsEpochsEvaluatingOnItsMarksAndSavesTheModel) {
  auto result = Run();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->stop_reason, StopReason::kEpochs);
  EXPECT_EQ(result->iteration, 40);
  EXPECT_EQ(result->samples, 640);
  EXPECT_EQ(result->evaluated_iteration, 40);
  EXPECT_GT(*result->accuracy, 0.9);
  EXPECT_DOUBLE_EQ(result->elapsed_s, 40 * 0.005) << "five simulated milliseconds a step, nothing else";
  EXPECT_TRUE(fs::exists(plan.output_dir + "/model.pt"));
  EXPECT_TRUE(fs::exists(plan.output_dir + "/model.json"));
  // Evaluated at 5, 10, ..., 40: eight rows and the header.
  const std::string csv = Evaluations();
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9) << csv;
  EXPECT_EQ(board.Snapshot().state, JobState::kSucceeded);
}

// /progress is refreshed every 100 ms unless the agent is told otherwise
// (--progress-every): a benchmark that times recovery from it reads no finer.
TEST_F(JobDriverTest, PublishesItsProgressAsOftenAsItIsTold) {
  plan.spec.evaluation.every_iterations = 1000;  // evaluations publish too: the final one only
  read_elapsed = true;
  ASSERT_TRUE(Run().ok());
  // Five simulated milliseconds a step: every 20th step, and the last.
  EXPECT_LE(iterations_read.size(), 5u) << ::testing::PrintToString(iterations_read);
  iterations_read.clear();
  publish_every = milliseconds(5);
  ASSERT_TRUE(Run().ok());
  for (int64_t i = 1; i <= 40; ++i) EXPECT_TRUE(iterations_read.count(i)) << "step " << i << " was never read";
}

// Every checkpoint written is counted, not only the periodic ones: with
// none due, an interrupted run still writes the one it resumes from.
TEST_F(JobDriverTest, CountsEveryCheckpointItWrites) {
  plan.spec.fault_tolerance.checkpoint_every = 0;
  ASSERT_TRUE(Run(milliseconds(123)).ok());
  EXPECT_TRUE(fs::exists(plan.CheckpointPath()));
  EXPECT_NE(metrics_text.find("edgetrain_job_checkpoints_total{trainingjob=\"" + plan.job + "\"} 1\n"),
            std::string::npos)
      << metrics_text;
  plan.spec.fault_tolerance.checkpoint_every = 10;
  // Resumed: 30 and 40 due; then the one kept before the final evaluation,
  // the last one before the model is written, and that one marked complete.
  ASSERT_TRUE(Run().ok());
  EXPECT_NE(metrics_text.find("edgetrain_job_checkpoints_total{trainingjob=\"" + plan.job + "\"} 5\n"),
            std::string::npos)
      << metrics_text;
}

TEST_F(JobDriverTest, StopsAtTheTargetAndKeepsTheModelThatReachedIt) {
  plan.spec.budget.target_accuracy = 0.5;
  auto result = Run();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->stop_reason, StopReason::kTarget);
  EXPECT_TRUE(result->reached_target);
  EXPECT_EQ(result->evaluated_iteration, result->iteration);
  EXPECT_LT(result->iteration, 40);
}

TEST_F(JobDriverTest, StopsAtItsWallClock) {
  plan.spec.budget = {};
  plan.spec.budget.wall_clock = milliseconds(100);
  auto result = Run();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->stop_reason, StopReason::kWallClock);
  EXPECT_EQ(result->iteration, 20);
}

// The device draws 15 W computing (the default power profile, docs/energy.md)
// and a step computes 5 ms: 0.075 J a step, so 1.5 J is spent at step 20,
// before the epochs' 400; the model it stopped with is evaluated.
TEST_F(JobDriverTest, StopsOnceItsModelledEnergyReachesItsEnergyBudget) {
  plan.spec.budget.epochs = 40;
  plan.spec.budget.energy_joules = 1.5;
  plan.spec.evaluation.every_iterations = 1000;  // evaluations would draw joules too
  auto result = Run();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->stop_reason, StopReason::kEnergy);
  EXPECT_EQ(result->iteration, 20);
  ASSERT_TRUE(result->energy_joules.has_value());
  EXPECT_NEAR(*result->energy_joules, 1.5, 1e-9);
  EXPECT_DOUBLE_EQ(result->fraction, 1.0);
  EXPECT_EQ(result->evaluated_iteration, 20) << "the final model is evaluated";
}

// An evaluation due when the budget runs out is the final model's, made once
// training has stopped: it does not lengthen the training past the budget (a
// pipeline's ran 0.9-3.6 s over, found by a new user's trial).
TEST_F(JobDriverTest, AnEvaluationDueAtTheWallClocksEndDoesNotRunPastIt) {
  plan.spec.budget = {};
  plan.spec.budget.wall_clock = milliseconds(100);
  model.evaluation = milliseconds(50);  // due at 5 and 10 steps: 25 + 50 + 25 ms
  auto result = Run();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->stop_reason, StopReason::kWallClock);
  EXPECT_EQ(result->iteration, 10);
  EXPECT_DOUBLE_EQ(result->elapsed_s, 0.1) << "was 0.15: the evaluation at step 10 counted as training";
  EXPECT_DOUBLE_EQ(result->evaluation_s, 0.05) << "of that, the evaluation at step 5; the final one's is after";
  EXPECT_EQ(result->evaluated_iteration, 10) << "the final model is still evaluated";
  ASSERT_TRUE(result->accuracy.has_value());
  const std::string csv = Evaluations();
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << "steps 5 and 10, and the header: " << csv;
}

// A reader sees the job's clock move on through an evaluation, and not go
// back once it is done.
TEST_F(JobDriverTest, TheJobsClockAsReadNeverGoesBackAfterAnEvaluation) {
  plan.spec.budget = {};
  plan.spec.budget.wall_clock = milliseconds(200);
  model.evaluation = milliseconds(50);
  read_elapsed = true;
  auto result = Run();
  ASSERT_TRUE(result.ok());
  ASSERT_GT(elapsed_read.size(), 150u);
  for (size_t i = 1; i < elapsed_read.size(); ++i) {
    ASSERT_GE(elapsed_read[i] + 1e-9, elapsed_read[i - 1]) << "read " << i;
  }
  // Nor past the budget's end while the final model is evaluated: training
  // has stopped, and says so (found in review).
  EXPECT_LE(*std::max_element(elapsed_read.begin(), elapsed_read.end()), result->elapsed_s + 1e-9);
  EXPECT_TRUE(stopped_while_evaluating) << "the final evaluation's reads say training stopped";
  // While it evaluates it says so, and its evaluation's seconds count up.
  ASSERT_GT(evaluation_read.size(), 40u) << "evaluations of 50 ms, read every millisecond";
  EXPECT_GT(*std::max_element(evaluation_read.begin(), evaluation_read.end()), 0.045);
  EXPECT_FALSE(board.Snapshot().evaluating) << "not once it is done";
}

// Nor does one due closer to the end than the last evaluation took: it
// would end past the budget, and the final model's comes anyway.
TEST_F(JobDriverTest, AnEvaluationDueCloserToTheEndThanOneTakesIsLeftToTheFinalOne) {
  plan.spec.budget = {};
  plan.spec.budget.wall_clock = milliseconds(100);
  plan.spec.evaluation.every_iterations = 4;
  model.evaluation = milliseconds(40);  // at step 4, 20 ms in: 60 ms; due at step 8, 80 ms in, 20 ms left
  auto result = Run();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->stop_reason, StopReason::kWallClock);
  EXPECT_EQ(result->iteration, 12) << "steps 9-12 trained where the evaluation at step 8 would have run";
  EXPECT_DOUBLE_EQ(result->elapsed_s, 0.1) << "the evaluation at step 8 would have ended at 0.12";
  EXPECT_DOUBLE_EQ(result->evaluation_s, 0.04) << "step 4's";
  EXPECT_EQ(result->evaluated_iteration, 12) << "the final model is still evaluated";
  const std::string csv = Evaluations();
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << "steps 4 and 12, and the header: " << csv;
}

// Before any evaluation has said how long one takes, one due in the wall
// clock's last tenth is left to the final one too.
TEST_F(JobDriverTest, AFirstEvaluationDueInTheWallClocksLastTenthIsLeftToTheFinalOne) {
  plan.spec.budget = {};
  plan.spec.budget.wall_clock = milliseconds(100);
  plan.spec.evaluation.every_iterations = 19;  // due at 95 ms, 5 ms left
  model.evaluation = milliseconds(40);
  auto result = Run();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->iteration, 20);
  EXPECT_DOUBLE_EQ(result->elapsed_s, 0.1) << "the evaluation at step 19 would have ended at 0.135";
  EXPECT_DOUBLE_EQ(result->evaluation_s, 0) << "none but the final one, after training";
  EXPECT_EQ(result->evaluated_iteration, 20);
  const std::string csv = Evaluations();
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 2) << "step 20's, and the header: " << csv;
}

// Nor one that the test set's size says would run past the end, at the pace
// training has had: a vgg pipeline of 12 s trained 17.7 s, its first
// evaluation begun at 7 s taking 11 s (a new user's trial).
TEST_F(JobDriverTest, AFirstEvaluationTheTestSetsSizeSaysWouldRunPastTheEndIsLeftToTheFinalOne) {
  data = testing::FakeData(160, 1000, 10);
  plan.spec.budget = {};
  plan.spec.budget.wall_clock = milliseconds(100);
  plan.spec.evaluation.every_iterations = 12;  // due at 60 ms, 40 ms left
  model.evaluation = milliseconds(100);
  // Guessed: 60 ms over 192 samples, a third of it forward, times 1,000: 104 ms.
  auto result = Run();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->iteration, 20);
  EXPECT_DOUBLE_EQ(result->elapsed_s, 0.1) << "the evaluation at step 12 would have ended at 0.16";
  EXPECT_DOUBLE_EQ(result->evaluation_s, 0) << "none but the final one, after training";
  // With a test set a tenth of that (10 ms guessed), it is made.
  data = testing::FakeData(160, 100, 10);
  fs::remove_all(plan.output_dir);
  auto small = Run();
  ASSERT_TRUE(small.ok());
  EXPECT_DOUBLE_EQ(small->evaluation_s, 0.1) << "step 12's";
  // With more than half the wall clock left, the first evaluation is made
  // whatever the guess says: it is the training pace's, mostly each pass's
  // own cost at small batches, and at batches of 1 and 4 it left out every
  // evaluation of a vgg, so that a target could never end the run (a new
  // user's trial). That one then says how long the others take.
  data = testing::FakeData(160, 1000, 10);
  plan.spec.evaluation.every_iterations = 6;  // due at 30 ms, 70 ms left
  model.evaluation = milliseconds(20);
  // Guessed: 30 ms over 96 samples, a third of it forward, times 1,000: 104 ms.
  fs::remove_all(plan.output_dir);
  auto early = Run();
  ASSERT_TRUE(early.ok());
  const std::string csv = Evaluations();
  EXPECT_NE(csv.find("\n0.03,6,"), std::string::npos) << csv;
  EXPECT_EQ(early->stop_reason, StopReason::kWallClock);
}

// An engine's own guess stands in for the pace of training's: a pipeline's
// pace is its slowest devices' and its bubbles', and guessed from it a vgg
// hybrid's evaluation at step 200 was left to the final one with 13 s of its
// budget left, where it took 2-3 s (a new user's trial).
TEST_F(JobDriverTest, AnEnginesOwnGuessOfAnEvaluationIsTakenBeforeThePaceOfTraining) {
  data = testing::FakeData(160, 1000, 10);
  plan.spec.budget = {};
  plan.spec.budget.wall_clock = milliseconds(100);
  plan.spec.evaluation.every_iterations = 12;  // due at 60 ms, 40 ms left: the pace guesses 104 ms
  model.evaluation = milliseconds(5);
  evaluation_guess = 0.005;
  auto result = Run();
  ASSERT_TRUE(result.ok());
  EXPECT_NE(Evaluations().find("\n0.06,12,"), std::string::npos) << Evaluations();
  EXPECT_EQ(log.str().find("is left to the final one"), std::string::npos) << log.str();
  // Guessing long, it is left to the final one, and the log says so.
  evaluation_guess = 0.05;
  fs::remove_all(plan.output_dir);
  log.str("");
  auto skipped = Run();
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ(Evaluations().find("\n0.06,12,"), std::string::npos) << Evaluations();
  EXPECT_NE(log.str().find("solo: the evaluation due at iteration 12 is left to the final one"), std::string::npos)
      << log.str();
}

// Interrupted, the final model is not evaluated when evaluating takes longer
// than a person should wait (a vgg's test set through a pipeline's head held
// a Ctrl-C 17-23 s: a new user's trial): the run that resumes evaluates. The
// result keeps the last evaluation, at its iteration; the model's card says
// none of the model written.
TEST_F(JobDriverTest, AnInterruptedRunLeavesASlowFinalEvaluationToTheRunThatResumes) {
  plan.spec.budget.epochs = 100;
  plan.spec.evaluation.every_iterations = 30;  // at 150 ms, to 2.65 s
  model.evaluation = milliseconds(2500);
  auto result = Run(milliseconds(2700));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->state, JobState::kInterrupted);
  EXPECT_GT(result->iteration, 30);
  EXPECT_EQ(result->evaluated_iteration, 30);
  EXPECT_TRUE(result->accuracy.has_value()) << "step 30's";
  EXPECT_NE(log.str().find("the final model's evaluation (about 2.5 s) is left to the run that resumes"),
            std::string::npos)
      << log.str();
  const StatusOr<std::string> card = ReadWholeFile(plan.output_dir + "/model.json");
  ASSERT_TRUE(card.ok());
  EXPECT_NE(card->find("\"accuracy\": null"), std::string::npos) << *card;
  auto kept = LoadCheckpoint(plan.CheckpointPath());
  ASSERT_TRUE(kept.ok() && kept->has_value());
  EXPECT_EQ((*kept)->iteration, result->iteration) << "where it stopped";
  // Interrupted during a slow scheduled evaluation, the model is evaluated
  // at the step it stops at: nothing is left out, and the card says so.
  fs::remove_all(plan.output_dir);
  log.str("");
  auto during = Run(milliseconds(1000));  // evaluating step 30, from 150 ms to 2.65 s
  ASSERT_TRUE(during.ok());
  EXPECT_EQ(during->iteration, 30);
  EXPECT_EQ(during->evaluated_iteration, 30);
  EXPECT_EQ(log.str().find("left to the run that resumes"), std::string::npos) << log.str();
  const StatusOr<std::string> evaluated_card = ReadWholeFile(plan.output_dir + "/model.json");
  ASSERT_TRUE(evaluated_card.ok());
  EXPECT_EQ(evaluated_card->find("\"accuracy\": null"), std::string::npos) << *evaluated_card;
  // A prompt one is still made.
  fs::remove_all(plan.output_dir);
  model.evaluation = milliseconds(500);
  auto prompt = Run(milliseconds(700));
  ASSERT_TRUE(prompt.ok());
  EXPECT_EQ(prompt->evaluated_iteration, prompt->iteration);
}

// A learning rate the model diverges at (plain SGD at 3: each step doubles
// the distance to the optimum, the other way) overflows to infinity after a
// hundred-odd steps. The job fails there, saying so and what to change,
// before the weights move: the checkpoint keeps finite ones. It ran on to
// "succeed" with NaN weights and a loss shown as 0 (a new user's trial).
TEST_F(JobDriverTest, AJobWhoseLossIsNoLongerFiniteFailsThereWithItsLastFiniteWeights) {
  plan.spec.optimizer = {OptimizerKind::kSgd, 3.0, std::nullopt, 0};
  plan.spec.budget.epochs = 100;
  plan.spec.fault_tolerance.checkpoint_every = 10;
  auto result = Run();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << "running again diverges again";
  EXPECT_NE(result.status().message().find("at step "), std::string::npos) << result.status().message();
  EXPECT_NE(result.status().message().find("spec.optimizer.learningRate"), std::string::npos);
  auto checkpoint = LoadCheckpoint(plan.output_dir + "/checkpoint.bin");
  ASSERT_TRUE(checkpoint.ok() && checkpoint->has_value());
  EXPECT_GT((*checkpoint)->iteration, 50) << "it trained a while before it diverged";
  for (float w : (*checkpoint)->parameters) ASSERT_TRUE(std::isfinite(w));
  // What the failure's result is made of is the job as the step failed, its
  // clock running: a loss NaN at step 1, at iteration 0 since nothing of the
  // step is kept, read "refused before training" (a new user's trial).
  const std::string& why = result.status().message();
  const int64_t failed_at = std::stoll(why.substr(why.find("at step ") + 8));
  EXPECT_EQ(board.Snapshot().iteration, failed_at - 1);
  EXPECT_GT(board.Snapshot().elapsed_s, 0);
}


// Its data files rewritten between the runs, the manifest the same: said, as
// a manifest's change is (a user's run resumed on a set cut to a seventh was
// past its epochs before a step, and said only that it had stopped there).
TEST_F(JobDriverTest, AResumedJobWhoseDataChangedSaysSo) {
  plan.spec.fault_tolerance.checkpoint_every = 10;
  auto first = Run(milliseconds(123));
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->stop_reason, StopReason::kCancelled);
  auto kept = LoadCheckpoint(plan.CheckpointPath());
  ASSERT_TRUE(kept.ok() && kept->has_value());
  EXPECT_EQ((*kept)->samples_per_epoch, 160);
  data = testing::FakeData(80, 50, 10);
  auto second = Run();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->resumed_with_changes,
            std::vector<std::string>{"the training data: 160 samples a pass when it was written, 80 now (its files "
                                     "changed); spec.budget.epochs counts passes over the data as it is now"});
  EXPECT_NE(log.str().find("solo: its training data changed since the checkpoint: the training data: 160"),
            std::string::npos)
      << log.str();
  // The same data again: nothing said.
  data = testing::FakeData(160, 50, 10);
  ExpectAResumeSaysNothingChanged();
}

// Class folders renamed between the runs: their labels mean other classes
// than the checkpoint's weights learned, said as a change (a user's trial:
// "tl" renamed "zz_tl" made label 2 "tr", and the resume said nothing).
TEST_F(JobDriverTest, AResumedJobWhoseClassFoldersWereRenamedSaysWhichLabelsMeanOtherClasses) {
  plan.spec.fault_tolerance.checkpoint_every = 10;
  class_names = {"bl", "br", "tl", "tr"};
  auto first = Run(milliseconds(123));
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->stop_reason, StopReason::kCancelled);
  class_names = {"bl", "br", "tr", "zz_tl"};
  auto second = Run();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->resumed_with_changes,
            std::vector<std::string>{"the class folders, whose names sort into labels: label 2 was tl and is tr now, "
                                     "label 3 was tr and is zz_tl now; the checkpoint's weights learned the labels "
                                     "as they were"});
  EXPECT_NE(log.str().find("solo: its classes changed since the checkpoint: the class folders"), std::string::npos)
      << log.str();
}

// A TorchScript job's module exported anew between the runs, its shapes as
// they were: its code is the new file's, its weights the checkpoint's, said.
TEST_F(JobDriverTest, AResumedJobWhoseModuleFileChangedSaysSo) {
  plan.spec.fault_tolerance.checkpoint_every = 10;
  plan.spec.model.kind = ModelKind::kTorchScript;
  plan.spec.model.torchscript_path = plan.output_dir + "-module.pt";
  std::ofstream(plan.spec.model.torchscript_path) << "the module as first exported";
  auto first = Run(milliseconds(123));
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->stop_reason, StopReason::kCancelled);
  auto kept = LoadCheckpoint(plan.CheckpointPath());
  ASSERT_TRUE(kept.ok() && kept->has_value());
  EXPECT_TRUE((*kept)->module_crc32.has_value());
  std::ofstream(plan.spec.model.torchscript_path) << "the module exported anew";
  auto second = Run();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->resumed_with_changes,
            std::vector<std::string>{"the module file " + plan.spec.model.torchscript_path +
                                     " (exported anew, its parameters shaped as before): its code is the file's as "
                                     "it is now, its weights the checkpoint's"});
  // The same file again: nothing said.
  ExpectAResumeSaysNothingChanged();
}

TEST_F(JobDriverTest, AnInterruptedJobResumesWhereItsCheckpointWasWhenRunAgain) {
  plan.spec.fault_tolerance.checkpoint_every = 10;
  plan.spec_json = R"({"budget": {"epochs": 2}, "optimizer": {"learningRate": 0.1}})";
  auto first = Run(milliseconds(123));  // interrupted after 24 steps
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->stop_reason, StopReason::kCancelled);
  EXPECT_EQ(first->state, JobState::kInterrupted) << "not finished: resumed when run again";
  EXPECT_EQ(first->iteration, 25);
  EXPECT_TRUE(first->resumed_with_changes.empty());
  // Its last evaluation is kept with it, for the resumed job to show until it
  // evaluates again (its /progress said null where this run had said 0.494).
  auto kept = LoadCheckpoint(plan.CheckpointPath());
  ASSERT_TRUE(kept.ok() && kept->has_value());
  ASSERT_TRUE(first->accuracy.has_value());
  EXPECT_EQ((*kept)->accuracy, first->accuracy);
  EXPECT_EQ((*kept)->evaluated_iteration, first->evaluated_iteration);
  EXPECT_EQ((*kept)->loss, first->loss) << "the loss shown goes on from it, not from the first batch's";
  // Its manifest edited in between: trained on under the new one, and said.
  plan.spec_json = R"({"budget": {"epochs": 2}, "optimizer": {"learningRate": 0.05}})";
  auto second = Run();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->resumed_from_iteration, 25) << "the checkpoint written when it stopped";
  EXPECT_EQ(second->resumed_with_changes, std::vector<std::string>{"spec.optimizer.learningRate: 0.1 -> 0.05"});
  EXPECT_NE(log.str().find("solo: its manifest changed since the checkpoint: spec.optimizer.learningRate: 0.1 -> 0.05"),
            std::string::npos)
      << log.str();
  EXPECT_EQ(second->iteration, 40);
  EXPECT_EQ(second->stop_reason, StopReason::kEpochs);
  EXPECT_DOUBLE_EQ(second->elapsed_s, 40 * 0.005) << "training time over both runs";
  EXPECT_NE(log.str().find("solo: resumed from " + plan.output_dir + "/checkpoint.bin at iteration 25"),
            std::string::npos)
      << log.str();
  // The evaluations of both runs are in one file.
  const std::string csv = Evaluations();
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9) << csv;
}

// Its batch size changed before it is resumed, a job's epochs are still
// passes over its samples: counted in steps of the new size, a job resumed
// at 4x its batch was over its epochs at once and said it had made 2,249 of
// 2,000 where it had made 600 (a new user's trial).
TEST_F(JobDriverTest, AJobResumedAtAnotherBatchSizeCountsItsEpochsBySamples) {
  plan.spec_json = R"({"data": {"batchSize": 16}})";
  auto first = Run(milliseconds(123));  // 25 steps of 16: 400 samples, 2.5 epochs
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->samples, 400);
  EXPECT_EQ(first->epoch, 2);
  plan.spec.data.batch_size = 32;
  plan.spec_json = R"({"data": {"batchSize": 32}})";
  auto second = Run();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->resumed_from_iteration, 25);
  EXPECT_EQ(second->stop_reason, StopReason::kEpochs);
  EXPECT_EQ(second->samples, 640) << "four passes over 160 samples";
  EXPECT_EQ(second->epoch, 4);
  // The third epoch's last 80 samples in batches of 32, 32 and 16, where
  // the first run left it, then the fourth's 160 in five.
  EXPECT_EQ(second->iteration, 33);
}

// Interrupted and run again, a job ends where it would have uninterrupted:
// the same samples, and the same weights, which depend on the order of the
// batches. Its epochs end in a short batch (150 samples in batches of 16), as
// Fashion-MNIST's do in batches of 64: a new user's resumed run counted 32
// samples more than the run it replaced, and ended at another accuracy.
// Its buffers (a batch norm's count of batches here) go on too: a user's
// module resumed with its count started over.
TEST_F(JobDriverTest, AResumedJobTrainsOnTheBatchesAnUninterruptedOneWould) {
  data = testing::FakeData(150, 50, 10);
  model.counts_batches = true;
  plan.spec.fault_tolerance.checkpoint_every = 10;
  auto whole = Run();
  ASSERT_TRUE(whole.ok());
  const StatusOr<std::string> uninterrupted = ReadWholeFile(plan.output_dir + "/model.pt");
  ASSERT_TRUE(uninterrupted.ok());
  fs::remove_all(plan.output_dir);
  ASSERT_TRUE(Run(milliseconds(123)).ok());
  auto resumed = Run();
  ASSERT_TRUE(resumed.ok());
  ASSERT_TRUE(resumed->resumed_from_iteration.has_value());
  EXPECT_GT(*resumed->resumed_from_iteration, 0);
  EXPECT_EQ(resumed->iteration, whole->iteration);
  EXPECT_EQ(resumed->samples, whole->samples);
  const StatusOr<std::string> after = ReadWholeFile(plan.output_dir + "/model.pt");
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(*after == *uninterrupted) << "the same weights and buffers, bit for bit";
}

TEST_F(JobDriverTest, AFinishedJobRunAgainStartsAfreshAndSaysSo) {
  ASSERT_TRUE(Run().ok());
  auto again = Run();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->resumed_from_iteration.has_value());
  EXPECT_EQ(again->iteration, 40);
  EXPECT_NE(log.str().find("the last run completed at iteration 40; starting afresh, and its model will be replaced"),
            std::string::npos)
      << log.str();
}

TEST_F(JobDriverTest, FreshStartsOverWhateverTheCheckpointSays) {
  ASSERT_TRUE(Run(milliseconds(103)).ok());
  plan.fresh = true;
  auto again = Run();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->resumed_from_iteration.has_value());
  EXPECT_NE(log.str().find("starting afresh as asked; the checkpoint at iteration 21 will be replaced"),
            std::string::npos)
      << log.str();
}

// A folder holding another job's unfinished work: refused unless --fresh;
// it was replaced with a note (a new user's trial).
TEST_F(JobDriverTest, AnotherJobsUnfinishedCheckpointIsNotReplacedUnasked) {
  ASSERT_TRUE(Run(milliseconds(52)).ok());  // "solo", interrupted
  plan.job = "other";
  auto refused = Run();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("holds job solo's unfinished checkpoint, at iteration "),
            std::string::npos)
      << refused.status().message();
  plan.fresh = true;
  auto fresh = Run();
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_FALSE(fresh->resumed_from_iteration.has_value());
}

TEST_F(JobDriverTest, ACheckpointOfAnotherModelIsRefusedWithWhatToDo) {
  ASSERT_TRUE(Run(milliseconds(52)).ok());
  model.shapes = {{4, 4}};
  auto again = Run();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kInvalidArgument) << "the manifest's fault: exit 2";
  // Both models' sizes said (a user who exported their module anew was told
  // only "a different model, optimizer or team").
  EXPECT_NE(again.status().message().find("holds a model of "), std::string::npos) << again.status().message();
  EXPECT_NE(again.status().message().find(" and this job's has 16 shaped [4x4]; move it away, or start afresh "
                                          "(edgetrain run --fresh; under the operator, another spec.output.path)"),
            std::string::npos)
      << again.status().message();
}

// The same manifest, once run as a team (a cluster profile) and now as a job
// of one: what differs is said, though the manifest did not change.
TEST_F(JobDriverTest, ATeamsCheckpointResumedAsAJobOfOneSaysWhatDiffers) {
  ASSERT_TRUE(Run(milliseconds(52)).ok());
  auto kept = LoadCheckpoint(plan.CheckpointPath());
  ASSERT_TRUE(kept.ok() && kept->has_value());
  (*kept)->ledger.emplace().workers = 2;
  ASSERT_TRUE(SaveCheckpoint(plan.CheckpointPath(), **kept).ok());
  auto again = Run();
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("holds a different model, optimizer or team (written by a team, and this "
                                          "run is a job of one: a team's checkpoint resumes with its cluster profile"),
            std::string::npos)
      << again.status().message();
}

// A folder where the checkpoint goes is refused before anything trains, even
// --fresh: the run could never write its checkpoint, nor then its model.
TEST_F(JobDriverTest, AFolderWhereTheCheckpointGoesIsRefusedAtOnce) {
  fs::create_directories(plan.CheckpointPath());
  for (const bool fresh : {false, true}) {
    plan.fresh = fresh;
    auto refused = Run();
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("checkpoint.bin is a folder, where the job's checkpoint goes"),
              std::string::npos)
        << refused.status().message();
  }
}

TEST_F(JobDriverTest, ADamagedCheckpointIsRefusedNotAFreshStart) {
  fs::create_directories(plan.output_dir);
  std::ofstream(plan.output_dir + "/checkpoint.bin") << "EDGETRAIN-CHECKPOINT 2\ntorn";
  auto result = Run();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << "read again, it is as damaged: exit 2";
  EXPECT_NE(result.status().message().find("damaged checkpoint"), std::string::npos) << result.status().message();
  EXPECT_NE(result.status().message().find("; move it away, or start afresh (edgetrain run --fresh; under the "
                                           "operator, another spec.output.path)"),
            std::string::npos)
      << result.status().message();
  // --fresh replaces it as it would any other: it failed on one (a new user's trial).
  plan.fresh = true;
  auto fresh = Run();
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(fresh->iteration, 40);
  EXPECT_NE(log.str().find("starting afresh as asked; " + plan.output_dir + "/checkpoint.bin: damaged checkpoint"),
            std::string::npos)
      << log.str();
}

// A crash after a checkpoint loses the iterations past it, which the resumed
// run trains again: their evaluations are not kept twice.
TEST_F(JobDriverTest, AResumedJobDropsTheEvaluationsOfIterationsItTrainsAgain) {
  plan.spec.fault_tolerance.checkpoint_every = 10;
  ASSERT_TRUE(Run(milliseconds(123)).ok());  // its checkpoint at 25
  {
    std::ofstream csv(plan.output_dir + "/evaluations.csv", std::ios::app);
    csv << "0.15,30,480,0.5,\n0.175,35,560,0.5,\n0.18,3";  // as a crash at 36 left it, its last row cut
  }
  auto resumed = Run();
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(resumed->resumed_from_iteration, 25);
  const auto [header, iterations] = EvaluationRows();
  EXPECT_EQ(header, "seconds,iteration,samples,accuracy,energy_joules");
  EXPECT_EQ(iterations, (std::vector<int64_t>{5, 10, 15, 20, 25, 30, 35, 40}));
  EXPECT_EQ(log.str().find("is not an evaluation row"), std::string::npos) << "a row a crash cut short goes unsaid";
}

// An evaluations.csv a power cut left empty beside its checkpoint gets its
// header back on resume: its rows had been appended headerless, and every
// later resume took the first row for the header (found in review).
TEST_F(JobDriverTest, AResumedJobsEmptiedEvaluationsGetTheirHeaderBack) {
  plan.spec.fault_tolerance.checkpoint_every = 10;
  ASSERT_TRUE(Run(milliseconds(123)).ok());  // its checkpoint at 25
  std::ofstream(plan.output_dir + "/evaluations.csv", std::ios::trunc).close();
  ASSERT_TRUE(Run().ok());
  const auto [header, iterations] = EvaluationRows();
  EXPECT_EQ(header, "seconds,iteration,samples,accuracy,energy_joules");
  EXPECT_EQ(iterations, (std::vector<int64_t>{30, 35, 40})) << "the rows before it were lost with the file";
}

// A line of evaluations.csv that is no row (edited by hand, damaged) is left
// out, and said to be: it vanished unsaid, where progress.jsonl's lines say
// so (a new user's trial).
TEST_F(JobDriverTest, AResumedJobSaysWhichLinesOfItsEvaluationsItLeftOut) {
  plan.spec.fault_tolerance.checkpoint_every = 10;
  ASSERT_TRUE(Run(milliseconds(123)).ok());  // its checkpoint at 25
  std::string rows = Evaluations();
  rows.insert(rows.find('\n') + 1, "an accuracy of 0.9 by hand\n");
  std::ofstream(plan.output_dir + "/evaluations.csv") << rows;
  auto resumed = Run();
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  const std::string said = plan.output_dir + "/evaluations.csv: line 2 is not an evaluation row "
                                             "(seconds,iteration,samples,accuracy,energy_joules): left out";
  EXPECT_NE(log.str().find("solo: warning: " + said), std::string::npos) << log.str();
  EXPECT_EQ(resumed->warnings, std::vector<std::string>{said}) << "in /progress, which the runner says";
  EXPECT_EQ(Evaluations().find("by hand"), std::string::npos);
}

// A finished job's checkpoint says so only once its model is written: a full
// disk while writing the model left one marked finished, and the next run
// started over, the trained model lost (a new user's trial).
TEST_F(JobDriverTest, AModelThatCouldNotBeWrittenIsWrittenByTheNextRun) {
  fs::create_directories(plan.output_dir + "/model.pt");  // renaming over it fails
  auto failed = Run();
  ASSERT_FALSE(failed.ok());
  const auto kept = LoadCheckpoint(plan.output_dir + "/checkpoint.bin");
  ASSERT_TRUE(kept.ok() && kept->has_value());
  const std::optional<double> failed_accuracy = (*kept)->accuracy;
  ASSERT_TRUE(failed_accuracy.has_value());
  EXPECT_NE(failed.status().message().find("model.pt"), std::string::npos) << failed.status().message();
  for (const auto& entry : fs::directory_iterator(plan.output_dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos)
        << "a part written is not left to fill the disk";
  }
  fs::remove(plan.output_dir + "/model.pt");
  auto again = Run();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->resumed_from_iteration, 40) << "it resumes where it ended, not afresh";
  EXPECT_EQ(again->iteration, 40);
  EXPECT_TRUE(fs::is_regular_file(plan.output_dir + "/model.pt"));
  // Its checkpoint holds the model the first run evaluated: not evaluated
  // again, which had written a second row of iteration 40 (a new user's trial).
  std::istringstream rows(Evaluations());
  int of_40 = 0;
  for (std::string row; std::getline(rows, row);) {
    const size_t comma = row.find(',');
    of_40 += row.compare(comma + 1, 3, "40,") == 0;
  }
  EXPECT_EQ(of_40, 1) << Evaluations();
  EXPECT_EQ(again->accuracy, failed_accuracy);
  auto checkpoint = LoadCheckpoint(plan.output_dir + "/checkpoint.bin");
  ASSERT_TRUE(checkpoint.ok() && checkpoint->has_value());
  EXPECT_TRUE((*checkpoint)->complete);
}

// What trained is kept before the final evaluation: a run killed during it
// (a vgg's test set through a pipeline's head takes seconds) lost every step
// since its last periodic checkpoint, here all of them (a new user's trial).
TEST_F(JobDriverTest, WhatTrainedIsKeptBeforeTheFinalEvaluationWhichARunAgainDoes) {
  plan.spec.budget = {};
  plan.spec.budget.wall_clock = milliseconds(100);
  plan.spec.evaluation.every_iterations = 1000;  // the final evaluation alone
  plan.spec.fault_tolerance.checkpoint_every = 0;
  evaluation_fails = true;
  auto failed = Run();
  ASSERT_FALSE(failed.ok());
  auto kept = LoadCheckpoint(plan.output_dir + "/checkpoint.bin");
  ASSERT_TRUE(kept.ok() && kept->has_value()) << "no checkpoint: the 20 iterations trained are lost";
  EXPECT_EQ((*kept)->iteration, 20);
  EXPECT_FALSE((*kept)->complete) << "its model is not written yet";
  EXPECT_FALSE(fs::exists(plan.output_dir + "/model.pt"));
  evaluation_fails = false;
  auto again = Run();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->resumed_from_iteration, 20);
  EXPECT_EQ(again->iteration, 20) << "its budget was spent: it evaluates and writes the model";
  EXPECT_TRUE(again->accuracy.has_value());
  EXPECT_TRUE(fs::is_regular_file(plan.output_dir + "/model.pt"));
}

// A checkpoint that cannot be written at the end (a full disk) does not cost
// the model: a run that trained to its end wrote neither (a user's trial).
// A fresh run's evaluations start before its first checkpoint: an earlier
// run's rows had stayed in the file until this run's first evaluation, and a
// run killed before that, then resumed, kept them as its own, drawn as its
// curve (found in review).
TEST_F(JobDriverTest, AFreshRunsEvaluationsStartBeforeItsFirstCheckpoint) {
  fs::create_directories(plan.output_dir);
  std::ofstream(plan.output_dir + "/evaluations.csv")
      << "seconds,iteration,samples,accuracy,energy_joules\n0.1,5,80,0.9,\n0.2,10,160,0.95,\n";
  plan.spec.budget = {};
  plan.spec.budget.wall_clock = milliseconds(100);
  plan.spec.evaluation.every_iterations = 1000;  // the final evaluation alone, which dies with its process
  plan.spec.fault_tolerance.checkpoint_every = 5;
  evaluation_fails = true;
  ASSERT_FALSE(Run().ok());
  ASSERT_TRUE(fs::exists(plan.output_dir + "/checkpoint.bin"));
  EXPECT_EQ(Evaluations(), "seconds,iteration,samples,accuracy,energy_joules\n") << "the earlier run's rows are gone";
}

TEST_F(JobDriverTest, AFinalCheckpointThatCannotBeWrittenStillLeavesTheModel) {
  plan.spec.fault_tolerance.checkpoint_every = 0;
  // A folder in the checkpoint's place once training has ended: the final
  // checkpoint cannot be renamed over it.
  training_finished = [&] { fs::create_directories(plan.output_dir + "/checkpoint.bin/in-the-way"); };
  auto failed = Run();
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("checkpoint.bin"), std::string::npos) << failed.status().message();
  EXPECT_NE(failed.status().message().find("; the model is written all the same, to " + plan.output_dir +
                                           "/model.pt (its checkpoint is not)"),
            std::string::npos)
      << failed.status().message();
  EXPECT_TRUE(fs::is_regular_file(plan.output_dir + "/model.pt"));
  EXPECT_TRUE(fs::is_regular_file(plan.output_dir + "/model.json"));
}

// What the driver published between steps ages as a reader reads it: a
// pipeline's step of seconds showed the job's clock and its seconds since a
// step frozen, and a stall was never seen. A job that has stopped is not aged.
TEST(ProgressBoardTest, AReaderSeesTheJobsClockAndItsSecondsSinceAStepMoveOn) {
  ProgressBoard board;
  JobProgress p;
  p.state = JobState::kTraining;
  p.elapsed_s = 10;
  p.since_step_s = 0;
  p.samples = 1000;
  p.eta_s = 50;
  const TimePoint at{};
  board.Publish(p, at);
  const JobProgress later = board.SnapshotAt(at + std::chrono::seconds(5));
  EXPECT_DOUBLE_EQ(later.elapsed_s, 15);
  EXPECT_DOUBLE_EQ(later.since_step_s, 5);
  EXPECT_DOUBLE_EQ(later.samples_per_second, 1000.0 / 15);
  EXPECT_DOUBLE_EQ(*later.eta_s, 45);
  // Of a wall-clock budget, its share moves on too (a slow step's snapshot
  // read 0.62 beside 22.7 s of 30).
  p.fraction = 0.2;
  board.SetWallClock(std::chrono::seconds(60));
  board.Publish(p, at);
  EXPECT_DOUBLE_EQ(board.SnapshotAt(at + std::chrono::seconds(5)).fraction, 0.25);
  EXPECT_FALSE(board.SnapshotAt(at + std::chrono::seconds(5)).stop_reason);
  // A step still under way past the wall clock: training stops once it is
  // done, and is said to be finishing, not training at 100% with an ETA of 0.
  const JobProgress past = board.SnapshotAt(at + std::chrono::seconds(55));
  EXPECT_DOUBLE_EQ(past.fraction, 1);
  EXPECT_EQ(past.stop_reason, std::optional(StopReason::kWallClock));
  EXPECT_EQ(past.state, JobState::kTraining);
  p.stop_reason = StopReason::kWallClock;
  board.Publish(p, at);
  EXPECT_DOUBLE_EQ(board.SnapshotAt(at + std::chrono::seconds(5)).elapsed_s, 10) << "stopped: its clock stands";
}

// Ctrl-C soon after starting again over a finished job's folder must not
// replace its trained model with one barely trained.
TEST_F(JobDriverTest, AnInterruptedRunKeepsAFinishedRunsModelAndResumesFromItsCheckpoint) {
  ASSERT_TRUE(Run().ok());
  auto model = ReadWholeFile(plan.output_dir + "/model.pt");
  ASSERT_TRUE(model.ok());
  auto interrupted = Run(milliseconds(23));  // 5 steps into a fresh run
  ASSERT_TRUE(interrupted.ok());
  EXPECT_EQ(interrupted->stop_reason, StopReason::kCancelled);
  EXPECT_EQ(interrupted->model_path, "");
  EXPECT_EQ(*ReadWholeFile(plan.output_dir + "/model.pt"), *model) << "the finished run's model was replaced";
  EXPECT_NE(log.str().find("model.pt is kept as the earlier run left it"), std::string::npos) << log.str();
  const auto card = [&] { return nlohmann::json::parse(*ReadWholeFile(plan.output_dir + "/model.json")); };
  EXPECT_EQ(card()["iteration"], 40);
  EXPECT_EQ(card()["finished"], true);
  // Resumed and interrupted again: still not over, and the finished run's
  // model stays (it was replaced by the resumed run's at 10 iterations: a
  // user's trial).
  log.str("");
  auto again = Run(milliseconds(23));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->resumed_from_iteration, 5);
  EXPECT_EQ(again->model_path, "");
  EXPECT_EQ(card()["iteration"], 40) << "the finished run's model was replaced by an interrupted one";
  EXPECT_NE(log.str().find("model.pt is kept as the earlier run left it"), std::string::npos) << log.str();
  auto resumed = Run();
  ASSERT_TRUE(resumed.ok());
  EXPECT_GT(resumed->resumed_from_iteration, 5);
  EXPECT_EQ(resumed->model_path, plan.output_dir + "/model.pt");
  EXPECT_EQ(card()["finished"], true);
  // A run interrupted over no finished model writes its own, which the next
  // interrupted run replaces.
  plan.fresh = true;
  ASSERT_TRUE(Run(milliseconds(23)).ok());
  plan.fresh = false;
  EXPECT_EQ(card()["finished"], true) << "a finished run's model stays";
  fs::remove(plan.output_dir + "/model.pt");
  fs::remove(plan.output_dir + "/model.json");
  auto first = Run(milliseconds(23));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->model_path, plan.output_dir + "/model.pt");
  EXPECT_EQ(card()["finished"], false);
  const auto at = card()["iteration"];
  ASSERT_TRUE(Run(milliseconds(23)).ok());
  EXPECT_GT(card()["iteration"], at) << "an interrupted run's model gives way to the next's";
}

// A team at its target keeps the model that reached it, while rounds went on
// closing as it stopped: its card names that model's iteration and samples,
// not the team's count at the end (it said 2,209 of a model evaluated at
// 2,202: a new user's trial).
TEST_F(JobDriverTest, AModelCardAtTheTargetNamesTheEvaluatedModelsIteration) {
  plan.spec.budget.target_accuracy = 0.5;
  std::atomic<bool> cancel{false};
  DeterministicClock clock;
  ScriptedEngine team;
  team.advance = [&](JobProgress& p) {
    clock.SleepFor(milliseconds(10));
    ++p.iteration;
    p.samples += 16;
  };
  team.score = [](int) { return 0.6; };
  FinalModel kept = FinalModel::kCurrent;
  team.finish = [&](JobProgress& p, FinalModel final) {
    kept = final;
    p.iteration += 7;  // rounds that closed while the workers were told to stop
    p.samples += 7 * 16;
  };
  auto result = RunOn(team, clock, cancel);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->stop_reason, StopReason::kTarget);
  EXPECT_EQ(kept, FinalModel::kLastEvaluated);
  EXPECT_EQ(result->evaluated_iteration, 5);
  EXPECT_EQ(result->iteration, 12) << "the team's count of what it trained";
  std::ifstream in(plan.output_dir + "/model.json");
  const nlohmann::json card = nlohmann::json::parse(in);
  EXPECT_EQ(card["iteration"], 5);
  EXPECT_EQ(card["samples"], 80);
}

// Image folders named 0-11 make label 2 folder "10": the card says what
// each label stands for, where the data names its classes, and nothing where
// labels are the data's own numbers.
TEST_F(JobDriverTest, TheModelCardNamesWhatEachLabelStandsForWhereTheDataNamesIt) {
  ASSERT_TRUE(Run().ok());
  const auto card = [&] { return nlohmann::json::parse(*ReadWholeFile(plan.output_dir + "/model.json")); };
  EXPECT_FALSE(card().contains("classes")) << card();
  class_names = {"0", "1", "10", "11", "2"};
  plan.fresh = true;
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(card()["classes"], nlohmann::json({"0", "1", "10", "11", "2"}));
}

TEST_F(JobDriverTest, AJobInterruptedBeforeItTrainedWritesNothing) {
  // As a team's coordinator whose workers never came: no step is ever
  // taken, nor asked for (a pipeline's head, asked, sent its first step to
  // stages it had not welcomed and took one not yet there for lost), and
  // the model that never trained is not evaluated.
  std::atomic<bool> cancel{true};
  DeterministicClock clock;
  ScriptedEngine idle;
  auto result = RunOn(idle, clock, cancel);
  EXPECT_EQ(idle.advanced, 0);
  EXPECT_EQ(idle.evaluated, 0);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->stop_reason, StopReason::kCancelled);
  EXPECT_FALSE(result->accuracy.has_value());
  EXPECT_FALSE(std::filesystem::exists(plan.output_dir + "/model.pt"));
  EXPECT_FALSE(std::filesystem::exists(plan.output_dir + "/checkpoint.bin"));
}

// A team that takes no step before its budget ends (a stream's folder that
// held nothing) writes nothing either: its untrained model replaced a
// finished run's model.pt, exit 0 (a new user's trial).
TEST_F(JobDriverTest, AJobThatTookNoStepBeforeItsBudgetEndedWritesNothing) {
  plan.spec.budget = {};
  plan.spec.budget.wall_clock = milliseconds(500);
  std::atomic<bool> cancel{false};
  DeterministicClock clock;
  ScriptedEngine starved;
  starved.advance = [&](JobProgress&) { clock.SleepFor(milliseconds(100)); };  // samples that never come
  // An earlier run's evaluations stay, with the model they describe (they
  // were replaced by a header alone).
  std::filesystem::create_directories(plan.output_dir);
  const std::string earlier = "seconds,iteration,samples,accuracy,energy_joules\n3.5,40,2560,0.81,\n";
  std::ofstream(plan.output_dir + "/evaluations.csv") << earlier;
  auto result = RunOn(starved, clock, cancel);
  EXPECT_EQ(starved.evaluated, 0) << "a model that never trained is not evaluated";
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->stop_reason, StopReason::kWallClock);
  EXPECT_TRUE(result->model_path.empty());
  EXPECT_FALSE(std::filesystem::exists(plan.output_dir + "/model.pt"));
  EXPECT_FALSE(std::filesystem::exists(plan.output_dir + "/checkpoint.bin"));
  std::ifstream kept(plan.output_dir + "/evaluations.csv");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), earlier);
}

// A team's model moves between iterations as late pushes land: interrupted
// at the iteration of its last evaluation, but with samples trained since,
// its final model is evaluated (it kept the earlier evaluation as the final
// model's, 0.5806 where its model.pt scored 0.5972: a new user's trial).
TEST_F(JobDriverTest, AModelMovedSinceItsLastEvaluationAtTheSameIterationIsEvaluatedAgain) {
  std::atomic<bool> cancel{false};
  DeterministicClock clock;
  ScriptedEngine late;
  late.advance = [&](JobProgress& p) {
    clock.SleepFor(milliseconds(10));
    if (late.advanced <= 5) ++p.iteration;  // rounds close up to iteration 5...
    p.samples += 16;                        // ...and pushes land after it
    if (late.advanced == 8) cancel = true;
  };
  late.score = [](int nth) { return nth == 1 ? 0.58 : 0.60; };
  auto result = RunOn(late, clock, cancel);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->stop_reason, StopReason::kCancelled);
  EXPECT_EQ(result->iteration, 5);
  EXPECT_EQ(late.evaluated, 2) << "at iteration 5, and the model moved since";
  ASSERT_TRUE(result->accuracy.has_value());
  EXPECT_DOUBLE_EQ(*result->accuracy, 0.60);
}

TEST_F(JobDriverTest, AResumedJobCountsItsEnergyOverBothRuns) {
  auto whole = Run();
  ASSERT_TRUE(whole.ok());
  plan.output_dir += "-split";
  std::filesystem::remove_all(plan.output_dir);
  ASSERT_TRUE(Run(milliseconds(53)).ok());
  auto second = Run();
  ASSERT_TRUE(second.ok());
  EXPECT_NEAR(*second->energy_joules, *whole->energy_joules, 0.05 * *whole->energy_joules);
}

}  // namespace
}  // namespace edgetrain::agent

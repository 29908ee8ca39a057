// The pipeline runtime: its head and stages on a deterministic clock over the
// in-memory transport (fake stages whose passes take the simulated time a
// test gives them), and LibTorch stages over real gRPC held step for step to
// one device training the whole model.
#include <algorithm>
#include <filesystem>
#include <numeric>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "agent/data/dataset.h"
#include "agent/job_driver.h"
#include "agent/testing/digits.h"
#include "agent/pipeline/pipeline_head.h"
#include "agent/pipeline/stage_runner.h"
#include "agent/telemetry/metrics.h"
#include "agent/testing/fake_stage_trainer.h"
#include "agent/testing/fake_trainer.h"
#include "agent/torch/stage_trainer.h"
#include "agent/torch/trainer.h"
#include "agent/transport/in_memory_transport.h"
#include "core/batch_order.h"
#include "core/deterministic_clock.h"
#include "core/pipeline_schedule.h"
#include "core/row_layout.h"
#include "core/row_optimizer.h"

namespace edgetrain::agent {
namespace {

using std::chrono::milliseconds;

std::string Spec(const std::string& model, const std::string& dataset, int batch, int workers,
                 const std::string& optimizer) {
  return R"({"model": )" + model + R"(,
    "data": {"dataset": ")" + dataset + R"(", "batchSize": )" + std::to_string(batch) + R"(, "partition": {"kind": "iid"}},
    "parallelism": {"mode": "pipeline", "workers": )" + std::to_string(workers) + R"(},
    "sync": {"granularity": "row", "policy": "bsp", "compression": "none"},
    "optimizer": )" + optimizer + R"(,
    "budget": {"epochs": 1, "energyJoules": 0},
    "evaluation": {"everyIterations": 1000},
    "faultTolerance": {"replicateEvery": 100, "replay": true, "checkpointEvery": 0, "maxRecoveries": 5,
                       "nodeLossGrace": "20s"},
    "seed": 11})";
}

// One stage a layer, on workers 0..stages-1.
JobPlan PipelinePlan(const std::string& spec_json, int stages, int micro_batches) {
  JobPlan plan;
  plan.job = "pipeline-test";
  plan.spec_json = spec_json;
  auto spec = DecodeJobSpec(spec_json);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  plan.spec = *spec;
  plan.output_dir = ::testing::TempDir() + "/pipeline-" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::remove_all(plan.output_dir);
  PipelineLayout layout;
  layout.micro_batches = micro_batches;
  for (int s = 0; s < stages; ++s) {
    plan.workers.push_back({s, "device-" + std::to_string(s), 1, std::nullopt, {}});
    layout.stages.push_back({s, s + 1, {s}});
  }
  plan.pipeline = layout;
  return plan;
}

// The head and one stage agent a trainer (its rank its index) on `clock` over
// the in-memory transport: three steps, an evaluation, the end. Each stage's
// fake holds one weight, and so does each stage of the head's whole model.
struct SimulatedRun {
  std::vector<StatusOr<StageSummary>> summaries;
  std::vector<double> step_s;  // each step's simulated time
  std::string log;
};
SimulatedRun RunThreeSteps(const JobPlan& plan, std::vector<std::unique_ptr<testing::FakeStageTrainer>>& trainers,
                           const TrainTestSplit& data, DeterministicClock& clock) {
  const int stages = static_cast<int>(plan.pipeline->stages.size());
  InMemoryNetwork network(clock);
  testing::FakeModel whole_model;
  whole_model.shapes.assign(stages, {1});
  testing::FakeTrainer whole(whole_model, clock);
  std::ostringstream log;
  PipelineHead head(plan, whole, data.test, data.train.size(), StageShapes(stages, {{1}}), clock, log);
  SimulatedRun run;
  run.summaries.assign(trainers.size(), InternalError("not run"));
  std::atomic<bool> cancel{false};
  clock.Run("test", [&] {
    auto server = network.Serve("head", head);
    ASSERT_TRUE(server.ok());
    auto connector = network.Connector("head");
    std::vector<ClockThread> threads;
    for (size_t r = 0; r < trainers.size(); ++r) {
      threads.push_back(clock.StartThread("device " + std::to_string(r), [&, r] {
        StageOptions options;
        options.rank = static_cast<int>(r);
        options.head = connector.get();
        run.summaries[r] = RunStage(plan, options, *trainers[r], data.train, clock, log, cancel);
      }));
    }
    ASSERT_TRUE(head.Start(cancel).ok());
    for (int step = 0; step < 3; ++step) {
      const TimePoint began = clock.Now();
      ASSERT_TRUE(head.Advance().ok()) << log.str();
      run.step_s.push_back(ToSeconds(clock.Now() - began));
    }
    EXPECT_TRUE(head.Evaluate().ok());
    head.Finish(FinalModel::kCurrent);
    for (auto& t : threads) t.Join();
    (*server)->Shutdown();
  });
  EXPECT_EQ(head.Progress().iteration, 3);
  run.log = log.str();
  return run;
}

// Every shape of pipeline from 1 to 5 stages and 1 to 8 micro-batches, its
// stages uneven, runs its steps to the end: none deadlocks (the deterministic
// clock aborts, naming every waiting thread, if one does), none holds more
// micro-batches than 1F1B allows, and where the micro-batches are equal (the
// count divides the batch) each step takes exactly what the schedule run out
// to its dependencies takes (core/pipeline_schedule.h): the runtime is that
// schedule.
TEST(SimulatedPipelineTest, EveryShapeRunsTheScheduleWithoutDeadlock) {
  const int batch = 24;
  const TrainTestSplit data = testing::FakeData(240, 8, 10);
  for (int stages = 1; stages <= 5; ++stages) {
    for (int m = 1; m <= 8; ++m) {
      SCOPED_TRACE(std::to_string(stages) + " stages, " + std::to_string(m) + " micro-batches");
      const JobPlan plan = PipelinePlan(Spec(R"({"name": "mlp"})", "digits", batch, stages,
                                             R"({"name": "sgd", "learningRate": 0.01, "weightDecay": 0})"),
                                        stages, m);
      DeterministicClock clock;
      std::vector<testing::FakeStage> kinds(stages);
      std::vector<double> forward_s, backward_s;
      const double per_micro_batch = static_cast<double>(batch) / m;
      for (int s = 0; s < stages; ++s) {
        kinds[s] = {s == 0, s == stages - 1, milliseconds(1 + s % 3), milliseconds(2 + 3 * ((s + 1) % 2))};
        forward_s.push_back(ToSeconds(kinds[s].forward) * per_micro_batch);
        backward_s.push_back(ToSeconds(kinds[s].backward) * per_micro_batch);
      }
      std::vector<std::unique_ptr<testing::FakeStageTrainer>> trainers;
      for (int s = 0; s < stages; ++s) trainers.push_back(std::make_unique<testing::FakeStageTrainer>(kinds[s], clock));
      const SimulatedRun run = RunThreeSteps(plan, trainers, data, clock);
      const auto& summaries = run.summaries;
      const auto& step_s = run.step_s;
      const std::string log = run.log;
      for (int s = 0; s < stages; ++s) {
        ASSERT_TRUE(summaries[s].ok()) << "stage " << s << ": " << summaries[s].status().ToString() << "\n" << log;
        EXPECT_EQ(summaries[s]->steps, 3);
        EXPECT_EQ(summaries[s]->stop_reason, "the job is over");
        EXPECT_LE(trainers[s]->most_in_flight(), std::min(m, stages - s)) << "stage " << s;
      }
      if (batch % m == 0) {
        const double expected = SimulatedStepSeconds(forward_s, backward_s, std::vector<double>(stages - 1, 0.0), m);
        for (double s : step_s) EXPECT_NEAR(s, expected, 1e-6);
      }
    }
  }
}

// A hybrid pipeline whose micro-batches are smaller than a group: devices
// dealt no sample of one pass it on empty, and the steps still end.
TEST(SimulatedPipelineTest, AGroupLargerThanAMicroBatchPassesItsEmptySharesOn) {
  const TrainTestSplit data = testing::FakeData(64, 8, 10);
  JobPlan plan = PipelinePlan(Spec(R"({"name": "mlp"})", "digits", 4, 5,
                                   R"({"name": "sgd", "learningRate": 0.01, "weightDecay": 0})"),
                              2, 4);
  plan.workers.clear();
  for (int r = 0; r < 5; ++r) plan.workers.push_back({r, "device-" + std::to_string(r), 1.0 + r, std::nullopt, {}});
  plan.pipeline = PipelineLayout{{{0, 1, {0, 1, 2}}, {1, 2, {3, 4}}}, 4};
  DeterministicClock clock;
  std::vector<std::unique_ptr<testing::FakeStageTrainer>> trainers;
  for (int r = 0; r < 5; ++r) {
    trainers.push_back(std::make_unique<testing::FakeStageTrainer>(testing::FakeStage{r < 3, r >= 3}, clock));
  }
  const SimulatedRun run = RunThreeSteps(plan, trainers, data, clock);
  const auto& summaries = run.summaries;
  for (int r = 0; r < 5; ++r) {
    ASSERT_TRUE(summaries[r].ok()) << "device " << r << ": " << summaries[r].status().ToString() << "\n" << run.log;
    EXPECT_EQ(summaries[r]->steps, 3);
  }
  // Micro-batches of one sample: the fastest device of each group takes them all.
  EXPECT_GT(summaries[0]->compute_s, 0);
  EXPECT_EQ(summaries[1]->compute_s, 0);
  EXPECT_EQ(summaries[2]->compute_s, 0);
  EXPECT_EQ(trainers[0]->Parameters()[0], trainers[2]->Parameters()[0]) << "a group steps alike";
}

// A stage agent told to stop (SIGTERM) leaves at once, even while it waits
// for the head; the head's next step says which stage it lost; and the stage
// left waiting mid-step for it ends with the head's Stop.
TEST(SimulatedPipelineTest, AStageToldToStopLeavesAndTheHeadSaysWhichWasLost) {
  const TrainTestSplit data = testing::FakeData(64, 8, 10);
  const JobPlan plan = PipelinePlan(Spec(R"({"name": "mlp"})", "digits", 8, 2,
                                         R"({"name": "sgd", "learningRate": 0.01, "weightDecay": 0})"),
                                    2, 2);
  DeterministicClock clock;
  InMemoryNetwork network(clock);
  testing::FakeStageTrainer first({true, false}, clock), last({false, true}, clock);
  testing::FakeModel whole_model;
  whole_model.shapes.assign(2, {1});
  testing::FakeTrainer whole(whole_model, clock);
  std::ostringstream log;
  PipelineHead head(plan, whole, data.test, data.train.size(), StageShapes(2, {{1}}), clock, log);
  std::vector<StatusOr<StageSummary>> summaries(2, InternalError("not run"));
  std::atomic<bool> cancel[2] = {false, false};
  std::atomic<bool> head_cancel{false};
  Status second_step = Status::Ok();
  clock.Run("test", [&] {
    auto server = network.Serve("head", head);
    ASSERT_TRUE(server.ok());
    auto connector = network.Connector("head");
    std::vector<ClockThread> threads;
    testing::FakeStageTrainer* trainers[2] = {&first, &last};
    for (int r = 0; r < 2; ++r) {
      threads.push_back(clock.StartThread("device " + std::to_string(r), [&, r] {
        StageOptions options;
        options.rank = r;
        options.head = connector.get();
        summaries[r] = RunStage(plan, options, *trainers[r], data.train, clock, log, cancel[r]);
      }));
    }
    ASSERT_TRUE(head.Start(head_cancel).ok());
    ASSERT_TRUE(head.Advance().ok()) << log.str();
    cancel[1] = true;
    clock.SleepFor(std::chrono::seconds(1));
    second_step = head.Advance();
    head.Finish(FinalModel::kCurrent);
    for (auto& t : threads) t.Join();
    (*server)->Shutdown();
  });
  EXPECT_EQ(second_step.code(), StatusCode::kUnavailable);
  EXPECT_NE(second_step.message().find("stage 2 (rank 1) was lost at step 1"), std::string::npos)
      << second_step.message();
  ASSERT_TRUE(summaries[1].ok()) << summaries[1].status().ToString();
  EXPECT_EQ(summaries[1]->stop_reason, "cancelled");
  EXPECT_EQ(summaries[1]->steps, 1);
  ASSERT_TRUE(summaries[0].ok()) << summaries[0].status().ToString();
  EXPECT_EQ(summaries[0]->stop_reason, "the job is over");
}

using testing::Digits;

double RelativeDifference(std::span<const float> a, std::span<const float> b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::abs(b[i])));
  }
  return diff / scale;
}

// LibTorch stages over real gRPC on loopback, four micro-batches a step, as
// `layout` places them on devices of `slowdowns`, against the whole model on
// one device drawing the same batches: the same loss at every step and the
// same weights after, within 1e-4.
void ExpectToTrainAsOneDevice(const PipelineLayout& layout, const std::vector<double>& slowdowns) {
  const std::string model = R"({"name": "mlp", "hidden": [32, 16]})";
  const std::string adam = R"({"name": "adam", "learningRate": 0.003, "weightDecay": 0})";
  JobPlan plan = PipelinePlan(Spec(model, "digits", 32, static_cast<int>(slowdowns.size()), adam), 3, 4);
  plan.pipeline = layout;
  plan.workers.clear();
  for (size_t r = 0; r < slowdowns.size(); ++r) {
    plan.workers.push_back({static_cast<int>(r), "device-" + std::to_string(r), slowdowns[r], std::nullopt, {}});
  }
  ASSERT_TRUE(CheckPipelineLayout(layout, plan.workers.size()).ok());
  const TrainerOptions whole_options{plan.spec.model, Digits().train.info, plan.spec.seed, 1};
  auto layers = CountLayers(plan.spec.model, Digits().train.info);
  ASSERT_TRUE(layers.ok());
  ASSERT_EQ(*layers, layout.stages.back().end_layer);

  RealClock clock;
  auto whole = CreateTrainer(whole_options);
  ASSERT_TRUE(whole.ok());
  std::vector<std::unique_ptr<StageTrainer>> trainers(plan.workers.size());
  StageShapes shapes;
  for (const PipelineStagePlan& s : layout.stages) {
    for (int r : s.ranks) {
      auto stage = CreateStageTrainer({plan.spec.model, Digits().train.info, plan.spec.seed, 1, s.first_layer,
                                       s.end_layer});
      ASSERT_TRUE(stage.ok()) << stage.status().ToString();
      trainers[r] = std::move(*stage);
    }
    shapes.push_back(trainers[s.ranks.front()]->ParameterShapes());
  }
  std::ostringstream log;
  PipelineHead head(plan, **whole, Digits().test, Digits().train.size(), shapes, clock, log);
  MetricsRegistry registry;
  std::vector<int> stage_of_rank;
  for (size_t r = 0; r < slowdowns.size(); ++r) stage_of_rank.push_back(*StageOfRank(layout, static_cast<int>(r)));
  PipelineMetrics metrics(registry, plan.job, stage_of_rank);
  head.SetMetrics(&metrics);
  auto server = StartTrainingServer("127.0.0.1:0", TransportSecurity{}, head);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto connector = GrpcConnector((*server)->address(), TransportSecurity{});
  std::atomic<bool> cancel{false};
  std::vector<StatusOr<StageSummary>> summaries(plan.workers.size(), InternalError("not run"));
  std::vector<std::thread> threads;
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    threads.emplace_back([&, r] {
      StageOptions options;
      options.rank = static_cast<int>(r);
      options.head = connector.get();
      summaries[r] = RunStage(plan, options, *trainers[r], Digits().train, clock, log, cancel);
    });
  }

  // One device: the whole model, the same batches, the same optimizer.
  auto one = CreateTrainer(whole_options);
  ASSERT_TRUE(one.ok());
  std::vector<int64_t> all(static_cast<size_t>(Digits().train.size()));
  std::iota(all.begin(), all.end(), int64_t{0});
  BatchOrder batches(all, 32, plan.spec.seed);
  const RowLayout rows((*one)->ParameterShapes(), SyncGranularity::kLayer);
  RowOptimizer optimizer(plan.spec.optimizer, rows);
  std::vector<float> x(32 * Digits().train.SampleSize()), gradient(rows.total_floats());
  std::vector<int64_t> y(32);

  ASSERT_TRUE(head.Start(cancel).ok()) << log.str();
  for (int step = 1; step <= 12; ++step) {
    ASSERT_TRUE(head.Advance().ok()) << log.str();
    const auto batch = batches.Next();
    for (size_t k = 0; k < batch.size(); ++k) {
      Digits().train.CopySamples(batch[k], 1, x.data() + k * Digits().train.SampleSize());
      y[k] = Digits().train.labels[batch[k]];
    }
    auto loss = (*one)->ComputeGradient(x.data(), y.data(), static_cast<int64_t>(batch.size()), gradient);
    ASSERT_TRUE(loss.ok());
    std::span<float> params = (*one)->Parameters();
    for (size_t r = 0; r < rows.size(); ++r) {
      const RowSpan& row = rows.row(r);
      optimizer.Apply(r, params.subspan(row.offset, row.length),
                      std::span<const float>(gradient).subspan(row.offset, row.length));
    }
    EXPECT_NEAR(head.LastStepLoss(), *loss, 1e-4 * *loss) << "step " << step;
  }
  auto accuracy = head.Evaluate();  // fetches the stages' weights into the head's model
  ASSERT_TRUE(accuracy.ok()) << accuracy.status().ToString();
  EXPECT_LT(RelativeDifference((*whole)->Parameters(), (*one)->Parameters()), 1e-4);
  JobCheckpoint checkpoint;
  head.Snapshot(checkpoint);
  EXPECT_EQ(checkpoint.optimizer.steps, optimizer.state().steps) << "one row a tensor, as a job of one's";
  EXPECT_LT(RelativeDifference(checkpoint.optimizer.second, optimizer.state().second), 1e-3);

  head.Finish(FinalModel::kCurrent);
  for (auto& t : threads) t.join();
  (*server)->Shutdown();
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    ASSERT_TRUE(summaries[r].ok()) << "rank " << r << ": " << summaries[r].status().ToString();
    EXPECT_EQ(summaries[r]->steps, 12);
    EXPECT_GT(summaries[r]->compute_s, 0);
  }
  // Each device's compute and bubbles, and what the head relayed.
  const std::string text = registry.Render();
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    const std::string series = "edgetrain_stage_compute_seconds_total{stage=\"" + std::to_string(stage_of_rank[r]) +
                               "\",trainingjob=\"pipeline-test\",worker=\"" + std::to_string(r) + "\"} ";
    const size_t at = text.find(series);
    ASSERT_NE(at, std::string::npos) << series << "\n" << text;
    EXPECT_NEAR(std::stod(text.substr(at + series.size())), summaries[r]->compute_s, 1e-6);
  }
  EXPECT_NE(text.find("edgetrain_stage_bubble_seconds_total{"), std::string::npos);
  EXPECT_NE(text.find("edgetrain_pipeline_micro_batches_in_flight{trainingjob=\"pipeline-test\"} 0"), std::string::npos)
      << "none in flight between steps";
  if (layout.stages.size() > 1) {
    EXPECT_EQ(text.find("edgetrain_pipeline_relayed_bytes_total{trainingjob=\"pipeline-test\"} 0\n"), std::string::npos);
  }
}

TEST(PipelineOverGrpcTest, ThreeStagesTrainStepForStepAsOneDevice) {
  ExpectToTrainAsOneDevice({{{0, 1, {0}}, {1, 2, {1}}, {2, 3, {2}}}, 4}, {1, 1, 1});
}

// Hybrid: the first stage on two devices, one twice as slow as the other,
// which take two thirds and a third of each micro-batch and step on the sum
// of their gradients (BSP, uncompressed, inside the stage).
TEST(PipelineOverGrpcTest, AStageOnTwoDevicesTrainsStepForStepAsOneDevice) {
  ExpectToTrainAsOneDevice({{{0, 2, {0, 1}}, {2, 3, {2}}}, 4}, {1, 2, 1});
}

// Plain synchronous data parallelism, as a pipeline of one stage on three devices.
TEST(PipelineOverGrpcTest, OneStageOnThreeDevicesTrainsStepForStepAsOneDevice) {
  ExpectToTrainAsOneDevice({{{0, 3, {0, 1, 2}}}, 2}, {1, 1, 1});
}

}  // namespace
}  // namespace edgetrain::agent

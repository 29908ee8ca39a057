#include "core/job_plan.h"

#include <string>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

constexpr const char* kSpec = R"({
  "model": {"name": "cnn", "channels": [8, 16]},
  "data": {"dataset": "digits", "batchSize": 32, "partition": {"kind": "dirichlet", "alpha": 0.5}},
  "parallelism": {"mode": "dataParallel", "workers": 1},
  "sync": {"granularity": "row", "policy": "ssp", "stalenessBound": 4, "compression": "none",
           "rowOrder": "staleness"},
  "optimizer": {"name": "sgd", "learningRate": 0.1, "momentum": 0.9, "weightDecay": 0},
  "budget": {"wallClock": "2m", "epochs": 3, "targetAccuracy": 0.9, "energyJoules": 0},
  "evaluation": {"everyIterations": 50},
  "faultTolerance": {"replicateEvery": 100, "replicateCentralEvery": 10, "replay": true, "checkpointEvery": 0,
                     "maxRecoveries": 5, "nodeLossGrace": "120s", "gradientEachMicroBatch": true},
  "output": {"path": "/tmp/out"},
  "seed": 7
})";

// A plan of generation 3 over kSpec.
JobPlan APlan(const std::string& job) {
  JobPlan plan;
  plan.job = job;
  plan.generation = 3;
  plan.spec_json = kSpec;
  plan.output_dir = "/tmp/out";
  return plan;
}

TEST(JobPlanTest, RoundTripsAndDecodesTheSpec) {
  JobPlan plan = APlan("digits-cnn");
  plan.intra_op_threads = 2;
  plan.devices_record = R"({"rank 0":{"link":"unshaped","node":"gateway","slowdown":2.0}})";
  plan.power = {5, 3, 2};  // a job of one's node's

  auto decoded = DecodeJobPlan(EncodeJobPlan(plan));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->job, "digits-cnn");
  EXPECT_EQ(decoded->power.compute_watts, 5);
  EXPECT_EQ(decoded->power.communicate_watts, 3);
  EXPECT_EQ(decoded->power.idle_watts, 2);
  EXPECT_EQ(decoded->generation, 3);
  EXPECT_EQ(decoded->output_dir, "/tmp/out");
  EXPECT_EQ(decoded->intra_op_threads, 2);
  EXPECT_EQ(decoded->devices_record, plan.devices_record);
  const JobSpec& s = decoded->spec;
  EXPECT_EQ(s.model.kind, ModelKind::kCnn);
  EXPECT_EQ(s.model.channels, (std::vector<int>{8, 16}));
  EXPECT_EQ(s.data.dataset, DatasetName::kDigits);
  EXPECT_EQ(s.data.batch_size, 32);
  EXPECT_EQ(s.data.partition.kind, PartitionKind::kDirichlet);
  EXPECT_EQ(s.data.partition.alpha, 0.5);
  EXPECT_EQ(s.sync.policy, SyncPolicy::kSsp);
  EXPECT_EQ(s.sync.staleness_bound, 4);
  EXPECT_EQ(s.sync.row_order, RowOrder::kStaleness);
  EXPECT_EQ(s.optimizer.kind, OptimizerKind::kSgd);
  EXPECT_EQ(s.optimizer.momentum, 0.9);
  EXPECT_EQ(s.budget.wall_clock, std::chrono::minutes(2));
  EXPECT_EQ(s.budget.epochs, 3);
  EXPECT_EQ(s.budget.target_accuracy, 0.9);
  EXPECT_EQ(s.evaluation.every_iterations, 50);
  EXPECT_EQ(s.fault_tolerance.node_loss_grace, std::chrono::seconds(120));
  EXPECT_EQ(s.fault_tolerance.replicate_every, 100);
  EXPECT_EQ(s.fault_tolerance.CentralEvery(), 10);
  EXPECT_FALSE(s.fault_tolerance.CentralPaced()) << "set: every 10 steps, not paced by their cost";
  EXPECT_TRUE(s.fault_tolerance.gradient_each_micro_batch);
  EXPECT_EQ(s.output.path, "/tmp/out");
  EXPECT_EQ(s.seed, 7u);
}

// Unset, the head's copies of a stage are due every step and paced by their
// cost (stage_runner.cc); with no replicas at all, none.
TEST(JobPlanTest, TheHeadsCopiesUnsetAreDueEveryStepAndPacedByTheirCost) {
  FaultToleranceSpec ft;
  ft.replicate_every = 100;
  EXPECT_EQ(ft.CentralEvery(), 1);
  EXPECT_TRUE(ft.CentralPaced());
  ft.replicate_every = 0;
  EXPECT_EQ(ft.CentralEvery(), 0);
  EXPECT_FALSE(ft.CentralPaced());
}

// kSpec with another model.
std::string SpecWithModel(const std::string& model) {
  std::string spec = kSpec;
  const std::string cnn = R"({"name": "cnn", "channels": [8, 16]})";
  return spec.replace(spec.find(cnn), cnn.size(), model);
}

// auto weighs a split and a team over the workers' devices: with one worker
// there is neither, and the job is a job of one (the planner, given no device,
// had failed the run).
TEST(JobPlanTest, AutoOfOneWorkerIsAJobOfOne) {
  std::string text = kSpec;
  const std::string mode = R"("mode": "dataParallel", "workers": 1)";
  auto with = [&](const std::string& m) { return std::string(text).replace(text.find(mode), mode.size(), m); };
  auto one = DecodeJobSpec(with(R"("mode": "auto", "workers": 1)"));
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->parallelism.mode, ParallelismMode::kDataParallel);
  auto two = DecodeJobSpec(with(R"("mode": "auto", "workers": 2)"));
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->parallelism.mode, ParallelismMode::kAuto);
  auto hybrid = DecodeJobSpec(with(R"("mode": "hybrid", "workers": 1)"));
  ASSERT_TRUE(hybrid.ok()) << hybrid.status().ToString();
  EXPECT_EQ(hybrid->parallelism.mode, ParallelismMode::kDataParallel) << "the same for a hybrid of one";
}

// A resumed run's devices go on along their traces from where the run left
// them: the link's trace further in, the compute changes already past in
// force, those ahead nearer.
TEST(JobPlanTest, AResumedSlotGoesOnAlongItsTraces) {
  WorkerSlot slot;
  slot.slowdown = 2;
  slot.link = LinkSpec{"/t.csv", 60, 1, false, 30, 25};
  slot.slowdown_changes = {{10, 4}, {40, 8}};
  slot.stream = StreamSource{0, "/rate.csv", 0};
  const WorkerSlot on = GoneOnFor(slot, 15);
  EXPECT_EQ(on.link->offset_s, 75);
  EXPECT_EQ(on.stream->offset_s, 15) << "its stream's rate trace further in too";
  EXPECT_EQ(on.link->silent_until_s, 10) << "what is left of its silence from the start";
  EXPECT_EQ(on.slowdown, 4) << "the change at 10 s is in force";
  ASSERT_EQ(on.slowdown_changes.size(), 1u);
  EXPECT_EQ(on.slowdown_changes[0].at_s, 25);
  EXPECT_EQ(on.slowdown_changes[0].slowdown, 8);
  EXPECT_EQ(GoneOnFor(slot, 0).link->offset_s, 60) << "a fresh run starts where the profile says";
  EXPECT_EQ(GoneOnFor(slot, 50).slowdown, 8);
}

// A worker's stream rate, as its agent reads it and as the runner warns by
// it: the job's own, else its node's, a trace read and gone on to its offset.
TEST(JobPlanTest, AWorkersStreamRateIsTheJobsOrElseItsNodes) {
  JobSpec spec;
  spec.data.stream = StreamSpec{};
  std::vector<WorkerSlot> slots(3);
  slots[0].stream = StreamSource{50, "", 0};
  slots[1].stream = StreamSource{0, "/rate.csv", 10};
  const TextReader read = [](const std::string& path) -> StatusOr<std::string> {
    if (path == "/rate.csv") return std::string("seconds,samples_per_s\n0,0\n10,100\n20,0\n");
    return NotFoundError(path + ": no such file");
  };
  auto constant = StreamRateOf(spec, slots, 0, read);
  ASSERT_TRUE(constant.ok() && constant->has_value());
  EXPECT_DOUBLE_EQ((*constant)->ArrivedBy(2), 100);
  auto traced = StreamRateOf(spec, slots, 1, read);
  ASSERT_TRUE(traced.ok() && traced->has_value()) << traced.status().ToString();
  EXPECT_DOUBLE_EQ((*traced)->ArrivedBy(1), 100) << "10 s in: its 100 a second from the start";
  EXPECT_EQ(StreamRateOf(spec, slots, 2, read).status().code(), StatusCode::kFailedPrecondition) << "neither";
  slots[1].stream->trace_path = "/gone.csv";
  EXPECT_NE(StreamRateOf(spec, slots, 1, read).status().message().find("worker 1's stream: /gone.csv"),
            std::string::npos);
  spec.data.stream->rates_per_second = {1, 2, 3};
  EXPECT_DOUBLE_EQ((*StreamRateOf(spec, slots, 2, read))->ArrivedBy(1), 3) << "the job's rates first";
  spec.data.stream->directory = "incoming";
  EXPECT_FALSE(StreamRateOf(spec, slots, 0, read)->has_value()) << "a folder's samples have no rate";
}

TEST(JobPlanTest, DecodesAVggAndItsWidths) {
  auto spec = DecodeJobSpec(SpecWithModel(R"({"name": "vgg", "widths": [8, 8, 16, 16]})"));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->model.kind, ModelKind::kVgg);
  EXPECT_EQ(spec->model.widths, (std::vector<int>{8, 8, 16, 16}));
  EXPECT_TRUE(spec->model.channels.empty());
  EXPECT_EQ(NameOf(ModelKind::kVgg), "vgg");

  auto defaulted = DecodeJobSpec(SpecWithModel(R"({"name": "vgg"})"));
  ASSERT_TRUE(defaulted.ok()) << defaulted.status().ToString();
  EXPECT_TRUE(defaulted->model.widths.empty()) << "VggWidths (core/model_shape.h) holds the default";

  auto wrong = DecodeJobSpec(SpecWithModel(R"({"name": "vgg", "widths": "wide"})"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("spec.model.widths: wrong type"), std::string::npos)
      << wrong.status().message();
}

// A whole-number field given a number with a fraction or an exponent: taken
// where it is whole and fits, refused otherwise. get<int>() had cast it:
// 1e10 became -2147483648, which turned checkpoints off (found in review).
TEST(JobPlanTest, AWholeNumberFieldRefusesAFractionOrANumberPastIt) {
  auto with_widths = [](const std::string& widths) {
    return DecodeJobSpec(SpecWithModel(R"({"name": "vgg", "widths": )" + widths + "}"));
  };
  auto whole = with_widths("[8.0, 8, 1e1, 16]");
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->model.widths, (std::vector<int>{8, 8, 10, 16}));
  for (const char* widths : {"[8.5, 8]", "[1e10, 8]", "[2147483648.0, 8]", "[-2147483649.0, 8]"}) {
    auto refused = with_widths(widths);
    ASSERT_FALSE(refused.ok()) << widths;
    EXPECT_NE(refused.status().message().find("spec.model.widths: "), std::string::npos)
        << refused.status().message();
    EXPECT_NE(refused.status().message().find("is not a whole number from -2147483648 to 2147483647"),
              std::string::npos)
        << refused.status().message();
  }
}

TEST(JobPlanTest, ASlotKeepsTheGenerationItWasGivenAt) {
  JobPlan plan = APlan("team");
  plan.workers = {WorkerSlot{}, WorkerSlot{}};
  plan.workers[0].node = "robot-1";
  plan.workers[0].since_generation = 1;  // a survivor of two re-plans
  plan.workers[1].rank = 1;
  plan.workers[1].node = "robot-4";      // given anew: no since, the plan's own
  auto decoded = DecodeJobPlan(EncodeJobPlan(plan));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->workers[0].since_generation, 1);
  EXPECT_EQ(SlotSince(*decoded, 0), 1);
  EXPECT_EQ(SlotSince(*decoded, 1), 3);
  EXPECT_EQ(SlotSince(*decoded, 7), 3) << "a rank the plan lacks: only the current generation";
}

TEST(JobPlanTest, ASlotsStreamRoundTrips) {
  JobPlan plan = APlan("team");
  plan.workers = {WorkerSlot{}, WorkerSlot{}, WorkerSlot{}};
  for (int r = 0; r < 3; ++r) plan.workers[r].rank = r;
  plan.workers[0].stream = StreamSource{22, "", 0};
  plan.workers[1].stream = StreamSource{0, "/traces/rate.csv", 12.5};  // a resumed run's, 12.5 s in
  auto decoded = DecodeJobPlan(EncodeJobPlan(plan));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_TRUE(decoded->workers[0].stream.has_value());
  EXPECT_EQ(decoded->workers[0].stream->per_second, 22);
  EXPECT_EQ(decoded->workers[1].stream->trace_path, "/traces/rate.csv");
  EXPECT_EQ(decoded->workers[1].stream->offset_s, 12.5);
  EXPECT_EQ(decoded->workers[0].stream->offset_s, 0);
  EXPECT_FALSE(decoded->workers[2].stream.has_value());
}

TEST(JobPlanTest, ASlotsSlowdownChangesRoundTripInTheOrderOfTheirTimes) {
  JobPlan plan = APlan("team");
  plan.workers = {WorkerSlot{}, WorkerSlot{}};
  for (int r = 0; r < 2; ++r) plan.workers[r].rank = r;
  plan.workers[1].slowdown = 2;
  plan.workers[1].slowdown_changes = {{30, 8}, {60, 3}};
  auto decoded = DecodeJobPlan(EncodeJobPlan(plan));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(decoded->workers[0].slowdown_changes.empty());
  EXPECT_EQ(decoded->workers[1].Slowdown().At(45), 8);
  EXPECT_EQ(decoded->workers[1].Slowdown().At(61), 3);
  plan.workers[1].slowdown_changes = {{60, 8}, {30, 3}};
  EXPECT_NE(DecodeJobPlan(EncodeJobPlan(plan)).status().message().find("in the order of their times"), std::string::npos);
}

// What the layout was planned from goes with it, for the head to plan again.
TEST(JobPlanTest, WhatAPipelineWasPlannedFromRoundTrips) {
  JobPlan plan = APlan("vgg-pipeline");
  for (int r = 0; r < 2; ++r) plan.workers.push_back({r, "node-" + std::to_string(r), 1, std::nullopt, {}});
  PlannedFrom from;
  from.layers = {{"conv1", 1e-4, 2e-4, 1000, 400, {{8, 1e-3, 2e-3}, {64, 7e-3, 1.5e-2}}, 3e-5, ""},
                 {"fc", 2e-5, 3e-5, 5000, 40, {}, 0, ""}};
  from.devices = {{"gateway", 1, 0, 0, 0}, {"board", 0.25, int64_t{1} << 30, 5e6, 6e6}};
  from.state_factor = 4;
  from.max_micro_batches = 16;
  from.transport = {3.5e-5, 1.4e9};
  from.stage_pass.passes = {{1, 2e-4, 3e-4}, {64, 4e-4, 5e-4}};
  plan.pipeline = PipelineLayout{{{0, 1, {0}}, {1, 2, {1}}}, 4, from};
  auto decoded = DecodeJobPlan(EncodeJobPlan(plan));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_TRUE(decoded->pipeline->planned_from.has_value());
  const PlannedFrom& back = *decoded->pipeline->planned_from;
  ASSERT_EQ(back.layers.size(), 2u);
  EXPECT_EQ(back.layers[0].name, "conv1");
  ASSERT_EQ(back.layers[0].passes.size(), 2u);
  EXPECT_DOUBLE_EQ(back.layers[0].passes[1].backward_s, 1.5e-2);
  EXPECT_DOUBLE_EQ(back.layers[0].optimizer_s, 3e-5);
  ASSERT_EQ(back.devices.size(), 2u);
  EXPECT_EQ(back.devices[1].name, "board");
  EXPECT_DOUBLE_EQ(back.devices[1].speed, 0.25);
  EXPECT_EQ(back.devices[1].memory_bytes, int64_t{1} << 30);
  EXPECT_DOUBLE_EQ(back.devices[1].down_bytes_per_s, 6e6);
  EXPECT_EQ(back.max_micro_batches, 16);
  EXPECT_DOUBLE_EQ(back.transport.message_s, 3.5e-5);
  EXPECT_DOUBLE_EQ(back.transport.bytes_per_s, 1.4e9);
  const PipelineProblem problem = ProblemOf(back, decoded->spec);
  EXPECT_DOUBLE_EQ(problem.transport.message_s, 3.5e-5);
  ASSERT_EQ(problem.stage_pass.passes.size(), 2u) << "a stage's own passes, for the head's re-plans";
  EXPECT_DOUBLE_EQ(problem.stage_pass.passes[1].backward_s, 5e-4);
  EXPECT_EQ(problem.batch_size, decoded->spec.data.batch_size);
  EXPECT_FALSE(decoded->pipeline->stages_given) << "the planner's: the head may move layers";
  plan.pipeline->stages_given = true;
  EXPECT_TRUE(DecodeJobPlan(EncodeJobPlan(plan))->pipeline->stages_given) << "kept as given";

  plan.pipeline->planned_from->max_micro_batches = 0;  // a plan edited by hand: the head had none to try
  EXPECT_NE(DecodeJobPlan(EncodeJobPlan(plan)).status().message().find("plannedFrom.maxMicroBatches must be >= 1"),
            std::string::npos);
  plan.pipeline->planned_from->max_micro_batches = 16;
  plan.pipeline->planned_from->devices.pop_back();
  EXPECT_NE(DecodeJobPlan(EncodeJobPlan(plan)).status().message().find("plannedFrom has 1 devices for 2 workers"),
            std::string::npos);
}

TEST(JobPlanTest, APipelinesStagesRoundTripAndAreChecked) {
  JobPlan plan = APlan("vgg-pipeline");
  for (int r = 0; r < 3; ++r) plan.workers.push_back({r, "node-" + std::to_string(r), 1, std::nullopt, {}});
  plan.pipeline = PipelineLayout{{{0, 4, {0}}, {4, 7, {1, 2}}}, 4};
  auto decoded = DecodeJobPlan(EncodeJobPlan(plan));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_TRUE(decoded->pipeline.has_value());
  EXPECT_EQ(decoded->pipeline->micro_batches, 4);
  ASSERT_EQ(decoded->pipeline->stages.size(), 2u);
  EXPECT_EQ(decoded->pipeline->stages[1].first_layer, 4);
  EXPECT_EQ(decoded->pipeline->stages[1].end_layer, 7);
  EXPECT_EQ(decoded->pipeline->stages[1].ranks, (std::vector<int>{1, 2}));
  EXPECT_FALSE(DecodeJobPlan(EncodeJobPlan(APlan("x")))->pipeline.has_value());

  struct Case {
    PipelineLayout layout;
    const char* error;
  } cases[] = {
      {{{}, 1}, "a pipeline needs a stage"},
      {{{{0, 4, {0}}}, 0}, "microBatches must be >= 1"},
      {{{{0, 4, {0}}, {5, 7, {1}}}, 2}, "stage 2 must start where the one before ends"},
      {{{{0, 4, {0}}, {4, 4, {1}}}, 2}, "stage 2 must start where the one before ends and hold a layer"},
      {{{{0, 4, {}}}, 2}, "stage 1 has no worker"},
      {{{{0, 4, {0}}, {4, 7, {0}}}, 2}, "stage 2: rank 0 is not a worker of the plan or has a stage"},
      {{{{0, 4, {3}}}, 2}, "stage 1: rank 3 is not a worker"},
  };
  for (const auto& c : cases) {
    plan.pipeline = c.layout;
    auto broken = DecodeJobPlan(EncodeJobPlan(plan));
    ASSERT_FALSE(broken.ok()) << c.error;
    EXPECT_NE(broken.status().message().find(c.error), std::string::npos) << broken.status().message();
  }
}

TEST(JobPlanTest, RefusesBrokenPlansNamingTheField) {
  struct Case {
    std::string json;
    const char* error;
  } cases[] = {
      {"[]", "plan: not a JSON object"},
      {R"({"job": "x"})", "plan:"},
      {R"({"job":"x","generation":1,"outputDir":"o","intraOpThreads":0,"spec":{}})", "intraOpThreads must be >= 1"},
      {R"({"job":"x","generation":1,"outputDir":"o","intraOpThreads":1,"spec":{"model":{"name":"resnet"}}})",
       "spec.model.name: unknown value \"resnet\""},
      {R"({"job":"x","generation":1,"outputDir":"o","intraOpThreads":1,"spec":{"model":{"name":"mlp"}}})",
       "spec.data.dataset: required field is missing"},
  };
  for (const auto& c : cases) {
    auto plan = DecodeJobPlan(c.json);
    ASSERT_FALSE(plan.ok()) << c.json;
    EXPECT_NE(plan.status().message().find(c.error), std::string::npos) << plan.status().message();
  }
}

}  // namespace
}  // namespace edgetrain

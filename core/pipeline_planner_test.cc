#include "core/pipeline_planner.h"

#include <chrono>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "core/testing/pipeline_oracle.h"

namespace edgetrain {
namespace {

using testing::BruteForcePipelineStep;
using testing::RandomPipelineProblem;

LayerCost Layer(const std::string& name, double work_ms, int64_t parameter_bytes, int64_t activation_bytes) {
  return {name, work_ms / 3000, 2 * work_ms / 3000, parameter_bytes, activation_bytes, {}, 0, ""};
}

PipelineDevice Device(const std::string& name, double speed, double mbps = 0, int64_t memory = 0) {
  return {name, speed, memory, mbps * 125000, mbps * 125000};
}

TEST(PipelinePlannerTest, FindsTheBruteForceOptimumOnEverySmallInstance) {
  std::mt19937_64 random(7);
  int compared = 0, misfits = 0;
  for (int trial = 0; trial < 400; ++trial) {
    // Mostly small, so that many fit in the time; every 40th at the full 8 x 6.
    const bool full = trial % 40 == 0;
    const int layers = full ? 8 : 1 + static_cast<int>(random() % 6);
    const int devices = full ? 6 : 1 + static_cast<int>(random() % 4);
    const PipelineProblem p = RandomPipelineProblem(random, layers, devices);
    const auto oracle = BruteForcePipelineStep(p);
    const auto verdict = PlanPipeline(p);
    if (!oracle) {
      ++misfits;
      EXPECT_EQ(verdict.status().code(), StatusCode::kFailedPrecondition) << "trial " << trial;
      continue;
    }
    ASSERT_TRUE(verdict.ok()) << "trial " << trial << ": " << verdict.status().ToString();
    EXPECT_TRUE(verdict->exact);
    const PipelinePlan& plan = verdict->plan;
    // What it says of its plan is what the model says of it.
    const auto rescored = PipelineCostModel(p).Plan(plan.stages, plan.micro_batches);
    ASSERT_TRUE(rescored.has_value()) << "trial " << trial << ": a malformed plan";
    EXPECT_TRUE(rescored->fits);
    EXPECT_DOUBLE_EQ(rescored->step_s, plan.cost.step_s);
    EXPECT_NEAR(plan.cost.step_s, *oracle, 1e-9 * *oracle)
        << "trial " << trial << " (" << layers << " layers, " << devices << " devices): "
        << DescribePlan(p, plan);
    ++compared;
  }
  RecordProperty("compared", compared);
  RecordProperty("no_plan_fits", misfits);
  EXPECT_GT(compared, 300);
  EXPECT_GT(misfits, 0) << "memory never bound: the instances do not test it";
}

// spec.parallelism.mode: pipeline. The same proof, over the plans that give
// each stage one device, exact and relaxed.
TEST(PipelinePlannerTest, OneDeviceAStageFindsTheBruteForceOptimumOfSuchPlans) {
  std::mt19937_64 random(13);
  int compared = 0, misfits = 0, grouped_would_win = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const bool full = trial % 30 == 0;
    const int layers = full ? 8 : 1 + static_cast<int>(random() % 6);
    const int devices = full ? 6 : 1 + static_cast<int>(random() % 4);
    const PipelineProblem p = RandomPipelineProblem(random, layers, devices);
    const auto oracle = BruteForcePipelineStep(p, /*one_device_per_stage=*/true);
    const auto verdict = PlanPipeline(p, {.one_device_per_stage = true});
    const auto relaxed = PlanPipeline(p, {.exact_devices = 0, .one_device_per_stage = true});
    if (!oracle) {
      ++misfits;
      EXPECT_EQ(verdict.status().code(), StatusCode::kFailedPrecondition) << "trial " << trial;
      // Why: a layer no device holds even alone, or the even split's misfit.
      EXPECT_TRUE(verdict.status().message().find("no plan of one device a stage fits") != std::string::npos ||
                  verdict.status().message().find("alone would take") != std::string::npos)
          << verdict.status().message();
      EXPECT_FALSE(relaxed.ok()) << "trial " << trial << ": it never invents a plan";
      continue;
    }
    ASSERT_TRUE(verdict.ok()) << "trial " << trial << ": " << verdict.status().ToString();
    const PipelinePlan& plan = verdict->plan;
    for (const PipelineStage& s : plan.stages) EXPECT_EQ(s.devices.size(), 1u) << "trial " << trial;
    EXPECT_NEAR(plan.cost.step_s, *oracle, 1e-9 * *oracle)
        << "trial " << trial << " (" << layers << " layers, " << devices << " devices): " << DescribePlan(p, plan);
    if (relaxed.ok()) {
      for (const PipelineStage& s : relaxed->plan.stages) EXPECT_EQ(s.devices.size(), 1u) << "trial " << trial;
      EXPECT_GE(relaxed->plan.cost.step_s, *oracle * (1 - 1e-9)) << "trial " << trial;
    }
    // The restriction binds: unrestricted, groups are sometimes faster.
    if (const auto free = PlanPipeline(p); free.ok() && free->plan.cost.step_s < plan.cost.step_s * (1 - 1e-9)) {
      ++grouped_would_win;
    }
    ++compared;
  }
  EXPECT_GT(compared, 200);
  EXPECT_GT(misfits, 0) << "memory never bound: the instances do not test it";
  EXPECT_GT(grouped_would_win, 0) << "the restriction never mattered: the instances do not test it";
}

// Transient devices: over the plans in which no stage is a transient device
// alone, the planner's search finds the brute force's optimum, exact and
// relaxed never better; and it takes that plan over the fastest exactly when
// it is within the slack of it, saying why.
TEST(PipelinePlannerTest, KeepsTransientDevicesCompanyWhereItCostsLittle) {
  std::mt19937_64 random(29);
  int compared = 0, kept = 0, fastest_kept = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const bool full = trial % 100 == 0;  // two at the full 8 x 6: the oracle runs twice on each
    const int layers = full ? 8 : 1 + static_cast<int>(random() % 6);
    const int devices = full ? 6 : 2 + static_cast<int>(random() % 3);
    PipelineProblem p = RandomPipelineProblem(random, layers, devices);
    for (PipelineDevice& d : p.devices) d.transient = random() % 2 == 0;
    const auto fastest = BruteForcePipelineStep(p);
    const auto safe = BruteForcePipelineStep(p, false, /*transient_company=*/true);
    const auto verdict = PlanPipeline(p);
    if (!fastest) continue;
    ASSERT_TRUE(verdict.ok()) << "trial " << trial << ": " << verdict.status().ToString();
    const PipelinePlan& plan = verdict->plan;
    const double batch = p.batch_size;
    if (safe && batch / *safe >= 0.9 * (batch / *fastest) * (1 - 1e-12)) {
      EXPECT_TRUE(KeepsTransientCompany(p, plan)) << "trial " << trial << ": " << DescribePlan(p, plan);
      EXPECT_NEAR(plan.cost.step_s, *safe, 1e-9 * *safe) << "trial " << trial << ": " << DescribePlan(p, plan);
      if (*safe > *fastest * (1 + 1e-9)) {
        EXPECT_NE(verdict->transient_note.find("no transient device alone in a stage"), std::string::npos)
            << "trial " << trial;
        ++kept;
      } else {
        ++fastest_kept;
      }
    } else {
      EXPECT_NEAR(plan.cost.step_s, *fastest, 1e-9 * *fastest) << "trial " << trial << ": " << DescribePlan(p, plan);
      // The risk taken is said, as it is: a pipeline of one stage keeps no replica.
      const bool one_stage = plan.stages.size() == 1;
      EXPECT_EQ(verdict->transient_note.find(one_stage ? ", transient, alone in the only stage: its loss ends the job"
                                                       : ", transient, alone in a stage: its loss costs the updates "
                                                         "since its stage's replica") != std::string::npos,
                !KeepsTransientCompany(p, plan))
          << "trial " << trial << ": " << verdict->transient_note;
    }
    // Never faster than the optimum, relaxed; with no slack, the fastest.
    if (const auto relaxed = PlanPipeline(p, {.exact_devices = 0}); relaxed.ok() && safe &&
                                                                     KeepsTransientCompany(p, relaxed->plan)) {
      EXPECT_GE(relaxed->plan.cost.step_s, *safe * (1 - 1e-9)) << "trial " << trial;
    }
    const auto reckless = PlanPipeline(p, {.transient_slack = 0});
    ASSERT_TRUE(reckless.ok());
    EXPECT_NEAR(reckless->plan.cost.step_s, *fastest, 1e-9 * *fastest) << "trial " << trial;
    // With all the slack there is, the constrained search alone decides:
    // its optimum, on every instance that has one.
    if (safe) {
      const auto cautious = PlanPipeline(p, {.transient_slack = 1});
      ASSERT_TRUE(cautious.ok());
      EXPECT_NEAR(cautious->plan.cost.step_s, *safe, 1e-9 * *safe) << "trial " << trial;
    }
    ++compared;
  }
  EXPECT_GT(compared, 130);
  EXPECT_GT(kept, 0) << "a slower plan was never taken for company: the instances do not test it";
  EXPECT_GT(fastest_kept, 0);
}

// Past `exact_devices` groups are runs in speed order: never better than the
// optimum, and what it gives up is measured by bench/pipeline-planner.
TEST(PipelinePlannerTest, TheRelaxedProgramNeverBeatsTheOptimum) {
  std::mt19937_64 random(11);
  for (int trial = 0; trial < 100; ++trial) {
    const PipelineProblem p =
        RandomPipelineProblem(random, 1 + static_cast<int>(random() % 6), 1 + static_cast<int>(random() % 4));
    const auto oracle = BruteForcePipelineStep(p);
    const auto relaxed = PlanPipeline(p, {.exact_devices = 0});
    if (!relaxed.ok()) continue;  // it may miss a plan that fits; never invent one
    EXPECT_FALSE(relaxed->exact);
    ASSERT_TRUE(oracle.has_value()) << "trial " << trial;
    EXPECT_GE(relaxed->plan.cost.step_s, *oracle * (1 - 1e-9)) << "trial " << trial;
  }
}

PipelineProblem Uneven() {
  PipelineProblem p;
  // A model whose early layers are light on weights and heavy on activations,
  // its late ones the other way round: where to cut matters.
  p.layers = {Layer("conv1", 2, 2e3, 1e5), Layer("conv2", 8, 4e4, 1e5), Layer("conv3", 8, 1e5, 5e4),
              Layer("conv4", 8, 3e5, 2e4), Layer("conv5", 6, 1e6, 8e3), Layer("fc", 1, 4e6, 40)};
  p.devices = {Device("fast", 10, 1000), Device("mid", 5, 1000), Device("slow", 2, 500), Device("slowest", 1, 500)};
  p.batch_size = 32;
  return p;
}

TEST(PipelinePlannerTest, BeatsTheEvenSplitAndDataParallelismOnUnevenDevices) {
  const PipelineProblem p = Uneven();
  const auto verdict = PlanPipeline(p);
  ASSERT_TRUE(verdict.ok()) << verdict.status().ToString();
  const PipelinePlan even = EvenSplitPlan(p), dp = DataParallelPlan(p);
  EXPECT_EQ(even.stages.size(), 4u);
  EXPECT_EQ(dp.stages.size(), 1u);
  EXPECT_LT(verdict->plan.cost.step_s, even.cost.step_s) << DescribePlan(p, verdict->plan);
  EXPECT_LE(verdict->plan.cost.step_s, dp.cost.step_s);
}

TEST(PipelinePlannerTest, OneDeviceIsOneStageWithTheWholeBatch) {
  PipelineProblem p = Uneven();
  p.devices = {Device("alone", 1)};
  const auto verdict = PlanPipeline(p);
  ASSERT_TRUE(verdict.ok());
  ASSERT_EQ(verdict->plan.stages.size(), 1u);
  EXPECT_EQ(verdict->plan.stages[0].end_layer, 6);
  double work = 0;
  for (const LayerCost& l : p.layers) work += l.forward_s + l.backward_s;
  EXPECT_NEAR(verdict->plan.cost.step_s, 32 * work, 1e-12);
}

// A limit of micro-batches below one still plans steps of one: the best of no
// counts had been dereferenced.
TEST(PipelinePlannerTest, ALimitOfMicroBatchesBelowOnePlansStepsOfOne) {
  PipelineProblem p = Uneven();
  p.max_micro_batches = 0;
  const auto verdict = PlanPipeline(p);
  ASSERT_TRUE(verdict.ok()) << verdict.status().ToString();
  EXPECT_EQ(verdict->plan.micro_batches, 1);
}

TEST(PipelinePlannerTest, MemoryThatHoldsNoPlanIsSaidWithTheDeviceShort) {
  PipelineProblem p = Uneven();
  for (auto& d : p.devices) d.memory_bytes = 1000;
  const auto verdict = PlanPipeline(p);
  ASSERT_EQ(verdict.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(verdict.status().message().find("no plan fits the devices' memory"), std::string::npos);
  EXPECT_NE(verdict.status().message().find("over its 1000 B"), std::string::npos) << verdict.status().message();
  // No layer fits even alone on the roomiest device: the one that takes the
  // most is named (what the device would need), not a stage of some plan,
  // nor the first layer that does not fit.
  EXPECT_NE(verdict.status().message().find("layer fc alone would take"), std::string::npos)
      << verdict.status().message();
  EXPECT_NE(verdict.status().message().find("(nor do 5 other layers fit it)"), std::string::npos)
      << verdict.status().message();
  EXPECT_NE(verdict.status().message().find("the device of the most memory"), std::string::npos);
}

// Every layer fits a device alone, but no plan fits: the plan the planner
// weighed last is said, as before; and the layer no device holds is judged on
// the device of the most memory, one of no limit holding everything.
TEST(PipelinePlannerTest, ALayerNoDeviceHoldsIsJudgedOnTheRoomiestDevice) {
  PipelineProblem p = Uneven();
  p.devices = {Device("one", 1)};
  const PipelineCostModel model(p);
  const int only[] = {0};
  int64_t most_alone = 0;
  for (int l = 0; l < static_cast<int>(p.layers.size()); ++l) {
    most_alone = std::max(most_alone, model.Stage(l, l + 1, only, 1, 1).memory_bytes[0]);
  }
  const int64_t whole = model.Stage(0, static_cast<int>(p.layers.size()), only, 1, 1).memory_bytes[0];
  ASSERT_LT(most_alone, whole);
  p.devices[0].memory_bytes = most_alone;
  auto verdict = PlanPipeline(p);
  ASSERT_EQ(verdict.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(verdict.status().message().find("even as one stage on every device, one would hold"), std::string::npos)
      << verdict.status().message();

  p.devices = {Device("small", 1, 0, 500), Device("roomy", 1, 0, 2000)};
  verdict = PlanPipeline(p);
  ASSERT_FALSE(verdict.ok());
  EXPECT_NE(verdict.status().message().find("on roomy, the device of the most memory, over its 1.95 KiB"),
            std::string::npos)
      << verdict.status().message();
  p.devices = {Device("small", 1, 0, 500), Device("unlimited", 1)};
  EXPECT_TRUE(PlanPipeline(p).ok()) << "a device of no limit holds the whole model";
}

TEST(PipelinePlannerTest, MemoryMovesTheCutsAndMicroBatchesRatherThanFailing) {
  PipelineProblem p = Uneven();
  const auto free = PlanPipeline(p);
  ASSERT_TRUE(free.ok());
  // Room for the model's weights a few times over, not for a stage's share of
  // a whole batch of activations.
  for (auto& d : p.devices) d.memory_bytes = 24'000'000;
  const auto tight = PlanPipeline(p);
  ASSERT_TRUE(tight.ok()) << tight.status().ToString();
  EXPECT_TRUE(tight->plan.cost.fits);
  for (size_t s = 0; s < tight->plan.stages.size(); ++s) {
    for (int64_t bytes : tight->plan.cost.stages[s].memory_bytes) EXPECT_LE(bytes, 24'000'000);
  }
  EXPECT_GE(tight->plan.cost.step_s, free->plan.cost.step_s);
}

TEST(PipelinePlannerTest, RefusesProblemsWithNothingToPlan) {
  PipelineProblem p = Uneven();
  p.layers.clear();
  EXPECT_EQ(PlanPipeline(p).status().message(), "the model has no layers to plan");
  p = Uneven();
  p.devices.clear();
  EXPECT_EQ(PlanPipeline(p).status().message(), "there are no devices to plan on");
  p = Uneven();
  p.devices[1].speed = 0;
  EXPECT_EQ(PlanPipeline(p).status().message(), "device mid has no speed");
}

TEST(PipelinePlannerTest, SaysWhatItChoseAndWhatPacesIt) {
  const PipelineProblem p = Uneven();
  const auto verdict = PlanPipeline(p);
  ASSERT_TRUE(verdict.ok());
  const std::string text = DescribePlan(p, verdict->plan);
  EXPECT_NE(text.find("micro-batches of"), std::string::npos) << text;
  EXPECT_NE(text.find("The slowest stage"), std::string::npos) << text;
  EXPECT_NE(text.find("step"), std::string::npos) << text;
  const std::string even = DescribePlan(p, EvenSplitPlan(p));
  EXPECT_NE(even.find("4 stages"), std::string::npos) << even;
  EXPECT_NE(even.find("conv1-conv2 on fast; conv3-conv4 on mid; conv5 on slow; fc on slowest"), std::string::npos)
      << even;
}

TEST(PipelinePlannerTest, TheCostModelRefusesMalformedPlans) {
  const PipelineProblem p = Uneven();
  const PipelineCostModel model(p);
  EXPECT_FALSE(model.Plan(std::vector<PipelineStage>{{0, 3, {0}}}, 1).has_value()) << "layers left over";
  EXPECT_FALSE(model.Plan(std::vector<PipelineStage>{{0, 3, {0}}, {3, 6, {0}}}, 1).has_value()) << "a device twice";
  EXPECT_FALSE(model.Plan(std::vector<PipelineStage>{{0, 6, {}}}, 1).has_value()) << "no device";
  EXPECT_FALSE(model.Plan(std::vector<PipelineStage>{{0, 6, {7}}}, 1).has_value()) << "no such device";
  EXPECT_FALSE(model.Plan(std::vector<PipelineStage>{{0, 6, {0}}}, 5).has_value()) << "5 does not divide 32";
  EXPECT_TRUE(model.Plan(std::vector<PipelineStage>{{0, 6, {0}}}, 4).has_value());
}

// The stages' figures as docs/pipeline.md derives them, on one worked case.
TEST(PipelinePlannerTest, AStageCostsWhatTheModelSays) {
  PipelineProblem p;
  p.layers = {{"a", 0.001, 0.002, 1000, 500, {}, 0, ""}, {"b", 0.002, 0.004, 2000, 100, {}, 0, ""}, {"c", 0.001, 0.001, 4000, 10, {}, 0, ""}};
  p.devices = {Device("x", 2, 8), Device("y", 1, 8)};  // 1 MB/s each way
  p.batch_size = 6;
  const PipelineCostModel model(p);
  const int both[] = {0, 1};
  // Layer b on x and y, 6 samples a micro-batch: capacity 3, x takes 4 of them.
  const StageCost s = model.Stage(1, 2, both, 6, 2);
  EXPECT_DOUBLE_EQ(s.compute_s, 4 * 0.006 / 2);
  EXPECT_DOUBLE_EQ(s.link_s, 4 * (500 + 100) / 1e6);
  EXPECT_DOUBLE_EQ(s.period_s, std::max(s.compute_s, s.link_s));
  EXPECT_DOUBLE_EQ(s.latency_s, s.compute_s + 2 * s.link_s);
  EXPECT_DOUBLE_EQ(s.exchange_s, 2 * 2000 / 1e6);
  EXPECT_EQ(s.memory_bytes[0], static_cast<int64_t>(2000 * 4 + 2 * 4 * (500 + 100)));
  EXPECT_EQ(s.memory_bytes[1], static_cast<int64_t>(2000 * 4 + 2 * 2 * (500 + 100)));
  const std::vector<PipelineStage> stages = {{0, 1, {0}}, {1, 3, {1}}};
  const auto plan = model.Plan(stages, 3);
  ASSERT_TRUE(plan.has_value());
  double max_period = 0, latency = 0;
  for (const auto& st : plan->stages) max_period = std::max(max_period, st.period_s), latency += st.latency_s;
  EXPECT_DOUBLE_EQ(plan->step_s, 2 * max_period + latency);
  EXPECT_DOUBLE_EQ(plan->samples_per_s, 6 / plan->step_s);
}

// Under gradientEachMicroBatch a group's device sends its stage's gradient
// up once a micro-batch, beside the activations: the stage's pace carries
// it, up only; a micro-batch's way through does not wait for it, and after
// the flush the last part and the sum are the exchange as before.
TEST(PipelinePlannerTest, AGradientSentEachMicroBatchCostsTheLinkEachMicroBatch) {
  PipelineProblem p;
  p.layers = {{"a", 0.001, 0.002, 1000, 500, {}, 0, ""}, {"b", 0.002, 0.004, 2000, 100, {}, 0, ""}, {"c", 0.001, 0.001, 4000, 10, {}, 0, ""}};
  p.devices = {Device("x", 2, 8), Device("y", 1, 8)};  // 1 MB/s each way
  p.batch_size = 6;
  const int both[] = {0, 1};
  const StageCost once_a_step = PipelineCostModel(p).Stage(1, 2, both, 6, 2);
  p.gradient_each_micro_batch = true;
  const StageCost in_parts = PipelineCostModel(p).Stage(1, 2, both, 6, 2);
  EXPECT_DOUBLE_EQ(in_parts.link_s, (4 * (500 + 100) + 2000) / 1e6) << "x's 4 samples and its gradient";
  EXPECT_DOUBLE_EQ(in_parts.period_s, std::max(in_parts.compute_s, in_parts.link_s));
  EXPECT_DOUBLE_EQ(in_parts.latency_s, once_a_step.latency_s) << "a micro-batch's way through waits for no part";
  EXPECT_DOUBLE_EQ(in_parts.exchange_s, once_a_step.exchange_s) << "the last part up and the sum back";
  EXPECT_DOUBLE_EQ(in_parts.compute_s, once_a_step.compute_s);
  // A stage of one device sends none either way.
  const int alone[] = {0};
  EXPECT_DOUBLE_EQ(PipelineCostModel(p).Stage(1, 2, alone, 6, 2).link_s, 6 * (500 + 100) / 1e6);
  // Up only: a device whose downlink is slower pays its uplink's rate for a part.
  p.devices[0].down_bytes_per_s = 0.5e6;
  const StageCost slow_down = PipelineCostModel(p).Stage(1, 2, both, 6, 2);
  EXPECT_DOUBLE_EQ(slow_down.link_s, 4 * (500 + 100) / 0.5e6 + 2000 / 1e6);
}

// A device's own part of a step, which the head sets against what its stage
// reports to learn its pace (core/device_pace.h): its passes over its shares
// and its optimizer's step, at its speed.
TEST(PipelinePlannerTest, ADevicesStepIsItsPassesAndItsOptimizersStep) {
  PipelineProblem p;
  p.layers = {{"a", 0.001, 0.002, 1000, 500, {}, 0.010, ""}, {"b", 0.002, 0.004, 2000, 100, {}, 0.020, ""}};
  p.devices = {Device("x", 2, 8), Device("y", 1, 8)};
  p.batch_size = 8;
  const PipelineCostModel model(p);
  const std::vector<int64_t> shares = {3, 3, 1};
  EXPECT_DOUBLE_EQ(model.DeviceStepSeconds(1, 2, 0, shares), (7 * 0.006 + 0.020) / 2);
  EXPECT_DOUBLE_EQ(model.DeviceStepSeconds(0, 2, 1, shares), 7 * 0.009 + 0.030);
  EXPECT_DOUBLE_EQ(model.DeviceStepSeconds(0, 1, 1, std::vector<int64_t>{0, 0}), 0.010) << "dealt no sample";
}

// The runtime's messages all go through the head: a stage after the first
// waits for 4 a micro-batch on its way (its input in, its gradient back, each
// to the head and on), every stage for the head's word and its answer once a
// step, a group for its gradient and the sum; and every byte pays the
// stream's rate on top of its link's.
TEST(PipelinePlannerTest, TheRuntimesMessagesAndBytesAreCounted) {
  PipelineProblem p;
  p.layers = {{"a", 0.001, 0.002, 1000, 500, {}, 0, ""}, {"b", 0.002, 0.004, 2000, 100, {}, 0, ""}, {"c", 0.001, 0.001, 4000, 10, {}, 0, ""}};
  p.devices = {Device("x", 2, 8), Device("y", 1, 8), Device("z", 1)};  // x, y: 1 MB/s each way; z: not limited
  p.batch_size = 6;
  const std::vector<PipelineStage> stages = {{0, 1, {2}}, {1, 3, {0, 1}}};
  const auto free = PipelineCostModel(p).Plan(stages, 2);
  p.transport = {0.0002, 4e6};
  const PipelineCostModel model(p);
  const auto paid = model.Plan(stages, 2);
  ASSERT_TRUE(free && paid);
  const StageCost &first = paid->stages[0], &second = paid->stages[1];
  EXPECT_DOUBLE_EQ(first.messages_s, 0) << "the first stage reads its input itself";
  EXPECT_DOUBLE_EQ(second.messages_s, 4 * 0.0002);
  EXPECT_DOUBLE_EQ(first.orders_s, 2 * 0.0002);
  EXPECT_DOUBLE_EQ(second.orders_s, 2 * 0.0002);
  // z's link is not limited: its cut's 500 bytes a sample, 3 samples, pay the stream alone.
  EXPECT_DOUBLE_EQ(first.link_s, 3 * 500 / 4e6);
  // x's link of 1 MB/s and the stream of 4 MB/s, one after the other.
  EXPECT_DOUBLE_EQ(second.link_s, 2 * 500 * (1 / 1e6 + 1 / 4e6));
  EXPECT_DOUBLE_EQ(second.exchange_s, free->stages[1].exchange_s + 2 * (0.0002 + 6000 / 4e6));
  EXPECT_DOUBLE_EQ(second.latency_s, second.compute_s + 2 * second.link_s + 4 * 0.0002);
  EXPECT_DOUBLE_EQ(paid->step_s, std::max(first.period_s, second.period_s) + first.latency_s + second.latency_s +
                                     std::max(PipelineCostModel::FlushSeconds(first),
                                              PipelineCostModel::FlushSeconds(second)));
  EXPECT_GT(paid->step_s, free->step_s);
  const std::string said = DescribePlan(p, {stages, 2, 3, *paid});
  EXPECT_NE(said.find("messages through the head"), std::string::npos) << said;
}

// Every device of a stage steps its copy of the weights once a step, after
// the flush: the slowest device's step, after the exchange, ends the step, and
// the stage with the longest such tail is the one that counts.
TEST(PipelinePlannerTest, TheOptimizersStepEndsTheStepOnTheSlowestDevice) {
  PipelineProblem p;
  p.layers = {{"a", 0.001, 0.002, 1000, 500, {}, 0.003, ""}, {"b", 0.002, 0.004, 2000, 100, {}, 0.001, ""},
              {"c", 0.001, 0.001, 4000, 10, {}, 0.0005, ""}};
  p.devices = {Device("x", 2, 8), Device("y", 1, 8), Device("z", 4)};
  p.batch_size = 6;
  const PipelineCostModel model(p);
  const int both[] = {0, 1}, fast[] = {0};
  EXPECT_DOUBLE_EQ(model.Stage(1, 3, both, 6, 1).commit_s, 0.0015 / 1) << "y, at speed 1, steps b and c";
  EXPECT_DOUBLE_EQ(model.Stage(0, 2, fast, 6, 1).commit_s, 0.004 / 2);
  EXPECT_DOUBLE_EQ(model.Stage(0, 2, fast, 6, 1).exchange_s, 0) << "alone, nothing to exchange";
  const std::vector<PipelineStage> stages = {{0, 1, {2}}, {1, 3, {0, 1}}};
  const auto plan = model.Plan(stages, 2);
  ASSERT_TRUE(plan.has_value());
  const StageCost& first = plan->stages[0];
  const StageCost& second = plan->stages[1];
  EXPECT_DOUBLE_EQ(first.commit_s, 0.003 / 4);
  EXPECT_DOUBLE_EQ(second.commit_s, 0.0015);
  EXPECT_GT(second.exchange_s, 0);
  const double tail = std::max(first.exchange_s + first.commit_s, second.exchange_s + second.commit_s);
  EXPECT_DOUBLE_EQ(plan->step_s, std::max(first.period_s, second.period_s) + first.latency_s + second.latency_s + tail);
  const std::string said = DescribePlan(p, {stages, 2, 3, *plan});
  EXPECT_NE(said.find("the optimizer's step"), std::string::npos) << said;
}

// Devices are dealt whole samples, as the runtime deals them: a group
// computes at the pace of the device its share makes slowest, and a pass's
// time is what was timed for its size, not in proportion to it.
TEST(PipelinePlannerTest, AGroupComputesWholeSamplesAtTheTimedCostOfEachPass) {
  PipelineProblem p;
  // 4 ms for a pass of one sample, 8 ms for four: a fixed cost to every pass.
  p.layers = {{"a", 0.001, 0.001, 1000, 100, {{1, 0.002, 0.002}, {4, 0.004, 0.004}}, 0, ""}};
  p.devices = {Device("fast", 10, 8), Device("mid", 5, 8), Device("slow", 1, 8)};
  p.batch_size = 4;
  const PipelineCostModel model(p);
  const int all[] = {0, 1, 2};
  // 2 samples over speeds 10:5:1 are 1.25, 0.625 and 0.125 of one: fast and
  // mid take one each and slow none, so mid, at half fast's speed, paces it.
  EXPECT_EQ(model.Shares(all, 2), (std::vector<int64_t>{1, 1, 0}));
  EXPECT_DOUBLE_EQ(model.Stage(0, 1, all, 2, 1).compute_s, 0.004 / 5);
  // 4 samples, 2.5, 1.25 and 0.25 of them, are dealt 3, 1 and 0: fast's
  // pass of 3 takes 6.67 ms (two thirds of the way from one sample's 4 ms to
  // four's 8 ms) over speed 10, mid's of one 4 ms over 5: mid paces it still.
  EXPECT_EQ(model.Shares(all, 4), (std::vector<int64_t>{3, 1, 0}));
  EXPECT_DOUBLE_EQ(model.Stage(0, 1, all, 4, 1).compute_s, 0.004 / 5);
  const int fast[] = {0};
  EXPECT_DOUBLE_EQ(model.Stage(0, 1, fast, 4, 1).compute_s, 0.008 / 10);
  EXPECT_DOUBLE_EQ(model.Stage(0, 1, fast, 3, 1).compute_s, (0.004 + 2 * 0.004 / 3) / 10);
  EXPECT_DOUBLE_EQ(model.LeastWorkSeconds(0, 1), 0.002) << "a pass of four, 2 ms a sample";
  EXPECT_DOUBLE_EQ(model.BestWorkSeconds(0, 1, 0), 0.002);
}

// A stage's own cost of a pass is paid once a stage a pass, whatever its
// layers: two stages of one layer each pay it twice where one stage of both
// pays it once, and a device alone counts it in its capacity. Its sizes need
// not be the layers'.
TEST(PipelinePlannerTest, EachStagePaysItsOwnCostOfAPassOnce) {
  PipelineProblem p;
  p.layers = {{"a", 0.001, 0.001, 1000, 100, {{1, 0.001, 0.001}, {4, 0.002, 0.002}}, 0, ""},
              {"b", 0.001, 0.001, 1000, 100, {{1, 0.001, 0.001}, {4, 0.002, 0.002}}, 0, ""}};
  p.devices = {Device("one", 1), Device("two", 1)};
  p.batch_size = 4;
  const PipelineCostModel plain(p);
  p.stage_pass.passes = {{1, 0.0005, 0.0005}, {3, 0.001, 0.002}};
  const PipelineCostModel model(p);
  EXPECT_DOUBLE_EQ(model.WorkSeconds(0, 2, 1, 0), plain.WorkSeconds(0, 2, 1, 0) + 0.001);
  EXPECT_DOUBLE_EQ(model.WorkSeconds(0, 1, 4, 0), 0.004 + 0.003) << "a stage of one layer pays it whole";
  EXPECT_DOUBLE_EQ(model.WorkSeconds(0, 1, 2, 0), 0.004 * 2 / 3 + 0.001 + 0.001) << "halfway from 1 sample's to 3's";
  EXPECT_DOUBLE_EQ(model.WorkSeconds(0, 1, 8, 0), 0.008 + 0.003)
      << "past the last size, as at it: a pass's, not a sample's";
  EXPECT_DOUBLE_EQ(model.WorkSeconds(0, 1, 0, 0), 0) << "no samples, no pass";
  const PipelineStage whole[] = {{0, 2, {0}}};
  const PipelineStage split[] = {{0, 1, {0}}, {1, 2, {1}}};
  const double whole_more = model.Plan(whole, 1)->step_s - plain.Plan(whole, 1)->step_s;
  const double split_more = model.Plan(split, 1)->step_s - plain.Plan(split, 1)->step_s;
  EXPECT_DOUBLE_EQ(whole_more, 0.003);
  EXPECT_DOUBLE_EQ(split_more, 0.006) << "a micro-batch of 4 through two stages, each paying its own";
  EXPECT_DOUBLE_EQ(model.BestWorkSeconds(0, 2, 0), (0.008 + 0.003) / 4);
  EXPECT_LE(4 * model.LeastWorkSeconds(0, 2), model.WorkSeconds(0, 2, 4, 0)) << "the planner's bound holds";
}

// A device of its own pays the stage's own cost as timed back to back; an
// emulated one, which sleeps after every pass while the site's other agents
// compute, as timed after a pause.
TEST(PipelinePlannerTest, AnEmulatedDevicePaysTheStagesOwnCostAsAfterAPause) {
  PipelineProblem p;
  p.layers = {{"a", 0.001, 0.001, 1000, 100, {{4, 0.002, 0.002}}, 0, ""}};
  p.devices = {Device("here", 1), Device("slow", 0.1)};
  p.devices[1].emulated_slowdown = 10;
  p.batch_size = 4;
  p.stage_pass.passes = {{4, 0.002, 0.002}};
  p.stage_pass.back_to_back = {{4, 0.0005, 0.0005}};
  p.stage_pass.pause_s = 0.02;
  const PipelineCostModel model(p);
  EXPECT_DOUBLE_EQ(model.WorkSeconds(0, 1, 4, 0), 0.004 + 0.001) << "its own: back to back";
  EXPECT_DOUBLE_EQ(model.WorkSeconds(0, 1, 4, 1), 0.004 + 0.004) << "emulated: after a pause";
  EXPECT_DOUBLE_EQ(model.DeviceStepSeconds(0, 1, 1, std::vector<int64_t>{4}), 0.008 / 0.1);
  EXPECT_DOUBLE_EQ(model.BestWorkSeconds(0, 1, 0), 0.005 / 4) << "each device's capacity at its own cost";
  EXPECT_DOUBLE_EQ(model.BestWorkSeconds(0, 1, 1), 0.008 / 4);
  p.stage_pass.back_to_back.clear();
  EXPECT_DOUBLE_EQ(PipelineCostModel(p).WorkSeconds(0, 1, 4, 0), 0.008) << "none back to back: as after a pause";
}

TEST(PipelinePlannerTest, PlansSixteenDevicesAndSixtyFourLayersQuickly) {
  std::mt19937_64 random(3);
  const PipelineProblem p = RandomPipelineProblem(random, 64, 16);
  const auto verdict = PlanPipeline(p);
  ASSERT_TRUE(verdict.ok()) << verdict.status().ToString();
  EXPECT_FALSE(verdict->exact);
  const PipelinePlan even = EvenSplitPlan(p);
  if (even.cost.fits) {
    EXPECT_LE(verdict->plan.cost.step_s, even.cost.step_s);
  }
  // How quickly is bench/pipeline-planner's to say; here only that it ends.
}

}  // namespace
}  // namespace edgetrain

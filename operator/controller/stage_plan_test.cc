#include "operator/controller/stage_plan.h"

#include <gtest/gtest.h>

namespace edgetrain::operator_ {
namespace {

LayerCost Layer(const std::string& name, double work_ms, int64_t parameter_bytes, int64_t activation_bytes) {
  return {name, work_ms / 3000, 2 * work_ms / 3000, parameter_bytes, activation_bytes, {}, 0, ""};
}

// A vgg's shape: light early layers heavy on activations, heavy late ones
// light on them.
std::vector<LayerCost> Layers() {
  return {Layer("conv1", 2, 2e3, 1e5), Layer("conv2", 8, 4e4, 1e5), Layer("conv3", 8, 1e5, 5e4),
          Layer("conv4", 8, 3e5, 2e4), Layer("conv5", 6, 1e6, 8e3), Layer("fc", 1, 4e6, 40)};
}

NodeView Node(const std::string& name, double score, double mbps, double emulated_slowdown = 1) {
  NodeView node;
  node.name = name;
  node.compute_score = score;
  node.link_mbps = mbps;
  node.emulated_slowdown = emulated_slowdown;
  return node;
}

JobSpec Spec(ParallelismMode mode) {
  JobSpec spec;
  spec.data.batch_size = 32;
  spec.parallelism.mode = mode;
  spec.parallelism.workers = 2;
  return spec;
}

// Two devices on thin links, a pipeline asked for: every layer in one stage
// or the other, each on one device, said with the nodes' names.
TEST(StagePlanTest, APipelineCutsEveryLayerIntoStagesOnThePlacedNodes) {
  const std::vector<NodeView> devices = {Node("gateway", 1, 20), Node("robot-1", 0.5, 20)};
  auto cut = PlanStagesOn(Spec(ParallelismMode::kPipeline), devices, Layers(), nullptr);
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  ASSERT_EQ(cut->layout.stages.size(), 2u);
  EXPECT_EQ(cut->layout.stages.front().first_layer, 0);
  EXPECT_EQ(cut->layout.stages.back().end_layer, 6);
  EXPECT_EQ(cut->layout.stages[0].end_layer, cut->layout.stages[1].first_layer);
  for (const PipelineStagePlan& stage : cut->layout.stages) EXPECT_EQ(stage.ranks.size(), 1u);
  EXPECT_GT(cut->predicted_samples_per_s, 0);
  EXPECT_EQ(cut->reason.rfind("pipeline as asked: layers 0-", 0), 0u) << cut->reason;
  for (const char* said : {" on gateway", " on robot-1", "micro-batch", "samples/s against data parallelism's"}) {
    EXPECT_NE(cut->reason.find(said), std::string::npos) << said << " in " << cut->reason;
  }
}

// Layers timed on a real node twice the reference's speed took half the
// reference's time: planned as twice as long, their optimizer's step and a
// stage's own cost of a pass too. An emulated node runs at the machine's own
// speed whatever its score says: its times are the reference's.
TEST(StagePlanTest, LayersAreBroughtToSpeedOneByTheNodeTheyWereTimedOn) {
  const std::vector<NodeView> devices = {Node("a", 1, 20), Node("b", 1, 20)};
  const JobSpec spec = Spec(ParallelismMode::kPipeline);
  std::vector<LayerCost> layers = Layers();
  for (LayerCost& l : layers) l.optimizer_s = l.forward_s;
  StagePassCost own;
  own.passes = {{1, 2e-4, 3e-4}, {32, 4e-4, 6e-4}};
  auto as_timed = PlanStagesOn(spec, devices, layers, nullptr, {}, own);
  const NodeView fast = Node("fast", 2, 20);
  std::vector<LayerCost> halved = layers;
  for (LayerCost& l : halved) {
    l.forward_s /= 2;
    l.backward_s /= 2;
    l.optimizer_s /= 2;
  }
  StagePassCost own_halved = own;
  for (LayerPass& p : own_halved.passes) {
    p.forward_s /= 2;
    p.backward_s /= 2;
  }
  auto on_fast = PlanStagesOn(spec, devices, halved, &fast, {}, own_halved);
  const NodeView emulated = Node("emulated", 0.25, 20, /*emulated_slowdown=*/4);
  auto on_emulated = PlanStagesOn(spec, devices, layers, &emulated, {}, own);
  ASSERT_TRUE(as_timed.ok() && on_fast.ok() && on_emulated.ok());
  EXPECT_NEAR(on_fast->predicted_samples_per_s, as_timed->predicted_samples_per_s,
              1e-9 * as_timed->predicted_samples_per_s);
  EXPECT_DOUBLE_EQ(on_emulated->predicted_samples_per_s, as_timed->predicted_samples_per_s);
}

// A device so slow, on so thin a link, that the plan runs faster without it
// gets no pod: the reason names it, since the placement named every worker's
// node (a new user counted 4 workers where 2 pods ran).
TEST(StagePlanTest, TheDevicesThePlanLeavesOutAreNamed) {
  const std::vector<NodeView> devices = {Node("gateway", 1, 100), Node("sensor", 0.01, 0.1)};
  auto cut = PlanStagesOn(Spec(ParallelismMode::kAuto), devices, Layers(), nullptr);
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  ASSERT_EQ(cut->layout.stages.size(), 1u) << cut->reason;
  EXPECT_EQ(cut->layout.stages[0].ranks, std::vector<int>{0}) << cut->reason;
  EXPECT_NE(cut->reason.find("; the plan leaves out sensor (1): it gets no pod, the plan predicted faster without it"),
            std::string::npos)
      << cut->reason;
  auto both = PlanStagesOn(Spec(ParallelismMode::kPipeline), {Node("gateway", 1, 20), Node("robot-1", 0.5, 20)},
                           Layers(), nullptr);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->reason.find("leaves out"), std::string::npos) << both->reason;
}

// spec.parallelism.stages: the even split, or a layout by hand, where the
// planner would leave a device out; a layout naming layers the model lacks
// is the spec's mistake (InvalidArgument), not the nodes'.
TEST(StagePlanTest, StagesTheSpecGivesAreKeptWhereThePlannerWouldCutOtherwise) {
  const std::vector<NodeView> devices = {Node("gateway", 1, 100), Node("sensor", 0.01, 0.1)};
  JobSpec spec = Spec(ParallelismMode::kPipeline);
  spec.parallelism.stages = "even";
  auto even = PlanStagesOn(spec, devices, Layers(), nullptr);
  ASSERT_TRUE(even.ok()) << even.status().ToString();
  ASSERT_EQ(even->layout.stages.size(), 2u) << even->reason;
  EXPECT_EQ(even->layout.stages[0].end_layer, 3);
  EXPECT_EQ(even->layout.stages[1].ranks, std::vector<int>{1});
  EXPECT_EQ(even->reason.rfind("spec.parallelism.stages even instead of the planner's: layers 0-2 on gateway, 3-5 on "
                               "sensor; ",
                               0),
            0u)
      << even->reason;
  EXPECT_EQ(even->reason.find("leaves out"), std::string::npos) << even->reason;
  EXPECT_TRUE(even->layout.stages_given) << "the head moves no layers";

  spec.parallelism.stages = "0:1/1-5:0";
  auto by_hand = PlanStagesOn(spec, devices, Layers(), nullptr);
  ASSERT_TRUE(by_hand.ok()) << by_hand.status().ToString();
  ASSERT_EQ(by_hand->layout.stages.size(), 2u);
  EXPECT_EQ(by_hand->layout.stages[0].ranks, std::vector<int>{1});
  EXPECT_EQ(by_hand->layout.stages[1].first_layer, 1);
  EXPECT_GT(by_hand->predicted_samples_per_s, 0);

  spec.parallelism.stages = "0-8:0/9:1";
  auto beyond = PlanStagesOn(spec, devices, Layers(), nullptr);
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(beyond.status().message(), "spec.parallelism.stages: the model has layers 0-5 (edgetrain plan lists them)");
  EXPECT_EQ(CheckStagesFitTheLayers(spec, Layers().size()).message(), beyond.status().message());
  spec.parallelism.stages = "0-2:0/3-5:1";
  EXPECT_TRUE(CheckStagesFitTheLayers(spec, Layers().size()).ok());
  EXPECT_EQ(CheckStagesFitTheLayers(spec, 8).message(),
            "spec.parallelism.stages: layers 6-7 are in no stage");
  spec.parallelism.stages = "even";
  EXPECT_TRUE(CheckStagesFitTheLayers(spec, 1).ok()) << "a plan by name fits any model";

  auto planned = PlanStagesOn(Spec(ParallelismMode::kPipeline), devices, Layers(), nullptr);
  ASSERT_TRUE(planned.ok());
  EXPECT_FALSE(planned->layout.stages_given) << "the planner's: the head may move layers";
}

TEST(StagePlanTest, NoPlanThatFitsTheDevicesMemoryIsRefusedSayingWhy) {
  std::vector<NodeView> devices = {Node("a", 1, 20), Node("b", 1, 20)};
  for (NodeView& d : devices) d.allocatable.memory_bytes = 1000;  // far under the 5 MB of weights
  auto cut = PlanStagesOn(Spec(ParallelismMode::kPipeline), devices, Layers(), nullptr);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kFailedPrecondition) << cut.status().ToString();
  // Stages by hand are judged on their own memory, and said to be the spec's.
  JobSpec by_hand = Spec(ParallelismMode::kPipeline);
  by_hand.parallelism.stages = "0-2:0/3-5:1";
  auto given = PlanStagesOn(by_hand, devices, Layers(), nullptr);
  ASSERT_FALSE(given.ok());
  EXPECT_EQ(given.status().code(), StatusCode::kFailedPrecondition) << given.status().ToString();
  EXPECT_EQ(given.status().message().rfind("the stages spec.parallelism.stages gives do not fit: ", 0), 0u)
      << given.status().ToString();
}

// A module's size from its layers as timed: their parameters, and the
// multiply-adds of the reference machine's time for a sample, that machine
// being as fast as the node they were timed on (slowdown 4 emulated there
// makes each second a quarter of one).
TEST(StagePlanTest, AModulesSizeComesFromItsLayersAsTimed) {
  const std::vector<LayerCost> layers = {Layer("fc1", 3, 4000, 100), Layer("fc2", 3, 2000, 40)};
  const ModelSize size = SizeOfLayers(layers, 32, nullptr);
  EXPECT_EQ(size.parameters, 1500);
  // 6 ms of work a sample: 3.9e8 flops at 6.5e10 a second, less 4 a parameter
  // a step (188 a sample), over 6 a multiply-add.
  EXPECT_NEAR(size.multiply_adds, (6e-3 * kReferenceFlopsPerSecond - 4.0 * 1500 / 32) / 6, 1);
  const NodeView emulated = Node("robot", 0.25, 20, 4);  // its processes run at this machine's speed
  EXPECT_EQ(SizeOfLayers(layers, 32, &emulated).multiply_adds, size.multiply_adds);
  const NodeView slow = Node("robot", 0.5, 20);  // a real node half as fast: its seconds are half
  EXPECT_NEAR(SizeOfLayers(layers, 32, &slow).multiply_adds, (3e-3 * kReferenceFlopsPerSecond - 4.0 * 1500 / 32) / 6,
              1);
}

}  // namespace
}  // namespace edgetrain::operator_

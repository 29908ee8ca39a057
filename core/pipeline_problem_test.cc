#include "core/pipeline_problem.h"

#include <gtest/gtest.h>

#include "core/parallelism_choice.h"

namespace edgetrain {
namespace {

std::vector<LayerCost> TwoLayers() {
  return {{"conv1", 1e-4, 2e-4, 640, 50176, {}, 0, ""}, {"classifier", 1e-6, 2e-6, 5160, 40, {}, 0, ""}};
}

JobSpec Job(int batch = 64) {
  JobSpec spec;
  spec.data.batch_size = batch;
  return spec;
}

NodeView Emulated(const std::string& name, double slowdown, std::optional<double> mbps, std::string memory = "4Gi") {
  NodeProfile profile;
  profile.name = name;
  profile.slowdown = slowdown;
  profile.memory = std::move(memory);
  if (mbps) {
    profile.link.emplace();
    profile.link->mean_mbps = *mbps;
  }
  auto view = NodeViewOf(profile);
  EXPECT_TRUE(view.ok()) << view.status().ToString();
  return *view;
}

// A module taken whole (not an nn.Sequential) may run on a device or a group,
// which auto weighs and says why; a pipeline or hybrid asked of it is refused
// with the reason and the way out.
TEST(PipelineProblemTest, AModelTakenWholeIsRefusedASplitAndRunWholeByAuto) {
  const std::vector<NodeView> nodes = {Emulated("fast", 2, 80), Emulated("slow", 4, 80)};
  const std::string why = "net.pt is a TwoPaths, whose forward may use its children in any order";
  const std::vector<LayerCost> whole = {{"TwoPaths", 1e-4, 2e-4, 640, 40, {}, 0, why}};
  for (ParallelismMode mode : {ParallelismMode::kPipeline, ParallelismMode::kHybrid}) {
    JobSpec spec = Job();
    spec.parallelism.mode = mode;
    const auto refused = PipelineProblemOf(spec, nodes, whole);
    ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << NameOf(mode);
    EXPECT_EQ(refused.status().message(),
              "spec.model.torchscript: a pipeline cuts a model between the children of an nn.Sequential, and " + why +
                  ": script an nn.Sequential whose children each take the one before's output and share no "
                  "weight, or train it with parallelism.mode auto (which runs it whole) or dataParallel");
  }
  JobSpec spec = Job();
  spec.parallelism.mode = ParallelismMode::kAuto;
  const auto problem = PipelineProblemOf(spec, nodes, whole);
  ASSERT_TRUE(problem.ok()) << problem.status().ToString();
  EXPECT_EQ(WholeModelNote(*problem), why + ", so it runs whole");
  const auto chosen = ChooseParallelism(*problem, ParallelismMode::kAuto);
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->reason.rfind(why + ", so it runs whole: ", 0), 0u) << chosen->reason;
  EXPECT_EQ(WholeModelNote(*PipelineProblemOf(spec, nodes, TwoLayers())), "") << "a model cut between its layers";
}

TEST(PipelineProblemTest, EachNodeIsADeviceAtItsSpeedMemoryAndLink) {
  const std::vector<NodeView> nodes = {Emulated("fast", 2, 80), Emulated("slow", 20, std::nullopt, "1Gi")};
  const auto problem = PipelineProblemOf(Job(48), nodes, TwoLayers());
  ASSERT_TRUE(problem.ok()) << problem.status().ToString();
  EXPECT_EQ(problem->batch_size, 48);
  ASSERT_EQ(problem->layers.size(), 2u);
  EXPECT_EQ(problem->layers[1].name, "classifier");
  ASSERT_EQ(problem->devices.size(), 2u);
  const PipelineDevice& fast = problem->devices[0];
  EXPECT_EQ(fast.name, "fast");
  // An emulated node's slowdown is in its compute score once: half this
  // machine's speed, not a quarter.
  EXPECT_DOUBLE_EQ(fast.speed, 0.5);
  EXPECT_EQ(fast.memory_bytes, int64_t{4} << 30);
  EXPECT_DOUBLE_EQ(fast.up_bytes_per_s, 10e6);  // 80 Mbit/s
  EXPECT_DOUBLE_EQ(fast.down_bytes_per_s, 10e6);
  const PipelineDevice& slow = problem->devices[1];
  EXPECT_DOUBLE_EQ(slow.speed, 0.05);
  EXPECT_EQ(slow.memory_bytes, int64_t{1} << 30);
  EXPECT_EQ(slow.up_bytes_per_s, 0) << "no link measured: wired, not limited";
  EXPECT_EQ(slow.down_bytes_per_s, 0);
}

// Two workers placed on one node (on Kubernetes, where nodes are fewer than
// workers) share its compute, memory and link: two devices of half of each,
// not two of the whole node.
TEST(PipelineProblemTest, ANodeTwoWorkersArePlacedOnIsSharedByThem) {
  const std::vector<NodeView> nodes = {Emulated("a", 2, 80), Emulated("b", 2, 80), Emulated("b", 2, 80)};
  const auto problem = PipelineProblemOf(Job(), nodes, TwoLayers());
  ASSERT_TRUE(problem.ok()) << problem.status().ToString();
  ASSERT_EQ(problem->devices.size(), 3u);
  EXPECT_DOUBLE_EQ(problem->devices[0].speed, 0.5);
  EXPECT_EQ(problem->devices[0].memory_bytes, int64_t{4} << 30);
  for (size_t d : {1u, 2u}) {
    EXPECT_EQ(problem->devices[d].name, "b");
    EXPECT_DOUBLE_EQ(problem->devices[d].speed, 0.25);
    EXPECT_EQ(problem->devices[d].memory_bytes, int64_t{2} << 30);
    EXPECT_DOUBLE_EQ(problem->devices[d].up_bytes_per_s, 5e6);
  }
  // The sum of capacities counts node b once: twice node a's, as b is a's like.
  const auto all = ChooseParallelism(*problem, ParallelismMode::kAuto);
  const auto a_alone = ChooseParallelism(*PipelineProblemOf(Job(), std::vector<NodeView>{nodes[0]}, TwoLayers()),
                                         ParallelismMode::kAuto);
  ASSERT_TRUE(all.ok() && a_alone.ok());
  EXPECT_NEAR(all->ideal_samples_per_s, 2 * a_alone->ideal_samples_per_s, 1e-9 * all->ideal_samples_per_s);
}

TEST(PipelineProblemTest, ARealNodeRunsAtItsScoreAndOffersWhatOtherPodsLeave) {
  NodeView board;
  board.name = "board";
  board.compute_score = 0.25;  // no emulated slowdown: its compute is its own
  board.allocatable.memory_bytes = int64_t{8} << 30;
  board.bound.memory_bytes = int64_t{3} << 30;
  board.link_mbps = 8;
  const auto problem = PipelineProblemOf(Job(), std::vector<NodeView>{board}, TwoLayers());
  ASSERT_TRUE(problem.ok()) << problem.status().ToString();
  EXPECT_DOUBLE_EQ(problem->devices[0].speed, 0.25);
  EXPECT_EQ(problem->devices[0].memory_bytes, int64_t{5} << 30);
  EXPECT_DOUBLE_EQ(problem->devices[0].up_bytes_per_s, 1e6);

  board.bound.memory_bytes = int64_t{9} << 30;
  const auto full = PipelineProblemOf(Job(), std::vector<NodeView>{board}, TwoLayers());
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->devices[0].memory_bytes, 1) << "no room is not \"not limited\"";
}

TEST(PipelineProblemTest, TheOptimizerSetsTheStateHeldPerParameter) {
  OptimizerSpec adam{OptimizerKind::kAdam, 0.001, std::nullopt, 0};
  OptimizerSpec sgd{OptimizerKind::kSgd, 0.1, std::nullopt, 0};
  OptimizerSpec no_momentum{OptimizerKind::kSgd, 0.1, 0.0, 0};
  OptimizerSpec momentum{OptimizerKind::kSgd, 0.1, 0.9, 0};
  EXPECT_EQ(StateFactorOf(adam), 4);
  EXPECT_EQ(StateFactorOf(sgd), 2);
  EXPECT_EQ(StateFactorOf(no_momentum), 2);
  EXPECT_EQ(StateFactorOf(momentum), 3);

  JobSpec spec = Job();
  spec.optimizer = momentum;
  const auto problem = PipelineProblemOf(spec, std::vector<NodeView>{Emulated("a", 1, 10)}, TwoLayers());
  ASSERT_TRUE(problem.ok());
  EXPECT_EQ(problem->state_factor, 3);
}

TEST(PipelineProblemTest, NodesPlacementWouldNeverChooseAreRefusedByName) {
  NodeView cut = Emulated("robot-3", 2, 40);
  cut.link_mbps = 0;
  EXPECT_EQ(PipelineProblemOf(Job(), std::vector<NodeView>{cut}, TwoLayers()).status().message(),
            "node robot-3's link is cut (edgetrain.dev/link-mbps is 0)");
  NodeView idle = Emulated("hub", 2, 40);
  idle.compute_score = 0;
  EXPECT_EQ(PipelineProblemOf(Job(), std::vector<NodeView>{idle}, TwoLayers()).status().message(),
            "node hub has no compute (edgetrain.dev/compute-score is not above 0)");
  EXPECT_EQ(PipelineProblemOf(Job(), {}, TwoLayers()).status().message(), "there are no nodes to plan on");
  EXPECT_EQ(PipelineProblemOf(Job(), std::vector<NodeView>{Emulated("a", 1, 10)}, {}).status().message(),
            "the model has no layers to plan");
  EXPECT_EQ(PipelineProblemOf(Job(0), std::vector<NodeView>{Emulated("a", 1, 10)}, TwoLayers()).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace edgetrain

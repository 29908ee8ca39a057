#include "core/cluster_placement.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/quantity.h"

namespace edgetrain {
namespace {

// Fixtures that read as a site's description: Node("robot-1").Score(0.5).Link(40).
class Node {
 public:
  explicit Node(std::string name) {
    view_.name = std::move(name);
    view_.labels = {{"kubernetes.io/arch", "amd64"}, {"kubernetes.io/hostname", view_.name}};
    view_.allocatable = {.cpu_millis = 4000, .memory_bytes = int64_t{8} << 30, .pods = 110};
  }
  Node& Score(double s) { view_.compute_score = s; return *this; }
  Node& Link(double mbps) { view_.link_mbps = mbps; return *this; }
  Node& Label(const std::string& k, const std::string& v) { view_.labels[k] = v; return *this; }
  Node& Arch(const std::string& a) { return Label("kubernetes.io/arch", a); }
  Node& Taint(const std::string& k, const std::string& v, const std::string& effect) {
    view_.taints.push_back({k, v, effect});
    return *this;
  }
  Node& NotReady() { view_.ready = false; return *this; }
  Node& Cordoned() { view_.cordoned = true; return *this; }
  Node& Cpu(const std::string& q) { view_.allocatable.cpu_millis = *ParseQuantityMillis(q); return *this; }
  Node& Busy(const std::string& cpu) { view_.bound.cpu_millis = *ParseQuantityMillis(cpu); view_.bound.pods = 1; return *this; }
  Node& Gpus(int n) { view_.allocatable.AddOther("nvidia.com/gpu", n * 1000); return *this; }
  Node& Streams(double per_second) { view_.emulated_stream = StreamSource{per_second, "", 0}; return *this; }
  Node& StreamOnlyTraced() { view_.stream_only_traced = true; return *this; }
  Node& Watts(double compute, double communicate) {
    view_.power.compute_watts = compute;
    view_.power.communicate_watts = communicate;
    return *this;
  }
  operator NodeView() const { return view_; }  // NOLINT: builders read as the value they build

 private:
  NodeView view_;
};

// A digits mlp [32], batch 32: a small model, so links weigh more than compute.
TeamRequest Team(int workers) {
  TeamRequest r;
  r.workers = workers;
  r.coordinator_requests = {.cpu_millis = 500, .memory_bytes = int64_t{256} << 20, .pods = 1};
  r.worker_requests = {.cpu_millis = 1000, .memory_bytes = int64_t{512} << 20, .pods = 1};
  JobSpec spec;
  spec.data.dataset = DatasetName::kDigits;
  spec.data.batch_size = 32;
  spec.model.hidden = {32};
  r.step = StepCostOf(spec);
  return r;
}

// examples/nodes/edge-site.yaml as a cluster shows it.
std::vector<NodeView> EdgeSite() {
  return {
      Node("gateway").Score(1),
      Node("robot-1").Score(0.5).Link(43),
      Node("robot-2").Score(0.5).Link(61),
      Node("robot-3").Score(0.5).Link(12),
      Node("jetson-1").Score(0.33).Link(20).Arch("arm64"),
      Node("spot-1").Score(1).Link(16).Label("cloud.google.com/gke-spot", "true").Taint("cloud.google.com/gke-spot", "true", "NoSchedule"),
      Node("spot-2").Score(1).Link(24).Label("eks.amazonaws.com/capacityType", "SPOT"),
  };
}

const NodeVerdict& VerdictOf(const TeamPlacement& p, const std::string& node) {
  auto it = std::find_if(p.verdicts.begin(), p.verdicts.end(), [&](const NodeVerdict& v) { return v.node == node; });
  EXPECT_NE(it, p.verdicts.end()) << node;
  return *it;
}

// A GPU asked for is counted as the kubelet counts it: a node that lists none
// has none (a new user's job asking nvidia.com/gpu: 1 was placed on a gateway
// without one), and one GPU holds one pod.
TEST(ClusterPlacementTest, AResourceANodeHasNoneOfIsNotThere) {
  TeamRequest team = Team(2);
  team.coordinator_requests.AddOther("nvidia.com/gpu", 1000);
  team.worker_requests.AddOther("nvidia.com/gpu", 1000);
  TeamPlacement none = PlaceTeam(EdgeSite(), team);
  ASSERT_FALSE(none.placed);
  EXPECT_EQ(none.unschedulable, "0/7 nodes fit the coordinator: 6 insufficient nvidia.com/gpu, 1 untolerated taint");

  std::vector<NodeView> site = EdgeSite();
  site[0] = Node("gateway").Score(1).Gpus(1);
  site[1] = Node("robot-1").Score(0.5).Link(43).Gpus(1);
  TeamPlacement two = PlaceTeam(site, team);
  ASSERT_FALSE(two.placed) << "three pods for two GPUs";
  EXPECT_NE(two.unschedulable.find("1/2 workers fit"), std::string::npos) << two.unschedulable;
  EXPECT_EQ(VerdictOf(two, "robot-2").misfit, "insufficient nvidia.com/gpu");

  site[2] = Node("robot-2").Score(0.5).Link(61).Gpus(2);
  TeamPlacement three = PlaceTeam(site, team);
  ASSERT_TRUE(three.placed) << three.unschedulable;
  for (const std::string& node : three.worker_nodes) EXPECT_NE(node, three.coordinator_node);
  EXPECT_EQ(VerdictOf(three, "robot-3").excluded, "insufficient nvidia.com/gpu: 0 free, a worker asks 1");
}

TEST(ClusterPlacementTest, TheCoordinatorGoesToTheStableNodeWithTheBestLinkAndWorkersSpreadByPredictedThroughput) {
  TeamPlacement p = PlaceTeam(EdgeSite(), Team(3));
  ASSERT_TRUE(p.placed) << p.unschedulable;
  EXPECT_EQ(p.coordinator_node, "gateway");
  // The gateway's worker crosses no link; a digits mlp's step is mostly its
  // exchange, so the robots on the best links (61, 43 Mbit/s) come before spot-2's
  // faster compute on 24 Mbit/s.
  EXPECT_EQ(p.worker_nodes, (std::vector<std::string>{"gateway", "robot-2", "robot-1"}));
  // The team's rounds wait for its slowest worker (robot-1's, on 43 Mbit/s):
  // three batches a round of that worker's step, not the sum of each
  // worker's rate alone, which was 20-28 times what a team trained.
  const double slowest = VerdictOf(p, "robot-1").step.seconds();
  EXPECT_GT(slowest, VerdictOf(p, "gateway").step.seconds());
  EXPECT_NEAR(p.predicted_samples_per_second, 3 * 32 / slowest, 1e-9);
  // A deadline's round waits for its quorum: of three, two at 0.5.
  TeamRequest deadline = Team(3);
  deadline.round_quorum = 0.5;
  const TeamPlacement q = PlaceTeam(EdgeSite(), deadline);
  EXPECT_NEAR(q.predicted_samples_per_second, 3 * 32 / VerdictOf(q, "robot-2").step.seconds(), 1e-9);
  EXPECT_EQ(VerdictOf(p, "spot-1").excluded,
            "taint cloud.google.com/gke-spot=true:NoSchedule not tolerated (spec.template.tolerations)");
  EXPECT_EQ(VerdictOf(p, "spot-2").transient, "eks.amazonaws.com/capacityType=SPOT");
  EXPECT_EQ(VerdictOf(p, "robot-3").excluded, "") << "eligible, just not needed";
  EXPECT_TRUE(VerdictOf(p, "gateway").coordinator);
  EXPECT_EQ(VerdictOf(p, "robot-2").ranks, (std::vector<int>{1}));
}

TEST(ClusterPlacementTest, TransientNodesOnlyWhenTheJobAllowsThem) {
  TeamRequest team = Team(3);
  team.allow_transient = false;
  TeamPlacement p = PlaceTeam(EdgeSite(), team);
  ASSERT_TRUE(p.placed);
  EXPECT_EQ(p.worker_nodes, (std::vector<std::string>{"gateway", "robot-2", "robot-1"}));
  EXPECT_EQ(PlaceTeam(EdgeSite(), Team(4)).worker_nodes[3], "spot-2") << "allowed, it is next";
  team.workers = 4;
  EXPECT_EQ(PlaceTeam(EdgeSite(), team).worker_nodes[3], "jetson-1") << "not allowed, the next best link";
  EXPECT_EQ(VerdictOf(p, "spot-2").excluded,
            "transient (eks.amazonaws.com/capacityType=SPOT) and spec.placement.allowTransient is false");
}

TEST(ClusterPlacementTest, EverySpotLabelDocumentedMakesANodeTransient) {
  struct Case {
    std::string key, value;
    bool transient;
  };
  for (const Case& c : std::vector<Case>{{"edgetrain.dev/transient", "true", true},
                                         {"edgetrain.dev/transient", "false", false},
                                         {"node.kubernetes.io/lifecycle", "spot", true},
                                         {"node.kubernetes.io/lifecycle", "normal", false},
                                         {"cloud.google.com/gke-spot", "true", true},
                                         {"eks.amazonaws.com/capacityType", "SPOT", true},
                                         {"eks.amazonaws.com/capacityType", "ON_DEMAND", false},
                                         {"kubernetes.azure.com/scalesetpriority", "spot", true},
                                         {"kubernetes.azure.com/scalesetpriority", "regular", false}}) {
    TeamRequest team = Team(1);
    team.allow_transient = false;
    TeamPlacement p = PlaceTeam({Node("stable"), Node("maybe").Label(c.key, c.value).Link(1)}, team);
    EXPECT_EQ(VerdictOf(p, "maybe").excluded.empty(), !c.transient) << c.key << "=" << c.value;
  }
}

TEST(ClusterPlacementTest, TheCoordinatorStaysOffTransientNodesWhileAStableOneFits) {
  TeamPlacement p = PlaceTeam({Node("spot").Score(4).Label("node.kubernetes.io/lifecycle", "spot"),
                               Node("robot").Score(0.5).Link(5)},
                              Team(1));
  ASSERT_TRUE(p.placed);
  EXPECT_EQ(p.coordinator_node, "robot");
  EXPECT_EQ(p.worker_nodes, (std::vector<std::string>{"robot"})) << "the coordinator's own node crosses no link";

  p = PlaceTeam({Node("spot").Label("node.kubernetes.io/lifecycle", "spot")}, Team(1));
  ASSERT_TRUE(p.placed) << "only spot nodes, and transient allowed: it runs there";
  EXPECT_EQ(p.coordinator_node, "spot");
}

TEST(ClusterPlacementTest, NodesNoPodMayUseAreExcludedWithTheirReason) {
  struct Case {
    NodeView node;
    TeamRequest team;
    std::string excluded;
  };
  TeamRequest tolerant = Team(1);
  tolerant.tolerations = {{"dedicated", "Equal", "robots", "NoSchedule", std::nullopt}};
  TeamRequest selective = Team(1);
  selective.node_selector = {{"site", "lab"}};
  TeamRequest amd64_only = Team(1);
  amd64_only.architectures = {"amd64"};
  std::vector<Case> cases = {
      {Node("n").NotReady(), Team(1), "not Ready"},
      {Node("n").Cordoned(), Team(1), "cordoned (spec.unschedulable)"},
      {Node("n").Taint("dedicated", "robots", "NoSchedule"), Team(1),
       "taint dedicated=robots:NoSchedule not tolerated (spec.template.tolerations)"},
      {Node("n").Taint("dedicated", "robots", "NoSchedule"), tolerant, ""},
      {Node("n").Taint("dedicated", "drones", "NoSchedule"), tolerant,
       "taint dedicated=drones:NoSchedule not tolerated (spec.template.tolerations)"},
      {Node("n").Taint("dedicated", "robots", "PreferNoSchedule"), Team(1), ""},
      {Node("n"), selective, "no label site=lab (spec.placement.nodeSelector)"},
      {Node("n").Label("site", "lab"), selective, ""},
      {Node("n").Arch("arm64"), amd64_only, "kubernetes.io/arch arm64, the agent's image is built for amd64"},
      {Node("n").Score(0), Team(1), "edgetrain.dev/compute-score is not above 0"},
  };
  for (const Case& c : cases) {
    TeamPlacement p = PlaceTeam({Node("gateway"), c.node}, c.team);
    EXPECT_EQ(VerdictOf(p, "n").excluded, c.excluded);
  }
}

TEST(ClusterPlacementTest, AGangThatDoesNotFitWhollyIsNotPlacedAtAllAndSaysWhy) {
  TeamPlacement p = PlaceTeam({Node("gateway").Cpu("1500m"), Node("robot").Link(40).Busy("3500m"),
                               Node("down").NotReady(), Node("spot").Label("cloud.google.com/gke-spot", "true")},
                              [] {
                                TeamRequest t = Team(3);
                                t.allow_transient = false;
                                return t;
                              }());
  EXPECT_FALSE(p.placed);
  EXPECT_EQ(p.coordinator_node, "");
  EXPECT_TRUE(p.worker_nodes.empty()) << "all or nothing";
  EXPECT_EQ(p.unschedulable,
            "1/3 workers fit, beside the coordinator on gateway; nodes that take no more: 2 insufficient cpu, 1 not "
            "ready, 1 transient");
  // And each node says its own reason, the coordinator's node that it was to be.
  EXPECT_TRUE(p.verdicts[0].would_hold_coordinator);
  EXPECT_EQ(p.verdicts[0].would_hold_ranks, std::vector<int>{0}) << "the worker that fitted";
  EXPECT_EQ(p.verdicts[0].misfit, "insufficient cpu");
  EXPECT_EQ(p.verdicts[1].misfit, "insufficient cpu");
  EXPECT_FALSE(p.verdicts[1].would_hold_coordinator);

  p = PlaceTeam({Node("gateway").Busy("3800m"), Node("down").NotReady()}, Team(1));
  EXPECT_EQ(p.unschedulable, "0/2 nodes fit the coordinator: 1 insufficient cpu, 1 not ready");
  EXPECT_EQ(p.verdicts[0].coordinator_misfit, "insufficient cpu") << "each eligible node says its own";
  EXPECT_EQ(p.verdicts[1].coordinator_misfit, "") << "excluded, and says so there";
  EXPECT_EQ(PlaceTeam({}, Team(1)).unschedulable, "0/0 nodes fit the coordinator");

  // A request too large in cpu and memory both: each counted, as the
  // scheduler counts them (memory went unsaid behind cpu: a user's trial).
  TeamRequest huge = Team(1);
  huge.coordinator_requests = {.cpu_millis = 64000, .memory_bytes = int64_t{256} << 30, .pods = 1};
  p = PlaceTeam({Node("gateway"), Node("robot"), Node("down").NotReady()}, huge);
  EXPECT_EQ(p.unschedulable, "0/3 nodes fit the coordinator: 2 insufficient cpu, 2 insufficient memory, 1 not ready");
  EXPECT_EQ(p.verdicts[0].coordinator_misfit, "insufficient cpu") << "a node's own verdict names its first";
  const ResourceAmounts too_much = huge.coordinator_requests;
  huge = Team(2);
  huge.worker_requests = too_much;
  p = PlaceTeam({Node("gateway"), Node("robot")}, huge);
  EXPECT_EQ(p.unschedulable,
            "0/2 workers fit, beside the coordinator on gateway; nodes that take no more: 2 insufficient cpu, 2 "
            "insufficient memory");
}

// A stream that names no rates takes each worker's from its node: workers go
// only where a stream is, the coordinator anywhere (it trains on nothing).
TEST(ClusterPlacementTest, WorkersOfAStreamFromTheNodesGoOnlyWhereAStreamIs) {
  TeamRequest team = Team(2);
  team.workers_need_stream = true;
  TeamPlacement p = PlaceTeam({Node("gateway"), Node("robot-1").Link(40).Streams(92),
                               Node("robot-2").Link(40).Streams(22), Node("camera").Link(40)},
                              team);
  ASSERT_TRUE(p.placed) << p.unschedulable;
  EXPECT_EQ(p.coordinator_node, "gateway");
  std::vector<std::string> workers = p.worker_nodes;
  std::sort(workers.begin(), workers.end());
  EXPECT_EQ(workers, (std::vector<std::string>{"robot-1", "robot-2"}));
  EXPECT_EQ(VerdictOf(p, "camera").excluded, "no stream of its own for a worker (spec.data.stream names no rates)");

  team.workers = 3;
  p = PlaceTeam({Node("gateway"), Node("robot-1").Link(40).Streams(92).Cpu("1"), Node("camera").Link(40)}, team);
  EXPECT_FALSE(p.placed);
  EXPECT_EQ(p.unschedulable,
            "1/3 workers fit, beside the coordinator on gateway; nodes that take no more: 1 insufficient cpu, 2 no "
            "stream of its own");

  // A profile's node whose stream is a rate trace has one, which no Node
  // publishes: said so, not "no stream of its own".
  team.workers = 2;
  p = PlaceTeam({Node("gateway"), Node("robot-1").Link(40).Streams(92).Cpu("1"),
                 Node("camera").Link(40).StreamOnlyTraced()},
                team);
  EXPECT_FALSE(p.placed);
  EXPECT_NE(p.unschedulable.find("1 a stream only as a rate trace, which a cluster's Node does not publish"),
            std::string::npos)
      << p.unschedulable;
  EXPECT_EQ(VerdictOf(p, "camera").misfit, "a stream only as a rate trace, which a cluster's Node does not publish");
}

TEST(ClusterPlacementTest, WhatIsAlreadyBoundCountsAgainstAllocatable) {
  TeamPlacement p = PlaceTeam({Node("gateway").Busy("3000m"), Node("robot").Link(40)}, Team(2));
  ASSERT_TRUE(p.placed) << p.unschedulable;
  EXPECT_EQ(p.coordinator_node, "gateway");
  EXPECT_EQ(p.worker_nodes, (std::vector<std::string>{"robot", "robot"}))
      << "the gateway keeps 500m after the coordinator: no room for a worker's 1 CPU";
  EXPECT_EQ(VerdictOf(p, "gateway").excluded, "insufficient cpu: 500m free, a worker asks 1");
}

TEST(ClusterPlacementTest, MoreWorkersThanNodesShareTheFastestNodesOnePerNodeFirst) {
  TeamPlacement p = PlaceTeam({Node("gateway"), Node("slow").Score(0.1).Link(40), Node("fast").Score(2).Link(40)},
                              Team(5));
  ASSERT_TRUE(p.placed);
  EXPECT_EQ(p.worker_nodes, (std::vector<std::string>{"gateway", "fast", "slow", "gateway", "fast"}));
}

TEST(ClusterPlacementTest, UnderAnEnergyBudgetWorkersGoWhereASampleCostsTheFewestJoules) {
  // The gateway has room for the coordinator only.
  std::vector<NodeView> site = {Node("gateway").Busy("3400m"), Node("hungry").Score(2).Link(100).Watts(200, 20),
                                Node("frugal").Score(0.5).Link(100).Watts(10, 5)};
  TeamPlacement fast = PlaceTeam(site, Team(1));
  TeamRequest budget = Team(1);
  budget.minimise_energy = true;
  TeamPlacement frugal = PlaceTeam(site, budget);
  ASSERT_TRUE(fast.placed && frugal.placed);
  EXPECT_EQ(fast.worker_nodes, (std::vector<std::string>{"hungry"}));
  EXPECT_EQ(frugal.worker_nodes, (std::vector<std::string>{"frugal"}));
  EXPECT_LT(VerdictOf(frugal, "frugal").joules_per_sample, VerdictOf(frugal, "hungry").joules_per_sample);
}

TEST(ClusterPlacementTest, AJobOfOneTrainsOnTheStableNodeThatComputesBest) {
  TeamRequest solo = Team(0);
  solo.solo = true;
  TeamPlacement p = PlaceTeam({Node("gateway"), Node("fast").Score(3).Link(5), Node("spot").Score(9).Label("edgetrain.dev/transient", "true")},
                              solo);
  ASSERT_TRUE(p.placed);
  EXPECT_EQ(p.coordinator_node, "fast") << "no link is crossed; the spot node is transient";
  EXPECT_TRUE(p.worker_nodes.empty());
  EXPECT_EQ(p.predicted_samples_per_second, PredictStep(solo.step, 3, 0).samples_per_second(32));
}

// A running team lost robot-2's worker: its replacement goes beside the
// coordinator where it is, around the survivors, and never to the lost node.
TEST(ClusterPlacementTest, ALostWorkerIsReplacedAroundTheSurvivorsAndTheCoordinatorWhereTheyAre) {
  std::vector<NodeView> site = EdgeSite();
  for (NodeView& n : site) {
    if (n.name == "robot-2") n.ready = false;
  }
  TeamRequest replace = Team(1);
  replace.coordinator_on = "gateway";
  replace.workers_on = {{"gateway", 1}, {"robot-1", 1}};
  TeamPlacement p = PlaceTeam(site, replace);
  ASSERT_TRUE(p.placed) << p.unschedulable;
  EXPECT_EQ(p.coordinator_node, "gateway");
  EXPECT_EQ(p.worker_nodes, (std::vector<std::string>{"spot-2"}))
      << "the quickest node with none of the team (24 Mbit/s at score 1, before robot-3's 12 at 0.5); "
         "not robot-2, which is gone";

  for (NodeView& n : site) {
    if (n.name == "spot-2") n.link_mbps = 0;  // its link cut
  }
  p = PlaceTeam(site, replace);
  ASSERT_TRUE(p.placed) << p.unschedulable;
  EXPECT_EQ(p.worker_nodes, (std::vector<std::string>{"jetson-1"})) << "a cut link is no link, not the best one";
  EXPECT_EQ(VerdictOf(p, "spot-2").excluded, "link cut (edgetrain.dev/link-mbps is 0)");

  replace.coordinator_on = "moon";
  EXPECT_EQ(PlaceTeam(site, replace).unschedulable, "the coordinator's node moon is not in the cluster");
}

// Survivors on nodes placement would not use now (cordoned) still compute
// there: the prediction counts their steps at those nodes' pace. Counted at
// 0 s, a quorum of 0.75 predicted 92,441 samples/s where 299 were (found in
// review).
TEST(ClusterPlacementTest, SurvivorsOnCordonedNodesCountAtTheirNodesPace) {
  std::vector<NodeView> site = EdgeSite();
  TeamRequest replace = Team(1);
  replace.round_quorum = 0.75;
  replace.coordinator_on = "gateway";
  replace.workers_on = {{"robot-1", 1}, {"robot-3", 1}};
  const TeamPlacement open = PlaceTeam(site, replace);
  ASSERT_TRUE(open.placed) << open.unschedulable;
  for (NodeView& n : site) {
    if (n.name == "robot-1" || n.name == "robot-3") n.cordoned = true;
  }
  const TeamPlacement cordoned = PlaceTeam(site, replace);
  ASSERT_TRUE(cordoned.placed) << cordoned.unschedulable;
  EXPECT_EQ(cordoned.worker_nodes, open.worker_nodes);
  EXPECT_DOUBLE_EQ(cordoned.predicted_samples_per_second, open.predicted_samples_per_second)
      << "the survivors compute as fast on a node cordoned as before";
}

// A team placed anew whose output volume is on one node takes its
// coordinator there, or waits for it, saying why: resumed after its
// gateway was lost, its coordinator went to robot-1, where its pod could
// never mount the volume (a new user's trial).
TEST(ClusterPlacementTest, ACoordinatorPinnedToItsVolumesNodeGoesThereOrWaits) {
  std::vector<NodeView> site = EdgeSite();
  TeamRequest team = Team(2);
  team.coordinator_only_on = TeamRequest::Pin{"robot-1", "its output claim out's volume is there"};
  TeamPlacement p = PlaceTeam(site, team);
  ASSERT_TRUE(p.placed) << p.unschedulable;
  EXPECT_EQ(p.coordinator_node, "robot-1") << "not the gateway, whose link is better";
  for (NodeView& n : site) {
    if (n.name == "robot-1") n.ready = false;
  }
  p = PlaceTeam(site, team);
  EXPECT_FALSE(p.placed);
  EXPECT_EQ(p.unschedulable.rfind("the coordinator goes only to robot-1 (its output claim out's volume is there), "
                                  "which cannot take it: ",
                                  0),
            0u)
      << p.unschedulable;
  team.coordinator_only_on->node = "moon";
  EXPECT_EQ(PlaceTeam(site, team).unschedulable,
            "the coordinator goes only to moon (its output claim out's volume is there), which is not in the cluster");
}

TEST(ClusterPlacementTest, TheOrderNodesAreListedInChangesNothing) {
  std::vector<NodeView> site = EdgeSite();
  TeamPlacement forward = PlaceTeam(site, Team(4));
  std::reverse(site.begin(), site.end());
  TeamPlacement backward = PlaceTeam(site, Team(4));
  EXPECT_EQ(forward.coordinator_node, backward.coordinator_node);
  EXPECT_EQ(forward.worker_nodes, backward.worker_nodes);
}

TEST(StepCostTest, ABigModelOnAFastLinkIsComputeBoundAndASmallOneOnWiFiIsNot) {
  JobSpec fashion;
  fashion.data.dataset = DatasetName::kFashionMnist;
  fashion.data.batch_size = 64;
  fashion.model.hidden = {128, 64};
  StepCost big = StepCostOf(fashion);
  EXPECT_EQ(big.parameters, 109386);
  EXPECT_EQ(big.multiply_adds, 109184);
  // The calibration point: a score-1 device alone turns ~96,900 samples/s of it.
  EXPECT_NEAR(64 / PredictStep(big, 1, 0).compute_seconds, 96900, 5000);

  StepCost small = Team(1).step;
  EXPECT_EQ(small.parameters, 64 * 32 + 32 + 32 * 10 + 10);
  // A step's own cost, not its few flops, sets a small model's pace: 376,000
  // samples/s alone, 41,500 a worker of a team of two on this machine.
  EXPECT_NEAR(32 / PredictStep(small, 1, 0).compute_seconds, 376000, 0.1 * 376000);
  EXPECT_NEAR(PredictStep(small, 1, 0).samples_per_second(32), 41500, 0.1 * 41500);
  PredictedStep on_wifi = PredictStep(small, 0.5, 40);
  EXPECT_GT(on_wifi.communicate_seconds, 10 * on_wifi.compute_seconds);

  fashion.sync.compression = Compression::kInt8;
  EXPECT_DOUBLE_EQ(StepCostOf(fashion).bits_per_exchange * 4, big.bits_per_exchange);

  // A TorchScript module is costed by its measured size alone, its exchange at
  // the job's compression as a built-in model's.
  JobSpec own = fashion;
  own.model.kind = ModelKind::kTorchScript;
  EXPECT_EQ(StepCostOf(own).parameters, 0) << "unknown until an agent loads it";
  StepCost measured = StepCostOf(own, ModelSize{109386, 109184});
  EXPECT_EQ(measured.multiply_adds, 109184);
  EXPECT_EQ(measured.batch_size, 64);
  EXPECT_DOUBLE_EQ(measured.bits_per_exchange, StepCostOf(fashion).bits_per_exchange);

  JobSpec cnn;
  cnn.model.kind = ModelKind::kCnn;
  cnn.data.batch_size = 32;
  StepCost conv = StepCostOf(cnn);  // fashion-mnist, [16, 32]
  EXPECT_EQ(conv.parameters, (1 * 16 * 9 + 16) + (16 * 32 * 9 + 32) + (32 * 7 * 7 * 10 + 10));
  EXPECT_EQ(conv.multiply_adds, 28 * 28 * 16 * 9 + 14 * 14 * 16 * 32 * 9 + 32 * 7 * 7 * 10);

  JobSpec vgg;
  vgg.model.kind = ModelKind::kVgg;
  vgg.model.widths = {4, 8, 16};
  StepCost deep = StepCostOf(vgg);  // 28 -> conv, conv -> 14 -> conv -> 7
  EXPECT_EQ(deep.parameters, (1 * 4 * 9 + 4) + (4 * 8 * 9 + 8) + (8 * 16 * 9 + 16) + (16 * 7 * 7 * 10 + 10));
  EXPECT_EQ(deep.multiply_adds,
            28 * 28 * (1 * 4 * 9 + 4 * 8 * 9) + 14 * 14 * 8 * 16 * 9 + 16 * 7 * 7 * 10);
}

}  // namespace
}  // namespace edgetrain

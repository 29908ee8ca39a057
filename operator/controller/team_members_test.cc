#include "operator/controller/team_members.h"

#include <gtest/gtest.h>

#include "operator/controller/job_labels.h"

namespace edgetrain::operator_ {
namespace {

Json PodOn(const std::string& node, const std::string& phase = "Running") {
  return {{"metadata", {{"name", "p"}}}, {"spec", {{"nodeName", node}}}, {"status", {{"phase", phase}}}};
}

WorkerSlot Slot(int rank, const std::string& node) {
  WorkerSlot slot;
  slot.rank = rank;
  slot.node = node;
  return slot;
}

NodeView Node(const std::string& name, bool ready = true, const std::string& leaving = "") {
  NodeView view;
  view.name = name;
  view.ready = ready;
  view.leaving = leaving;
  return view;
}

TEST(TeamMembersTest, APodIsLostWhenItFailedIsBeingDeletedOrWentAfterAnEarlierPlan) {
  EXPECT_EQ(LossOf(nullptr, /*slot_since=*/2, /*generation=*/2), "") << "made by this plan: not yet in the cache";
  EXPECT_EQ(LossOf(nullptr, 1, 2), "its pod is gone");
  Json running = PodOn("robot-1");
  EXPECT_EQ(LossOf(&running, 1, 1), "");
  Json evicted = PodOn("robot-1", "Failed");
  evicted["status"]["reason"] = "Evicted";
  EXPECT_EQ(LossOf(&evicted, 1, 1), "its pod on robot-1 failed (Evicted)");
  Json going = PodOn("robot-2");
  going["metadata"]["deletionTimestamp"] = "2026-12-02T04:00:00Z";
  EXPECT_EQ(LossOf(&going, 1, 1), "its pod on robot-2 is being deleted");
}

// `kubectl drain` cordons and evicts at once: the eviction of a pod on a
// node that said it is leaving is a move, not a loss counted against
// maxRecoveries; a pod that failed there is a loss all the same.
TEST(TeamMembersTest, ALossOnANodeThatSaidItIsLeavingIsItsOwnDoingUnlessThePodFailed) {
  const NodeView leaving = Node("spot-1", true, "spot reclaim at 04:10");
  const NodeView staying = Node("spot-2");
  const NodeView silent = Node("spot-3", false, "spot reclaim at 04:10");
  Json deleted = PodOn("spot-1");
  deleted["metadata"]["deletionTimestamp"] = "2026-12-02T04:00:00Z";
  const Json failed = PodOn("spot-1", "Failed");
  EXPECT_TRUE(LeavingsOwnDoing(&deleted, &leaving));
  EXPECT_TRUE(LeavingsOwnDoing(nullptr, &leaving)) << "a pod gone";
  EXPECT_FALSE(LeavingsOwnDoing(&failed, &leaving));
  EXPECT_FALSE(LeavingsOwnDoing(&deleted, &staying));
  EXPECT_FALSE(LeavingsOwnDoing(&deleted, &silent)) << "a node gone silent lost it";
  EXPECT_FALSE(LeavingsOwnDoing(&deleted, nullptr));
}

TEST(TeamMembersTest, APipelineCannotRestartWhenAStageHasNoDeviceLeft) {
  PipelineLayout layout;
  layout.stages = {{0, 3, {0, 1}}, {3, 8, {2}}};
  EXPECT_EQ(StageLeftWithoutDevices(layout, {1}), "") << "stage 1 keeps device 0";
  EXPECT_EQ(StageLeftWithoutDevices(layout, {2}),
            "stage 2 of the plan has no device left (rank 2 lost for good, its pod gone), and a pipeline's lost "
            "devices are not replaced; delete the job and apply it again to start over");
  EXPECT_NE(StageLeftWithoutDevices(layout, {0, 1}).find("stage 1 of the plan has no device left (ranks 0, 1 lost"),
            std::string::npos);
}

TEST(TeamMembersTest, APipelinesLostDevicesHaveNoPodsAndTheCoordinatorComesFirst) {
  JobObject job;
  job.name = "vgg";
  JobPlan plan;
  plan.generation = 3;
  for (int rank = 0; rank < 3; ++rank) plan.workers.push_back(Slot(rank, "n" + std::to_string(rank)));
  plan.workers[2].since_generation = 2;
  CoordinatorSeat seat;
  seat.since_generation = 1;
  EXPECT_EQ(PodNamesOf(job, plan, seat, {}).size(), 4u) << "a team's every rank has a pod";
  plan.pipeline = PipelineLayout{{{0, 4, {0}}, {4, 8, {2}}}};  // rank 1 left out by the plan
  const std::vector<std::string> names = PodNamesOf(job, plan, seat, /*lost=*/{2});
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0], CoordinatorPodName("vgg", 1));
  EXPECT_EQ(names[1], WorkerPodName("vgg", 0, SlotSince(plan, 0)));
  EXPECT_FALSE(HasPod(plan, 1, {}));
  EXPECT_TRUE(HasPod(plan, 2, {}));
}

TEST(TeamMembersTest, TheNextGenerationMovesOnlyTheReplacedAndSaysWhere) {
  JobPlan plan;
  plan.generation = 1;
  for (int rank = 0; rank < 3; ++rank) plan.workers.push_back(Slot(rank, "robot-" + std::to_string(rank)));
  std::string said;
  const JobPlan next = NextGeneration(plan, {1}, {"spot-1"}, {Node("spot-1")}, said);
  EXPECT_EQ(next.generation, 2);
  EXPECT_EQ(next.workers[1].node, "spot-1");
  EXPECT_EQ(next.workers[1].since_generation, 2);
  EXPECT_EQ(next.workers[0].node, "robot-0");
  EXPECT_EQ(next.workers[0].since_generation, SlotSince(plan, 0)) << "a survivor keeps its slot and stream";
  EXPECT_EQ(said, "worker 1 to spot-1");
}

// Recovery is timed from when the team stopped being whole by the
// cluster's word, the earliest of what it says.
TEST(TeamMembersTest, ALossIsDatedByTheEarliestEvidence) {
  Json pod = PodOn("robot-1");
  pod["metadata"]["deletionTimestamp"] = "2026-12-02T04:00:30Z";
  pod["metadata"]["deletionGracePeriodSeconds"] = 30;
  NodeView silent = Node("robot-1", false);
  silent.not_ready_since = "2026-12-02T03:59:45Z";
  const Json status = Json::object();
  const auto at = LossEvidence(status, {"p"}, {&pod}, {silent}, /*coordinator_lost=*/false);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(*at, *kube::ParseKubeTime("2026-12-02T03:59:45Z"));
  EXPECT_FALSE(LossEvidence(status, {}, {}, {}, false).has_value()) << "nothing earlier than now";
}

TEST(TeamMembersTest, RanksAreReadFromTheStatusAsWritten) {
  const Json status = {{"pipeline", {{"lostRanks", {2, 0, "x"}}, {"awaitingNodes", "none"}}}};
  EXPECT_EQ(LostRanksOf(status), (std::set<int>{0, 2}));
  EXPECT_TRUE(RanksAt(status, "/pipeline/awaitingNodes").empty());
  EXPECT_TRUE(LostRanksOf(Json::object()).empty());
}

}  // namespace
}  // namespace edgetrain::operator_

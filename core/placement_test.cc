#include "core/placement.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

NodeProfile Node(std::string name, double slowdown, bool linked) {
  NodeProfile n;
  n.name = std::move(name);
  n.slowdown = slowdown;
  n.power = {10, 4, 2};
  if (linked) n.link = LinkSpec{"/traces/" + n.name + ".csv", 2, 0.5};
  return n;
}

TEST(PlacementTest, RanksTakeTheProfilesNodesInOrder) {
  const ClusterProfile robots{"robots", {Node("fast", 1, true), Node("slow", 10, false), Node("spare", 2, true)}};
  struct Case {
    int workers;
    std::optional<ClusterProfile> profile;
    std::vector<std::string> nodes;  // by rank
  } cases[] = {
      {1, std::nullopt, {"local-0"}},
      {3, std::nullopt, {"local-0", "local-1", "local-2"}},
      {1, robots, {"fast"}},
      {2, robots, {"fast", "slow"}},
      {3, robots, {"fast", "slow", "spare"}},
  };
  for (const auto& c : cases) {
    auto slots = SlotsInProfileOrder(c.workers, c.profile);
    ASSERT_TRUE(slots.ok()) << c.workers;
    ASSERT_EQ(slots->size(), c.nodes.size());
    for (size_t r = 0; r < c.nodes.size(); ++r) {
      EXPECT_EQ((*slots)[r].rank, static_cast<int>(r));
      EXPECT_EQ((*slots)[r].node, c.nodes[r]);
    }
  }
}

TEST(PlacementTest, ASlotCarriesItsNodesDevice) {
  const ClusterProfile robots{"robots", {Node("fast", 1, true), Node("slow", 10, false)}};
  auto slots = SlotsInProfileOrder(2, robots);
  ASSERT_TRUE(slots.ok());
  const WorkerSlot& fast = (*slots)[0];
  ASSERT_TRUE(fast.link.has_value());
  EXPECT_EQ(fast.link->trace_path, "/traces/fast.csv");
  EXPECT_EQ(fast.link->offset_s, 2);
  EXPECT_EQ(fast.link->scale, 0.5);
  EXPECT_EQ(fast.power.compute_watts, 10);
  const WorkerSlot& slow = (*slots)[1];
  EXPECT_EQ(slow.slowdown, 10);
  EXPECT_FALSE(slow.link.has_value()) << "a node without a link gets an unshaped one";

  auto local = SlotsInProfileOrder(1, std::nullopt);
  ASSERT_TRUE(local.ok());
  EXPECT_EQ((*local)[0].slowdown, 1);
  EXPECT_FALSE((*local)[0].link.has_value());
}

TEST(PlacementTest, TooFewNodesForTheTeamIsInvalid) {
  const ClusterProfile tiny{"tiny", {Node("only", 1, false)}};
  auto slots = SlotsInProfileOrder(3, tiny);
  ASSERT_FALSE(slots.ok());
  EXPECT_EQ(slots.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(slots.status().message(),
            "the cluster profile tiny has 1 node(s) for 3 workers: on this machine each worker emulates a node of its "
            "own, so give the profile a node a worker or lower spec.parallelism.workers (on Kubernetes, several "
            "share a node: edgetrain plan shows where)");
}

}  // namespace
}  // namespace edgetrain

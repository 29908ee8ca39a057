#include "operator/controller/cluster_view.h"

#include <gtest/gtest.h>

#include "operator/controller/testing/cluster_fixtures.h"

namespace edgetrain::operator_ {
namespace {

using testing::ANode;
using testing::APod;

TEST(ClusterViewTest, ANodeReadsAsPlacementSeesIt) {
  StatusOr<NodeView> view = NodeViewOfNode(ANode("robot-1")
                                               .Scoring(0.5)
                                               .WithLink(30.5)
                                               .EmulatedSlowerBy(2)
                                               .Streaming(92)
                                               .Annotate("edgetrain.dev/compute-watts", 9)
                                               .Tainted("cloud.google.com/gke-spot", "true", "NoSchedule")
                                               .WithAllocatable("1500m", "2Gi", "8"));
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->name, "robot-1");
  EXPECT_TRUE(view->ready);
  EXPECT_FALSE(view->cordoned);
  EXPECT_DOUBLE_EQ(view->compute_score, 0.5);
  ASSERT_TRUE(view->link_mbps.has_value());
  EXPECT_DOUBLE_EQ(*view->link_mbps, 30.5);
  EXPECT_DOUBLE_EQ(view->emulated_slowdown, 2);
  ASSERT_TRUE(view->emulated_stream.has_value());
  EXPECT_DOUBLE_EQ(view->emulated_stream->per_second, 92);
  EXPECT_DOUBLE_EQ(view->power.compute_watts, 9);
  EXPECT_EQ(view->allocatable.cpu_millis, 1500);
  EXPECT_EQ(view->allocatable.memory_bytes, int64_t{2} << 30);
  EXPECT_EQ(view->allocatable.pods, 8);
  ASSERT_EQ(view->taints.size(), 1u);
  EXPECT_EQ(view->taints[0].effect, "NoSchedule");
  EXPECT_EQ(view->labels.at("kubernetes.io/arch"), "amd64");
}

TEST(ClusterViewTest, ANodeWithoutItsSitesAnnotationsIsAWiredReferenceMachine) {
  StatusOr<NodeView> view = NodeViewOfNode(ANode("plain"));
  ASSERT_TRUE(view.ok());
  EXPECT_DOUBLE_EQ(view->compute_score, 1);
  EXPECT_FALSE(view->link_mbps.has_value());
  EXPECT_DOUBLE_EQ(view->emulated_slowdown, 1);
  EXPECT_FALSE(view->emulated_stream.has_value());
  EXPECT_FALSE(NodeViewOfNode(ANode("dry").Streaming(0)).ok()) << "a stream of nothing is no stream";
}

TEST(ClusterViewTest, ReadinessAndCordonAreTheKubeletsAndKubectlsWord) {
  EXPECT_FALSE(NodeViewOfNode(ANode("silent").NotReady())->ready);
  EXPECT_TRUE(NodeViewOfNode(ANode("cordoned").Cordoned())->cordoned);
  // Ready again with the node lifecycle controller's NoExecute taints still
  // on: a pod made there would be evicted at once. Not back until they go;
  // its NoSchedule one alone evicts nothing.
  for (const char* key : {"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"}) {
    EXPECT_FALSE(NodeViewOfNode(ANode("back").Tainted(key, "", "NoExecute"))->ready) << key;
    EXPECT_TRUE(NodeViewOfNode(ANode("back").Tainted(key, "", "NoSchedule"))->ready) << key;
  }
  EXPECT_TRUE(NodeViewOfNode(ANode("spot").Tainted("cloud.google.com/gke-spot", "true", "NoExecute"))->ready)
      << "a taint of the site's is placement's to weigh";
}

TEST(ClusterViewTest, AFreshMeasuredLinkIsPreferredToTheDeclaredOneAndAStaleOneForgotten) {
  const kube::WallTime now = std::chrono::system_clock::from_time_t(1795374113);  // 2026-11-22T19:01:53Z
  Json node = ANode("robot-1").WithLink(30);
  node["metadata"]["annotations"][kMeasuredUplink] = "12000000";
  node["metadata"]["annotations"][kMeasuredDownlink] = "25000000";
  node["metadata"]["annotations"][kMeasuredAt] = "2026-11-22T18:59:00Z";
  EXPECT_DOUBLE_EQ(*NodeViewOfNode(node, {now, std::chrono::minutes(10)})->link_mbps, 12)
      << "measured 3 minutes ago: the slower direction bounds an exchange";
  EXPECT_DOUBLE_EQ(*NodeViewOfNode(node, {now, std::chrono::minutes(2)})->link_mbps, 30)
      << "older than max_age: forgotten, the declaration stands";
  EXPECT_DOUBLE_EQ(*NodeViewOfNode(node)->link_mbps, 30) << "no clock: only what is declared";
}

TEST(ClusterViewTest, ANodeAboutToLeaveSaysWhy) {
  struct Case {
    Json node;
    const char* leaving;
  } cases[] = {
      {ANode("steady"), ""},
      {ANode("gke").Tainted("cloud.google.com/impending-node-termination", "", "NoSchedule"),
       "taint cloud.google.com/impending-node-termination"},
      {ANode("eks").Tainted("aws-node-termination-handler/spot-itn", "", "NoExecute"),
       "taint aws-node-termination-handler/spot-itn"},
      {ANode("gone").Tainted("node.kubernetes.io/out-of-service", "nodeshutdown", "NoExecute"),
       "taint node.kubernetes.io/out-of-service"},
      {ANode("drained").Cordoned(), "cordoned"},
      {[] {
         Json n = ANode("robot");
         n["metadata"]["annotations"]["edgetrain.dev/leaving"] = "battery";
         return n;
       }(),
       "annotation edgetrain.dev/leaving=battery"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(NodeViewOfNode(c.node)->leaving, c.leaving) << c.node["metadata"]["name"];
  }
}

TEST(ClusterViewTest, AnAnnotationThatIsNoNumberLeavesTheNodeOutSayingWhy) {
  Json node = ANode("odd");
  node["metadata"]["annotations"]["edgetrain.dev/link-mbps"] = "fast";
  ClusterView view = ClusterViewOf({node, ANode("fine")}, {}, "default", "team");
  ASSERT_EQ(view.nodes.size(), 1u);
  EXPECT_EQ(view.nodes[0].name, "fine");
  ASSERT_EQ(view.unreadable.size(), 1u);
  EXPECT_NE(view.unreadable[0].find("odd: annotation edgetrain.dev/link-mbps is not a number"), std::string::npos)
      << view.unreadable[0];
}

// strtod reads "nan", "inf" and "-3" as numbers; none is a measure.
TEST(ClusterViewTest, AnAnnotationThatIsNotAFiniteMeasureLeavesTheNodeOut) {
  for (const std::string text : {"nan", "inf", "-3", "1e999"}) {
    Json node = ANode("odd");
    node["metadata"]["annotations"]["edgetrain.dev/emulated-slowdown"] = text;
    ClusterView view = ClusterViewOf({node, ANode("fine")}, {}, "default", "team");
    ASSERT_EQ(view.nodes.size(), 1u) << text;
    ASSERT_EQ(view.unreadable.size(), 1u) << text;
    EXPECT_NE(view.unreadable[0].find("odd: annotation edgetrain.dev/emulated-slowdown must be a finite number, 0 or "
                                      "more (got \"" + text + "\")"),
              std::string::npos)
        << view.unreadable[0];
  }
}

TEST(ClusterViewTest, WhatOtherPodsHoldCountsAndTheJobsOwnAndFinishedPodsDoNot) {
  ClusterView view = ClusterViewOf(
      {ANode("gateway")},
      {APod("other").On("gateway").Requesting("500m", "1Gi").Running(),
       APod("another").On("gateway").Requesting("250m", "256Mi").Running(),
       APod("done").On("gateway").Requesting("2", "4Gi").Ended(0),
       APod("unbound").Requesting("2", "4Gi"),
       APod("team-coordinator").OfJob("team").On("gateway").Requesting("1", "1Gi").Running()},
      "default", "team");
  ASSERT_EQ(view.nodes.size(), 1u);
  EXPECT_EQ(view.nodes[0].bound.cpu_millis, 750);
  EXPECT_EQ(view.nodes[0].bound.memory_bytes, (int64_t{1} << 30) + (int64_t{256} << 20));
  EXPECT_EQ(view.nodes[0].bound.pods, 2);
  EXPECT_EQ(view.own_pods, 1) << "counted, for edgetrain plan to say it left them out";
}

// A GPU, or any resource beside CPU, memory and pods, is read from the Node's
// allocatable and from what its pods ask, for placement to count.
TEST(ClusterViewTest, OtherResourcesAreReadFromTheNodeAndItsPods) {
  Json node = ANode("gateway");
  node["status"]["allocatable"]["nvidia.com/gpu"] = "2";
  Json pod = APod("other").On("gateway").Requesting("500m", "1Gi").Running();
  pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = 1;
  ClusterView view = ClusterViewOf({node}, {pod}, "default", "team");
  ASSERT_EQ(view.nodes.size(), 1u);
  EXPECT_EQ(view.nodes[0].allocatable.Other("nvidia.com/gpu"), 2000);
  EXPECT_EQ(view.nodes[0].bound.Other("nvidia.com/gpu"), 1000);
  EXPECT_EQ(view.nodes[0].bound.Other("example.com/fpga"), 0);
}

}  // namespace
}  // namespace edgetrain::operator_

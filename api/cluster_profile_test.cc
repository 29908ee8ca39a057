#include "api/cluster_profile.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/node_view.h"

namespace edgetrain::api {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ClusterProfileTest, ReadsTheShippedProfiles) {
  const fs::path dir = fs::path(EDGETRAIN_SOURCE_DIR) / "examples/nodes";
  auto robots = ParseClusterProfile(ReadFile(dir / "robot-team.yaml"), (dir / "robot-team.yaml").string());
  ASSERT_TRUE(robots.ok()) << robots.status().ToString();
  EXPECT_EQ(robots->name, "robot-team");
  ASSERT_EQ(robots->nodes.size(), 5u);
  const NodeProfile& r2 = robots->nodes[1];
  EXPECT_EQ(r2.name, "robot-2");
  EXPECT_EQ(r2.slowdown, 1);
  EXPECT_EQ(r2.power.compute_watts, 15) << "the documented default power profile";
  ASSERT_TRUE(r2.link.has_value());
  EXPECT_EQ(r2.link->offset_s, 20);
  EXPECT_EQ(r2.link->scale, 1);
  EXPECT_TRUE(fs::exists(r2.link->trace_path)) << r2.link->trace_path;
  EXPECT_TRUE(fs::path(r2.link->trace_path).is_absolute());

  auto mixed = ParseClusterProfile(ReadFile(dir / "heterogeneous-1-10.yaml"), (dir / "heterogeneous-1-10.yaml").string());
  ASSERT_TRUE(mixed.ok()) << mixed.status().ToString();
  EXPECT_EQ(mixed->nodes.front().slowdown, 1);
  EXPECT_EQ(mixed->nodes.back().slowdown, 10);
  EXPECT_EQ(mixed->nodes.back().power.idle_watts, 1);

  // The K3s edge site the node emulator registers (its Kubernetes fields are
  // read by tests/kube; here they only have to be valid).
  auto site = ParseClusterProfile(ReadFile(dir / "edge-site.yaml"), (dir / "edge-site.yaml").string());
  ASSERT_TRUE(site.ok()) << site.status().ToString();
  ASSERT_EQ(site->nodes.size(), 7u);
  EXPECT_EQ(site->nodes.front().name, "gateway");
  EXPECT_FALSE(site->nodes.front().link.has_value()) << "the gateway is wired";
  EXPECT_EQ(std::count_if(site->nodes.begin(), site->nodes.end(), [](const NodeProfile& n) { return n.transient; }), 2);
  EXPECT_EQ(std::count_if(site->nodes.begin(), site->nodes.end(), [](const NodeProfile& n) { return n.arch == "arm64"; }), 1);
  const NodeProfile& spot = site->nodes[5];
  EXPECT_EQ(spot.cpu, "8");
  EXPECT_EQ(spot.pods, 110);
  EXPECT_EQ(spot.labels.at("cloud.google.com/gke-spot"), "true");
  ASSERT_EQ(spot.taints.size(), 1u);
  EXPECT_EQ(spot.taints[0].effect, "NoSchedule");
  // hsdpa-bus-1.csv scaled by 4: its mean is what the site publishes.
  EXPECT_GT(spot.link->mean_mbps, 4 * 0.5);
  EXPECT_LT(spot.link->mean_mbps, 4 * 10.0);

  // As Nodes, for placement: what docs/cluster-profiles.md tabulates.
  auto robot = NodeViewOf(site->nodes[1]);
  ASSERT_TRUE(robot.ok()) << robot.status().ToString();
  EXPECT_EQ(robot->allocatable.cpu_millis, 4000);
  EXPECT_EQ(robot->allocatable.memory_bytes, int64_t{8} << 30);
  EXPECT_EQ(robot->compute_score, 0.5);
  EXPECT_EQ(robot->emulated_slowdown, 2);
  EXPECT_EQ(robot->labels.at("edgetrain.dev/transient"), "false");
  EXPECT_EQ(robot->link_mbps, site->nodes[1].link->mean_mbps);
  EXPECT_FALSE(NodeViewOf(site->nodes[0])->link_mbps.has_value()) << "wired";
}

TEST(ClusterProfileTest, ANodesStreamIsARateOrARateTraceFromTheProfilesFolder) {
  const fs::path dir = fs::path(EDGETRAIN_SOURCE_DIR) / "examples/nodes";
  auto profile = ParseClusterProfile(
      "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {name: p}\nspec:\n  nodes:\n"
      "  - {name: a, stream: {ratePerSecond: 92}}\n"
      "  - {name: b, stream: {rateTrace: ../stream-rates/shift.csv}}\n"
      "  - {name: c}\n",
      (dir / "test.yaml").string());
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  ASSERT_TRUE(profile->nodes[0].stream.has_value());
  EXPECT_EQ(profile->nodes[0].stream->per_second, 92);
  EXPECT_TRUE(profile->nodes[0].stream->trace_path.empty());
  ASSERT_TRUE(profile->nodes[1].stream.has_value());
  EXPECT_EQ(profile->nodes[1].stream->trace_path,
            fs::weakly_canonical(fs::path(EDGETRAIN_SOURCE_DIR) / "examples/stream-rates/shift.csv").string());
  EXPECT_FALSE(profile->nodes[2].stream.has_value());
}

TEST(ClusterProfileTest, ANodesSlowdownMayChangeAtTimesInTheRun) {
  auto profile = ParseClusterProfile(
      "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {name: p}\nspec:\n  nodes:\n"
      "  - {name: a, compute: {slowdown: 4, changes: [{at: 90s, slowdown: 12}, {at: 3m, slowdown: 6}]}}\n"
      "  - {name: b}\n",
      "test.yaml");
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  ASSERT_EQ(profile->nodes[0].slowdown_changes.size(), 2u);
  EXPECT_EQ(profile->nodes[0].slowdown_changes[0].at_s, 90);
  EXPECT_EQ(profile->nodes[0].slowdown_changes[0].slowdown, 12);
  EXPECT_EQ(profile->nodes[0].slowdown_changes[1].at_s, 180);
  EXPECT_TRUE(profile->nodes[1].slowdown_changes.empty());
}

// A link out from the run's start, as its trace and offset have it: how long
// it carries nothing, for the runner to say (a team whose worker's link was
// out for the whole budget trained nothing, unsaid: a user's trial).
TEST(ClusterProfileTest, ALinkOutFromTheStartSaysForHowLong) {
  const fs::path dir = fs::path(testing::TempDir()) / "silent-link";
  fs::create_directories(dir);
  std::ofstream(dir / "out.csv") << "seconds,mbps\n0,0\n30,0\n1000,1\n1010,0\n";
  auto profile = ParseClusterProfile(
      "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {name: p}\nspec:\n  nodes:\n"
      "  - {name: a, link: {trace: out.csv}}\n"
      "  - {name: b, link: {trace: out.csv, offset: 1000s}}\n"
      "  - {name: c, link: {trace: out.csv, offset: 1005s}}\n",
      (dir / "p.yaml").string());
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  EXPECT_EQ(profile->nodes[0].link->silent_until_s, 1000);
  EXPECT_EQ(profile->nodes[1].link->silent_until_s, 0) << "it carries from the start";
  EXPECT_EQ(profile->nodes[2].link->silent_until_s, 0);
}

// Every node's error at once, each with its line, as a manifest's are.
TEST(ClusterProfileTest, EveryBadNodeIsSaidAtOnceWithItsLine) {
  const std::string profile_text =
      "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {name: p}\nspec:\n  nodes:\n"
      "  - {name: a, link: {trace: no-such-1.csv}}\n"
      "  - {name: b}\n"
      "  - name: c\n"
      "    link: {trace: no-such-2.csv}\n";
  auto profile = ParseClusterProfile(profile_text, (fs::path(::testing::TempDir()) / "p.yaml").string());
  ASSERT_FALSE(profile.ok());
  const std::string m = profile.status().message();
  EXPECT_NE(m.find("p.yaml:6: spec.nodes[0].link.trace: cannot read "), std::string::npos) << m;
  EXPECT_NE(m.find("\n"), std::string::npos) << m;
  EXPECT_NE(m.find("p.yaml:8: spec.nodes[2].link.trace: cannot read "), std::string::npos) << m;
  // A name the file system refuses (too long) is said, not thrown: it had
  // ended the command (found in review).
  auto too_long = ParseClusterProfile(
      "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {name: p}\nspec:\n  nodes:\n"
      "  - {name: a, link: {trace: " + std::string(300, 'a') + "/t.csv}}\n",
      (fs::path(::testing::TempDir()) / "t.yaml").string());
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("t.yaml:6: spec.nodes[0].link.trace: "), std::string::npos)
      << too_long.status().message();
  // The schema's errors say their lines too.
  auto schema = ParseClusterProfile(
      "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {name: p}\nspec:\n  nodes:\n"
      "  - name: a\n    gpus: 4\n",
      "q.yaml");
  ASSERT_FALSE(schema.ok());
  EXPECT_NE(schema.status().message().find("q.yaml:7: spec.nodes[0].gpus: unknown field"), std::string::npos)
      << schema.status().message();

  // Beside the schema's faults, the faults of the nodes it did not fault, and
  // every fault of a node, not its first (a cpu of 0 and a missing trace file
  // were said one at a time, after the schema's: a user's trial).
  auto both = ParseClusterProfile(
      "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {name: p}\nspec:\n  nodes:\n"
      "  - {name: Bad_Name}\n"
      "  - {name: b, cpu: 0, link: {trace: no-such-3.csv}}\n",
      (fs::path(::testing::TempDir()) / "r.yaml").string());
  ASSERT_FALSE(both.ok());
  const std::string all = both.status().message();
  EXPECT_NE(all.find("r.yaml:6: spec.nodes[0].name: must be lower-case"), std::string::npos) << all;
  EXPECT_NE(all.find("r.yaml:7: spec.nodes[1].cpu: \"0\" is no CPU"), std::string::npos) << all;
  EXPECT_NE(all.find("r.yaml:7: spec.nodes[1].link.trace: cannot read "), std::string::npos) << all;

  // And of a node the schema faulted, the fields it did not: its cpu, its
  // memory and its slowdown's changes (a new user's "cpu: 4 cores" came only
  // once the same node's offset was mended).
  auto beside = ParseClusterProfile(
      "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {name: p}\nspec:\n  nodes:\n"
      "  - {name: a, cpu: 4 cores, memory: \"0\", link: {trace: no-such-4.csv, offset: 20},\n"
      "     compute: {slowdown: 2, changes: [{at: 5s, slowdown: 3}, {at: 4s, slowdown: 4}]}}\n",
      (fs::path(::testing::TempDir()) / "s.yaml").string());
  ASSERT_FALSE(beside.ok());
  const std::string said = beside.status().message();
  EXPECT_NE(said.find("spec.nodes[0].link.offset: must be a string"), std::string::npos) << said;
  EXPECT_NE(said.find("s.yaml:6: spec.nodes[0].cpu: quantity \"4 cores\""), std::string::npos) << said;
  EXPECT_NE(said.find("s.yaml:6: spec.nodes[0].memory: \"0\" is no memory"), std::string::npos) << said;
  EXPECT_NE(said.find("s.yaml:6: spec.nodes[0].compute.changes[1].at: 4s is not after the change before it"),
            std::string::npos)
      << said;
  EXPECT_EQ(said.find("no-such-4.csv"), std::string::npos) << "a faulted node's files wait: " << said;
}

TEST(ClusterProfileTest, RefusesBadProfilesNamingTheField) {
  const fs::path dir = fs::path(EDGETRAIN_SOURCE_DIR) / "examples/nodes";
  const fs::path dead = fs::path(::testing::TempDir()) / "dead-link.csv";
  std::ofstream(dead) << "seconds,mbps\n0,0\n5,0\n";
  const fs::path faint = fs::path(::testing::TempDir()) / "faint-link.csv";
  std::ofstream(faint) << "seconds,mbps\n0,1e-9\n";
  const std::string head = "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {name: p}\nspec:\n  nodes:\n";
  struct Case {
    std::string nodes;
    std::string error;
  } cases[] = {
      {"  - {name: a, compute: {slowdown: 0.5}}\n", "spec.nodes[0].compute.slowdown: must be >= 1 (got 0.5)"},
      {"  - {name: a, gpus: 4}\n", "spec.nodes[0].gpus: unknown field"},
      {"  - {name: a, compute: {changes: [{at: 10s, slowdown: 0.5}]}}\n",
       "spec.nodes[0].compute.changes[0].slowdown: must be >= 1"},
      {"  - {name: a, compute: {changes: [{slowdown: 2}]}}\n", "spec.nodes[0].compute.changes[0].at: required field is missing"},
      {"  - {name: a, compute: {changes: [{at: later, slowdown: 2}]}}\n", "spec.nodes[0].compute.changes[0].at"},
      // A bare number lacks only its unit (a new user's trial wrote `at: 15`).
      {"  - {name: a, compute: {changes: [{at: 15, slowdown: 2}]}}\n",
       "spec.nodes[0].compute.changes[0].at: must be a string (got integer 15); a duration takes its unit: write "
       "\"15s\" for 15 seconds"},
      {"  - {name: a, compute: {changes: [{at: 2m, slowdown: 2}, {at: 60s, slowdown: 3}]}}\n",
       "spec.nodes[0].compute.changes[1].at: 60s is not after the change before it"},
      {"  - {name: a, compute: {changes: [{at: 0s, slowdown: 20}]}}\n",
       "spec.nodes[0].compute.changes[0].at: a change at 0s is the node's slowdown from the start: give it as "
       "compute.slowdown"},
      {"  - {name: a, compute: {slowdown: 3, changes: [{at: 10s, slowdown: 3}]}}\n",
       "spec.nodes[0].compute.changes[0].slowdown: 3 is the slowdown the node already has then"},
      {"  - {name: a, compute: {slowdown: 3, changes: [{at: 10s, slowdown: 6}, {at: 20s, slowdown: 6}]}}\n",
       "spec.nodes[0].compute.changes[1].slowdown: 6 is the slowdown the node already has then"},
      {"  - {name: a, taints: [{key: k, effect: Sometimes}]}\n", "spec.nodes[0].taints[0].effect: must be one of"},
      {"  - {name: a}\n  - {name: a}\n", "spec.nodes[1]: duplicate entry with name=\"a\""},
      // In words, not the schema's regexes (a user's trial).
      {"  - {name: A_1}\n",
       "spec.nodes[0].name: must be lower-case letters, digits and '-', starting and ending with a letter or digit "
       "(got \"A_1\")"},
      {"  - {name: a, memory: 4GB}\n", "spec.nodes[0].memory: must be an amount of memory such as 512Mi, 4Gi or 4G"},
      {"  - {name: a, link: {trace: no-such.csv}}\n", "spec.nodes[0].link.trace: cannot read "},
      {"  - {name: a, link: {trace: no-such.csv}}\n", "no-such.csv (No such file or directory)"},
      {"  - {name: a, link: {trace: robot-team.yaml}}\n", "expected the header \"seconds,mbps\""},
      {"  - {name: a, link: {trace: ../traces/wifi-indoor-1.csv, offset: -5s}}\n",
       "spec.nodes[0].link.offset: must be a duration such as 500ms, 30s, 5m or 1h30m, or 0 (got \"-5s\")"},
      {"  - {name: a, link: {trace: ../traces/wifi-indoor-1.csv, scale: 0}}\n", "spec.nodes[0].link.scale: must be > 0"},
      {"  []\n", "spec.nodes: must have at least 1 item(s)"},
      {"  - {name: a, stream: {ratePerSecond: 5, rateTrace: ../stream-rates/shift.csv}}\n",
       "spec.nodes[0].stream: give either ratePerSecond or rateTrace"},
      {"  - {name: a, stream: {}}\n", "spec.nodes[0].stream: give either ratePerSecond or rateTrace"},
      {"  - {name: a, stream: {rateTrace: ../traces/wifi-indoor-1.csv}}\n",
       "spec.nodes[0].stream.rateTrace: " },
      {"  - {name: a, stream: {ratePerSecond: 0}}\n", "spec.nodes[0].stream.ratePerSecond: must be > 0"},
      // Refused by validate and run too, as plan refused them (a new user's trial).
      {"  - {name: a, cpu: two}\n", "spec.nodes[0].cpu: quantity \"two\": no number; a Kubernetes quantity of CPU"},
      {"  - {name: a, cpu: \"0\"}\n", "spec.nodes[0].cpu: \"0\" is no CPU"},
      // Idle above computing: a power given in part, the rest a 15 W
      // device's (a new user's computeWatts 3 was charged 5 W idle, unsaid).
      {"  - {name: a, power: {computeWatts: 3}}\n",
       "spec.nodes[0].power: idleWatts 5 is above computeWatts 3: a device draws at least its idle power in every "
       "state; give all three, in watts (one left out takes a 15 W device's: compute 15, communicate 7, idle 5)"},
      {"  - {name: a, power: {computeWatts: 20, communicateWatts: 4, idleWatts: 5}}\n",
       "spec.nodes[0].power: idleWatts 5 is above communicateWatts 4"},
      {"  - {name: a, memory: \"0\"}\n", "spec.nodes[0].memory: \"0\" is no memory"},
      {"  - {name: a, link: {trace: " + dead.string() + "}}\n",
       "spec.nodes[0].link.trace: " + dead.string() + " is 0 Mbit/s throughout"},
      {"  - {name: a, link: {trace: " + faint.string() + "}}\n",
       "spec.nodes[0].link.trace: " + faint.string() + " peaks at 1e-09 Mbit/s: no link is that slow but in "
       "an outage, which is a row of 0; its rates are in Mbit/s (10 kbit/s is 0.01)"},
      {"  - {name: a, link: {trace: ../traces/wifi-indoor-1.csv, scale: 1e-6}}\n",
       " Mbit/s times link.scale 1e-06, 6.49e-05 Mbit/s: no link is that slow but in an outage, which is a row of "
       "0; its rates are in Mbit/s (10 kbit/s is 0.01), and link.scale multiplies them"},
      // As a trace's row above 1e6 is: 1e300 printed a link of 301 digits in
      // plans and failed --links netns' tc (a user's trial).
      {"  - {name: a, link: {trace: ../traces/wifi-indoor-1.csv, scale: 1e300}}\n",
       " Mbit/s times link.scale 1e+300, 6.49e+301 Mbit/s, above the 1000000 Mbit/s a link may be"},
      {"  - {name: a, link: {mbps: 2}}\n",
       "; a link's rate comes from a trace file (link.trace), a steady one from a file of two lines, \"seconds,mbps\" "
       "and \"0,2\" for 2 Mbit/s (docs/cluster-profiles.md)"},
  };
  for (const auto& c : cases) {
    auto profile = ParseClusterProfile(head + c.nodes, (dir / "test.yaml").string());
    ASSERT_FALSE(profile.ok()) << c.nodes;
    EXPECT_NE(profile.status().message().find(c.error), std::string::npos)
        << "wanted: " << c.error << "\ngot: " << profile.status().message();
  }
  // A name is no duration, though "5s" would fit its pattern: it was told
  // "a duration takes its unit" (a user's trial).
  auto numbered = ParseClusterProfile(head + "  - {name: 5}\n", (dir / "test.yaml").string());
  ASSERT_FALSE(numbered.ok());
  EXPECT_NE(numbered.status().message().find("spec.nodes[0].name: must be a string (got integer 5)"), std::string::npos)
      << numbered.status().message();
  EXPECT_EQ(numbered.status().message().find("duration"), std::string::npos) << numbered.status().message();
  auto wrong_kind = ParseClusterProfile("apiVersion: edgetrain.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: x}\nspec: {nodes: [{name: a}]}\n", "k.yaml");
  ASSERT_FALSE(wrong_kind.ok());
  // Named by its kind alone: not a list of its fields as unknown ones (a new
  // user gave a TrainingJob as --nodes and read "spec.model: unknown field").
  EXPECT_EQ(wrong_kind.status().message(), "k.yaml is a TrainingJob, not a ClusterProfile (docs/cluster-profiles.md)");
  // A field left empty is absent (a fuzzer's `link:` with nothing after it
  // crashed the reader).
  auto empty_fields = ParseClusterProfile(head + "  - name: a\n    link:\n    labels:\n    stream:\n",
                                          (dir / "test.yaml").string());
  ASSERT_TRUE(empty_fields.ok()) << empty_fields.status().ToString();
  EXPECT_FALSE(empty_fields->nodes[0].link.has_value());
  // A plain number of bytes is a Kubernetes quantity too (a user's
  // 4294967296 was refused as not a string).
  auto in_bytes = ParseClusterProfile(head + "  - {name: a, memory: 4294967296, cpu: 4}\n", (dir / "test.yaml").string());
  ASSERT_TRUE(in_bytes.ok()) << in_bytes.status().ToString();
  auto view = NodeViewOf(in_bytes->nodes[0]);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->allocatable.memory_bytes, int64_t{4} << 30);
  auto fraction = ParseClusterProfile(head + "  - {name: a, memory: 1.5}\n", (dir / "test.yaml").string());
  EXPECT_FALSE(fraction.ok()) << "not a whole number of bytes, and not a string";
  auto no_kind = ParseClusterProfile("apiVersion: edgetrain.dev/v1alpha1\nmetadata: {name: x}\nspec: {nodes: [{name: a}]}\n",
                                     "k.yaml");
  ASSERT_FALSE(no_kind.ok());
  EXPECT_NE(no_kind.status().message().find("kind: required field is missing"), std::string::npos)
      << no_kind.status().message();
}

}  // namespace
}  // namespace edgetrain::api

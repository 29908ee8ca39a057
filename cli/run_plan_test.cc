#include "cli/agent_launcher.h"
#include "cli/run_plan.h"
#include "cli/stage_planning.h"

#include <fstream>

#include <gtest/gtest.h>

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;

api::TrainingJobManifest Job(const std::string& spec) {
  auto job = api::ParseTrainingJob("apiVersion: edgetrain.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: j}\nspec: " + spec,
                                   "j.yaml");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : api::TrainingJobManifest{};
}

ClusterProfile Robots(int nodes) {
  ClusterProfile p{"robots", {}};
  for (int i = 0; i < nodes; ++i) {
    NodeProfile robot;
    robot.name = "robot-" + std::to_string(i);
    robot.slowdown = 2;
    robot.link = LinkSpec{"/traces/wifi.csv", 0, 1};
    p.nodes.push_back(robot);
  }
  return p;
}

RunOptions Options(std::string links = "process") {
  RunOptions o;
  o.links = std::move(links);
  return o;
}

const MachineSize kThisMachine{2, 24000};
const fs::path kCwd = "/home/me";

TEST(RunPlanTest, ThePlannersDevicesComputeAsTheirSlotsDoWhereAResumedRunLeftThem) {
  ClusterProfile profile = Robots(2);
  profile.nodes[1].slowdown_changes = {{10, 60}};
  profile.nodes[1].memory = "512Mi";
  // Placed as the profile says, then moved 18.6 s along, as a resumed run's
  // devices are (GoneOnFor): robot-1's change to 60 is in force.
  std::vector<WorkerSlot> slots(2);
  for (int r = 0; r < 2; ++r) {
    slots[r].rank = r;
    slots[r].node = profile.nodes[r].name;
    slots[r].slowdown = profile.nodes[r].slowdown;
    slots[r].slowdown_changes = profile.nodes[r].slowdown_changes;
    slots[r].link = profile.nodes[r].link;
    slots[r] = GoneOnFor(slots[r], 18.6);
  }
  auto devices = DevicesAsPlaced(slots, profile);
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_DOUBLE_EQ((*devices)[0].emulated_slowdown, 2);
  EXPECT_DOUBLE_EQ((*devices)[1].emulated_slowdown, 60) << "the slowdown in force, not the profile's at the start";
  EXPECT_DOUBLE_EQ((*devices)[1].compute_score, 1.0 / 60);
  EXPECT_EQ((*devices)[1].allocatable.memory_bytes, 512LL << 20) << "the rest is the profile's node";
  // Without a profile: this machine's emulated devices, as the slots say.
  auto alone = DevicesAsPlaced(slots, std::nullopt);
  ASSERT_TRUE(alone.ok());
  EXPECT_DOUBLE_EQ((*alone)[1].emulated_slowdown, 60);
}

TEST(RunPlanTest, WhatRunsForEachShapeOfJob) {
  struct Case {
    const char* spec;
    std::optional<ClusterProfile> profile;
    const char* links;
    bool team;
    int agents;
    std::vector<std::string> nodes;
  } cases[] = {
      {"{model: {name: mlp}, data: {dataset: digits}}", std::nullopt, "process", false, 1, {}},
      {"{model: {name: mlp}, data: {dataset: digits}, parallelism: {workers: 3}}", std::nullopt, "process", true, 4,
       {"local-0", "local-1", "local-2"}},
      // A profile makes even one worker a team: its device is emulated.
      {"{model: {name: mlp}, data: {dataset: digits}}", Robots(2), "process", true, 2, {"robot-0"}},
      {"{model: {name: mlp}, data: {dataset: digits}, parallelism: {workers: 2}}", Robots(2), "netns", true, 3,
       {"robot-0", "robot-1"}},
  };
  for (const auto& c : cases) {
    auto plan = PlanLocalRun(Job(c.spec), c.profile, Options(c.links), kCwd, kThisMachine);
    ASSERT_TRUE(plan.ok()) << c.spec << ": " << plan.status().ToString();
    EXPECT_EQ(plan->team, c.team) << c.spec;
    EXPECT_EQ(plan->kernel_links, std::string(c.links) == "netns");
    EXPECT_EQ(plan->agents, c.agents) << c.spec;
    std::vector<std::string> nodes;
    for (const auto& slot : plan->job.workers) nodes.push_back(slot.node);
    EXPECT_EQ(nodes, c.nodes) << c.spec;
    EXPECT_EQ(plan->job.job, "j");
    EXPECT_EQ(plan->job.intra_op_threads, 1);
    EXPECT_TRUE(plan->warnings.empty()) << plan->warnings.front();
    // Kernel-shaped links replace the agents' shaping: the plan file has none,
    // the devices keep theirs (for the namespaces, and the summary).
    ASSERT_EQ(plan->devices.size(), plan->job.workers.size());
    for (size_t r = 0; r < plan->devices.size(); ++r) {
      EXPECT_EQ(plan->devices[r].link.has_value(), c.profile.has_value()) << c.spec;
      ASSERT_EQ(plan->job.workers[r].link.has_value(), c.profile.has_value()) << c.spec;
      if (c.profile) {
        EXPECT_EQ(plan->job.workers[r].link->kernel_shaped, plan->kernel_links) << c.spec;
      }
    }
  }
}

TEST(RunPlanTest, TheOutputFolderIsTheCommandLinesThenTheManifestsThenADefault) {
  struct Case {
    const char* spec;
    const char* output;
    const char* want;
  } cases[] = {
      {"{model: {name: mlp}, data: {dataset: digits}}", "", "/home/me/edgetrain-output/j"},
      {"{model: {name: mlp}, data: {dataset: digits}, output: {path: /models/j}}", "", "/models/j"},
      {"{model: {name: mlp}, data: {dataset: digits}, output: {path: /models/j}}", "out/../here", "/home/me/here"},
      {"{model: {name: mlp}, data: {dataset: digits}}", "/abs", "/abs"},
  };
  for (const auto& c : cases) {
    RunOptions options = Options();
    options.output_dir = c.output;
    options.fresh = c.output[0] == '/';  // and --fresh, now and then
    auto plan = PlanLocalRun(Job(c.spec), std::nullopt, options, kCwd, kThisMachine);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->job.output_dir, c.want) << c.spec << " --output " << c.output;
    EXPECT_EQ(plan->job.fresh, options.fresh);
  }
  // A relative path in the manifest is beside it, as its data's are,
  // wherever the run starts from (it was the working folder's, and a run
  // from elsewhere started afresh in a new folder).
  for (const char* manifest : {"jobs/j.yaml", "/home/me/jobs/j.yaml"}) {
    RunOptions options = Options();
    options.manifest_path = manifest;
    auto plan = PlanLocalRun(Job("{model: {name: mlp}, data: {dataset: digits}, output: {path: out/j}}"), std::nullopt,
                             options, kCwd, kThisMachine);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->job.output_dir, "/home/me/jobs/out/j") << manifest;
  }
  // The folder goes to the agents in the plan, which is JSON: one whose name
  // is not UTF-8 is refused by the field that named it (it aborted the run).
  RunOptions latin1 = Options();
  latin1.output_dir = "/home/caf\xE9";
  auto refused = PlanLocalRun(Job("{model: {name: mlp}, data: {dataset: digits}}"), std::nullopt, latin1, kCwd, kThisMachine);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message().rfind("--output: /home/caf\\xE9 is not UTF-8", 0), 0u) << refused.status().message();
  // A file where the folder, or one above it, would be (validate said
  // "valid" of it, and run "Not a directory": a user's trial).
  const fs::path dir = fs::path(::testing::TempDir()) / "run-plan-output-file";
  fs::create_directories(dir);
  std::ofstream(dir / "afile") << "not a folder\n";
  for (const fs::path& output : {dir / "afile", dir / "afile" / "below"}) {
    RunOptions options = Options();
    options.output_dir = output.string();
    auto file = PlanLocalRun(Job("{model: {name: mlp}, data: {dataset: digits}}"), std::nullopt, options, kCwd,
                             kThisMachine);
    ASSERT_FALSE(file.ok()) << output;
    EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(file.status().message(), "--output: " + (dir / "afile").string() +
                                           " is a file, not a folder; the job's model, checkpoint and logs go in a "
                                           "folder: give another path");
  }
  fs::remove_all(dir);
}

TEST(RunPlanTest, CommandLinesThisJobCannotRunWithAreRefused) {
  struct Case {
    const char* spec;
    std::optional<ClusterProfile> profile;
    RunOptions options;
    const char* error;
  } cases[] = {
      {"{model: {name: mlp}, data: {dataset: digits}}", std::nullopt, Options("kernel"),
       "--links: expected process or netns, got \"kernel\""},
      {"{model: {name: mlp}, data: {dataset: digits}}", std::nullopt, Options("netns"),
       "--links netns emulates a team's links"},
      {"{model: {name: mlp}, data: {dataset: digits}, parallelism: {workers: 3}}", Robots(1), Options(),
       "the cluster profile robots has 1 node(s) for 3 workers"},
      {"{model: {name: mlp}, data: {dataset: digits, stream: {}}, parallelism: {workers: 2}}", std::nullopt, Options(),
       "spec.data.stream gives no ratesPerSecond, and there is no cluster profile (--nodes) to give each worker's: "
       "give the rates in the job, or --nodes with a profile whose first 2 nodes each give a stream (ratePerSecond or "
       "rateTrace)"},
      {"{model: {name: mlp}, data: {dataset: digits, stream: {}}, parallelism: {workers: 2}}", Robots(2), Options(),
       "spec.data.stream gives no ratesPerSecond, and node robot-0 of the cluster profile robots gives no stream: give "
       "the rates in the job, or a stream (ratePerSecond or rateTrace) to each of the profile's first 2 nodes, where "
       "edgetrain run puts workers 0 to 1"},
  };
  RunOptions high_ports = Options();
  high_ports.http_port = 65534;
  auto ports = PlanLocalRun(Job("{model: {name: mlp}, data: {dataset: digits}, parallelism: {workers: 2}}"), std::nullopt,
                            high_ports, kCwd, kThisMachine);
  ASSERT_FALSE(ports.ok());
  EXPECT_EQ(ports.status().message(), "--http-port 65534: the 3 agents need ports up to 65536, past 65535");
  for (const auto& c : cases) {
    auto plan = PlanLocalRun(Job(c.spec), c.profile, c.options, kCwd, kThisMachine);
    ASSERT_FALSE(plan.ok()) << c.error;
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(plan.status().message().find(c.error), std::string::npos) << plan.status().message();
  }
}

TEST(RunPlanTest, AStreamWithoutRatesTakesEachWorkersFromItsNode) {
  ClusterProfile robots = Robots(2);
  robots.nodes[0].stream = StreamSource{22, "", 0};
  robots.nodes[1].stream = StreamSource{0, "/traces/rate.csv", 0};
  auto plan = PlanLocalRun(Job("{model: {name: mlp}, data: {dataset: digits, stream: {}}, parallelism: {workers: 2}}"),
                           robots, Options(), kCwd, kThisMachine);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->job.workers[0].stream.has_value());
  EXPECT_EQ(plan->job.workers[0].stream->per_second, 22);
  EXPECT_EQ(plan->job.workers[1].stream->trace_path, "/traces/rate.csv");
}

TEST(RunPlanTest, ATeamFarLargerThanTheMachineIsWarnedAbout) {
  struct Case {
    const char* spec;
    MachineSize machine;
    std::vector<std::string> warnings;  // each a part of one warning, in order
  } cases[] = {
      // The README's robot team on this machine: nothing to say.
      {"{model: {name: mlp}, data: {dataset: fashion-mnist}, parallelism: {workers: 4}}", {2, 24000}, {}},
      {"{model: {name: mlp}, data: {dataset: digits}, parallelism: {workers: 64}}", {2, 24000},
       {"65 agents (65 training threads) share 2 core(s)",
        "each worker holds 22 or 23 training samples, fewer than its batch of 64"}},
      {"{model: {name: mlp}, data: {dataset: fashion-mnist}, parallelism: {workers: 16}}", {16, 1024},
       {"17 agents need about 2612 MB of memory; this machine has 1024 MB"}},
      {"{model: {name: mlp}, data: {dataset: digits, batchSize: 512}, parallelism: {workers: 3}}", {2, 24000},
       {"each worker holds 479 training samples, fewer than its batch of 512"}},
      // 1,437 over 60: 57 workers hold 24, a batch, and 3 hold 23.
      {"{model: {name: mlp}, data: {dataset: digits, batchSize: 24}, parallelism: {workers: 60}}", {64, 24000},
       {"some workers hold 23 training samples, fewer than their batch of 24: their steps repeat samples "
        "(spec.data.batchSize 23 or less does not)"}},
      {"{model: {name: mlp}, data: {dataset: digits, batchSize: 2048}, parallelism: {workers: 1}}", {2, 24000},
       {"the job holds 1437 training samples, fewer than its batch of 2048: every step takes all 1437, a batch of "
        "1437"}},
      // A pipeline draws its batch from the whole set, dealt among its devices.
      {"{model: {name: mlp}, data: {dataset: digits, batchSize: 512}, parallelism: {mode: pipeline, workers: 3}}",
       {2, 24000}, {}},
  };
  for (const auto& c : cases) {
    auto plan = PlanLocalRun(Job(c.spec), std::nullopt, Options(), kCwd, c.machine);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_EQ(plan->warnings.size(), c.warnings.size()) << c.spec;
    for (size_t i = 0; i < c.warnings.size(); ++i) {
      EXPECT_NE(plan->warnings[i].find(c.warnings[i]), std::string::npos) << plan->warnings[i];
    }
  }
}

TEST(RunPlanTest, MemoryGrowsWithTheTeamFromWhatLibTorchSharesOnce) {
  // The measured sums (run_plan.cc) within 5%.
  struct Case {
    DatasetName dataset;
    int agents;
    int64_t measured_mb;
  } cases[] = {{DatasetName::kDigits, 3, 372},
               {DatasetName::kDigits, 7, 638},
               {DatasetName::kFashionMnist, 3, 567},
               {DatasetName::kFashionMnist, 7, 1150}};
  for (const auto& c : cases) {
    DataSpec data;
    data.dataset = c.dataset;
    const int64_t estimate = EstimatedMemoryMb(data, c.agents);
    EXPECT_NEAR(static_cast<double>(estimate), static_cast<double>(c.measured_mb), 0.05 * static_cast<double>(c.measured_mb))
        << NameOf(c.dataset) << " x" << c.agents;
  }
}

// A pipeline's stage agents serve no metrics of their own yet: the runner
// names the head's, where every stage's are, and not the stages' empty pages.
TEST(DescribeEndpointsTest, APipelinesMetricsAreTheHeads) {
  const std::vector<AgentEndpoint> endpoints = {{"coordinator", "127.0.0.1:9000", "", -1},
                                                {"worker 0", "127.0.0.1:9001", "", 0}};
  const std::string team = DescribeEndpoints(endpoints);
  EXPECT_NE(team.find("http://127.0.0.1:9001/metrics"), std::string::npos) << team;
  const std::string pipeline = DescribeEndpoints(endpoints, /*pipeline=*/true);
  EXPECT_NE(pipeline.find("http://127.0.0.1:9000/metrics"), std::string::npos) << pipeline;
  EXPECT_NE(pipeline.find("http://127.0.0.1:9000/progress"), std::string::npos) << pipeline;
  EXPECT_EQ(pipeline.find("9001"), std::string::npos) << pipeline;
}

}  // namespace
}  // namespace edgetrain::cli

#include "cli/plan_command.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <map>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/child_process_testing.h"

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = EDGETRAIN_SOURCE_DIR;

struct Printed {
  int code;
  std::string out, err;
};

Printed Plan(PlanOptions options) {
  std::ostringstream out, err;
  const int code = PrintPlan(options, out, err);
  return {code, out.str(), err.str()};
}
Printed Plan(const fs::path& manifest, const fs::path& nodes, bool json, const std::string& agent = "") {
  PlanOptions options;
  options.manifest_path = manifest.string();
  options.nodes_path = nodes.string();
  options.json = json;
  options.agent_binary = agent;
  return Plan(options);
}

class PlanCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("edgetrain-plan-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  fs::path Team(const std::string& name, const std::string& extra_spec) {
    return Write(name + ".yaml", "apiVersion: edgetrain.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: " + name +
                                     "}\nspec:\n  model: {name: mlp}\n  data: {dataset: digits}\n" + extra_spec);
  }

  fs::path dir_;
  const fs::path site_ = kSource / "examples/nodes/edge-site.yaml";
  const fs::path vgg_ = kSource / "examples/vgg-pipeline.yaml";
  const fs::path uneven_site_ = kSource / "examples/nodes/pipeline-10-5-2-1.yaml";
};

// A user's module is measured by the agent here, as the operator's check pod
// would on a node, and placed by its size; a pipeline's by its layers, timed
// once for placement and stages (plan had refused every such job: a user's
// trial).
TEST_F(PlanCommandTest, AUsersModuleIsMeasuredHereAndPlaced) {
  const std::string script = "import torch\nfrom torch import nn\n"
                             "m = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))\n"
                             "torch.jit.save(torch.jit.script(m), '" + (dir_ / "net.pt").string() + "')\n";
  Write("make.py", script);
  ASSERT_EQ(std::system(("/usr/bin/python3 " + (dir_ / "make.py").string()).c_str()), 0);
  for (const std::string mode : {"dataParallel", "auto"}) {
    SCOPED_TRACE(mode);
    const fs::path job = Write("own-" + mode + ".yaml",
                               "apiVersion: edgetrain.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: own}\nspec:\n"
                               "  model: {torchscript: {path: net.pt}}\n  data: {dataset: digits}\n"
                               "  parallelism: {mode: " + mode + ", workers: 2}\n");
    const Printed plan = Plan(job, site_, /*json=*/true);
    ASSERT_EQ(plan.code, 0) << plan.err;
    EXPECT_NE(plan.err.find("measuring the module on this machine, as the operator's check pod would"),
              std::string::npos)
        << plan.err;
    const nlohmann::json doc = nlohmann::json::parse(plan.out);
    EXPECT_TRUE(doc["placed"].get<bool>()) << doc.dump();
    EXPECT_EQ(doc.contains("pipeline"), mode == "auto") << doc.dump();
  }
  // A module the agent refuses is the manifest's fault, in the agent's words.
  Write("net.pt", "not a module");
  const Printed refused = Plan(dir_ / "own-dataParallel.yaml", site_, /*json=*/false);
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("is not a TorchScript module"), std::string::npos) << refused.err;
}

// The agent measures the layers on this machine, so timings and with them the
// plan vary from run to run: these tests hold what is shown, not its numbers
// (core/parallelism_choice_test.cc holds the choice on fixed costs).

TEST_F(PlanCommandTest, ThePipelineExampleShowsItsStagesAgainstTheEvenSplitAndDataParallelism) {
  Printed plan = Plan(vgg_, uneven_site_, /*json=*/false);
  ASSERT_EQ(plan.code, 0) << plan.err;
  const std::string& out = plan.out;
  // The team placed as any other, its table kept.
  EXPECT_NE(out.find("vgg-pipeline on pipeline-10-5-2-1 (4 nodes): a coordinator and 4 workers"), std::string::npos)
      << out;
  EXPECT_NE(out.find("NODE "), std::string::npos) << out;
  EXPECT_EQ(out.find("for the team; a ranking of nodes"), std::string::npos)
      << "placement's data-parallel prediction would contradict the planner's";
  // What the planner was given, then what it chose.
  for (const char* shown : {"layers, per sample in a pass of the batch (64), measured on this machine", "conv1 ", "conv8 ", "classifier ",
                            "devices, the workers' nodes", "sensor-hub ", "the planner's best for mode auto",
                            // "1 micro-batch of 64" or "N micro-batches of": how many, the
                            // layers as measured on this machine decide.
                            "STAGE LAYERS", "PERIOD ms", "MEMORY/DEVICE", "predicted: ", " micro-batch",
                            "against, on the same devices and links:", "even split ", "data parallel ",
                            "fastest alone ", "ideal: ", "auto picks "}) {
    EXPECT_NE(out.find(shown), std::string::npos) << "missing \"" << shown << "\" in\n" << out;
  }
  EXPECT_EQ(plan.err.find("note:"), std::string::npos) << "the operator runs it too: " << plan.err;
}

// A device the plan gives no work is named, though the placement above it
// lists it as a worker: 250 times slower than its peers, the snail gets no
// layer in any plan the planner could prefer.
TEST_F(PlanCommandTest, ADeviceThePlanLeavesOutIsNamed) {
  const fs::path site = Write("snail.yaml", "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\n"
                                            "metadata: {name: snail-site}\nspec:\n  nodes:\n"
                                            "    - {name: gw, compute: {slowdown: 2}}\n"
                                            "    - {name: board, compute: {slowdown: 2}}\n"
                                            "    - {name: snail, compute: {slowdown: 500}}\n");
  const fs::path job = Team("snailed", "  parallelism: {mode: auto, workers: 3}\n");
  Printed plan = Plan(job, site, /*json=*/false);
  ASSERT_EQ(plan.code, 0) << plan.err;
  const size_t said = plan.out.find("\nleft out: ");
  ASSERT_NE(said, std::string::npos) << plan.out;
  const std::string line = plan.out.substr(said + 1, plan.out.find('\n', said + 1) - said - 1);
  EXPECT_NE(line.find("snail"), std::string::npos) << line;
  EXPECT_NE(line.find(": the plan is predicted faster without"), std::string::npos) << line;
}

TEST_F(PlanCommandTest, ThePipelineJsonPredictsThePlanTheEvenSplitAndDataParallelism) {
  Printed plan = Plan(vgg_, uneven_site_, /*json=*/true);
  ASSERT_EQ(plan.code, 0) << plan.err;
  const nlohmann::json doc = nlohmann::json::parse(plan.out);
  EXPECT_TRUE(doc["placed"]);
  ASSERT_TRUE(doc.contains("pipeline")) << doc.dump(2);
  const nlohmann::json& p = doc["pipeline"];
  EXPECT_EQ(p["mode"], "auto");
  EXPECT_EQ(p["batchSize"], 64);
  ASSERT_EQ(p["layers"].size(), 9u) << "eight convs and the classifier";
  EXPECT_EQ(p["layers"][0]["name"], "conv1");
  EXPECT_EQ(p["layers"][8]["name"], "classifier");
  ASSERT_EQ(p["devices"].size(), 4u);
  EXPECT_EQ(p["devices"][0]["name"], doc["workers"][0]) << "the workers' nodes, in rank order";
  EXPECT_DOUBLE_EQ(p["devices"][3]["speed"].get<double>(), 0.05) << "sensor-hub, 20 times slower than this machine";
  for (const char* which : {"plan", "evenSplit", "dataParallel", "fastestAlone"}) {
    const nlohmann::json& plan_json = p[which];
    EXPECT_TRUE(plan_json["fits"]) << which;
    EXPECT_GT(plan_json["predictedSamplesPerSecond"].get<double>(), 0) << which;
    EXPECT_GT(plan_json["stepSeconds"].get<double>(), 0) << which;
    EXPECT_FALSE(plan_json["description"].get<std::string>().empty()) << which;
    // The stages cover the layers in order, each on devices of the team.
    std::vector<std::string> covered;
    for (const auto& stage : plan_json["stages"]) {
      for (const auto& layer : stage["layers"]) covered.push_back(layer);
      EXPECT_FALSE(stage["devices"].empty()) << which;
      EXPECT_EQ(stage["memoryBytes"].size(), stage["devices"].size()) << which;
    }
    std::vector<std::string> all;
    for (const auto& layer : p["layers"]) all.push_back(layer["name"]);
    EXPECT_EQ(covered, all) << which;
  }
  EXPECT_EQ(p["evenSplit"]["stages"].size(), 4u);
  EXPECT_EQ(p["dataParallel"]["stages"].size(), 1u);
  EXPECT_EQ(p["fastestAlone"]["stages"][0]["devices"], nlohmann::json::array({"gateway"}));
  EXPECT_LE(p["plan"]["predictedSamplesPerSecond"].get<double>(),
            p["idealSamplesPerSecond"].get<double>() * (1 + 1e-12));
  // Auto's pick follows the predictions.
  const double planned = p["plan"]["predictedSamplesPerSecond"], dp = p["dataParallel"]["predictedSamplesPerSecond"];
  EXPECT_GE(planned, dp * (1 - 1e-9));
  EXPECT_EQ(p["chosen"], planned > dp ? p["plan"]["mode"] : nlohmann::json("dataParallel")) << p.dump(2);
  // The job's prediction, at the top, is the plan it runs, not placement's.
  EXPECT_DOUBLE_EQ(doc["predictedSamplesPerSecond"].get<double>(), std::max(planned, dp));
  EXPECT_GT(doc["placementPredictedSamplesPerSecond"].get<double>(), 0);
  EXPECT_FALSE(p["reason"].get<std::string>().empty());
}

// The node table of a pipeline job gives each device with the whole model
// alone, as the planner costs it: the gateway's row and "fastest alone" are
// one figure, where placement's flops had put the gateway at 646 samples/s
// and the planner at 1,042 (a new user's trial).
TEST_F(PlanCommandTest, APipelineJobsNodesAreTheDevicesAloneAsThePlannerCostsThem) {
  Printed plan = Plan(vgg_, uneven_site_, /*json=*/true);
  ASSERT_EQ(plan.code, 0) << plan.err;
  const nlohmann::json doc = nlohmann::json::parse(plan.out);
  const nlohmann::json& fastest = doc["pipeline"]["fastestAlone"];
  ASSERT_EQ(fastest["stages"][0]["devices"], nlohmann::json::array({"gateway"}));
  std::map<std::string, double> alone;
  for (const auto& node : doc["nodes"]) alone[node["node"]] = node["aloneSamplesPerSecond"];
  ASSERT_EQ(alone.size(), 4u) << doc["nodes"].dump(2);
  EXPECT_NEAR(alone["gateway"], fastest["predictedSamplesPerSecond"].get<double>(), 1e-9);
  // Slowdowns 2, 4, 10 and 20: each device alone at its speed, the gateway the fastest.
  EXPECT_GT(alone["gateway"], alone["board"]);
  EXPECT_GT(alone["board"], alone["robot"]);
  EXPECT_GT(alone["robot"], alone["sensor-hub"]);
  for (const auto& node : doc["nodes"]) {
    EXPECT_GT(node["aloneJoulesPerSample"].get<double>(), 0) << node.dump();
  }
}

TEST_F(PlanCommandTest, PipelineModeGivesEachStageOneDevice) {
  std::string text = ReadFile(vgg_);
  text.replace(text.find("mode: auto"), 10, "mode: pipeline");
  Printed plan = Plan(Write("pipeline.yaml", text), uneven_site_, /*json=*/true);
  ASSERT_EQ(plan.code, 0) << plan.err;
  const nlohmann::json p = nlohmann::json::parse(plan.out)["pipeline"];
  EXPECT_EQ(p["mode"], "pipeline");
  EXPECT_EQ(p["chosen"], "pipeline");
  for (const auto& stage : p["plan"]["stages"]) EXPECT_EQ(stage["devices"].size(), 1u) << p["plan"].dump(2);
}

// Two workers on one node are two devices, as edgetrain run and the operator
// plan them: a layout by hand names devices by rank. Counted once a node, the
// even split of four workers on two nodes had two stages, and rank 2 was
// another device than it trains on (found in review).
TEST_F(PlanCommandTest, EachWorkerIsADeviceThoughTwoShareANode) {
  const fs::path site = Write("two.yaml",
                              "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {name: two}\nspec:\n"
                              "  nodes:\n    - {name: gateway, compute: {slowdown: 2}, cpu: \"8\"}\n"
                              "    - {name: board, compute: {slowdown: 4}, cpu: \"8\"}\n");
  const fs::path job = Write("four.yaml",
                             "apiVersion: edgetrain.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: four}\nspec:\n"
                             "  model: {name: mlp, hidden: [32, 32, 32]}\n  data: {dataset: digits}\n"
                             "  parallelism: {mode: pipeline, workers: 4, stages: even}\n");
  Printed plan = Plan(job, site, /*json=*/true);
  ASSERT_EQ(plan.code, 0) << plan.err;
  const nlohmann::json doc = nlohmann::json::parse(plan.out);
  const nlohmann::json& p = doc["pipeline"];
  ASSERT_EQ(doc["workers"].size(), 4u) << doc.dump(2);
  ASSERT_EQ(p["devices"].size(), 4u) << p["devices"].dump(2);
  for (size_t rank = 0; rank < 4; ++rank) EXPECT_EQ(p["devices"][rank]["name"], doc["workers"][rank]) << rank;
  EXPECT_EQ(p["evenSplit"]["stages"].size(), 4u);
  EXPECT_EQ(p["given"]["stages"], p["evenSplit"]["stages"]);
}

// spec.parallelism.stages: what the job runs is shown after the planner's
// best, and predicted, in the text and as `given` in the JSON.
TEST_F(PlanCommandTest, TheStagesTheSpecGivesAreShownAfterThePlannersAndPredicted) {
  std::string text = ReadFile(vgg_);
  text.replace(text.find("workers: 4"), 10, "workers: 4\n    stages: even");
  // An MLP of four layers in place of the vgg: its layers are measured in a
  // fraction of the time, three times here.
  const std::string vgg = "name: vgg\n    widths: [16, 16, 32, 32, 64, 64, 128, 128]";
  text.replace(text.find(vgg), vgg.size(), "name: mlp\n    hidden: [32, 32, 32]");
  const fs::path job = Write("given.yaml", text);
  Printed shown = Plan(job, uneven_site_, /*json=*/false);
  ASSERT_EQ(shown.code, 0) << shown.err;
  const size_t planner = shown.out.find("the planner's best for mode auto");
  const size_t given =
      shown.out.find("\nthe job runs the stages its spec.parallelism.stages gives (even), not the planner's:\n"
                     "  pipeline, 4 stages");
  ASSERT_NE(given, std::string::npos) << shown.out;
  EXPECT_LT(planner, given) << shown.out;
  EXPECT_NE(shown.out.find("samples/s, a step of", given), std::string::npos) << shown.out.substr(given);
  EXPECT_NE(shown.out.find("kept as given, no layers moved between its stages", given), std::string::npos);

  Printed as_json = Plan(job, uneven_site_, /*json=*/true);
  ASSERT_EQ(as_json.code, 0) << as_json.err;
  const nlohmann::json doc = nlohmann::json::parse(as_json.out);
  const nlohmann::json& p = doc["pipeline"];
  ASSERT_TRUE(p.contains("given")) << p.dump(2);
  EXPECT_EQ(p["given"]["spec"], "even");
  EXPECT_EQ(p["given"]["mode"], "pipeline");
  EXPECT_EQ(p["given"]["stages"], p["evenSplit"]["stages"]);
  EXPECT_EQ(doc["predictedSamplesPerSecond"], p["given"]["predictedSamplesPerSecond"]);

  // A layout naming layers the model has not is the manifest's mistake,
  // said with its line as it is read, before any layer is measured: a
  // built-in model's layers are known from its spec.
  text.replace(text.find("stages: even"), 12, "stages: 0-2:0/3-40:1");
  Printed beyond = Plan(Write("beyond.yaml", text), uneven_site_, /*json=*/false);
  EXPECT_EQ(beyond.code, 2) << beyond.err;
  EXPECT_NE(beyond.err.find("beyond.yaml:31: spec.parallelism.stages: the model has layers 0-3 (edgetrain plan lists "
                            "them)"),
            std::string::npos)
      << beyond.err;
  EXPECT_EQ(beyond.err.find("measur"), std::string::npos) << beyond.err;
}

// --stages and --micro-batches, as edgetrain run takes them: what a layout
// or a count would be predicted at, without a manifest edited for it; judged
// before the layers are measured, as run judges them.
TEST_F(PlanCommandTest, StagesAndMicroBatchesGivenAsFlagsArePredictedAsRunWouldTrainThem) {
  std::string text = ReadFile(vgg_);
  text.replace(text.find("workers: 4"), 10, "workers: 4\n    stages: even");
  const std::string vgg = "name: vgg\n    widths: [16, 16, 32, 32, 64, 64, 128, 128]";
  text.replace(text.find(vgg), vgg.size(), "name: mlp\n    hidden: [32, 32, 32]");
  PlanOptions options;
  options.manifest_path = Write("flags.yaml", text).string();
  options.nodes_path = uneven_site_.string();
  options.stages = "0-1:0/2-3:1";
  options.micro_batches = 4;
  Printed shown = Plan(options);
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_NE(shown.err.find("note: --stages 0-1:0/2-3:1 in place of the job's spec.parallelism.stages even"),
            std::string::npos)
      << shown.err;
  EXPECT_NE(shown.out.find("\nwith --stages 0-1:0/2-3:1 at --micro-batches 4 the job would run these stages, not the "
                           "planner's:\n  pipeline, 2 stages, 4 micro-batches of 16"),
            std::string::npos)
      << shown.out;

  options.json = true;
  Printed as_json = Plan(options);
  ASSERT_EQ(as_json.code, 0) << as_json.err;
  const nlohmann::json doc = nlohmann::json::parse(as_json.out);
  const nlohmann::json& given = doc["pipeline"]["given"];
  EXPECT_EQ(given["from"], "--stages");
  EXPECT_EQ(given["spec"], "0-1:0/2-3:1");
  EXPECT_EQ(given["microBatches"], 4);
  EXPECT_EQ(given["stages"].size(), 2u);
  EXPECT_EQ(doc["predictedSamplesPerSecond"], given["predictedSamplesPerSecond"]);

  // The planner's own stages at another count.
  options.json = false;
  options.stages = "planned";
  options.micro_batches = 2;
  Printed recounted = Plan(options);
  ASSERT_EQ(recounted.code, 0) << recounted.err;
  EXPECT_NE(recounted.out.find("\nthe planner's stages at --micro-batches 2:\n"), std::string::npos) << recounted.out;

  // Refused before anything is measured: an agent that cannot start is never asked.
  options.agent_binary = "/nonexistent/edgetrain-agent";
  options.micro_batches = 5;
  Printed indivisible = Plan(options);
  EXPECT_EQ(indivisible.code, 2);
  EXPECT_NE(indivisible.err.find("--micro-batches 5 must divide the batch of 64"), std::string::npos)
      << indivisible.err;
  options.micro_batches = 0;
  options.stages = "0-1:0/2-3:7";
  Printed no_such_rank = Plan(options);
  EXPECT_EQ(no_such_rank.code, 2);
  EXPECT_NE(no_such_rank.err.find("error: vgg-pipeline: --stages 0-1:0/2-3:7: "), std::string::npos)
      << no_such_rank.err;

  // A data-parallel job has no stages: said, and placed.
  PlanOptions team;
  team.manifest_path = Team("team", "  parallelism: {workers: 2}\n").string();
  team.nodes_path = site_.string();
  team.stages = "even";
  Printed placed = Plan(team);
  EXPECT_EQ(placed.code, 0) << placed.err;
  EXPECT_NE(placed.err.find("note: --stages even applies to a pipeline, hybrid or auto job of 2 or more workers; team "
                            "is data-parallel (spec.parallelism.mode)"),
            std::string::npos)
      << placed.err;
}

TEST_F(PlanCommandTest, AnAgentThatCannotMeasureTheLayersIsAFailureAfterThePlacement) {
  Printed plan = Plan(vgg_, uneven_site_, /*json=*/false, "/bin/false");
  EXPECT_EQ(plan.code, 1);
  EXPECT_NE(plan.out.find("NODE "), std::string::npos) << "the placement is shown even so";
  EXPECT_NE(plan.err.find("error: planning the pipeline: /bin/false profile-layers exited (status 1) without a result"),
            std::string::npos)
      << plan.err;

  Printed missing = Plan(vgg_, uneven_site_, /*json=*/true, (dir_ / "no-agent").string());
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("pass --agent PATH"), std::string::npos) << missing.err;
  EXPECT_NE(nlohmann::json::parse(missing.out)["pipeline"]["error"].get<std::string>().find("cannot execute"),
            std::string::npos)
      << missing.out;
}

// Memory that holds the pods but no plan: the job does not fit, as when it
// cannot be placed.
TEST_F(PlanCommandTest, APipelineNoDeviceCanHoldDoesNotFit) {
  std::string job = ReadFile(vgg_);
  job += "  template:\n    resources: {requests: {memory: 1Ki}}\n";
  const fs::path site = Write("tiny.yaml", R"(apiVersion: edgetrain.dev/v1alpha1
kind: ClusterProfile
metadata: {name: tiny}
spec:
  nodes:
    - {name: a, memory: 100Ki, compute: {slowdown: 2}}
    - {name: b, memory: 100Ki, compute: {slowdown: 4}}
    - {name: c, memory: 100Ki, compute: {slowdown: 10}}
    - {name: d, memory: 100Ki, compute: {slowdown: 20}}
)");
  Printed plan = Plan(Write("vgg.yaml", job), site, /*json=*/false);
  EXPECT_EQ(plan.code, 1) << plan.out << plan.err;
  EXPECT_NE(plan.err.find("error: vgg-pipeline does not fit tiny: no plan fits the devices' memory"), std::string::npos)
      << plan.err;
}

// Nodes too small for the pods: the heading says at once that the job it
// names is not placed, where it read as a placement made.
TEST_F(PlanCommandTest, AJobTheNodesCannotHoldIsSaidNotToFitInItsHeading) {
  const fs::path site = Write("crumbs.yaml", R"(apiVersion: edgetrain.dev/v1alpha1
kind: ClusterProfile
metadata: {name: crumbs}
spec:
  nodes:
    - {name: a, memory: 2Mi}
    - {name: b, memory: 2Mi}
)");
  Printed plan = Plan(kSource / "examples/robot-team.yaml", site, /*json=*/false);
  EXPECT_EQ(plan.code, 1) << plan.out << plan.err;
  EXPECT_NE(plan.out.find("workers; the job does not fit these nodes (below)\n"), std::string::npos) << plan.out;
}

// What a data-parallel job shows is what it showed before pipelines were planned.
TEST_F(PlanCommandTest, ADataParallelJobIsPlacedOnlyWithoutAPipelineOrNote) {
  Printed json = Plan(kSource / "examples/robot-team.yaml", site_, /*json=*/true);
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  std::vector<std::string> keys;
  for (const auto& [key, value] : doc.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"coordinator", "job", "nodes", "placed", "predictedSamplesPerSecond",
                                             "site", "workers"}));
  EXPECT_EQ(json.err, "");
  Printed table = Plan(kSource / "examples/robot-team.yaml", site_, /*json=*/false);
  ASSERT_EQ(table.code, 0);
  EXPECT_EQ(table.out.find("layers, per sample"), std::string::npos) << table.out;
  const std::string last = table.out.substr(table.out.rfind("\npredicted: ") + 1);
  EXPECT_NE(last.find(" samples/s for the team; a ranking of nodes, not a promise (docs/placement.md)\n"),
            std::string::npos)
      << table.out;
}

// The example team on the example site: what docs/placement.md walks through.
TEST_F(PlanCommandTest, TheRobotTeamGoesWhereItsLinksAndComputeAreBest) {
  Printed plan = Plan(kSource / "examples/robot-team.yaml", site_, /*json=*/true);
  ASSERT_EQ(plan.code, 0) << plan.err;
  const nlohmann::json doc = nlohmann::json::parse(plan.out);
  EXPECT_EQ(doc["job"], "robot-team");
  EXPECT_EQ(doc["site"], "edge-site");
  EXPECT_TRUE(doc["placed"]);
  // The coordinator on the one stable, wired node; the workers where a step is
  // quickest, the gateway itself first.
  EXPECT_EQ(doc["coordinator"], "gateway");
  ASSERT_EQ(doc["workers"].size(), 4u);
  EXPECT_EQ(doc["workers"][0], "gateway");
  EXPECT_EQ(doc["workers"][1], "jetson-1");
  for (const auto& node : doc["nodes"]) {
    if (node["node"] == "spot-1") {
      EXPECT_NE(node["excluded"].get<std::string>().find("not tolerated"), std::string::npos) << node;
    }
    if (node["node"] == "spot-2") {
      EXPECT_TRUE(node["ranks"].empty()) << "a transient node is a last resort";
    }
  }

  Printed table = Plan(kSource / "examples/robot-team.yaml", site_, /*json=*/false);
  ASSERT_EQ(table.code, 0);
  EXPECT_NE(table.out.find("robot-team on edge-site (7 nodes): a coordinator and 4 workers"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("coordinator, worker 0"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("taint cloud.google.com/gke-spot=true:NoSchedule not tolerated"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("predicted: "), std::string::npos) << table.out;
}

// A node holding many pods widens the PODS column rather than push the
// figures after it out of theirs (a new user's trial: 12 workers).
TEST_F(PlanCommandTest, ANodeHoldingManyPodsKeepsTheColumnsAligned) {
  Printed table = Plan(Team("many", "  parallelism: {workers: 12}\n"), site_, /*json=*/false);
  ASSERT_EQ(table.code, 0) << table.err;
  std::istringstream lines(table.out);
  std::string line;
  size_t compute_end = std::string::npos, rows = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("NODE ", 0) == 0) {
      compute_end = line.find("COMPUTE") + 7;
      continue;
    }
    if (compute_end == std::string::npos) continue;  // above the table
    if (line.empty() || line.size() < compute_end) break;
    // The compute score, as 1.00, ends where its header does.
    EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(line[compute_end - 1])) && line[compute_end - 3] == '.' &&
                line[compute_end] == ' ')
        << line;
    ++rows;
  }
  EXPECT_EQ(rows, 7u) << table.out;
  EXPECT_NE(table.out.find("worker 0, worker"), std::string::npos) << "some node holds three pods or more\n" << table.out;
}

// A team on streams trains on no more than they deliver, whatever its
// placement predicts (a new user read 2,247,909 samples/s for streams of 260).
TEST_F(PlanCommandTest, ATeamOnStreamsIsToldItsStreamsBoundItsPace) {
  Printed table = Plan(kSource / "examples/streaming-team.yaml", site_, /*json=*/false);
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("its streams deliver 260 samples/s (spec.data.stream.ratesPerSecond): the team trains on "
                           "no more, wherever it runs"),
            std::string::npos)
      << table.out;
  Printed json = Plan(kSource / "examples/streaming-team.yaml", site_, /*json=*/true);
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(json.out)["streamSamplesPerSecond"].get<double>(), 260);
  Printed plain = Plan(kSource / "examples/robot-team.yaml", site_, /*json=*/false);
  EXPECT_EQ(plain.out.find("its streams"), std::string::npos) << plain.out;
}

// A job of no rates of its own is fed by its nodes' streams: placed only on
// nodes that publish a rate, as the operator places it (a rate trace
// publishes none), and bound by what they deliver (a user's trial read
// 88,028 samples/s for nodes of 60 and 180).
TEST_F(PlanCommandTest, ATeamFedByItsNodesStreamsIsPlacedOnNodesWithARateAndBoundByThem) {
  std::ofstream(dir_ / "shift.csv") << "seconds,samples_per_s\n0,40\n20,120\n";
  const fs::path site = Write("cameras.yaml", R"(apiVersion: edgetrain.dev/v1alpha1
kind: ClusterProfile
metadata: {name: cameras}
spec:
  nodes:
    - {name: gw}
    - {name: cam-1, stream: {rateTrace: shift.csv}}
    - {name: cam-2, stream: {ratePerSecond: 60}}
    - {name: cam-3, stream: {ratePerSecond: 180}}
)");
  const fs::path job = Write("fed.yaml", R"(apiVersion: edgetrain.dev/v1alpha1
kind: TrainingJob
metadata: {name: fed}
spec:
  model: {name: mlp}
  data: {dataset: digits, batchSize: 32, stream: {}}
  parallelism: {workers: 2}
)");
  Printed table = Plan(job, site, /*json=*/false);
  ASSERT_EQ(table.code, 0) << table.err << table.out;
  EXPECT_NE(table.out.find("its streams deliver 240 samples/s (its nodes' streams): the team trains on no more"),
            std::string::npos)
      << table.out;
  Printed json = Plan(job, site, /*json=*/true);
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  EXPECT_DOUBLE_EQ(doc["streamSamplesPerSecond"].get<double>(), 240);
  std::set<std::string> used;
  for (const auto& n : doc["nodes"]) {
    if (!n["ranks"].empty()) used.insert(n["node"].get<std::string>());
  }
  EXPECT_EQ(used, (std::set<std::string>{"cam-2", "cam-3"})) << doc.dump();
}

TEST_F(PlanCommandTest, AJobThatDoesNotFitExitsOneAndSaysWhy) {
  Printed plan = Plan(Team("picky", "  parallelism: {workers: 2}\n  placement:\n    nodeSelector: {edgetrain.dev/site: moon}\n"),
                      site_, /*json=*/false);
  EXPECT_EQ(plan.code, 1);
  EXPECT_NE(plan.err.find("error: picky does not fit edge-site: 0/7 nodes"), std::string::npos) << plan.err;
  EXPECT_NE(plan.err.find("nodeSelector"), std::string::npos) << plan.err;
  EXPECT_NE(plan.out.find("NODE"), std::string::npos) << "the verdicts are shown even so";
}

// A job of one crosses no link wherever it goes: every node's figure is its
// compute alone (a robot's showed a team worker's, its Wi-Fi counted: 276
// samples/s where it computes 31,830), and no team went anywhere.
TEST_F(PlanCommandTest, AJobOfOneIsPlacedAsOneAgent) {
  Printed plan = Plan(Team("alone", ""), site_, /*json=*/true);
  ASSERT_EQ(plan.code, 0) << plan.err;
  const nlohmann::json doc = nlohmann::json::parse(plan.out);
  EXPECT_TRUE(doc["workers"].empty());
  EXPECT_EQ(doc["coordinator"], "gateway");
  double robot1 = 0, robot2 = 0;
  for (const auto& node : doc["nodes"]) {
    if (node["node"] == "robot-1") robot1 = node["predictedSamplesPerSecond"];
    if (node["node"] == "robot-2") robot2 = node["predictedSamplesPerSecond"];
  }
  EXPECT_GT(robot1, 0);
  EXPECT_EQ(robot1, robot2) << "the two robots compute alike; their links (30.5 and 31.9 Mbit/s) do not count";
  Printed table = Plan(Team("alone", ""), site_, /*json=*/false);
  EXPECT_NE(table.out.find("unused: the job went where a step is predicted as quick or quicker"), std::string::npos)
      << table.out;
  EXPECT_EQ(table.out.find("the team went"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("samples/s for the job;"), std::string::npos) << table.out;
  // With an energy budget it went by joules a sample, and says so.
  Printed thrifty = Plan(Team("thrifty", "  budget: {energyJoules: 500}\n"), site_, /*json=*/false);
  ASSERT_EQ(thrifty.code, 0) << thrifty.err;
  EXPECT_NE(thrifty.out.find("unused: the job, which has an energy budget, went where a sample is predicted to cost "
                             "as few mJ or fewer"),
            std::string::npos)
      << thrifty.out;
}

TEST_F(PlanCommandTest, BadInputExitsTwoNamingTheFile) {
  Printed no_site = Plan(kSource / "examples/robot-team.yaml", "", false);
  EXPECT_EQ(no_site.code, 2);
  EXPECT_NE(no_site.err.find("which site? --nodes PROFILE.yaml or --kubeconfig FILE"), std::string::npos) << no_site.err;

  Printed missing_site = Plan(kSource / "examples/robot-team.yaml", dir_ / "absent.yaml", false);
  EXPECT_EQ(missing_site.code, 2);
  EXPECT_NE(missing_site.err.find("absent.yaml"), std::string::npos) << missing_site.err;

  PlanOptions no_cluster;
  no_cluster.manifest_path = (kSource / "examples/robot-team.yaml").string();
  no_cluster.kubeconfig = (dir_ / "absent-kubeconfig").string();
  std::ostringstream out, err;
  EXPECT_EQ(PrintPlan(no_cluster, out, err), 2);
  EXPECT_NE(err.str().find("--kubeconfig " + no_cluster.kubeconfig), std::string::npos) << err.str();

  Printed bad_job = Plan(Team("bad", "  template: {resources: {requests: {cpu: lots}}}\n"), site_, false);
  EXPECT_EQ(bad_job.code, 2);
  EXPECT_NE(bad_job.err.find("spec.template.resources.requests.cpu"), std::string::npos) << bad_job.err;
}

}  // namespace
}  // namespace edgetrain::cli

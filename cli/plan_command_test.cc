#include "cli/plan_command.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = EDGETRAIN_SOURCE_DIR;

struct Printed {
  int code;
  std::string out, err;
};

Printed Plan(const fs::path& manifest, const fs::path& nodes, bool json) {
  std::ostringstream out, err;
  PlanOptions options;
  options.manifest_path = manifest.string();
  options.nodes_path = nodes.string();
  options.json = json;
  const int code = PrintPlan(options, out, err);
  return {code, out.str(), err.str()};
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
};

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

TEST_F(PlanCommandTest, AJobThatDoesNotFitExitsOneAndSaysWhy) {
  Printed plan = Plan(Team("picky", "  parallelism: {workers: 2}\n  placement:\n    nodeSelector: {edgetrain.dev/site: moon}\n"),
                      site_, /*json=*/false);
  EXPECT_EQ(plan.code, 1);
  EXPECT_NE(plan.err.find("error: picky does not fit edge-site: 0/7 nodes"), std::string::npos) << plan.err;
  EXPECT_NE(plan.err.find("nodeSelector"), std::string::npos) << plan.err;
  EXPECT_NE(plan.out.find("NODE"), std::string::npos) << "the verdicts are shown even so";
}

TEST_F(PlanCommandTest, AJobOfOneIsPlacedAsOneAgent) {
  Printed plan = Plan(Team("alone", ""), site_, /*json=*/true);
  ASSERT_EQ(plan.code, 0) << plan.err;
  const nlohmann::json doc = nlohmann::json::parse(plan.out);
  EXPECT_TRUE(doc["workers"].empty());
  EXPECT_FALSE(doc["coordinator"].get<std::string>().empty());
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

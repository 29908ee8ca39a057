#include "api/team_request.h"

#include <gtest/gtest.h>

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;

// A manifest with `spec` merged over a valid two-worker job.
TrainingJobManifest Job(const char* spec_patch) {
  Json m = Json::parse(R"({
    "apiVersion": "edgetrain.dev/v1alpha1", "kind": "TrainingJob",
    "metadata": {"name": "team"},
    "spec": {"model": {"name": "mlp"}, "data": {"dataset": "digits"}, "parallelism": {"workers": 2}}
  })");
  m["spec"].merge_patch(Json::parse(spec_patch));
  StatusOr<TrainingJobManifest> job = ParseTrainingJob(m.dump(), "team.yaml");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return *job;
}

TEST(TeamRequestTest, ATemplateThatSaysNothingGetsTheDefaults) {
  StatusOr<TeamRequest> request = TeamRequestOf(Job("{}"), PodDefaults{});
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  EXPECT_FALSE(request->solo);
  EXPECT_EQ(request->workers, 2);
  EXPECT_EQ(request->worker_requests.cpu_millis, 1000);
  EXPECT_EQ(request->worker_requests.memory_bytes, int64_t{512} << 20);
  EXPECT_EQ(request->worker_requests.pods, 1);
  EXPECT_EQ(request->coordinator_requests.cpu_millis, 1000);
  EXPECT_TRUE(request->allow_transient);
  EXPECT_FALSE(request->minimise_energy);
  EXPECT_TRUE(request->node_selector.empty());
  EXPECT_TRUE(request->tolerations.empty());
  EXPECT_EQ(request->architectures, (std::vector<std::string>{"amd64", "arm64"}));
  EXPECT_GT(request->step.multiply_adds, 0);
  EXPECT_EQ(request->step.batch_size, 64);
}

TEST(TeamRequestTest, ReadsRequestsSelectorTolerationsAndTheEnergyBudget) {
  StatusOr<TeamRequest> request = TeamRequestOf(Job(R"({
    "template": {"resources": {"requests": {"cpu": "250m", "memory": "1Gi"}},
                 "tolerations": [{"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true",
                                  "effect": "NoSchedule"},
                                 {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                  "effect": "NoExecute", "tolerationSeconds": 30}]},
    "placement": {"nodeSelector": {"edgetrain.dev/site": "north"}, "allowTransient": false},
    "budget": {"energyJoules": 5000}
  })"),
                                                PodDefaults{});
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  EXPECT_EQ(request->worker_requests.cpu_millis, 250);
  EXPECT_EQ(request->worker_requests.memory_bytes, int64_t{1} << 30);
  EXPECT_EQ(request->coordinator_requests.memory_bytes, int64_t{1} << 30);
  EXPECT_FALSE(request->allow_transient);
  EXPECT_TRUE(request->minimise_energy);
  EXPECT_EQ(request->node_selector.at("edgetrain.dev/site"), "north");
  ASSERT_EQ(request->tolerations.size(), 2u);
  EXPECT_EQ(request->tolerations[0].key, "cloud.google.com/gke-spot");
  EXPECT_EQ(request->tolerations[0].effect, "NoSchedule");
  EXPECT_FALSE(request->tolerations[0].seconds.has_value());
  EXPECT_EQ(request->tolerations[1].op, "Exists");
  EXPECT_EQ(request->tolerations[1].seconds, 30);
}

TEST(TeamRequestTest, OneWorkerIsAJobOfOne) {
  StatusOr<TeamRequest> request = TeamRequestOf(Job(R"({"parallelism": {"workers": 1}})"), PodDefaults{});
  ASSERT_TRUE(request.ok());
  EXPECT_TRUE(request->solo);
  EXPECT_EQ(request->workers, 0);
}

TEST(TeamRequestTest, ATorchScriptModuleIsCostedByItsMeasuredSize) {
  const TrainingJobManifest job = Job(R"({"model": {"name": null, "torchscript": {"path": "/m.pt"}}})");
  StatusOr<TeamRequest> unknown = TeamRequestOf(job, PodDefaults{});
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->step.parameters, 0);
  StatusOr<TeamRequest> measured = TeamRequestOf(job, PodDefaults{}, ModelSize{5000, 4800});
  ASSERT_TRUE(measured.ok());
  EXPECT_EQ(measured->step.parameters, 5000);
  EXPECT_EQ(measured->step.multiply_adds, 4800);
  EXPECT_GT(measured->step.bits_per_exchange, 0);
}

// A GPU given as a limit alone, as NVIDIA documents it: the Pod API makes it
// the request too, and placement counts it so; a CPU limit alone likewise.
TEST(TeamRequestTest, AGpuAskedForIsCountedBesideCpuAndMemory) {
  StatusOr<TeamRequest> request = TeamRequestOf(
      Job(R"({"template": {"resources": {"limits": {"cpu": "500m", "nvidia.com/gpu": 1, "ephemeral-storage": "1Gi"}}}})"),
      PodDefaults{});
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  EXPECT_EQ(request->worker_requests.cpu_millis, 500);
  EXPECT_EQ(request->worker_requests.others.size(), 1u) << "ephemeral storage is not counted";
  EXPECT_EQ(request->worker_requests.Other("nvidia.com/gpu"), 1000);
  EXPECT_EQ(request->coordinator_requests.Other("nvidia.com/gpu"), 1000);
}

// The schema refuses such a request now (TrainingJobTest); an object stored
// before it was is still named by its field, not taken for a default.
TEST(TeamRequestTest, ARequestThatIsNoQuantityNamesItsField) {
  TrainingJobManifest stored_before = Job("{}");
  stored_before.object["spec"]["template"]["resources"]["requests"]["memory"] = "lots";
  StatusOr<TeamRequest> request = TeamRequestOf(stored_before, PodDefaults{});
  ASSERT_FALSE(request.ok());
  EXPECT_EQ(request.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(request.status().message().find("spec.template.resources.requests.memory"), std::string::npos)
      << request.status().message();
}

}  // namespace
}  // namespace edgetrain::api

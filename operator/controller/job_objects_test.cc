#include "operator/controller/job_objects.h"

#include <map>

#include <gtest/gtest.h>

#include "operator/controller/job_labels.h"

namespace edgetrain::operator_ {
namespace {

JobObject Job(const char* spec_patch) {
  nlohmann::json m = {{"apiVersion", "edgetrain.dev/v1alpha1"},
                      {"kind", "TrainingJob"},
                      {"metadata", {{"name", "team"}, {"namespace", "robots"}}},
                      {"spec", {{"model", {{"name", "mlp"}}}, {"data", {{"dataset", "digits"}}}}}};
  m["spec"].merge_patch(nlohmann::json::parse(spec_patch));
  StatusOr<api::TrainingJobManifest> manifest = api::ParseTrainingJob(m.dump(), "team");
  EXPECT_TRUE(manifest.ok()) << manifest.status().ToString();
  return {m, *manifest, "robots", "team", "uid-7"};
}

TeamPlacement Placed(std::string coordinator, std::vector<std::string> workers) {
  TeamPlacement p;
  p.placed = true;
  p.coordinator_node = std::move(coordinator);
  p.worker_nodes = std::move(workers);
  return p;
}

std::vector<std::string> Args(const Json& pod) { return pod["spec"]["containers"][0]["args"]; }

bool Has(const std::vector<std::string>& args, const std::string& arg) {
  return std::find(args.begin(), args.end(), arg) != args.end();
}

TEST(JobObjectsTest, ATeamIsACoordinatorAndAPodPerWorkerBoundWhereItWasPlaced) {
  const JobObject job = Job(R"({"parallelism": {"workers": 2},
                                "template": {"tolerations": [{"key": "cloud.google.com/gke-spot", "operator": "Exists"}]}})");
  NodeView robot;
  robot.name = "robot-1";
  robot.emulated_slowdown = 2;
  robot.power.compute_watts = 9;
  const TeamPlacement placement = Placed("gateway", {"gateway", "robot-1"});
  const JobPlan plan = PlanOf(job, placement, {robot}, 3);
  ASSERT_EQ(plan.workers.size(), 2u);
  EXPECT_EQ(plan.workers[1].node, "robot-1");
  EXPECT_DOUBLE_EQ(plan.workers[1].slowdown, 2) << "an emulated node's slowdown reaches its agent";
  EXPECT_DOUBLE_EQ(plan.workers[1].power.compute_watts, 9);
  EXPECT_EQ(plan.output_dir, "/models/team");
  EXPECT_EQ(plan.generation, 3);

  const std::vector<Json> pods = PodsFor(job, plan, {placement.coordinator_node}, PodOptions{});
  ASSERT_EQ(pods.size(), 3u);
  const Json& coordinator = pods[0];
  EXPECT_EQ(coordinator["metadata"]["name"], "team-coordinator");
  EXPECT_EQ(coordinator["metadata"]["namespace"], "robots");
  EXPECT_EQ(coordinator["metadata"]["labels"][kGenerationLabel], "3");
  EXPECT_EQ(coordinator["metadata"]["ownerReferences"][0]["uid"], "uid-7");
  EXPECT_TRUE(coordinator["metadata"]["ownerReferences"][0]["controller"]);
  EXPECT_EQ(coordinator["spec"]["nodeName"], "gateway");
  EXPECT_EQ(coordinator["spec"]["hostname"], "coordinator");
  EXPECT_EQ(coordinator["spec"]["subdomain"], "team");
  EXPECT_TRUE(Has(Args(coordinator), "--role=coordinator"));
  EXPECT_TRUE(Has(Args(coordinator), "--world=2"));
  EXPECT_TRUE(Has(Args(coordinator), "--listen=$(POD_IP):7000"));
  EXPECT_EQ(coordinator["spec"]["volumes"][2]["emptyDir"], Json::object()) << "no output volume named";

  const Json& worker = pods[2];
  EXPECT_EQ(worker["metadata"]["name"], "team-worker-1-g3") << "named for the generation its slot was given at";
  EXPECT_EQ(worker["spec"]["nodeName"], "robot-1");
  EXPECT_TRUE(Has(Args(worker), "--coordinator=coordinator.team:7000"));
  EXPECT_TRUE(Has(Args(worker), "--rank=1"));
  EXPECT_EQ(worker["spec"]["volumes"].size(), 2u) << "only the coordinator writes output";
  EXPECT_EQ(worker["spec"]["tolerations"][0]["key"], "cloud.google.com/gke-spot");
  // A silent node is waited out for nodeLossGrace (the CRD's 120s) before eviction.
  EXPECT_EQ(worker["spec"]["tolerations"][1],
            (Json{{"key", "node.kubernetes.io/unreachable"}, {"operator", "Exists"}, {"effect", "NoExecute"},
                  {"tolerationSeconds", 120}}));
  EXPECT_EQ(worker["spec"]["tolerations"][2]["key"], "node.kubernetes.io/not-ready");
  EXPECT_FALSE(worker["spec"].contains("hostname"));

  for (const Json& pod : pods) {
    const Json& container = pod["spec"]["containers"][0];
    // The team's agents talk over mutual TLS with the job's credentials, which
    // only their own group may read.
    EXPECT_TRUE(Has(Args(pod), "--tls-dir=/var/run/secrets/edgetrain.dev/tls"));
    EXPECT_TRUE(Has(Args(pod), "--tls-reload=1m"));
    // A head lost with its node is heard of by its stages after two of these.
    EXPECT_TRUE(Has(Args(pod), "--keepalive=10s"));
    EXPECT_EQ(pod["spec"]["volumes"][1],
              (Json{{"name", "tls"}, {"secret", {{"secretName", "team-tls"}, {"defaultMode", 0440}}}}));
    EXPECT_EQ(container["volumeMounts"][1],
              (Json{{"name", "tls"}, {"mountPath", "/var/run/secrets/edgetrain.dev/tls"}, {"readOnly", true}}));
    EXPECT_EQ(container["image"], "edgetrain/agent:dev");
    EXPECT_EQ(container["resources"]["requests"]["cpu"], "1");
    EXPECT_EQ(container["securityContext"]["capabilities"]["drop"], Json::array({"ALL"}));
    EXPECT_TRUE(container["securityContext"]["readOnlyRootFilesystem"]);
    EXPECT_FALSE(container["securityContext"]["allowPrivilegeEscalation"]);
    EXPECT_EQ(container["readinessProbe"]["httpGet"]["path"], "/healthz");
    EXPECT_EQ(container["readinessProbe"]["initialDelaySeconds"], 3) << "not before the agent can answer";
    EXPECT_TRUE(pod["spec"]["securityContext"]["runAsNonRoot"]);
    EXPECT_EQ(pod["spec"]["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  }
}

TEST(JobObjectsTest, TheServiceIsHeadlessAndThePlanIsWhatAgentsRead) {
  const JobObject job = Job(R"({"parallelism": {"workers": 2}})");
  const Json service = ServiceFor(job);
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
  EXPECT_TRUE(service["spec"]["publishNotReadyAddresses"]);
  EXPECT_EQ(service["spec"]["selector"][kRoleLabel], "coordinator");

  const TeamPlacement placement = Placed("gateway", {"robot-1", "robot-2"});
  const JobPlan plan = PlanOf(job, placement, {}, 1);
  const Json map = PlanConfigMapFor(job, plan, {"gateway"});
  EXPECT_EQ(map["metadata"]["annotations"][kCoordinatorNodeAnnotation], "gateway");
  EXPECT_EQ(map["metadata"]["name"], "team-plan");
  StatusOr<JobPlan> decoded = DecodeJobPlan(map["data"]["plan.json"].get<std::string>());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->job, "team");
  EXPECT_EQ(decoded->workers.size(), 2u);
}

TEST(JobObjectsTest, AJobOfOneIsOneAgentAndItsOutputVolumeAndImageAreTheManifests) {
  const JobObject job = Job(R"({"output": {"path": "/out/run-1", "volume": {"persistentVolumeClaim": {"claimName": "models"}}},
                                "template": {"image": "registry.local/edgetrain/agent:1.2",
                                             "resources": {"requests": {"cpu": "2"}}}})");
  const TeamPlacement placement = Placed("jetson-1", {});
  NodeView jetson;
  jetson.name = "jetson-1";
  jetson.emulated_slowdown = 3;
  jetson.power = {5, 3, 2};
  const JobPlan plan = PlanOf(job, placement, {jetson}, 1);
  EXPECT_TRUE(plan.workers.empty());
  EXPECT_EQ(plan.output_dir, "/out/run-1");
  // Its agent computes on the node, and draws the node's watts (it had been
  // charged the defaults' 15: a new user's trial).
  EXPECT_DOUBLE_EQ(plan.slowdown, 3);
  EXPECT_DOUBLE_EQ(plan.power.compute_watts, 5);
  EXPECT_DOUBLE_EQ(plan.power.idle_watts, 2);
  const std::vector<Json> pods = PodsFor(job, plan, {placement.coordinator_node}, PodOptions{});
  ASSERT_EQ(pods.size(), 1u);
  const Json& pod = pods[0];
  EXPECT_TRUE(Has(Args(pod), "--world=1"));
  for (const std::string& arg : Args(pod)) {
    EXPECT_NE(arg.rfind("--listen", 0), 0u) << "no team to listen for";
    EXPECT_NE(arg.rfind("--tls", 0), 0u) << "nobody to talk to: no credentials";
  }
  for (const Json& volume : pod["spec"]["volumes"]) EXPECT_NE(volume["name"], "tls");
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "registry.local/edgetrain/agent:1.2");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"], "2");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["requests"]["memory"], "512Mi");
  EXPECT_EQ(pod["spec"]["volumes"][1]["persistentVolumeClaim"]["claimName"], "models");
  EXPECT_EQ(pod["spec"]["containers"][0]["volumeMounts"][1]["mountPath"], "/out/run-1");
}

// A user's own model and data: every agent mounts their volume read-only,
// where the plan's spec (what the agents read) says the files are.
TEST(JobObjectsTest, OwnFilesAreMountedInEveryPodWhereThePlansPathsPoint) {
  JobObject job = Job(R"({"parallelism": {"workers": 2},
      "model": {"name": null, "torchscript": {"path": "net.pt", "configMap": "small-net"}},
      "data": {"dataset": null, "format": "csv", "inputShape": [4], "classes": 3,
               "volume": {"persistentVolumeClaim": {"claimName": "robot-frames"}},
               "train": {"path": "frames/train.csv"}, "test": {"path": "frames/test.csv"}}})");
  ASSERT_TRUE(api::ResolveClusterPaths(job.manifest).ok());  // as the reconciler reads a job
  const TeamPlacement placement = Placed("gateway", {"robot-1", "robot-2"});
  const JobPlan plan = PlanOf(job, placement, {}, 1);
  auto spec = DecodeJobSpec(plan.spec_json);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->model.torchscript_path, "/model/net.pt");
  EXPECT_EQ(spec->data.files->train.path, "/data/frames/train.csv");

  const std::vector<Json> pods = PodsFor(job, plan, {placement.coordinator_node}, PodOptions{});
  ASSERT_EQ(pods.size(), 3u);
  for (const Json& pod : pods) {
    std::map<std::string, Json> volumes, mounts;
    for (const Json& v : pod["spec"]["volumes"]) volumes[v["name"]] = v;
    for (const Json& m : pod["spec"]["containers"][0]["volumeMounts"]) mounts[m["name"]] = m;
    ASSERT_TRUE(volumes.count("data") && volumes.count("model")) << pod["spec"]["volumes"].dump();
    EXPECT_EQ(volumes["data"]["persistentVolumeClaim"]["claimName"], "robot-frames");
    EXPECT_EQ(volumes["data"]["persistentVolumeClaim"]["readOnly"], true);
    EXPECT_EQ(volumes["model"]["configMap"]["name"], "small-net");
    EXPECT_EQ(mounts["data"]["mountPath"], "/data");
    EXPECT_EQ(mounts["model"]["mountPath"], "/model");
    EXPECT_EQ(mounts["data"]["readOnly"], true);
    EXPECT_EQ(mounts["model"]["readOnly"], true);
  }

  // The module's check: the same files, the agent's check-model command on
  // the spec as the pods see it, left to the scheduler within the job's
  // selector, never restarted.
  job = Job(R"({"model": {"name": null, "torchscript": {"path": "net.pt"}},
                "data": {"volume": {"configMap": {"name": "files"}}},
                "placement": {"nodeSelector": {"edgetrain.dev/site": "yard"}},
                "template": {"tolerations": [{"key": "robot", "operator": "Exists"}]}})");
  ASSERT_TRUE(api::ResolveClusterPaths(job.manifest).ok());
  const Json check = ModelCheckPodFor(job, PodOptions{});
  EXPECT_EQ(ModelCheckOf(check).size(), 16u) << "a digest of its spec";
  PodOptions other_image;
  other_image.default_image = "edgetrain/agent:fixed";
  EXPECT_NE(ModelCheckOf(ModelCheckPodFor(job, other_image)), ModelCheckOf(check)) << "another check";
  EXPECT_EQ(check["metadata"]["name"], "team-model-check");
  EXPECT_EQ(check["metadata"]["labels"]["edgetrain.dev/role"], "model-check");
  EXPECT_EQ(check["metadata"]["labels"]["edgetrain.dev/job"], "team");
  EXPECT_EQ(check["metadata"]["ownerReferences"][0]["kind"], "TrainingJob");
  EXPECT_FALSE(check["spec"].contains("nodeName"));
  EXPECT_EQ(check["spec"]["nodeSelector"]["edgetrain.dev/site"], "yard");
  EXPECT_EQ(check["spec"]["tolerations"][0]["key"], "robot");
  EXPECT_EQ(check["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(check["spec"]["volumes"][0]["configMap"]["name"], "files");
  const std::vector<std::string> args = Args(check);
  ASSERT_GE(args.size(), 3u);
  EXPECT_EQ(args[0], "check-model");
  EXPECT_NE(args[1].find(R"("path":"/data/net.pt")"), std::string::npos) << args[1];
  EXPECT_EQ(args[2].rfind("--data={", 0), 0u) << args[2];
  EXPECT_TRUE(check["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"]);
}

}  // namespace
}  // namespace edgetrain::operator_

#include "operator/controller/reconciler.h"

#include <algorithm>
#include <sstream>

#include <gtest/gtest.h>

#include "api/crd.h"
#include "api/job_conditions.h"
#include "api/structural_schema.h"
#include "operator/controller/job_status.h"
#include "operator/controller/testing/cluster_fixtures.h"
#include "operator/kube/observed_kube_client.h"
#include "operator/kube/testing/fake_kube_client.h"

namespace edgetrain::operator_ {
namespace {

using kube::testing::FakeKubeClient;
using testing::ANode;

class TableOfProgress final : public ProgressSource {
 public:
  StatusOr<Json> Progress(const std::string& ip, int) override {
    auto it = by_ip.find(ip);
    if (it == by_ip.end()) return UnavailableError("nothing at " + ip);
    return it->second;
  }
  std::map<std::string, Json> by_ip;
};

Json TrainingJob(const std::string& name, const Json& spec_patch = Json::object(),
                 const std::string& created = "2026-11-22T10:00:00Z") {
  Json job = {{"apiVersion", "edgetrain.dev/v1alpha1"},
              {"kind", "TrainingJob"},
              {"metadata", {{"name", name}, {"namespace", "default"}, {"creationTimestamp", created}}},
              {"spec",
               {{"model", {{"name", "mlp"}, {"hidden", {32}}}},
                {"data", {{"dataset", "digits"}}},
                {"parallelism", {{"workers", 2}}},
                {"template", {{"resources", {{"requests", {{"cpu", "1"}, {"memory", "256Mi"}}}}}}}}}};
  job["spec"].merge_patch(spec_patch);
  return job;
}

// The cluster as the reconciler sees it: the fake API, and caches a test fills
// the way the informers would.
class ReconcilerTest : public ::testing::Test {
 protected:
  // The defaults, but for waits a test tells from the defaults' by its value.
  static ReconcilerOptions Options() {
    ReconcilerOptions options;
    options.recheck_after = std::chrono::milliseconds(250);
    return options;
  }

  ReconcilerTest()
      : events_(api_, [this] { return now_; }, log_),
        reconciler_(api_, jobs_, pods_, nodes_, progress_, events_, log_, [this] { return now_; }, Options()) {
    pods_.AddIndex(kPodsByJob, PodsByJobIndex());
  }

  void AddNode(const Json& node) {
    nodes_.Put(node);
    ASSERT_TRUE(api_.Create(kube::kNodes, "", node).ok());
  }
  std::string Submit(const Json& job) {
    StatusOr<Json> made = api_.Create(kube::kTrainingJobs, "default", job);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    jobs_.Put(*made);
    return "default/" + job["metadata"]["name"].get<std::string>();
  }
  // What the pod informer would hold, each pod changed by `kubelet` first.
  void SyncPods(const std::function<void(Json&)>& kubelet = [](Json&) {}) {
    std::vector<Json> pods = api_.All(kube::kPods);
    for (Json& pod : pods) {
      kubelet(pod);
      StatusOr<Json> stored = api_.Get(kube::kPods, "default", pod["metadata"]["name"]);
      if (stored.ok() && *stored != pod) {
        Json with_status = *stored;
        with_status["status"] = pod["status"];
        (void)api_.UpdateStatus(kube::kPods, "default", with_status);
      }
    }
    pods_.Replace(api_.All(kube::kPods));
  }
  // Pod `name`'s delete asked for at `asked` with a grace of 30 s, as the
  // API server records it: deletionTimestamp is when the grace runs out.
  void DeletePodAt(const std::string& name, kube::WallTime asked) {
    std::vector<Json> pods = api_.All(kube::kPods);
    for (Json& pod : pods) {
      if (pod["metadata"]["name"] != name) continue;
      pod["metadata"]["deletionTimestamp"] = kube::FormatKubeTime(asked + std::chrono::seconds(30));
      pod["metadata"]["deletionGracePeriodSeconds"] = 30;
    }
    pods_.Replace(pods);
  }
  // Pods evicted as a drain evicts them: being deleted, their grace running.
  void EvictPods(const std::function<bool(const Json&)>& which) {
    std::vector<Json> pods = api_.All(kube::kPods);
    for (Json& pod : pods) {
      if (which(pod)) pod["metadata"]["deletionTimestamp"] = "2026-11-29T12:00:30Z";
    }
    pods_.Replace(pods);
  }
  ReconcileOutcome Reconcile(const std::string& key) {
    StatusOr<ReconcileOutcome> outcome = reconciler_.Reconcile(key);
    EXPECT_TRUE(outcome.ok()) << outcome.status().ToString();
    return outcome.ok() ? *outcome : ReconcileOutcome{};
  }
  Json Job(const std::string& name) { return *api_.Get(kube::kTrainingJobs, "default", name); }
  std::vector<std::string> PodNodes() {
    std::vector<std::string> out;
    for (const Json& pod : api_.All(kube::kPods)) {
      out.push_back(pod["metadata"]["name"].get<std::string>() + "@" + pod["spec"]["nodeName"].get<std::string>());
    }
    return out;
  }
  // Job `name`, a worker on the gateway (added first, once), run to its
  // end: its key.
  std::string AJobThatSucceeded(const std::string& name, const Json& spec_patch = Json::object()) {
    if (!api_.Get(kube::kNodes, "", "gateway").ok()) AddNode(ANode("gateway"));
    Json spec = {{"parallelism", {{"workers", 1}}}};
    spec.update(spec_patch);
    const std::string key = Submit(TrainingJob(name, spec));
    Reconcile(key);
    jobs_.Put(Job(name));
    SyncPods([](Json& pod) {
      pod["status"] = {{"phase", "Succeeded"},
                       {"containerStatuses", {{{"name", "agent"}, {"state", {{"terminated", {{"exitCode", 0}}}}}}}}};
    });
    Reconcile(key);
    jobs_.Put(Job(name));
    return key;
  }
  // A gateway and a robot, and a one-worker team placed on them (its pods
  // made, not yet synced back): its key.
  std::string APlacedTeamOnTwoNodes(const Json& spec_patch = Json::object()) {
    AddNode(ANode("gateway"));
    AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
    const std::string key = Submit(TrainingJob("team", spec_patch));
    Reconcile(key);
    jobs_.Put(Job("team"));
    return key;
  }
  // Team "team"'s coordinator says worker 1 has been silent `seconds`, worker 0 not.
  void ReportWorkerOneSilent(double seconds) {
    const std::string ip = (*api_.Get(kube::kPods, "default", "team-coordinator"))["status"]["podIP"];
    progress_.by_ip[ip] = {{"state", "training"},
                           {"iteration", 300},
                           {"samples", 19200},
                           {"workers", {{{"rank", 0}, {"batchSize", 64}, {"silentSeconds", 0.0}},
                                        {{"rank", 1}, {"batchSize", 64}, {"silentSeconds", seconds}}}}};
  }
  // The silentSince that job "team"'s status gives worker `name`, or "".
  std::string SilentSince(const std::string& name) {
    const Json job = Job("team");  // held: a range over a temporary's member dangles
    for (const Json& w : job["status"]["workers"]) {
      if (w.value("name", "") == name) return w.value("silentSince", "");
    }
    return "";
  }
  // A gateway and two robots, and a two-worker team on them that runs: its key.
  // Job "team" placed on three nodes by a pass whose status was never
  // stored: the status is `stored` (what the pass before had written).
  std::string ATeamPlacedUnderAStatusNeverStored(const Json& stored) {
    AddNode(ANode("gateway"));
    AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
    AddNode(ANode("robot-2").Scoring(0.5).WithLink(20));
    const std::string key = Submit(TrainingJob("team"));
    Reconcile(key);
    Json unsaid = Job("team");
    unsaid["status"] = stored;
    EXPECT_TRUE(api_.UpdateStatus(kube::kTrainingJobs, "default", unsaid).ok());
    jobs_.Put(Job("team"));
    return key;
  }
  std::string ARunningTeamOnThreeNodes(const Json& spec_patch) {
    AddNode(ANode("gateway"));
    AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
    AddNode(ANode("robot-2").Scoring(0.5).WithLink(20));
    const std::string key = Submit(TrainingJob("team", spec_patch));
    Reconcile(key);
    jobs_.Put(Job("team"));
    SyncPods(Run);
    Reconcile(key);
    jobs_.Put(Job("team"));
    EXPECT_EQ(Job("team")["status"]["phase"], api::phase::kRunning);
    return key;
  }
  // Team "team"'s robot-1 pre-empted: worker 1's pod evicted, the node gone not ready.
  void WorkerOneEvicted() {
    nodes_.Put(ANode("robot-1").Scoring(0.5).WithLink(30).NotReady());
    SyncPods([](Json& pod) {
      if (pod["metadata"]["name"] == "team-worker-1") pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
    });
  }
  // Team "team"'s worker 1 evicted from robot-1, gone not ready: the pod made
  // in its place.
  StatusOr<Json> WorkerOneEvictedAndReplaced(const std::string& key) {
    WorkerOneEvicted();
    jobs_.Put(Job("team"));
    EXPECT_EQ(Reconcile(key).replan, api::reason::kWorkerLost);
    return api_.Get(kube::kPods, "default", "team-worker-1-g2");
  }
  // spec.suspend of job "team" set to `suspend`, and reconciled once.
  void SetSuspend(const std::string& key, bool suspend) {
    Json job = Job("team");
    job["spec"]["suspend"] = suspend;
    jobs_.Put(job);
    Reconcile(key);
    jobs_.Put(Job("team"));
  }
  // Team "team"'s coordinator pod as if made `ago` (placed anew since a read).
  void CoordinatorPodMadeAgo(Duration ago) {
    std::vector<Json> pods = api_.All(kube::kPods);
    for (Json& pod : pods) {
      if (pod["metadata"]["name"] == "team-coordinator") {
        pod["metadata"]["creationTimestamp"] = kube::FormatKubeTime(now_ - ago);
      }
    }
    pods_.Replace(pods);
  }
  // The team's coordinator answers /progress once (iteration 300), and is
  // read; then it answers no more (its node dead, its link cut).
  void ProgressReadOnceThenSilent(const std::string& key) {
    const std::string ip = (*api_.Get(kube::kPods, "default", "team-coordinator"))["status"]["podIP"];
    progress_.by_ip[ip] = {{"state", "training"}, {"iteration", 300}, {"samples", 19200}};
    Reconcile(key);
    jobs_.Put(Job("team"));
    progress_.by_ip.erase(ip);
  }
  // The pods on the coordinator's node, gateway, evicted (a re-plan for
  // the lost coordinator), then, 2 s later, its replacement's running: what
  // the recovery counted.
  std::optional<Duration> CoordinatorEvictedThenReplaced(const std::string& key) {
    SyncPods([](Json& pod) {
      if (pod["spec"]["nodeName"] == "gateway") pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
    });
    EXPECT_EQ(Reconcile(key).replan, api::reason::kCoordinatorLost);
    jobs_.Put(Job("team"));
    now_ += std::chrono::seconds(2);
    SyncPods([](Json& pod) {
      if (pod["metadata"]["name"].get<std::string>().ends_with("-g2")) Run(pod);
    });
    return Reconcile(key).recovered_after;
  }
  // The pod as the kubelet leaves it when its agent exits 0 with `result`.
  static void Succeed(Json& pod, const Json& result) {
    pod["status"] = {{"phase", "Succeeded"},
                     {"containerStatuses",
                      {{{"name", "agent"},
                        {"state", {{"terminated", {{"exitCode", 0}, {"message", result.dump()}}}}}}}}};
  }
  static void Run(Json& pod) {
    static int address = 10;
    pod["status"] = {{"phase", "Running"},
                     {"podIP", "10.0.0." + std::to_string(address++)},
                     {"containerStatuses", {{{"name", "agent"}, {"restartCount", 0}, {"state", {{"running", Json::object()}}}}}}};
  }

  FakeKubeClient api_;
  kube::Store jobs_, pods_, nodes_;
  TableOfProgress progress_;
  std::ostringstream log_text_;
  LineLog log_{log_text_};
  kube::WallTime now_ = std::chrono::system_clock::from_time_t(1795374113);
  EventRecorder events_;
  Reconciler reconciler_;
};

// A user's TorchScript module, in the volume the job names.
const Json kOwnModule = {{"model", {{"name", nullptr}, {"hidden", nullptr}, {"torchscript", {{"path", "net.pt"}}}}},
                         {"data", {{"volume", {{"configMap", {{"name", "files"}}}}}}}};

// The check pod as the kubelet leaves it when its agent exits `code` with `message`.
std::function<void(Json&)> CheckEnds(int code, const std::string& message) {
  return [=](Json& pod) {
    if (pod["metadata"]["name"].get<std::string>().find("-model-check") == std::string::npos) return;
    pod["status"] = {{"phase", code == 0 ? "Succeeded" : "Failed"},
                     {"containerStatuses",
                      {{{"name", "check"}, {"state", {{"terminated", {{"exitCode", code}, {"message", message}}}}}}}}};
  };
}

// A stream that names no rates on an emulated site: each worker goes to a node
// with a stream of its own and its plan slot carries that node's rate, which
// its agent draws at (agent.cc, as under edgetrain run --nodes).
TEST_F(ReconcilerTest, AStreamThatNamesNoRatesTakesEachWorkersFromItsNode) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").WithLink(30).Streaming(92));
  AddNode(ANode("camera").WithLink(30));
  AddNode(ANode("robot-2").WithLink(20).Streaming(22));
  const std::string key = Submit(TrainingJob("team", {{"data", {{"stream", Json::object()}}}}));
  Reconcile(key);
  std::vector<std::string> pods = PodNodes();
  std::sort(pods.begin(), pods.end());
  ASSERT_EQ(pods.size(), 3u) << Job("team")["status"].dump();
  EXPECT_EQ(pods[0], "team-coordinator@gateway");
  StatusOr<JobPlan> plan =
      DecodeJobPlan((*api_.Get(kube::kConfigMaps, "default", "team-plan"))["data"]["plan.json"].get<std::string>());
  ASSERT_TRUE(plan.ok());
  for (const WorkerSlot& slot : plan->workers) {
    ASSERT_TRUE(slot.stream.has_value()) << slot.node;
    EXPECT_DOUBLE_EQ(slot.stream->per_second, slot.node == "robot-1" ? 92 : 22) << slot.node;
    EXPECT_NE(slot.node, "camera");
  }

  // Held to a node with no stream: the job waits, saying why.
  const std::string dry = Submit(TrainingJob("dry", {{"data", {{"stream", Json::object()}}},
                                                     {"placement", {{"nodeSelector", {{"kubernetes.io/hostname", "camera"}}}}}}));
  Reconcile(dry);
  const Json waiting = Job("dry");
  const Json* placed = FindCondition(waiting["status"], "Placed");
  ASSERT_NE(placed, nullptr);
  EXPECT_NE(placed->value("message", "").find("no stream of its own"), std::string::npos) << *placed;
}

TEST_F(ReconcilerTest, ATorchScriptModuleIsCheckedInAPodOfItsOwnBeforeItsTeamIsPlaced) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  const std::string key = Submit(TrainingJob("team", kOwnModule));

  ReconcileOutcome first = Reconcile(key);
  EXPECT_EQ(first.placement, "");
  EXPECT_EQ(api_.Writes("create Pod"), 1);
  const Json check = *api_.Get(kube::kPods, "default", "team-model-check");
  EXPECT_EQ(check["spec"]["containers"][0]["args"][0], "check-model");
  Json job = Job("team");
  EXPECT_EQ(job["status"]["phase"], api::phase::kPending);
  EXPECT_EQ(FindCondition(job["status"], api::condition::kPlaced)->value("reason", ""), api::reason::kCheckingModel);

  // Running: nothing more is made.
  jobs_.Put(job);
  SyncPods(Run);
  api_.ResetWrites();
  Reconcile(key);
  EXPECT_EQ(api_.Writes("create Pod"), 0);

  // Measured: kept in the status first; on the next pass, which costs the
  // team by it, the check pod goes and the team is placed.
  jobs_.Put(Job("team"));
  SyncPods(CheckEnds(0, R"({"parameters":4810,"multiplyAdds":4700})"));
  api_.ResetWrites();
  EXPECT_EQ(Reconcile(key).placement, "");
  job = Job("team");
  EXPECT_EQ(job["status"]["modelCheck"]["module"], "/data/net.pt");
  EXPECT_EQ(job["status"]["modelCheck"]["parameters"], 4810);
  EXPECT_EQ(job["status"]["modelCheck"]["multiplyAdds"], 4700);
  EXPECT_EQ(job["status"]["modelCheck"]["check"], check["metadata"]["annotations"]["edgetrain.dev/model-check"]);
  EXPECT_EQ(api_.Writes("create Pod"), 0);
  jobs_.Put(job);
  EXPECT_EQ(Reconcile(key).placement, "placed");
  job = Job("team");
  EXPECT_FALSE(api_.Get(kube::kPods, "default", "team-model-check").ok());
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"team-coordinator@gateway", "team-worker-0@gateway",
                                                  "team-worker-1@robot-1"}));
  EXPECT_NE(log_text_.str().find("reason=ModelChecked the module /data/net.pt trains: 4810 parameters"),
            std::string::npos)
      << log_text_.str();
  // The plan's spec, what the agents read, is the pods' own path.
  const Json plan = *api_.Get(kube::kConfigMaps, "default", "team-plan");
  EXPECT_NE(plan["data"]["plan.json"].get<std::string>().find("/data/net.pt"), std::string::npos);

  // Checked once: the next reconciles make no check again.
  jobs_.Put(job);
  SyncPods();
  api_.ResetWrites();
  Reconcile(key);
  EXPECT_EQ(api_.Writes("create Pod"), 0);
}

// A module's ConfigMap that does not exist: the check pod waits to mount it,
// which its container's state does not say. The job read "Pending
// (ContainerCreating)" for 2.5 minutes, the cause in the pod's events alone (a
// user's trial). Said in the status while it lasts and in one Warning; once the
// ConfigMap is made, the check goes on as any.
TEST_F(ReconcilerTest, AModulesConfigMapThatDoesNotExistIsSaidWhileTheCheckWaitsForIt) {
  AddNode(ANode("gateway"));
  const Json module = {
      {"name", nullptr}, {"hidden", nullptr}, {"torchscript", {{"path", "net.pt"}, {"configMap", "no-such-cm"}}}};
  const std::string key = Submit(TrainingJob("team", {{"model", module}}));
  Reconcile(key);
  ASSERT_TRUE(api_.Get(kube::kPods, "default", "team-model-check").ok());
  for (int pass = 0; pass < 3; ++pass) {
    jobs_.Put(Job("team"));
    SyncPods();  // Pending: the kubelet waits to mount it
    Reconcile(key);
  }
  const std::string waiting = FindCondition(Job("team")["status"], api::condition::kPlaced)->value("message", "");
  EXPECT_EQ(waiting,
            "checking the module /model/net.pt (ConfigMap no-such-cm): pod team-model-check waits to mount the job's "
            "files: spec.model.torchscript.configMap's ConfigMap no-such-cm does not exist in namespace default")
      << waiting;
  int said = 0;
  for (const Json& e : api_.All(kube::kEvents)) {
    if (e.value("reason", "") != api::reason::kFilesMissing) continue;
    ++said;
    EXPECT_EQ(e.value("type", ""), "Warning");
    EXPECT_NE(e.value("message", "").find("pod team-model-check waits to mount the job's files"), std::string::npos)
        << e;
  }
  EXPECT_EQ(said, 1) << "said once while it lasts";

  ASSERT_TRUE(api_.Create(kube::kConfigMaps, "default",
                          {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "no-such-cm"}}}})
                  .ok());
  jobs_.Put(Job("team"));
  SyncPods(Run);
  Reconcile(key);
  const std::string checking = FindCondition(Job("team")["status"], api::condition::kPlaced)->value("message", "");
  EXPECT_EQ(checking.find("waits to mount"), std::string::npos) << checking;
}

// The same for a team's pods: every one waits for the job's data volume.
TEST_F(ReconcilerTest, ADataVolumeThatDoesNotExistIsSaidWhileTheTeamsPodsStart) {
  const std::string key = APlacedTeamOnTwoNodes(
      {{"data", {{"dataset", nullptr}, {"format", "csv"}, {"inputShape", {4}}, {"classes", 2},
                 {"volume", {{"persistentVolumeClaim", {{"claimName", "rows"}}}}},
                 {"train", {{"path", "train.csv"}}}, {"test", {{"path", "test.csv"}}}}}});
  SyncPods();
  Reconcile(key);
  const std::string message = FindCondition(Job("team")["status"], api::condition::kRunning)->value("message", "");
  EXPECT_NE(
      message.find("every pod: spec.data.volume's PersistentVolumeClaim rows does not exist in namespace default"),
      std::string::npos)
      << message;
  int said = 0;
  for (const Json& e : api_.All(kube::kEvents)) said += e.value("reason", "") == api::reason::kFilesMissing ? 1 : 0;
  EXPECT_EQ(said, 1);
}

TEST_F(ReconcilerTest, AModuleTheAgentRefusesMakesTheJobInvalidUntilItsSpecChanges) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  const std::string key = Submit(TrainingJob("team", kOwnModule));
  Reconcile(key);
  jobs_.Put(Job("team"));
  SyncPods(CheckEnds(2, R"({"error":"spec.model.torchscript: the module has no trainable parameters"})"));
  Reconcile(key);
  Json job = Job("team");
  EXPECT_EQ(job["status"]["phase"], api::phase::kFailed);
  const Json* invalid = FindCondition(job["status"], api::condition::kInvalid);
  ASSERT_NE(invalid, nullptr);
  EXPECT_EQ(invalid->value("reason", ""), api::reason::kInvalidModel);
  EXPECT_EQ(invalid->value("message", ""), "spec.model.torchscript: the module has no trainable parameters");
  EXPECT_FALSE(api_.Get(kube::kPods, "default", "team-model-check").ok()) << "its verdict is in the status";

  // As written it stays refused: no check again, no team.
  jobs_.Put(job);
  SyncPods();
  api_.ResetWrites();
  Reconcile(key);
  EXPECT_EQ(api_.Writes("create Pod"), 0);
  EXPECT_EQ(Job("team")["status"]["phase"], api::phase::kFailed);

  // Another module: checked again.
  ASSERT_TRUE(api_.MergePatch(kube::kTrainingJobs, "default", "team",
                              {{"metadata", {{"generation", 2}}},
                               {"spec", {{"model", {{"torchscript", {{"path", "fixed.pt"}}}}}}}})
                  .ok());
  jobs_.Put(Job("team"));
  Reconcile(key);
  job = Job("team");
  EXPECT_EQ(job["status"]["phase"], api::phase::kPending);
  EXPECT_EQ(api_.Writes("create Pod"), 1);
  EXPECT_FALSE(ConditionIs(job["status"], api::condition::kInvalid, true));
  EXPECT_NE(api_.Get(kube::kPods, "default", "team-model-check")->dump().find("/data/fixed.pt"), std::string::npos);
}

// A request the pods would be refused with is an invalid spec, said with its
// field, and fixing it starts the job (a new user's "lots" went Failed with no
// reason, and stayed so once fixed).
TEST_F(ReconcilerTest, ARequestThatIsNoQuantityFailsTheJobUntilItIsFixed) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  const std::string key = Submit(TrainingJob("team", {{"template", {{"resources", {{"requests", {{"cpu", "lots"}}}}}}}}));
  Reconcile(key);
  Json job = Job("team");
  EXPECT_EQ(job["status"]["phase"], api::phase::kFailed);
  const Json* failed = FindCondition(job["status"], api::condition::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->value("reason", ""), api::reason::kInvalidSpec);
  EXPECT_NE(failed->value("message", "").find("spec.template.resources.requests.cpu: must be a quantity"),
            std::string::npos)
      << *failed;
  EXPECT_TRUE(job["status"].contains("completionTime"));
  EXPECT_EQ(api_.Writes("create Pod"), 0);
  jobs_.Put(job);
  Reconcile(key);
  EXPECT_EQ(Job("team")["status"]["phase"], api::phase::kFailed) << "as written it stays refused";

  ASSERT_TRUE(api_.MergePatch(kube::kTrainingJobs, "default", "team",
                              {{"metadata", {{"generation", 2}}},
                               {"spec", {{"template", {{"resources", {{"requests", {{"cpu", "500m"}}}}}}}}}})
                  .ok());
  jobs_.Put(Job("team"));
  Reconcile(key);
  job = Job("team");
  EXPECT_NE(job["status"]["phase"], api::phase::kFailed) << job["status"].dump();
  EXPECT_FALSE(ConditionIs(job["status"], api::condition::kInvalid, true));
  EXPECT_GT(api_.Writes("create Pod"), 0) << "placed once fixed";
}

// The measured size decides where the team goes, as a built-in model's layers
// would: a module light to compute and costly to send goes to the fast link,
// one heavy to compute to the fast device.
TEST_F(ReconcilerTest, TheModulesMeasuredSizeDecidesWhereItsTeamIsPlaced) {
  AddNode(ANode("gateway").WithAllocatable("16", "32Gi"));
  AddNode(ANode("robot-near").Scoring(0.5).WithLink(60).WithAllocatable("16", "32Gi"));
  AddNode(ANode("robot-far").Scoring(1).WithLink(2).WithAllocatable("16", "32Gi"));
  const std::map<std::string, std::string> sizes = {
      {"light", R"({"parameters":200000,"multiplyAdds":200000})"},
      {"heavy", R"({"parameters":200,"multiplyAdds":2000000000})"}};
  std::map<std::string, std::string> worker_node;
  for (const auto& [name, size] : sizes) {
    const std::string key = Submit(TrainingJob(name, kOwnModule));
    Reconcile(key);  // the check is made
    jobs_.Put(Job(name));
    SyncPods(CheckEnds(0, size));
    Reconcile(key);  // its size is in the status
    jobs_.Put(Job(name));
    SyncPods();
    ASSERT_EQ(Reconcile(key).placement, "placed") << name;
    worker_node[name] = api_.Get(kube::kPods, "default", name + "-worker-1")->at("spec").at("nodeName");
  }
  EXPECT_EQ(worker_node["light"], "robot-near");
  EXPECT_EQ(worker_node["heavy"], "robot-far");
}

TEST_F(ReconcilerTest, AModuleIsNotCheckedForAJobNoNodeCanTake) {
  AddNode(ANode("gateway"));
  Json spec = kOwnModule;
  spec["placement"] = {{"nodeSelector", {{"edgetrain.dev/site", "moon"}}}};
  const std::string key = Submit(TrainingJob("team", spec));
  for (int look = 0; look < 3; ++look) {
    Reconcile(key);
    jobs_.Put(Job("team"));
  }
  EXPECT_EQ(api_.Writes("create Pod"), 0);
  EXPECT_EQ(FindCondition(Job("team")["status"], api::condition::kInvalid)->value("reason", ""),
            api::reason::kNoMatchingNode);
  int said = 0;
  for (const Json& e : api_.All(kube::kEvents)) said += e.value("reason", "") == api::reason::kNoMatchingNode;
  EXPECT_EQ(said, 1) << "once, not once a look";
}

// Each look at a job no node matches found it invalid again: its Invalid
// condition's transition time moved on every --unschedulable-retry, and the
// status was written for that alone (a new user's trial).
TEST_F(ReconcilerTest, AJobStillInvalidKeepsItsConditionsTimeAndIsNotWrittenAgain) {
  AddNode(ANode("gateway"));
  const std::string key = Submit(TrainingJob("team", {{"placement", {{"nodeSelector", {{"disk", "ssd"}}}}}}));
  Reconcile(key);
  jobs_.Put(Job("team"));
  const std::string since = FindCondition(Job("team")["status"], api::condition::kInvalid)->value("lastTransitionTime", "");
  ASSERT_FALSE(since.empty());
  api_.ResetWrites();
  for (int look = 0; look < 3; ++look) {
    now_ += std::chrono::seconds(30);
    Reconcile(key);
    jobs_.Put(Job("team"));
  }
  const Json status = Job("team")["status"];
  EXPECT_EQ(FindCondition(status, api::condition::kInvalid)->value("lastTransitionTime", ""), since);
  EXPECT_EQ(api_.Writes("status TrainingJob"), 0) << "nothing changed";
}

TEST_F(ReconcilerTest, SuspendingAJobWhileItsModuleIsCheckedLeavesNoPod) {
  AddNode(ANode("gateway"));
  const std::string key = Submit(TrainingJob("team", kOwnModule));
  Reconcile(key);
  ASSERT_TRUE(api_.Get(kube::kPods, "default", "team-model-check").ok());
  ASSERT_TRUE(api_.MergePatch(kube::kTrainingJobs, "default", "team",
                              {{"metadata", {{"generation", 2}}}, {"spec", {{"suspend", true}}}})
                  .ok());
  jobs_.Put(Job("team"));
  SyncPods(Run);
  Reconcile(key);
  EXPECT_FALSE(api_.Get(kube::kPods, "default", "team-model-check").ok());
  EXPECT_EQ(Job("team")["status"]["phase"], api::phase::kSuspended);
}

TEST_F(ReconcilerTest, TheCheckOfAModuleTheSpecNoLongerNamesIsDeletedNotRead) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  const std::string key = Submit(TrainingJob("team", kOwnModule));
  Reconcile(key);
  ASSERT_TRUE(api_.MergePatch(kube::kTrainingJobs, "default", "team",
                              {{"metadata", {{"generation", 2}}},
                               {"spec", {{"model", {{"torchscript", {{"path", "other.pt"}}}}}}}})
                  .ok());
  jobs_.Put(Job("team"));
  SyncPods(CheckEnds(0, R"({"parameters":4810,"multiplyAdds":4700})"));  // net.pt's size
  api_.ResetWrites();
  Reconcile(key);
  EXPECT_EQ(api_.Writes("delete Pod"), 1);
  EXPECT_FALSE(Job("team")["status"].contains("modelCheck")) << "net.pt's size is not other.pt's";

  jobs_.Put(Job("team"));
  SyncPods();
  Reconcile(key);
  const StatusOr<Json> check = api_.Get(kube::kPods, "default", "team-model-check");
  ASSERT_TRUE(check.ok());
  EXPECT_NE(check->dump().find("/data/other.pt"), std::string::npos);
}

TEST_F(ReconcilerTest, AGangIsPlacedWholeAndASecondReconcileMakesNothingTwice) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  AddNode(ANode("robot-2").Scoring(0.5).WithLink(20));
  const std::string key = Submit(TrainingJob("team"));

  ReconcileOutcome first = Reconcile(key);
  EXPECT_EQ(first.placement, "placed");
  EXPECT_EQ(api_.Writes("create Service"), 1);
  EXPECT_EQ(api_.Writes("create ConfigMap"), 1);
  EXPECT_EQ(api_.Writes("create Pod"), 3);
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"team-coordinator@gateway", "team-worker-0@gateway",
                                                  "team-worker-1@robot-1"}));
  const Json job = Job("team");
  EXPECT_EQ(job["status"]["phase"], api::phase::kPlacing);
  EXPECT_TRUE(ConditionIs(job["status"], api::condition::kPlaced, true));
  EXPECT_NE(log_text_.str().find("job=default/team reason=Placed coordinator on gateway"), std::string::npos)
      << log_text_.str();

  jobs_.Put(job);
  SyncPods();
  api_.ResetWrites();
  Reconcile(key);
  EXPECT_EQ(api_.AllWrites(), 0) << "the world is as the job wants it: nothing to write";
}

// An object already under a name the job's objects take, and not a
// TrainingJob's of the job's name, is left alone: the job fails NameTaken
// with nothing of the other's written and no pod made. The operator had
// written over a user's Secret named NAME-tls, taken it for the job's and
// deleted it with the job, so that a user allowed only TrainingJobs could
// replace and delete a Secret they could not touch (a security review).
// One left by an earlier job of the name is the job's, as before.
TEST_F(ReconcilerTest, AnObjectUnderAJobsNameThatIsAnothersIsLeftAloneAndTheJobFailsNameTaken) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  struct Case {
    kube::ResourceType type;
    std::string name;
  } cases[] = {{kube::kSecrets, "team-tls"}, {kube::kSecrets, "team-ca"}, {kube::kConfigMaps, "team-plan"},
               {kube::kServices, "team"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.type.kind + " " + c.name);
    const Json theirs = {{"apiVersion", "v1"},
                         {"kind", c.type.kind},
                         {"metadata", {{"name", c.name}, {"namespace", "default"}}},
                         {"data", {{"note", "keep me"}}}};
    ASSERT_TRUE(api_.Create(c.type, "default", theirs).ok());
    const std::string key = Submit(TrainingJob("team"));
    Reconcile(key);
    const Json status = Job("team")["status"];
    EXPECT_EQ(status["phase"], api::phase::kFailed);
    const Json* failed = FindCondition(status, api::condition::kFailed);
    ASSERT_NE(failed, nullptr);
    EXPECT_EQ(failed->value("reason", ""), api::reason::kNameTaken);
    EXPECT_EQ(failed->value("message", ""),
              c.type.kind + " " + c.name + " is already in namespace default and is not a TrainingJob team's: the "
              "job's objects take that name, and the operator leaves it alone; apply the job under another name (or "
              "remove the " + c.type.kind + " first, then delete the job and apply it again)");
    const Json kept = *api_.Get(c.type, "default", c.name);
    EXPECT_EQ(kept["data"], theirs["data"]) << "not written over";
    EXPECT_FALSE(kept["metadata"].contains("ownerReferences")) << "not taken for the job's";
    EXPECT_TRUE(api_.All(kube::kPods).empty());
    bool said = false;
    for (const Json& e : api_.All(kube::kEvents)) said |= e.value("reason", "") == api::reason::kNameTaken;
    EXPECT_TRUE(said);
    // Invalid too, and still on the next pass (it read Invalid False, Valid,
    // from then on: a user's trial).
    EXPECT_TRUE(ConditionIs(status, api::condition::kInvalid, true)) << status.dump();
    jobs_.Put(Job("team"));
    Reconcile(key);
    EXPECT_TRUE(ConditionIs(Job("team")["status"], api::condition::kInvalid, true)) << Job("team")["status"].dump();
    // Cleared for the next case, as the garbage collector would the job's own.
    for (const auto& type : {kube::kSecrets, kube::kConfigMaps, kube::kServices, kube::kTrainingJobs, kube::kEvents}) {
      for (const Json& o : api_.All(type)) {
        ASSERT_TRUE(api_.Delete(type, "default", o["metadata"]["name"].get<std::string>()).ok());
      }
    }
  }
  // A pod of one of the job's names, read from the cache (the operator may not get a pod).
  const Json their_pod = {{"apiVersion", "v1"},
                          {"kind", "Pod"},
                          {"metadata", {{"name", "team-coordinator"}, {"namespace", "default"}}},
                          {"spec", {{"containers", {{{"name", "web"}, {"image", "nginx"}}}}}}};
  ASSERT_TRUE(api_.Create(kube::kPods, "default", their_pod).ok());
  SyncPods();
  Reconcile(Submit(TrainingJob("team")));
  const Json taken = Job("team")["status"];
  const Json* failed = FindCondition(taken, api::condition::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->value("reason", ""), api::reason::kNameTaken);
  EXPECT_EQ(api_.All(kube::kPods).size(), 1u) << "theirs alone: no pod of the job's made beside it";
  for (const auto& type : {kube::kPods, kube::kSecrets, kube::kConfigMaps, kube::kServices, kube::kTrainingJobs}) {
    for (const Json& o : api_.All(type)) {
      ASSERT_TRUE(api_.Delete(type, "default", o["metadata"]["name"].get<std::string>()).ok());
    }
  }
  SyncPods();
  // A Secret an earlier job of the name left, owned by it: the job's to replace.
  Json earlier = {{"apiVersion", "v1"},
                  {"kind", "Secret"},
                  {"metadata",
                   {{"name", "team-tls"},
                    {"namespace", "default"},
                    {"ownerReferences", {{{"apiVersion", "edgetrain.dev/v1alpha1"}, {"kind", "TrainingJob"},
                                          {"name", "team"}, {"uid", "an-earlier-job"}, {"controller", true}}}}}},
                  {"data", {{"tls.crt", "old"}}}};
  ASSERT_TRUE(api_.Create(kube::kSecrets, "default", earlier).ok());
  const std::string key = Submit(TrainingJob("team"));
  EXPECT_EQ(Reconcile(key).placement, "placed");
  EXPECT_NE((*api_.Get(kube::kSecrets, "default", "team-tls"))["data"]["tls.crt"], "old");
}

// A replica that made a job's plan and some of its pods and died before it
// wrote the status: the next one takes the plan up, makes the pod missing and
// none again, where it used to delete them all and place the job anew.
TEST_F(ReconcilerTest, APlanWhosePlacerDiedBeforeSayingSoIsTakenUpNotMadeAgain) {
  // As the dead replica left it: no status, and its last pod never made.
  const std::string key = ATeamPlacedUnderAStatusNeverStored(Json::object());
  ASSERT_TRUE(api_.Delete(kube::kPods, "default", "team-worker-1").ok());
  SyncPods();
  api_.ResetWrites();

  ReconcileOutcome next = Reconcile(key);
  EXPECT_EQ(next.placement, "placed");
  EXPECT_EQ(api_.Writes("delete Pod"), 0);
  EXPECT_EQ(api_.Writes("create Pod"), 1) << "only the one missing";
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"team-coordinator@gateway", "team-worker-0@gateway",
                                                  "team-worker-1@robot-1"}));
  const Json job = Job("team");
  EXPECT_EQ(job["status"]["phase"], api::phase::kPlacing);
  EXPECT_TRUE(ConditionIs(job["status"], api::condition::kPlaced, true));
  EXPECT_NE(log_text_.str().find("(taken up: plan generation 1, placed by a pass whose status was never stored"),
            std::string::npos)
      << log_text_.str();
  const Json map = *api_.Get(kube::kConfigMaps, "default", "team-plan");
  EXPECT_EQ(map["metadata"]["labels"]["edgetrain.dev/plan-generation"], "1");
}

// The same under a status that said the module was being checked, as a
// job of its own module's says before its team is placed.
TEST_F(ReconcilerTest, APlanPlacedWhileItsStatusSaidCheckingModelIsTakenUpToo) {
  const std::string key = ATeamPlacedUnderAStatusNeverStored(
      {{"conditions", {{{"type", "Placed"}, {"status", "False"}, {"reason", api::reason::kCheckingModel},
                        {"message", "checking"}, {"lastTransitionTime", "2026-11-22T10:00:00Z"}}}}});
  SyncPods();
  api_.ResetWrites();
  Reconcile(key);
  EXPECT_EQ(api_.Writes("delete Pod"), 0) << "taken up, not torn down";
  EXPECT_EQ(api_.Writes("create Pod"), 0);
  EXPECT_TRUE(ConditionIs(Job("team")["status"], api::condition::kPlaced, true));
}

// A running job's plan ConfigMap deleted by hand: its own team, which reads
// it, ends, and it is placed again; said as such, with a Warning Event (it
// read "waiting for 3 pods of an earlier plan", no Event saying why a
// running team was torn down: a new user's trial).
TEST_F(ReconcilerTest, ARunningJobWhosePlanWasDeletedSaysSoAsItsTeamEnds) {
  const std::string key = ARunningTeamOnThreeNodes(Json::object());
  ASSERT_TRUE(api_.Delete(kube::kConfigMaps, "default", "team-plan").ok());
  const ReconcileOutcome ending = Reconcile(key);
  ASSERT_TRUE(ending.requeue_after.has_value());
  EXPECT_EQ(*ending.requeue_after, std::chrono::milliseconds(250)) << "looked at again as its pods end: --recheck-after";
  jobs_.Put(Job("team"));
  const Json status = Job("team")["status"];
  const Json* placed = FindCondition(status, api::condition::kPlaced);
  ASSERT_NE(placed, nullptr);
  EXPECT_EQ(placed->value("reason", ""), api::reason::kPodsEnding);
  EXPECT_EQ(placed->value("message", "").rfind("its plan ConfigMap team-plan is gone, and its team, which reads it, "
                                               "ends: waiting for its 3 pods to end before it is placed again",
                                               0),
            0u)
      << *placed;
  int said = 0;
  for (const Json& e : api_.All(kube::kEvents)) said += e.value("reason", "") == api::reason::kPlanDeleted;
  EXPECT_EQ(said, 1);
}

// A job deleted mid-run whose plan the garbage collector took before the
// jobs' watch brought the job's deletion (the cache still holds it): nothing
// is said or done, its pods the collector's (its last Event said its plan
// was gone and it would be placed again: a new user's trial, twice).
TEST_F(ReconcilerTest, AJobDeletedWhosePlanWentFirstIsLeftToTheGarbageCollector) {
  const std::string key = ARunningTeamOnThreeNodes(Json::object());
  ASSERT_TRUE(api_.Delete(kube::kTrainingJobs, "default", "team").ok());
  ASSERT_TRUE(api_.Delete(kube::kConfigMaps, "default", "team-plan").ok());
  const ReconcileOutcome outcome = Reconcile(key);
  EXPECT_FALSE(outcome.requeue_after.has_value());
  int said = 0;
  for (const Json& e : api_.All(kube::kEvents)) said += e.value("reason", "") == api::reason::kPlanDeleted;
  EXPECT_EQ(said, 0);
  EXPECT_EQ(api_.All(kube::kPods).size(), 3u) << "its pods are the garbage collector's to delete";
}

// Deleted and applied again before the garbage collector took what the first
// owned: the new job takes up none of the old one's pods, plan or Service,
// which it had followed as its own (the old spec running, then going with
// the old job: found in review). Its pods go; the Service it waits for the
// collector to delete; its plan it writes over, as its own.
TEST_F(ReconcilerTest, AJobAppliedAgainAtOnceTakesUpNothingOfTheOneDeleted) {
  const std::string key = ARunningTeamOnThreeNodes(Json::object());
  const std::string old_uid = Job("team")["metadata"]["uid"];
  ASSERT_TRUE(api_.Delete(kube::kTrainingJobs, "default", "team").ok());
  Submit(TrainingJob("team"));
  const std::string new_uid = Job("team")["metadata"]["uid"];
  ASSERT_NE(new_uid, old_uid);
  Reconcile(key);
  jobs_.Put(Job("team"));
  const Json status = Job("team")["status"];
  const Json* placed = FindCondition(status, api::condition::kPlaced);
  ASSERT_NE(placed, nullptr);
  EXPECT_EQ(placed->value("reason", ""), api::reason::kPodsEnding) << *placed;
  for (const Json& pod : api_.All(kube::kPods)) {
    EXPECT_TRUE(pod["metadata"].contains("deletionTimestamp")) << pod["metadata"]["name"] << ": the old job's, going";
  }
  // The old pods gone; the old Service not yet.
  for (const Json& pod : api_.All(kube::kPods)) ASSERT_TRUE(api_.Delete(kube::kPods, "default", pod["metadata"]["name"]).ok());
  SyncPods();
  StatusOr<ReconcileOutcome> waiting = reconciler_.Reconcile(key);
  ASSERT_FALSE(waiting.ok()) << "the old job's Service: retried until the collector has it";
  EXPECT_EQ(waiting.status().code(), StatusCode::kUnavailable) << waiting.status().ToString();
  EXPECT_NE(waiting.status().message().find("is an earlier TrainingJob team's"), std::string::npos)
      << waiting.status().ToString();
  ASSERT_TRUE(api_.Delete(kube::kServices, "default", "team").ok());
  Reconcile(key);
  jobs_.Put(Job("team"));
  for (const auto& [type, name] : {std::pair{kube::kConfigMaps, "team-plan"}, std::pair{kube::kServices, "team"}}) {
    const StatusOr<Json> made = api_.Get(type, "default", name);
    ASSERT_TRUE(made.ok()) << name;
    JobObject job;
    job.uid = new_uid;
    EXPECT_TRUE(OwnedByJob(*made, job)) << name << ": " << made->dump();
  }
  EXPECT_FALSE(api_.All(kube::kPods).empty()) << "placed anew";
}

// Only pods exactly as the stored plan makes them are taken up: a gang torn
// down for its timeout is not, and neither is a pod on another node than the
// plan's (the plan was edited, or the pod is someone else's): those are
// deleted first, and the job placed anew.
TEST_F(ReconcilerTest, PodsNotExactlyThePlansOrAGangTornDownAreNotTakenUp) {
  AddNode(ANode("gateway").WithAllocatable("16", "32Gi"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30).WithAllocatable("16", "32Gi"));
  AddNode(ANode("robot-2").Scoring(0.5).WithLink(20).WithAllocatable("16", "32Gi"));
  for (const std::string name : {"timed-out", "moved"}) {
    SCOPED_TRACE(name);
    const std::string key = Submit(TrainingJob(name));
    Reconcile(key);
    Json job = Job(name);
    if (name == "timed-out") {
      job["status"]["conditions"] = Json::array({{{"type", api::condition::kPlaced}, {"status", "False"},
                                                  {"reason", api::reason::kGangTimeout}, {"message", "torn down"}}});
    } else {
      job["status"] = Json::object();
      const std::string worker = name + "-worker-1";
      Json pod = *api_.Get(kube::kPods, "default", worker);
      ASSERT_TRUE(api_.Delete(kube::kPods, "default", worker).ok());
      pod["spec"]["nodeName"] = pod["spec"]["nodeName"] == "robot-2" ? "robot-1" : "robot-2";
      pod["metadata"].erase("resourceVersion");
      ASSERT_TRUE(api_.Create(kube::kPods, "default", pod).ok());
    }
    ASSERT_TRUE(api_.UpdateStatus(kube::kTrainingJobs, "default", job).ok());
    jobs_.Put(Job(name));
    SyncPods();
    api_.ResetWrites();
    Reconcile(key);
    EXPECT_EQ(api_.Writes("delete Pod"), 3) << "torn down, not taken up";
    EXPECT_EQ(log_text_.str().find("taken up"), std::string::npos) << log_text_.str();
    // Waiting for them is said (a job applied again after a delete waited
    // out its old pods' grace unsaid); a gang timeout's reason stays.
    jobs_.Put(Job(name));
    const Json status = Job(name)["status"];
    const Json* placed = FindCondition(status, api::condition::kPlaced);
    ASSERT_NE(placed, nullptr);
    if (name == "timed-out") {
      EXPECT_EQ(placed->value("reason", ""), api::reason::kGangTimeout);
    } else {
      EXPECT_EQ(placed->value("reason", ""), api::reason::kPodsEnding);
      EXPECT_NE(placed->value("message", "").find("waiting for 3 pods of an earlier plan"), std::string::npos)
          << *placed;
    }
  }
}

// The coordinator's /progress gone back, once it trains: what the team had
// trained since is lost, and said so (a new user's team placed anew after
// its workers had restarted started over from 0, read as training on).
TEST_F(ReconcilerTest, ProgressThatGoesBackIsSaidToHaveBeenLost) {
  const std::string key = APlacedTeamOnTwoNodes();
  SyncPods(Run);
  const std::string ip = (*api_.Get(kube::kPods, "default", "team-coordinator"))["status"]["podIP"];
  progress_.by_ip[ip] = {{"state", "training"}, {"iteration", 2933}, {"samples", 187712}};
  Reconcile(key);
  jobs_.Put(Job("team"));
  progress_.by_ip[ip] = {{"state", "starting"}, {"iteration", 0}, {"samples", 0}};
  Reconcile(key);
  jobs_.Put(Job("team"));
  EXPECT_EQ(log_text_.str().find("reason=ProgressLost"), std::string::npos) << "gathering its workers: not yet";
  EXPECT_EQ(Job("team")["status"]["progress"]["iteration"], 2933) << "as last read while it trained";
  progress_.by_ip[ip] = {{"state", "training"}, {"iteration", 12}, {"samples", 768}};
  Reconcile(key);
  EXPECT_NE(log_text_.str().find("reason=ProgressLost the coordinator's /progress says iteration 12, where it said "),
            std::string::npos)
      << log_text_.str();
}

// What a job's image serves as its /progress is the job's to decide: a
// value of another type than edgetrain's agents write fails that job's pass,
// to be retried, and ends nothing (it had ended the operator, at every
// restart: found in review).
TEST_F(ReconcilerTest, AProgressOfValuesOfUnexpectedTypesFailsThePassNotTheOperator) {
  const std::string key = APlacedTeamOnTwoNodes();
  SyncPods(Run);
  const std::string ip = (*api_.Get(kube::kPods, "default", "team-coordinator"))["status"]["podIP"];
  progress_.by_ip[ip] = {{"state", "training"}, {"iteration", "12"}, {"samples", 768}};
  const StatusOr<ReconcileOutcome> outcome = reconciler_.Reconcile(key);
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.status().code(), StatusCode::kInternal);
  EXPECT_NE(outcome.status().message().find("not what edgetrain's agents write"), std::string::npos)
      << outcome.status().message();
  // Said on the job, where kubectl describe shows it.
  int said = 0;
  for (const Json& e : api_.All(kube::kEvents)) {
    if (e.value("reason", "") == api::reason::kAgentOutputUnreadable) ++said;
  }
  EXPECT_EQ(said, 1);
  // Served as edgetrain's agents serve it, the job is followed again.
  progress_.by_ip[ip] = {{"state", "training"}, {"iteration", 12}, {"samples", 768}};
  Reconcile(key);
  EXPECT_EQ(Job("team")["status"]["progress"]["iteration"], 12);
}

// A coordinator that took up a checkpoint the job's status had not shown
// (a job deleted and applied again on the same volume and path) is said to
// have, once (nothing said so: a new user's trial).
TEST_F(ReconcilerTest, ACheckpointTakenUpIsSaidOnce) {
  const std::string key = APlacedTeamOnTwoNodes();
  SyncPods(Run);
  const std::string ip = (*api_.Get(kube::kPods, "default", "team-coordinator"))["status"]["podIP"];
  progress_.by_ip[ip] = {{"state", "starting"}, {"iteration", 0}, {"resumedFromIteration", nullptr}};
  Reconcile(key);
  jobs_.Put(Job("team"));
  progress_.by_ip[ip] = {{"state", "training"}, {"iteration", 9541}, {"resumedFromIteration", 9540}};
  Reconcile(key);
  jobs_.Put(Job("team"));
  const std::string said = "reason=ResumedFromCheckpoint the coordinator took up the checkpoint in its output folder, "
                           "at iteration 9540";
  ASSERT_NE(log_text_.str().find(said), std::string::npos) << log_text_.str();
  progress_.by_ip[ip] = {{"state", "training"}, {"iteration", 9700}, {"resumedFromIteration", 9540}};
  Reconcile(key);
  const std::string log = log_text_.str();
  size_t times = 0;
  for (size_t at = log.find(said); at != std::string::npos; at = log.find(said, at + 1)) ++times;
  EXPECT_EQ(times, 1u) << "once\n" << log;
  // Restarted in place, the coordinator takes up the checkpoint it wrote
  // after the last read: its own, not said (it was, with advice to change
  // spec.output.path: a soak trial).
  jobs_.Put(Job("team"));
  progress_.by_ip[ip] = {{"state", "training"}, {"iteration", 9751}, {"resumedFromIteration", 9750}};
  Reconcile(key);
  EXPECT_EQ(log_text_.str().find("at iteration 9750"), std::string::npos) << log_text_.str();
}

// A coordinator restarted in place before any read showed progress took up
// the checkpoint it wrote itself: not said (a soak trial killed it seconds
// after it started, and was told of another run's checkpoint).
TEST_F(ReconcilerTest, ACoordinatorRestartedInPlaceBeforeItsProgressWasReadTakesUpItsOwnCheckpointUnsaid) {
  const std::string key = APlacedTeamOnTwoNodes();
  SyncPods([](Json& pod) {
    Run(pod);
    if (pod["metadata"]["name"] == "team-coordinator") pod["status"]["containerStatuses"][0]["restartCount"] = 1;
  });
  const std::string ip = (*api_.Get(kube::kPods, "default", "team-coordinator"))["status"]["podIP"];
  progress_.by_ip[ip] = {{"state", "training"}, {"iteration", 301}, {"resumedFromIteration", 300}};
  Reconcile(key);
  jobs_.Put(Job("team"));
  EXPECT_EQ(log_text_.str().find("reason=ResumedFromCheckpoint"), std::string::npos) << log_text_.str();
  EXPECT_EQ(Job("team")["status"]["progress"]["iteration"], 301);
}

TEST_F(ReconcilerTest, ARunningGangReportsTheCoordinatorsProgressAndEachAgentsNode) {
  const std::string key = APlacedTeamOnTwoNodes();
  SyncPods(Run);
  const std::string coordinator_ip = (*api_.Get(kube::kPods, "default", "team-coordinator"))["status"]["podIP"];
  // Every pod runs, and the coordinator still waits for its workers: not
  // Training yet (a team whose workers could not reach it showed Training).
  progress_.by_ip[coordinator_ip] = {{"state", "starting"}};
  Reconcile(key);
  {
    const Json waiting = Job("team")["status"];
    const Json* running = FindCondition(waiting, api::condition::kRunning);
    ASSERT_NE(running, nullptr);
    EXPECT_EQ(running->value("reason", ""), api::reason::kWaitingForTeam);
    EXPECT_EQ(waiting["phase"], api::phase::kRunning);
    EXPECT_EQ(FindCondition(waiting, api::condition::kBandwidthDegraded), nullptr)
        << "its links are not known yet: not said to be healthy";
    EXPECT_EQ(FindCondition(waiting, api::condition::kStalled), nullptr);
  }
  jobs_.Put(Job("team"));
  progress_.by_ip[coordinator_ip] = {{"state", "training"}, {"iteration", 300}, {"samples", 19200},
                                     {"accuracy", 0.8},     {"etaSeconds", 12},  {"workers",
                                                                                   {{{"rank", 1},
                                                                                     {"batchSize", 64},
                                                                                     {"bandwidthMbps", 9.0},
                                                                                     {"stallFraction", 0.2}}}}};
  ReconcileOutcome outcome = Reconcile(key);
  ASSERT_TRUE(outcome.requeue_after.has_value()) << "progress is read again";
  // A link's readings are averaged before they are published: 9, 12, then 6.
  EXPECT_FALSE((*api_.Get(kube::kNodes, "", "robot-1"))["metadata"].value("annotations", Json::object()).contains(
      kMeasuredUplink))
      << "one reading alone is not published";
  progress_.by_ip[coordinator_ip]["workers"][0]["bandwidthMbps"] = 12.0;
  Reconcile(key);
  progress_.by_ip[coordinator_ip]["workers"][0]["bandwidthMbps"] = 6.0;
  Reconcile(key);
  progress_.by_ip[coordinator_ip]["workers"][0]["bandwidthMbps"] = 9.0;
  const Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRunning);
  EXPECT_EQ(status["progress"]["iteration"], 300);
  EXPECT_EQ(status["progress"]["eta"], "12s");
  EXPECT_EQ(status["startTime"], "2026-11-22T19:01:53Z");
  EXPECT_EQ(status["workers"].size(), 3u);
  EXPECT_TRUE(ConditionIs(status, api::condition::kRunning, true));
  EXPECT_TRUE(ConditionIs(status, api::condition::kBandwidthDegraded, true))
      << "worker 1 measures 9 Mbit/s where robot-1 published 30";
  // What the coordinator measured goes on the node, for placement next time.
  const Json robot = *api_.Get(kube::kNodes, "", "robot-1");
  EXPECT_EQ(robot["metadata"]["annotations"][kMeasuredUplink], "9000000");
  EXPECT_EQ(robot["metadata"]["annotations"][kMeasuredAt], "2026-11-22T19:01:53Z");
  EXPECT_FALSE(robot["metadata"]["annotations"].contains(kMeasuredDownlink)) << "no downlink estimate yet";
  api_.ResetWrites();
  Reconcile(key);
  EXPECT_EQ(api_.Writes("patch Node"), 0) << "at most once a measurement interval";

  // The coordinator ending: no progress read; each worker keeps what was last read.
  progress_.by_ip.erase(coordinator_ip);
  jobs_.Put(Job("team"));
  Reconcile(key);
  const Json after = Job("team")["status"]["workers"];
  bool kept = false;
  for (const Json& w : after) kept |= w.value("batchSize", 0) == 64 && w.value("stallFraction", 0.0) == 0.2;
  EXPECT_TRUE(kept) << after.dump();

  // Unanswered for --stalled-after (its node dead, its link cut): what was
  // read stays, said to be as of then, and nothing says the team steps. The
  // conditions had said every link was healthy (a new user's trial).
  EXPECT_EQ(Job("team")["status"]["progress"]["readTime"], "2026-11-22T19:01:53Z");
  now_ += std::chrono::seconds(10);
  jobs_.Put(Job("team"));
  Reconcile(key);
  EXPECT_TRUE(ConditionIs(Job("team")["status"], api::condition::kStalled, false)) << "10 s: not yet";
  EXPECT_TRUE(ConditionIs(Job("team")["status"], api::condition::kBandwidthDegraded, true)) << "as last read";
  now_ += std::chrono::seconds(21);
  jobs_.Put(Job("team"));
  Reconcile(key);
  const Json status_unread = Job("team")["status"];
  EXPECT_EQ(status_unread["progress"]["iteration"], 300);
  const Json* stalled = FindCondition(status_unread, api::condition::kStalled);
  ASSERT_NE(stalled, nullptr);
  EXPECT_EQ(stalled->value("status", ""), "True");
  EXPECT_EQ(stalled->value("reason", ""), api::reason::kProgressUnreadable);
  EXPECT_EQ(stalled->value("message", "").rfind("the coordinator's /progress has not answered for 31 s (", 0), 0u)
      << *stalled;
  EXPECT_NE(stalled->value("message", "").find("status.progress is as read at 2026-11-22T19:01:53Z"), std::string::npos)
      << *stalled;
}

// A job's /progress may come from the user's own image: a link reading past
// what a trace may hold (1 Tbit/s), or one that is no number, is none. 1e13
// Mbit/s had been published as bits a second rounded past int64, a negative
// annotation that left the node out of placement for every job (found in
// review).
TEST_F(ReconcilerTest, ALinkReadingNoLinkCouldMeasureIsNotPublished) {
  const std::string key = APlacedTeamOnTwoNodes();
  SyncPods(Run);
  const std::string coordinator_ip = (*api_.Get(kube::kPods, "default", "team-coordinator"))["status"]["podIP"];
  for (const Json& reading : {Json(1e13), Json("fast"), Json(8.0), Json(1e13), Json(10.0), Json(12.0)}) {
    progress_.by_ip[coordinator_ip] = {
        {"state", "training"},
        {"iteration", 300},
        {"workers", {{{"rank", 1}, {"bandwidthMbps", reading}, {"downlinkMbps", Json("slow")}}}}};
    jobs_.Put(Job("team"));
    ASSERT_NO_FATAL_FAILURE(Reconcile(key));
  }
  const Json robot = *api_.Get(kube::kNodes, "", "robot-1");
  EXPECT_EQ(robot["metadata"]["annotations"][kMeasuredUplink], "10000000") << "the mean of 8, 10 and 12 alone";
  EXPECT_FALSE(robot["metadata"]["annotations"].contains(kMeasuredDownlink));
}

// A coordinator whose pod was made after /progress was last read (a job
// resumed after a minute suspended, a coordinator placed anew) is silent
// since its pod was made, not since that read: it was called stalled at
// once, "has not answered for 53 s" (a new user's trial).
TEST_F(ReconcilerTest, ACoordinatorIsSilentSinceItsPodWasMadeNotSinceTheLastRead) {
  const std::string key = ARunningTeamOnThreeNodes(Json::object());
  ProgressReadOnceThenSilent(key);
  now_ += std::chrono::seconds(60);
  CoordinatorPodMadeAgo(std::chrono::seconds(5));
  Reconcile(key);
  jobs_.Put(Job("team"));
  EXPECT_FALSE(ConditionIs(Job("team")["status"], api::condition::kStalled, true))
      << "made 5 s ago: " << Job("team")["status"].dump();
  const Json anew = Job("team")["status"];
  const Json* running = FindCondition(anew, api::condition::kRunning);
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->value("reason", ""), api::reason::kWaitingForTeam);
  EXPECT_EQ(running->value("message", "").rfind("every pod runs; the coordinator, placed anew, has not answered yet (",
                                                0),
            0u)
      << *running;
  now_ += std::chrono::seconds(30);
  Reconcile(key);
  const Json status = Job("team")["status"];
  const Json* stalled = FindCondition(status, api::condition::kStalled);
  ASSERT_NE(stalled, nullptr);
  EXPECT_EQ(stalled->value("status", ""), "True");
  EXPECT_EQ(stalled->value("message", "").rfind("the coordinator's /progress has not answered for 35 s (", 0), 0u)
      << *stalled;
}

// A coordinator's node that dies is called NotReady only tens of seconds
// later; its /progress went unanswered from its last read, and the
// recovery counts from there (it was counted 12 s where the team had stood
// 50 s: a new user's trial).
TEST_F(ReconcilerTest, ACoordinatorsRecoveryCountsFromItsLastAnsweredProgress) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 2}}}});
  const std::string coordinator_ip = (*api_.Get(kube::kPods, "default", "team-coordinator"))["status"]["podIP"];
  progress_.by_ip[coordinator_ip] = {{"state", "training"}, {"iteration", 300}, {"samples", 19200}};
  Reconcile(key);
  jobs_.Put(Job("team"));
  progress_.by_ip.erase(coordinator_ip);  // its node dies
  now_ += std::chrono::seconds(31);
  Reconcile(key);
  jobs_.Put(Job("team"));
  ASSERT_EQ(FindCondition(Job("team")["status"], api::condition::kStalled)->value("reason", ""),
            api::reason::kProgressUnreadable);
  now_ += std::chrono::seconds(10);
  nodes_.Put(ANode("gateway").NotReady());
  EXPECT_EQ(CoordinatorEvictedThenReplaced(key), std::optional<Duration>(std::chrono::seconds(43)));
}

// A worker lost once training has stopped, the coordinator finishing, has
// nothing left to train: not replaced, and no recovery (one was counted, and a
// pod made for a team that was ending: a soak trial). Said once.
TEST_F(ReconcilerTest, AWorkerLostAfterTrainingStoppedIsNotReplaced) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 2}}}});
  const std::string coordinator_ip = (*api_.Get(kube::kPods, "default", "team-coordinator"))["status"]["podIP"];
  progress_.by_ip[coordinator_ip] = {
      {"state", "training"}, {"iteration", 300}, {"samples", 19200}, {"stopReason", "epochs"}};
  Reconcile(key);
  jobs_.Put(Job("team"));
  WorkerOneEvicted();
  api_.ResetWrites();
  for (int look = 0; look < 2; ++look) {
    jobs_.Put(Job("team"));
    EXPECT_EQ(Reconcile(key).replan, "");
  }
  EXPECT_EQ(api_.Writes("create Pod"), 0);
  const Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRunning);
  EXPECT_FALSE(status.contains("recoveries")) << status;
  EXPECT_EQ(FindCondition(status, api::condition::kRunning)->value("message", ""),
            "training has stopped (epochs) and the coordinator is finishing; worker 1: its node robot-1 is lost; its "
            "pod on robot-1 failed (Evicted): not replaced, with nothing left to train");
  int said = 0;
  for (const Json& e : api_.All(kube::kEvents)) said += e.value("reason", "") == api::reason::kWorkerLost;
  EXPECT_EQ(said, 1);
}

// A coordinator whose last word was that training had stopped ends before
// its pod reads as ended: its silence is its finishing, said so, not "has not
// answered" (a new user's trial saw that for a read before Succeeded), and not
// stalled however long it takes.
TEST_F(ReconcilerTest, ACoordinatorSilentAfterTrainingStoppedIsFinishing) {
  const std::string key = ARunningTeamOnThreeNodes(Json::object());
  const std::string coordinator_ip = (*api_.Get(kube::kPods, "default", "team-coordinator"))["status"]["podIP"];
  progress_.by_ip[coordinator_ip] = {
      {"state", "training"}, {"iteration", 300}, {"samples", 19200}, {"stopReason", "target"}};
  Reconcile(key);
  jobs_.Put(Job("team"));
  EXPECT_EQ(Job("team")["status"]["progress"]["stopReason"], "target");
  progress_.by_ip.erase(coordinator_ip);  // it ends
  now_ += std::chrono::seconds(40);
  Reconcile(key);
  const Json status = Job("team")["status"];
  const std::string message = FindCondition(status, api::condition::kRunning)->value("message", "");
  EXPECT_EQ(message.rfind("training has stopped (target) and the coordinator is finishing: its /progress no longer "
                          "answers (",
                          0),
            0u)
      << message;
  EXPECT_FALSE(ConditionIs(status, api::condition::kStalled, true));

  // A coordinator placed since that word (a moved one's predecessor said
  // "cancelled") has not answered yet: it is not finishing.
  jobs_.Put(Job("team"));
  CoordinatorPodMadeAgo(std::chrono::seconds(5));
  Reconcile(key);
  const Json placed_anew = Job("team")["status"];
  const Json* anew = FindCondition(placed_anew, api::condition::kRunning);
  ASSERT_NE(anew, nullptr);
  EXPECT_EQ(anew->value("reason", ""), api::reason::kWaitingForTeam) << *anew;
  EXPECT_EQ(anew->value("message", "").rfind("every pod runs; the coordinator, placed anew, has not answered yet (", 0),
            0u)
      << *anew;
}

// A coordinator lost before --stalled-after (its node dead, nodeLossGrace
// short): unanswered since a read, the status says so at once, not "every
// agent runs", and its recovery counts from that read, not from its node's
// NotReady (a user's trial: 5.2 s counted where the team stood 10).
TEST_F(ReconcilerTest, ACoordinatorUnansweredIsSaidAtOnceAndLostFromItsLastAnswer) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 2}}}});
  const std::string coordinator_ip = (*api_.Get(kube::kPods, "default", "team-coordinator"))["status"]["podIP"];
  progress_.by_ip[coordinator_ip] = {{"state", "training"}, {"iteration", 300}, {"samples", 19200}};
  Reconcile(key);
  jobs_.Put(Job("team"));
  const std::string read_at = Job("team")["status"]["progress"]["readTime"];
  progress_.by_ip.erase(coordinator_ip);  // its node dies
  now_ += std::chrono::seconds(2);
  Reconcile(key);
  jobs_.Put(Job("team"));
  const Json unanswered = Job("team")["status"];
  const Json* running = FindCondition(unanswered, api::condition::kRunning);
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->value("message", "").rfind("every pod runs; the coordinator's /progress has not answered since " +
                                                    read_at,
                                                0),
            0u)
      << *running;
  EXPECT_EQ(Job("team")["status"]["progress"]["unreadSince"], kube::FormatKubeTime(now_));
  EXPECT_FALSE(ConditionIs(Job("team")["status"], api::condition::kStalled, true)) << "2 s: not stalled yet";
  now_ += std::chrono::seconds(5);
  nodes_.Put(ANode("gateway").NotReady());
  Reconcile(key);
  jobs_.Put(Job("team"));
  EXPECT_EQ(Job("team")["status"]["progress"]["unreadSince"], kube::FormatKubeTime(now_ - std::chrono::seconds(5)))
      << "the first unanswered read kept";
  now_ += std::chrono::seconds(5);
  EXPECT_EQ(CoordinatorEvictedThenReplaced(key), std::optional<Duration>(std::chrono::seconds(14)))
      << "from the last answer, 14 s before the team ran again";
}

// Issue 19: a worker whose pushes the coordinator kept refusing is turned
// away for good, and the job carries on; the operator says so with a Warning
// Event, once, and in the worker's status.
TEST_F(ReconcilerTest, AQuarantinedWorkerIsToldOfOnceWithAWarningEvent) {
  const std::string key = APlacedTeamOnTwoNodes();
  SyncPods(Run);
  const std::string coordinator_ip = (*api_.Get(kube::kPods, "default", "team-coordinator"))["status"]["podIP"];
  progress_.by_ip[coordinator_ip] = {
      {"state", "training"},
      {"iteration", 300},
      {"workers",
       {{{"rank", 0}, {"stallFraction", 0.1}},
        {{"rank", 1}, {"active", false}, {"quarantined", "3 pushes refused, the last not_finite"}}}}};
  auto quarantines = [&] {
    std::vector<Json> said;
    for (const Json& e : api_.All(kube::kEvents)) {
      if (e.value("reason", "") == api::reason::kWorkerQuarantined) said.push_back(e);
    }
    return said;
  };
  Reconcile(key);
  std::vector<Json> said = quarantines();
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0]["type"], "Warning");
  EXPECT_NE(said[0]["message"].get<std::string>().find(
                "team-worker-1 on robot-1 is quarantined (3 pushes refused, the last not_finite): the team goes on "
                "without it"),
            std::string::npos)
      << said[0].dump();
  const Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRunning) << "the job carries on";
  bool shown = false;
  for (const Json& w : status["workers"]) shown |= w.value("quarantined", "") == "3 pushes refused, the last not_finite";
  EXPECT_TRUE(shown) << status["workers"].dump();
  jobs_.Put(Job("team"));
  Reconcile(key);
  EXPECT_EQ(quarantines().size(), 1u) << "said once";
}

TEST_F(ReconcilerTest, TheCoordinatorsEndEndsTheJobAndRunningPodsAreCleaned) {
  const std::string key = APlacedTeamOnTwoNodes();
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] != "team-coordinator") return Run(pod);
    const Json result = {{"state", "succeeded"}, {"reachedTarget", true}, {"stopReason", "target"},
                         {"accuracy", 0.93},     {"iteration", 140},      {"modelPath", "/models/team/model.pt"},
                         {"workers", {{{"rank", 0}, {"samples", 4480}, {"batchSize", 32}, {"stallFraction", 0.25}},
                                      {{"rank", 1}, {"samples", 4480}, {"batchSize", 32}, {"stallFraction", 0.5}}}}};
    Succeed(pod, result);
  });
  const ReconcileOutcome ended = Reconcile(key);
  const Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kSucceeded);
  EXPECT_EQ(status["model"]["path"], "/models/team/model.pt");
  EXPECT_EQ(status["model"]["accuracy"], 0.93);
  // Each worker's figures as the result gives them, which its totals are of.
  int with_result = 0;
  for (const Json& w : status["workers"]) {
    if (w.value("role", "") != "worker") continue;
    EXPECT_EQ(w.value("samples", 0), 4480) << status["workers"].dump();
    ++with_result;
  }
  EXPECT_GT(with_result, 0) << status["workers"].dump();
  EXPECT_EQ(FindCondition(status, api::condition::kComplete)->value("reason", ""), api::reason::kTargetReached);
  // The pods go in the pass after, once the end is stored: deleted before
  // a status write that failed, the retry took the job's coordinator for
  // lost and trained again (found in review).
  EXPECT_EQ(PodNodes().size(), 3u) << "nothing deleted before the end is stored";
  ASSERT_TRUE(ended.requeue_after.has_value());
  EXPECT_EQ(*ended.requeue_after, Duration::zero()) << "the next pass comes at once";
  jobs_.Put(Job("team"));
  Reconcile(key);
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"team-coordinator@gateway"}))
      << "cleanPodPolicy Running: the workers still running go, the finished coordinator stays";
}

// A pod the API server refuses for what the job asks (a quota filled) used to
// be only in the operator's log, the job stuck with no phase: it is a Warning
// Event on the job, once however often it is tried again, and again only for
// a new refusal; and the job is placed, its Running condition saying which
// pod could not be made (its status had not been written: found in review).
TEST_F(ReconcilerTest, ARequestTheApiServerRefusesIsAWarningEventOnTheJobOnce) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  // spec.sync on a job of one worker: a note, said once however often the
  // reconcile fails before it writes the status.
  const std::string key =
      Submit(TrainingJob("team", {{"parallelism", {{"workers", 1}}}, {"sync", {{"policy", "bsp"}}}}));
  api_.RefuseCreates("Pod", FailedPreconditionError("pods \"team-coordinator\" is forbidden: exceeded quota: "
                                                    "compute, requested: pods=1, used: pods=10, limited: pods=10"));
  auto refusals = [&] {
    std::vector<std::string> said;
    for (const Json& e : api_.All(kube::kEvents)) {
      if (e.value("reason", "") == api::reason::kRequestRefused) said.push_back(e.value("message", ""));
    }
    return said;
  };
  for (int retry = 0; retry < 3; ++retry) {
    EXPECT_TRUE(reconciler_.Reconcile(key).ok());
    jobs_.Put(Job("team"));
  }
  const Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kPlacing);
  EXPECT_NE(FindCondition(status, api::condition::kRunning)
                ->value("message", "")
                .find("a pod could not be made: creating Pod team-coordinator: pods \"team-coordinator\" is forbidden"),
            std::string::npos)
      << status;
  EXPECT_EQ(refusals(), (std::vector<std::string>{
                            "the API server refused a request for this job, retried with back-off: creating Pod "
                            "team-coordinator: pods \"team-coordinator\" is forbidden: exceeded quota: compute, "
                            "requested: pods=1, used: pods=10, limited: pods=10"}));
  std::vector<std::string> notes;
  for (const Json& e : api_.All(kube::kEvents)) {
    if (e.value("reason", "") == api::reason::kSpecNote) notes.push_back(e.value("message", ""));
  }
  EXPECT_EQ(notes.size(), 1u) << "once, not once a retry";
  // A conflict is back-off's to mend, not the user's to hear of.
  api_.RefuseCreates("Pod", AbortedError("the object has been modified"));
  EXPECT_TRUE(reconciler_.Reconcile(key).ok());
  EXPECT_EQ(refusals().size(), 1u);
}

// A quota that fills part-way: the coordinator's pod made, a worker's
// refused. The job is placed and says which pod could not be made, and its
// gang times out and lets go of the node it holds, where the pass's error
// kept Placed from being written and the timeout never came (found in review).
TEST_F(ReconcilerTest, AGangTheApiServerRefusesPartWayTimesOutAndSaysWhy) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  const std::string key = Submit(TrainingJob("team", {{"placement", {{"gangTimeout", "1m"}}}}));
  api_.RefuseCreatesAfter("Pod", 1, FailedPreconditionError("pods is forbidden: exceeded quota: compute"));
  EXPECT_TRUE(reconciler_.Reconcile(key).ok()) << "placed, its worker refused";
  jobs_.Put(Job("team"));
  SyncPods();
  ASSERT_EQ(api_.All(kube::kPods).size(), 1u);
  for (int pass = 0; pass < 2; ++pass) {
    const ReconcileOutcome placing = Reconcile(key);
    jobs_.Put(Job("team"));
    ASSERT_TRUE(placing.requeue_after.has_value());
    EXPECT_EQ(*placing.requeue_after, std::chrono::milliseconds(250)) << "tried again soon: --recheck-after";
  }
  Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kPlacing);
  EXPECT_TRUE(ConditionIs(status, api::condition::kPlaced, true));
  const Json* running = FindCondition(status, api::condition::kRunning);
  ASSERT_NE(running, nullptr);
  EXPECT_NE(running->value("message", "").find("a pod could not be made: creating Pod team-worker-"),
            std::string::npos)
      << *running;
  int said = 0, written = 0;
  for (const Json& e : api_.All(kube::kEvents)) {
    if (e.value("reason", "") != api::reason::kRequestRefused) continue;
    said += e.value("count", 0);
    ++written;
  }
  EXPECT_EQ(said, 1) << "said by the placement, and not again by the gang's looks that met it again";
  EXPECT_EQ(written, 1);
  now_ += std::chrono::seconds(61);
  Reconcile(key);
  jobs_.Put(Job("team"));
  status = Job("team")["status"];
  EXPECT_EQ(FindCondition(status, api::condition::kPlaced)->value("reason", ""), api::reason::kGangTimeout);
  EXPECT_TRUE(api_.All(kube::kPods).empty()) << "the pod it made is let go of";
}

// A PriorityClass that does not exist: the job waits Pending, saying so,
// with nothing made and no plan generation spent, until the class is made.
TEST_F(ReconcilerTest, APriorityClassThatDoesNotExistKeepsTheJobPendingSayingSo) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  const std::string key = Submit(TrainingJob("team", {{"placement", {{"priorityClassName", "urgent"}}}}));
  for (int retry = 0; retry < 3; ++retry) {
    EXPECT_EQ(Reconcile(key).placement, "");
    jobs_.Put(Job("team"));
  }
  Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kPending);
  EXPECT_EQ(FindCondition(status, api::condition::kInvalid)->value("reason", ""), api::reason::kNoPriorityClass);
  EXPECT_EQ(FindCondition(status, api::condition::kPlaced)->value("status", ""), "False");
  EXPECT_TRUE(api_.All(kube::kPods).empty());
  int said = 0;
  for (const Json& e : api_.All(kube::kEvents)) said += e.value("reason", "") == api::reason::kNoPriorityClass;
  EXPECT_EQ(said, 1) << "once, not once a retry";

  ASSERT_TRUE(api_.Create(kube::kPriorityClasses, "", {{"metadata", {{"name", "urgent"}}}, {"value", 1000}}).ok());
  EXPECT_EQ(Reconcile(key).placement, "placed");
  jobs_.Put(Job("team"));
  status = Job("team")["status"];
  EXPECT_EQ(FindCondition(status, api::condition::kInvalid)->value("status", ""), "False");
  EXPECT_NE(log_text_.str().find("(plan generation 1)"), std::string::npos) << "no generation spent on the wait";
}

// What edgetrain validate says as a note is said on the cluster too, as a
// Normal Event, once a generation.
TEST_F(ReconcilerTest, ASpecNoteIsAnEventOnceAGeneration) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  const std::string key = Submit(
      TrainingJob("piped", {{"parallelism", {{"mode", "pipeline"}, {"workers", 2}}}, {"sync", {{"policy", "bsp"}}}}));
  auto notes = [&] {
    std::vector<std::string> said;
    for (const Json& e : api_.All(kube::kEvents)) {
      if (e.value("reason", "") == api::reason::kSpecNote) said.push_back(e.value("message", ""));
    }
    return said;
  };
  Reconcile(key);
  jobs_.Put(Job("piped"));
  Reconcile(key);
  jobs_.Put(Job("piped"));
  ASSERT_EQ(notes().size(), 1u);
  EXPECT_NE(notes()[0].find("spec.sync"), std::string::npos) << notes()[0];
  EXPECT_NE(notes()[0].find("applies to data-parallel teams only"), std::string::npos) << notes()[0];
}

// An edit of a running job's spec is not applied to its team, and says so,
// once a generation: observedGeneration had moved on in silence.
TEST_F(ReconcilerTest, AnEditOfARunningJobsSpecSaysItIsNotApplied) {
  const std::string key = ARunningTeamOnThreeNodes(Json::object());
  auto said = [&] {
    int n = 0;
    for (const Json& e : api_.All(kube::kEvents)) n += e.value("reason", "") == api::reason::kSpecNotApplied;
    return n;
  };
  EXPECT_EQ(said(), 0);
  ASSERT_TRUE(api_.MergePatch(kube::kTrainingJobs, "default", "team",
                              {{"metadata", {{"generation", 2}}}, {"spec", {{"parallelism", {{"workers", 3}}}}}})
                  .ok());
  for (int look = 0; look < 2; ++look) {
    jobs_.Put(Job("team"));
    Reconcile(key);
  }
  EXPECT_EQ(said(), 1);
  EXPECT_EQ(api_.All(kube::kPods).size(), 3u) << "the team is as it was placed";
}

// An edit that makes a running job's spec invalid fails the job, and its
// team ends with it: its pods had run on, holding their nodes, and Running
// said "every agent runs" beside Failed (found in review).
TEST_F(ReconcilerTest, ARunningJobEditedIntoAnInvalidSpecEndsItsTeam) {
  const std::string key = ARunningTeamOnThreeNodes(Json::object());
  ASSERT_EQ(api_.All(kube::kPods).size(), 3u);
  ASSERT_TRUE(api_.MergePatch(kube::kTrainingJobs, "default", "team",
                              {{"metadata", {{"generation", 2}}}, {"spec", {{"output", {{"path", "/etc"}}}}}})
                  .ok());
  jobs_.Put(Job("team"));
  Reconcile(key);
  const Json job = Job("team");
  EXPECT_EQ(job["status"]["phase"], api::phase::kFailed);
  const Json* running = FindCondition(job["status"], api::condition::kRunning);
  ASSERT_NE(running, nullptr);
  EXPECT_EQ((*running)["status"], "False") << *running;
  EXPECT_TRUE(api_.All(kube::kPods).empty()) << "its running pods go, by the default cleanPodPolicy";
}

// An edit of an ended job's spec (a budget raised on a job that had spent
// it) trains nothing, and says so once, where it had been ignored in
// silence: a new user's trial.
TEST_F(ReconcilerTest, AnEditOfAnEndedJobsSpecSaysItDoesNotTrainAgain) {
  const std::string key = AJobThatSucceeded("brief");
  ASSERT_EQ(Job("brief")["status"]["phase"], api::phase::kSucceeded);
  ASSERT_TRUE(api_.MergePatch(kube::kTrainingJobs, "default", "brief",
                              {{"metadata", {{"generation", 2}}}, {"spec", {{"budget", {{"energyJoules", 600}}}}}})
                  .ok());
  for (int look = 0; look < 2; ++look) {
    jobs_.Put(Job("brief"));
    Reconcile(key);
  }
  std::vector<std::string> said;
  for (const Json& e : api_.All(kube::kEvents)) {
    if (e.value("reason", "") == api::reason::kSpecNotApplied) said.push_back(e.value("message", ""));
  }
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("after the job ended: an ended job does not train again"), std::string::npos) << said[0];
  EXPECT_EQ(Job("brief")["status"]["phase"], api::phase::kSucceeded);
  EXPECT_EQ(Job("brief")["status"]["observedGeneration"], 2);
}

// An edit while the team runs waits until it is placed again; a worker
// replaced meanwhile joins the team as placed, not the edit: another image or
// other resources than its teammates' (it had the edit's: found in review).
TEST_F(ReconcilerTest, AWorkerReplacedAfterAnEditNotYetAppliedIsItsTeamsNotTheEdits) {
  const std::string key = ARunningTeamOnThreeNodes(
      {{"faultTolerance", {{"maxRecoveries", 1}}},
       {"template", {{"image", "edgetrain:1"}, {"resources", {{"requests", {{"cpu", "250m"}}}}}}}});
  ASSERT_TRUE(api_.MergePatch(kube::kTrainingJobs, "default", "team",
                              {{"metadata", {{"generation", 2}}},
                               {"spec", {{"template", {{"image", "edgetrain:2"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}})
                  .ok());
  jobs_.Put(Job("team"));
  Reconcile(key);

  StatusOr<Json> made = WorkerOneEvictedAndReplaced(key);
  ASSERT_TRUE(made.ok()) << made.status().message();
  const Json& agent = (*made)["spec"]["containers"][0];
  EXPECT_EQ(agent["image"], "edgetrain:1");
  EXPECT_EQ(agent["resources"]["requests"]["cpu"], "250m");
}

// The operator's default image changed since the team was made (a helm
// upgrade): a worker replaced runs its teammates' image, not the new default
// (it ran 0.2.0 in a team on 0.1.0: a new user's trial).
TEST_F(ReconcilerTest, AWorkerReplacedAfterTheDefaultImageChangedRunsItsTeammatesImage) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 1}}}});
  for (Json pod : api_.All(kube::kPods)) {  // made by the operator as it was then
    pod["spec"]["containers"][0]["image"] = "edgetrain/agent:0.1.0";
    ASSERT_TRUE(api_.Update(kube::kPods, "default", pod).ok());
  }
  SyncPods();
  StatusOr<Json> made = WorkerOneEvictedAndReplaced(key);
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_EQ((*made)["spec"]["containers"][0]["image"], "edgetrain/agent:0.1.0");
}

// Two nodes lost together: the first's worker replaced while the second is
// not ready yet, within nodeLossGrace. Its pods still read Running, but the
// team is not whole: it was said to be ("run again, 4s after"), and the
// second node's recovery was timed from then (1-4 s of 20 s outages: a
// soak trial). Whole once that node is back, timed from the first loss.
TEST_F(ReconcilerTest, ATeamIsNotWholeAgainWhileANodeOfItsPodsIsNotReady) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 2}}}});
  ASSERT_TRUE(WorkerOneEvictedAndReplaced(key).ok());
  nodes_.Put(ANode("gateway").NotReady());  // the coordinator's and worker 0's, within its grace
  now_ += std::chrono::seconds(4);
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "team-worker-1-g2") Run(pod);
  });
  EXPECT_EQ(Reconcile(key).recovered_after, std::nullopt);
  jobs_.Put(Job("team"));
  Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRecovering);
  const Json* running = FindCondition(status, api::condition::kRunning);
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->value("status", ""), "False");
  EXPECT_NE(running->value("message", "").find("(plan generation 2, recovery 1 of 2); now every pod runs, but node "
                                               "gateway (team-coordinator, team-worker-0) is not ready: the team is "
                                               "whole again once it is back"),
            std::string::npos)
      << *running;
  EXPECT_EQ(log_text_.str().find("after the team stopped being whole"), std::string::npos) << log_text_.str();

  now_ += std::chrono::seconds(2);
  nodes_.Put(ANode("gateway"));
  EXPECT_EQ(Reconcile(key).recovered_after, std::optional<Duration>(std::chrono::seconds(6)));
  jobs_.Put(Job("team"));
  EXPECT_EQ(Job("team")["status"]["phase"], api::phase::kRunning);
  EXPECT_NE(log_text_.str().find("reason=Training all 3 pods of the gang run again, 6s after the team stopped "
                                 "being whole"),
            std::string::npos)
      << log_text_.str();
}

// A recovery whose status could not be stored is counted on the retry: it
// had gone uncounted, the retry finding the plan's new generation whole, and
// each such failure gave the job a recovery beyond maxRecoveries (found in
// review).
TEST_F(ReconcilerTest, ARecoveryWhoseStatusWasNotStoredIsStillCounted) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 1}}}});
  WorkerOneEvicted();
  api_.RefuseStatusWrites("TrainingJob", UnavailableError("connection reset"));
  EXPECT_FALSE(reconciler_.Reconcile(key).ok());
  api_.RefuseStatusWrites("TrainingJob", Status::Ok());
  SyncPods();
  Reconcile(key);
  const Json status = Job("team")["status"];
  EXPECT_EQ(status["recoveries"], 1) << status.dump();
  EXPECT_EQ(status["phase"], api::phase::kRecovering);
}

TEST_F(ReconcilerTest, ALostWorkerIsReplacedAloneUnderANewPlanGenerationAndTheTeamTrainsOn) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 1}}}});

  // robot-1 is pre-empted: its pod evicted, the node gone NotReady.
  WorkerOneEvicted();
  api_.ResetWrites();
  EXPECT_EQ(Reconcile(key).replan, api::reason::kWorkerLost);
  jobs_.Put(Job("team"));
  Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRecovering);
  EXPECT_EQ(status["recoveries"], 1);
  const Json* running = FindCondition(status, api::condition::kRunning);
  EXPECT_NE(running->value("message", "").find("worker 1: its node robot-1 is lost; its pod on robot-1 failed (Evicted); replaced: worker 1 to "
                                               "robot-2 (plan generation 2, recovery 1 of 1)"),
            std::string::npos)
      << *running;
  EXPECT_EQ(api_.Writes("create Pod"), 1) << "only the lost worker is made again";
  EXPECT_EQ(api_.Writes("delete Pod"), 1) << "the evicted pod goes";
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"team-coordinator@gateway", "team-worker-0@gateway",
                                                  "team-worker-1-g2@robot-2"}));
  StatusOr<JobPlan> plan =
      DecodeJobPlan((*api_.Get(kube::kConfigMaps, "default", "team-plan"))["data"]["plan.json"].get<std::string>());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->generation, 2);
  EXPECT_EQ(SlotSince(*plan, 0), 1) << "the survivor keeps its slot: the coordinator does not fence it out";
  EXPECT_EQ(SlotSince(*plan, 1), 2);

  // The replacement runs 4 s later: the team is whole again, and says how soon.
  now_ += std::chrono::seconds(4);
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "team-worker-1-g2") Run(pod);
  });
  EXPECT_EQ(Reconcile(key).recovered_after, std::optional<Duration>(std::chrono::seconds(4)));
  jobs_.Put(Job("team"));
  EXPECT_EQ(Job("team")["status"]["phase"], api::phase::kRunning);
  EXPECT_NE(log_text_.str().find("reason=Training all 3 pods of the gang run again, 4s after the team stopped being whole"),
            std::string::npos)
      << log_text_.str();
  // The lost pod may stay Terminating on its silent node for long (its
  // kubelet cannot confirm): it is not the team's, neither in the workers'
  // status nor as a node the team waits out.
  pods_.Put(testing::APod("team-worker-1").OfJob("team").Worker(1).On("robot-1").Running().BeingDeleted());
  Reconcile(key);
  jobs_.Put(Job("team"));
  status = Job("team")["status"];
  std::vector<std::string> listed;
  for (const Json& w : status["workers"]) listed.push_back(w["name"]);
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, (std::vector<std::string>{"team-coordinator", "team-worker-0", "team-worker-1-g2"}));
  EXPECT_NE(FindCondition(status, api::condition::kBandwidthDegraded)->value("reason", ""), api::reason::kNodeNotReady)
      << status.dump();

  // A second loss is one more than maxRecoveries allows.
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "team-worker-0") pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
  });
  Reconcile(key);
  status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kFailed);
  EXPECT_EQ(FindCondition(status, api::condition::kFailed)->value("reason", ""), api::reason::kRecoveriesExhausted);
}

// A replacement the API server refuses (a quota filled meanwhile): the
// recovery is counted and said, with the pod that could not be made, and the
// pod is made at a later look once there is room. Returned as the pass's
// error, the recovery had gone uncounted and the job read Running (found in
// review).
TEST_F(ReconcilerTest, AReplacementTheApiServerRefusesIsSaidAndTheRecoveryCounted) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 1}}}});
  WorkerOneEvicted();
  api_.RefuseCreates("Pod", FailedPreconditionError("pods is forbidden: exceeded quota: compute"));
  const ReconcileOutcome lost = Reconcile(key);
  EXPECT_EQ(lost.replan, api::reason::kWorkerLost);
  ASSERT_TRUE(lost.requeue_after.has_value());
  EXPECT_EQ(*lost.requeue_after, std::chrono::seconds(5)) << "asked again every --status-interval as the team trains";
  jobs_.Put(Job("team"));
  Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRecovering);
  EXPECT_EQ(status["recoveries"], 1);
  EXPECT_NE(FindCondition(status, api::condition::kRunning)
                ->value("message", "")
                .find("; a pod could not be made: creating Pod team-worker-1-g2: pods is forbidden"),
            std::string::npos)
      << status;
  // Still refused at the next look: said, not a second recovery.
  SyncPods();
  Reconcile(key);
  jobs_.Put(Job("team"));
  status = Job("team")["status"];
  EXPECT_EQ(status["recoveries"], 1);
  EXPECT_NE(FindCondition(status, api::condition::kRunning)->value("message", "").find("a pod could not be made"),
            std::string::npos)
      << status;
  // Room again: made.
  api_.RefuseCreates("Pod", Status::Ok());
  Reconcile(key);
  EXPECT_TRUE(api_.Get(kube::kPods, "default", "team-worker-1-g2").ok());
  int refusals = 0;
  for (const Json& e : api_.All(kube::kEvents)) {
    if (e.value("reason", "") == api::reason::kRequestRefused) refusals += e.value("count", 0);
  }
  EXPECT_EQ(refusals, 1) << "said once";
}

// `kubectl delete node`: the pod garbage collector deletes its pods at once,
// leaving no failed pod and no deletionTimestamp behind. The worker is lost
// and placed anew, not made again on a Node that no longer exists (it was,
// collected again, every second: a new user's trial).
TEST_F(ReconcilerTest, AWorkerWhoseNodeWasDeletedIsReplacedElsewhereOnce) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 2}}}});
  nodes_.Remove("robot-1");  // a Node's key: its name
  ASSERT_TRUE(api_.Delete(kube::kPods, "default", "team-worker-1").ok());
  pods_.Replace(api_.All(kube::kPods));
  EXPECT_EQ(Reconcile(key).replan, api::reason::kWorkerLost);
  jobs_.Put(Job("team"));
  const Json status = Job("team")["status"];
  const Json* running = FindCondition(status, api::condition::kRunning);
  EXPECT_NE(running->value("message", "").find("worker 1: its pod is gone, and its node robot-1 with it"),
            std::string::npos)
      << *running;
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"team-coordinator@gateway", "team-worker-0@gateway",
                                                  "team-worker-1-g2@robot-2"}));
  api_.ResetWrites();
  SyncPods(Run);
  Reconcile(key);
  EXPECT_EQ(api_.Writes("create Pod"), 0) << "nothing more made";
  EXPECT_EQ(Job("team")["status"]["recoveries"], 1);
}

TEST_F(ReconcilerTest, AReplacementHoldsItsNodeBeforeThePodInformerHasIt) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 1}}}});
  nodes_.Put(ANode("robot-2").Scoring(0.5).WithLink(20).WithAllocatable("1", "8Gi"));  // room for one agent
  WorkerOneEvicted();  // robot-1 pre-empted
  EXPECT_EQ(Reconcile(key).replan, api::reason::kWorkerLost);
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"team-coordinator@gateway", "team-worker-0@gateway",
                                                  "team-worker-1-g2@robot-2"}));
  // The informer has not seen team-worker-1-g2 yet; a job that fits only
  // where it went must not be given its room.
  const std::string other = Submit(TrainingJob(
      "other", {{"parallelism", {{"workers", 1}}},
                {"placement", {{"nodeSelector", {{"kubernetes.io/hostname", "robot-2"}}}}}}));
  Reconcile(other);
  EXPECT_TRUE(ConditionIs(Job("other")["status"], api::condition::kPlaced, false))
      << Job("other")["status"].dump();
  EXPECT_EQ(api_.All(kube::kPods).size(), 3u) << "nothing made for the other job";
}

TEST_F(ReconcilerTest, AWorkerOnANodeAboutToLeaveIsMovedFirstAndThatIsNoRecovery) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 0}}}});

  Json warned = ANode("robot-1").Scoring(0.5).WithLink(30);
  warned["metadata"]["annotations"]["edgetrain.dev/leaving"] = "battery";
  nodes_.Put(warned);
  EXPECT_EQ(Reconcile(key).replan, api::reason::kWorkerMoved);
  const Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRecovering);
  EXPECT_FALSE(status.contains("recoveries")) << "a move is not a recovery, even with maxRecoveries 0";
  EXPECT_EQ(FindCondition(status, api::condition::kRunning)->value("reason", ""), api::reason::kWorkerMoved)
      << "said as a move, not as Recovering";
  // Still said as one while its pod starts.
  jobs_.Put(Job("team"));
  SyncPods();
  Reconcile(key);
  const Json starting = Job("team")["status"];
  EXPECT_EQ(FindCondition(starting, api::condition::kRunning)->value("reason", ""), api::reason::kWorkerMoved)
      << starting.dump(1);
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"team-coordinator@gateway", "team-worker-0@gateway",
                                                  "team-worker-1-g2@robot-2"}))
      << "the worker left robot-1 before it went, and nothing new goes there";
  EXPECT_EQ(FindCondition(status, api::condition::kPlaced)->value("message", ""),
            "coordinator on gateway; workers on gateway (0), robot-2 (1) (plan generation 2)")
      << "Placed says where the team is now";
  EXPECT_NE(log_text_.str().find("reason=WorkerMoved worker 1: its node robot-1 is leaving (annotation "
                                 "edgetrain.dev/leaving=battery)"),
            std::string::npos)
      << log_text_.str();
}

// A node cordoned with nowhere to move its worker to: nothing is lost until
// the node goes, so the team trains on there, Running, saying the move waits.
// Once a node has room the worker moves, and its recovery time counts from
// the move (it was held Recovering, and the cordon's whole length counted as
// a recovery's time: found in review).
TEST_F(ReconcilerTest, AWorkerWithNowhereToMoveOffACordonedNodeTrainsOnThereUntilANodeHasRoom) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 0}}}});
  // Its coordinator unanswered meanwhile, which has a word of its own on how
  // the team runs: the move's note stays beside it, said once.
  ProgressReadOnceThenSilent(key);
  nodes_.Put(ANode("gateway").WithAllocatable("4", "8Gi", "2"));  // its two pods fill it
  nodes_.Put(ANode("robot-1").Scoring(0.5).WithLink(30).Cordoned());
  nodes_.Put(ANode("robot-2").Scoring(0.5).WithLink(20).Cordoned());
  auto moves_said = [&] {
    int n = 0;
    for (const Json& e : api_.All(kube::kEvents)) n += e.value("reason", "") == api::reason::kWorkerMoved;
    return n;
  };
  for (int look = 0; look < 2; ++look) {
    jobs_.Put(Job("team"));
    EXPECT_EQ(Reconcile(key).replan, "");
    now_ += std::chrono::seconds(30);
  }
  const Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRunning);
  const Json* running = FindCondition(status, api::condition::kRunning);
  EXPECT_EQ(running->value("status", ""), "True") << *running;
  EXPECT_NE(running->value("message", "").find("worker 1: its node robot-1 is leaving (cordoned); no node to move it "
                                               "to yet: "),
            std::string::npos)
      << *running;
  EXPECT_NE(running->value("message", "").find("; it trains on there meanwhile"), std::string::npos) << *running;
  EXPECT_NE(running->value("message", "").find("the coordinator's /progress has not answered since "),
            std::string::npos)
      << "beside the word on the unanswered coordinator, not in its place: " << *running;
  EXPECT_EQ(moves_said(), 1) << "said once, not every look";
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"team-coordinator@gateway", "team-worker-0@gateway",
                                                  "team-worker-1@robot-1"}));

  // robot-2 is uncordoned: the worker moves there, and runs 4 s later.
  nodes_.Put(ANode("robot-2").Scoring(0.5).WithLink(20));
  jobs_.Put(Job("team"));
  EXPECT_EQ(Reconcile(key).replan, api::reason::kWorkerMoved);
  now_ += std::chrono::seconds(4);
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "team-worker-1-g2") Run(pod);
  });
  jobs_.Put(Job("team"));
  EXPECT_EQ(Reconcile(key).recovered_after, std::optional<Duration>(std::chrono::seconds(4)))
      << "from the move, not from the cordon a minute before";
  EXPECT_FALSE(Job("team")["status"].contains("recoveries"));
}

// Drained rather than cordoned, with nowhere to go: the evicted worker is
// gone, so the team is Recovering until a node has room, not said to train on.
TEST_F(ReconcilerTest, AWorkerEvictedByADrainWithNowhereToGoLeavesTheTeamRecovering) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 0}}}});
  nodes_.Put(ANode("gateway").WithAllocatable("4", "8Gi", "2"));
  nodes_.Put(ANode("robot-1").Scoring(0.5).WithLink(30).Cordoned());
  nodes_.Put(ANode("robot-2").Scoring(0.5).WithLink(20).Cordoned());
  EvictPods([](const Json& pod) { return pod["spec"]["nodeName"] == "robot-1"; });
  jobs_.Put(Job("team"));
  // The coordinator trains on with worker 0 meanwhile: its figures are read
  // as they move, and the room looked for as often (a new user's trial: the
  // status stood still for a minute, the room looked for every 30 s).
  const std::string ip = (*api_.Get(kube::kPods, "default", "team-coordinator"))["status"]["podIP"];
  progress_.by_ip[ip] = {{"state", "training"}, {"iteration", 1061}, {"samples", 67904}};
  const auto outcome = Reconcile(key);
  jobs_.Put(Job("team"));
  Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRecovering);
  const Json* running = FindCondition(status, api::condition::kRunning);
  EXPECT_EQ(running->value("status", ""), "False") << *running;
  EXPECT_EQ(running->value("message", "").find("trains on there"), std::string::npos) << *running;
  EXPECT_FALSE(status.contains("recoveries")) << "a drain is not a recovery";
  EXPECT_EQ(status["progress"]["iteration"], 1061) << status.dump();
  ASSERT_TRUE(outcome.requeue_after.has_value());
  EXPECT_LE(*outcome.requeue_after, std::chrono::seconds(5)) << "--status-interval, not --unschedulable-retry";
  progress_.by_ip[ip] = {{"state", "training"}, {"iteration", 3222}, {"samples", 206208}};
  Reconcile(key);
  status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRecovering);
  EXPECT_EQ(status["progress"]["iteration"], 3222) << status.dump();
}

// kubectl drain: the node cordoned, its pods evicted a moment later, both
// seen by one reconcile. The eviction is the warning's move, not a loss
// against maxRecoveries, for a worker and for the coordinator.
TEST_F(ReconcilerTest, APodEvictedFromANodeBeingDrainedIsMovedAndThatIsNoRecovery) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 0}}}});
  nodes_.Put(ANode("robot-1").Scoring(0.5).WithLink(30).Cordoned());
  EvictPods([](const Json& pod) { return pod["spec"]["nodeName"] == "robot-1"; });
  EXPECT_EQ(Reconcile(key).replan, api::reason::kWorkerMoved);
  jobs_.Put(Job("team"));
  Json status = Job("team")["status"];
  EXPECT_NE(status["phase"], api::phase::kFailed) << status.dump();
  EXPECT_FALSE(status.contains("recoveries")) << "a drain is not a recovery, even with maxRecoveries 0";
  EXPECT_NE(log_text_.str().find("reason=WorkerMoved worker 1: its pod on robot-1 is being deleted; its node "
                                 "robot-1 is leaving"),
            std::string::npos)
      << log_text_.str();

  nodes_.Put(ANode("gateway").Cordoned());
  EvictPods([](const Json& pod) { return pod["metadata"]["name"] == "team-coordinator"; });
  EXPECT_EQ(Reconcile(key).replan, api::reason::kCoordinatorMoved);
  jobs_.Put(Job("team"));
  status = Job("team")["status"];
  EXPECT_FALSE(status.contains("recoveries")) << status.dump();
}

// A worker's pod deleted while no replica led: its recovery counts from the
// delete asked for (the deletionTimestamp less its grace), not from when an
// operator saw it (0.65 s shown for a team 17 s short, a new user's trial).
TEST_F(ReconcilerTest, ARecoveryCountsFromTheLossTheClusterRecorded) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 2}}}});
  now_ += std::chrono::seconds(5);
  DeletePodAt("team-worker-1", now_);
  now_ += std::chrono::seconds(15);  // the operator sees it 15 s later
  EXPECT_EQ(Reconcile(key).replan, api::reason::kWorkerLost);
  jobs_.Put(Job("team"));
  now_ += std::chrono::seconds(2);
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "team-worker-1-g2") Run(pod);
  });
  EXPECT_EQ(Reconcile(key).recovered_after, std::optional<Duration>(std::chrono::seconds(17)));
}

// A job deleted mid-run: the garbage collector deletes its pods, and the
// pods' watch brought that before the jobs' watch brought the deletion. The
// job the cache still holds is not recovered: a new user's deleted job got a
// WorkerLost event, its credentials again and a recovery counted.
TEST_F(ReconcilerTest, ADeletedJobWhosePodsGoBeforeTheCacheKnowsIsNotRecovered) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 2}}}});
  ASSERT_TRUE(api_.Delete(kube::kTrainingJobs, "default", "team").ok());  // jobs_, the cache, still holds it
  now_ += std::chrono::seconds(1);
  EvictPods([](const Json&) { return true; });
  api_.ResetWrites();
  EXPECT_EQ(Reconcile(key).replan, "");
  EXPECT_EQ(api_.AllWrites(), 0) << "nothing made, nothing written";
  // (A pod going of a job that is there is a loss: the tests above.)
}

// A node gone silent, its pod evicted after nodeLossGrace: the recovery
// counts from the node's own NotReady, not from the eviction 15 s later.
TEST_F(ReconcilerTest, ARecoveryFromASilentNodeCountsFromItsNotReady) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 2}}}});
  now_ += std::chrono::seconds(5);
  Json silent = ANode("robot-1").Scoring(0.5).WithLink(30).NotReady();
  silent["status"]["conditions"][0]["lastTransitionTime"] = kube::FormatKubeTime(now_);
  nodes_.Put(silent);
  now_ += std::chrono::seconds(15);  // nodeLossGrace out: the pod is evicted
  DeletePodAt("team-worker-1", now_);
  EXPECT_EQ(Reconcile(key).replan, api::reason::kWorkerLost);
  jobs_.Put(Job("team"));
  now_ += std::chrono::seconds(2);
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "team-worker-1-g2") Run(pod);
  });
  EXPECT_EQ(Reconcile(key).recovered_after, std::optional<Duration>(std::chrono::seconds(17)));
}

// A job whose nodeLossGrace is shorter than --link-down-after: its worker's
// silence is kept from that grace, though its link is not yet down, and a
// loss acted on before the silence reached --link-down-after counts from it,
// not from the node's NotReady (5.8 s of an outage of 10.7: a new user's
// trial on the stand-in).
TEST_F(ReconcilerTest, ASilenceShorterThanLinkDownCountsTowardARecoveryWithinAShortGrace) {
  const std::string key =
      ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 2}, {"nodeLossGrace", "5s"}}}});
  const kube::WallTime silent_from = now_;
  now_ += std::chrono::seconds(6);
  ReportWorkerOneSilent(6);
  Reconcile(key);
  jobs_.Put(Job("team"));
  const Json status = Job("team")["status"];
  const Json* degraded = FindCondition(status, api::condition::kBandwidthDegraded);
  EXPECT_TRUE(degraded == nullptr || degraded->value("reason", "") != api::reason::kLinkDown)
      << "6 s is short of --link-down-after's 10: " << *degraded;
  EXPECT_EQ(SilentSince("team-worker-1"), kube::FormatKubeTime(silent_from)) << status["workers"].dump();
  // Its node said NotReady at 5 s, the pod deleted at 10 s.
  Json silent = ANode("robot-1").Scoring(0.5).WithLink(30).NotReady();
  silent["status"]["conditions"][0]["lastTransitionTime"] = kube::FormatKubeTime(silent_from + std::chrono::seconds(5));
  nodes_.Put(silent);
  now_ += std::chrono::seconds(4);
  DeletePodAt("team-worker-1", now_);
  EXPECT_EQ(Reconcile(key).replan, api::reason::kWorkerLost);
  jobs_.Put(Job("team"));
  now_ += std::chrono::seconds(1);
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "team-worker-1-g2") Run(pod);
  });
  EXPECT_EQ(Reconcile(key).recovered_after, std::optional<Duration>(std::chrono::seconds(11)));
}

// A worker gone silent is a link down from when it went silent, not from when
// the operator read so, and a loss that follows counts from there: a
// recovery was timed from a LinkDown seen 10 s after its node's kill, 30.7 s
// of 40.7 (a new user's trial).
TEST_F(ReconcilerTest, ARecoveryFromAWorkerGoneSilentCountsFromItsSilence) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 2}}}});
  const kube::WallTime silent_from = now_;
  now_ += std::chrono::seconds(12);
  ReportWorkerOneSilent(12);
  Reconcile(key);
  jobs_.Put(Job("team"));
  const Json status = Job("team")["status"];
  const Json* degraded = FindCondition(status, api::condition::kBandwidthDegraded);
  ASSERT_NE(degraded, nullptr);
  EXPECT_EQ(degraded->value("reason", ""), api::reason::kLinkDown);
  EXPECT_EQ(SilentSince("team-worker-1"), kube::FormatKubeTime(silent_from)) << status["workers"].dump();
  now_ += std::chrono::seconds(15);  // nodeLossGrace out: the pod is evicted
  DeletePodAt("team-worker-1", now_);
  EXPECT_EQ(Reconcile(key).replan, api::reason::kWorkerLost);
  jobs_.Put(Job("team"));
  // While its replacement starts, what was lost stays said (it became "2/3
  // pods running" a moment after the loss; a new user's trial).
  SyncPods();
  Reconcile(key);
  jobs_.Put(Job("team"));
  const Json recovering = Job("team")["status"];
  const Json* running = FindCondition(recovering, api::condition::kRunning);
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->value("message", "").rfind("worker 1: ", 0), 0u) << *running;
  EXPECT_NE(running->value("message", "").find("; now 2/3 pods running"), std::string::npos) << *running;
  now_ += std::chrono::seconds(2);
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "team-worker-1-g2") Run(pod);
  });
  EXPECT_EQ(Reconcile(key).recovered_after, std::optional<Duration>(std::chrono::seconds(29)));
  jobs_.Put(Job("team"));
  // Ended, the team's links are no longer its status's: the last read's
  // LinkDown was kept through Succeeded (a new user's trial).
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] != "team-coordinator") return;
    Succeed(pod, {{"state", "succeeded"}, {"stopReason", "wallClock"}, {"accuracy", 0.9}, {"iteration", 400}});
  });
  Reconcile(key);
  const Json ended = Job("team")["status"];
  EXPECT_EQ(ended["phase"], api::phase::kSucceeded);
  EXPECT_TRUE(ConditionIs(ended, api::condition::kBandwidthDegraded, false)) << ended.dump(1);
  EXPECT_EQ(FindCondition(ended, api::condition::kBandwidthDegraded)->value("reason", ""), api::reason::kStopped);
}

// The cluster marks a lost node's pods one at a time: the coordinator's
// evicted while worker 0's, on the same node, is not yet. Its node's loss is
// theirs both, one recovery and one plan generation (worker 0 was lost a
// moment later as recovery 2, in generation 3: a new user's trial).
TEST_F(ReconcilerTest, AWorkerOnTheLostCoordinatorsNodeGoesWithItBeforeItsPodIsMarked) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 2}}}});
  nodes_.Put(ANode("gateway").NotReady());
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "team-coordinator") pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
  });
  EXPECT_EQ(Reconcile(key).replan, api::reason::kCoordinatorLost);
  jobs_.Put(Job("team"));
  const Json status = Job("team")["status"];
  EXPECT_EQ(status["recoveries"], 1);
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"team-coordinator-g2@robot-1", "team-worker-0-g2@robot-2",
                                                  "team-worker-1@robot-1"}));
  StatusOr<JobPlan> plan =
      DecodeJobPlan((*api_.Get(kube::kConfigMaps, "default", "team-plan"))["data"]["plan.json"].get<std::string>());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->generation, 2);
  EXPECT_EQ(SlotSince(*plan, 0), 2) << "worker 0 placed anew with the coordinator";
}

// Its node lost, the coordinator is placed anew under the next plan
// generation, with a name of its own; the workers stay where they are and
// keep their slots (the new coordinator admits their hellos and trains on
// from their copy of the model). Then the worker lost with the node is
// replaced as any lost worker is, and the coordinator keeps its new seat.
TEST_F(ReconcilerTest, ACoordinatorWhoseNodeIsLostIsPlacedAnewAndTheWorkersStay) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 2}}}});
  ASSERT_EQ(PodNodes(), (std::vector<std::string>{"team-coordinator@gateway", "team-worker-0@gateway",
                                                  "team-worker-1@robot-1"}));
  nodes_.Put(ANode("gateway").NotReady());
  SyncPods([](Json& pod) {
    if (pod["spec"]["nodeName"] == "gateway") pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
  });
  EXPECT_EQ(Reconcile(key).replan, api::reason::kCoordinatorLost);
  jobs_.Put(Job("team"));
  Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRecovering);
  EXPECT_EQ(status["recoveries"], 1);
  EXPECT_NE(FindCondition(status, api::condition::kRunning)
                ->value("message", "")
                .find("the coordinator: its node gateway is lost; its pod on gateway failed (Evicted); placed anew "
                      "on robot-1, to train on "
                      "from its workers' copy of the model; lost with it and replaced: worker 0 to robot-2 (plan "
                      "generation 2, recovery 1 of 2)"),
            std::string::npos)
      << status.dump();
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"team-coordinator-g2@robot-1", "team-worker-0-g2@robot-2",
                                                  "team-worker-1@robot-1"}))
      << "the evicted pods go; the new coordinator is on the best node left";
  const Json map = *api_.Get(kube::kConfigMaps, "default", "team-plan");
  EXPECT_EQ(CoordinatorSeatOf(map).node, "robot-1");
  EXPECT_EQ(CoordinatorSeatOf(map).since_generation, 2);
  StatusOr<JobPlan> plan = DecodeJobPlan(map["data"]["plan.json"].get<std::string>());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->generation, 2);
  EXPECT_EQ(SlotSince(*plan, 0), 2) << "worker 0, lost with the node, is placed anew in the same plan";
  EXPECT_EQ(SlotSince(*plan, 1), 1) << "the other keeps its slot";

  // The next pass: nothing more to recover; one node lost, one recovery.
  SyncPods(Run);
  EXPECT_EQ(Reconcile(key).replan, "");
  jobs_.Put(Job("team"));
  EXPECT_EQ(Job("team")["status"]["recoveries"], 1);
  EXPECT_EQ(Job("team")["status"]["phase"], api::phase::kRunning);
}

// Its pods on a silent node replaced, the team waits for its new coordinator
// to start it: the job no longer says it waits out pods it has left (a
// user's trial: NodeNotReady, naming the old pods, for seconds after).
TEST_F(ReconcilerTest, ATeamThatLeftASilentNodeNoLongerSaysItWaitsItOut) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 2}}}});
  nodes_.Put(ANode("gateway").NotReady());
  Reconcile(key);
  jobs_.Put(Job("team"));
  const Json silent = Job("team")["status"];
  ASSERT_NE(FindCondition(silent, api::condition::kBandwidthDegraded), nullptr) << silent.dump();
  EXPECT_EQ(FindCondition(silent, api::condition::kBandwidthDegraded)->value("reason", ""), api::reason::kNodeNotReady);
  SyncPods([](Json& pod) {
    if (pod["spec"]["nodeName"] == "gateway") pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
  });
  EXPECT_EQ(Reconcile(key).replan, api::reason::kCoordinatorLost);
  jobs_.Put(Job("team"));
  SyncPods(Run);
  const std::string ip = (*api_.Get(kube::kPods, "default", "team-coordinator-g2"))["status"]["podIP"];
  progress_.by_ip[ip] = {{"state", "starting"}};
  Reconcile(key);
  jobs_.Put(Job("team"));
  const Json status = Job("team")["status"];
  const Json* degraded = FindCondition(status, api::condition::kBandwidthDegraded);
  ASSERT_NE(degraded, nullptr);
  EXPECT_EQ(degraded->value("status", ""), "False") << status.dump();
  EXPECT_EQ(degraded->value("reason", ""), api::reason::kNodesReady);
  EXPECT_EQ(status.value("reason", ""), api::reason::kWaitingForTeam) << status.dump();
}

// Warned that its node is leaving, the coordinator moves before it goes, and
// that is no recovery.
TEST_F(ReconcilerTest, ACoordinatorOnANodeAboutToLeaveMovesFirstAndThatIsNoRecovery) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 0}}}});
  Json warned = ANode("gateway");
  warned["metadata"]["annotations"]["edgetrain.dev/leaving"] = "maintenance";
  nodes_.Put(warned);
  EXPECT_EQ(Reconcile(key).replan, api::reason::kCoordinatorMoved);
  const Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRecovering);
  EXPECT_FALSE(status.contains("recoveries")) << "a move is not a recovery, even with maxRecoveries 0";
  EXPECT_NE(log_text_.str().find("reason=CoordinatorMoved the coordinator: its node gateway is leaving (annotation "
                                 "edgetrain.dev/leaving=maintenance); placed anew on robot-1"),
            std::string::npos)
      << log_text_.str();
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"team-coordinator-g2@robot-1", "team-worker-0@gateway",
                                                  "team-worker-1@robot-1"}));
}

// A status write that conflicts (the cache behind the object, for as long as
// the watch does not bring it) fetches the object. Where only its metadata
// or spec changed, the pass's status is written on it: the recovery the pass
// made is counted. A retry had found the replacement made and counted nothing
// (found in review).
TEST_F(ReconcilerTest, AStatusWriteThatConflictsTakesTheObjectAsItIsForTheRetry) {
  const std::string key = ARunningTeamOnThreeNodes({{"faultTolerance", {{"maxRecoveries", 2}}}});
  // Someone else writes the job; the cache does not hear of it.
  Json changed = Job("team");
  changed["metadata"]["labels"]["owner"] = "someone";
  ASSERT_TRUE(api_.Update(kube::kTrainingJobs, "default", changed).ok());
  // Something to say: a worker's pod failed and is replaced.
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "team-worker-1") pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
  });
  StatusOr<ReconcileOutcome> first = reconciler_.Reconcile(key);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ((*jobs_.Get(key))["metadata"]["labels"]["owner"], "someone") << "the cache took the object as it is";
  Json job = Job("team");
  EXPECT_EQ(job["status"]["phase"], api::phase::kRecovering);
  EXPECT_EQ(job["status"]["recoveries"], 1);
  EXPECT_EQ(job["metadata"]["labels"]["owner"], "someone");

  // Its status written by another meanwhile: not written over; the retry
  // works on the object as it is.
  jobs_.Put(job);
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "team-worker-0") pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
  });
  job["status"]["note"] = "another's";
  ASSERT_TRUE(api_.UpdateStatus(kube::kTrainingJobs, "default", job).ok());
  StatusOr<ReconcileOutcome> conflicted = reconciler_.Reconcile(key);
  ASSERT_FALSE(conflicted.ok());
  EXPECT_EQ(conflicted.status().code(), StatusCode::kAborted);
  EXPECT_EQ((*jobs_.Get(key))["status"]["note"], "another's") << "the cache took the object as it is";
}

TEST_F(ReconcilerTest, AFinishedJobIsDeletedOnceItsTtlHasPassed) {
  const std::string key = AJobThatSucceeded("brief", {{"ttlSecondsAfterFinished", 60}});
  EXPECT_EQ(Job("brief")["status"]["phase"], api::phase::kSucceeded);
  EXPECT_EQ(FindCondition(Job("brief")["status"], api::condition::kComplete)->value("reason", ""), api::reason::kEnded)
      << "no termination message: it ended, and the status does not pretend to know how";
  now_ += std::chrono::seconds(30);
  ReconcileOutcome waiting = Reconcile(key);
  ASSERT_TRUE(waiting.requeue_after.has_value());
  EXPECT_EQ(*waiting.requeue_after, std::chrono::seconds(30)) << "looked at again when the TTL ends";
  now_ += std::chrono::seconds(30);
  Reconcile(key);
  EXPECT_FALSE(api_.Get(kube::kTrainingJobs, "default", "brief").ok()) << "deleted; its objects go by their owner";
}

// A TTL of "never" (1e10 s) is waited out, not added to the wall clock's
// nanoseconds, which overflowed and deleted the job the moment it finished;
// and a finished job the cache holds whose name is now another's, applied
// since it was deleted at its TTL, is not deleted in its place (found in
// review).
TEST_F(ReconcilerTest, AVeryLongTtlIsWaitedAndAJobOfTheSameNameAppliedSinceIsNotDeleted) {
  auto finish = [&](const std::string& name, int64_t ttl) {
    const std::string key = AJobThatSucceeded(name, {{"ttlSecondsAfterFinished", ttl}});
    EXPECT_EQ(Job(name)["status"]["phase"], api::phase::kSucceeded);
    return key;
  };
  const std::string forever = finish("forever", 2'147'483'647);  // 68 years, the schema's most
  const std::string brief = finish("brief", 60);
  now_ += std::chrono::seconds(61);
  const ReconcileOutcome waiting = Reconcile(forever);
  EXPECT_TRUE(api_.Get(kube::kTrainingJobs, "default", "forever").ok()) << "kept for its TTL";
  ASSERT_TRUE(waiting.requeue_after.has_value());
  EXPECT_EQ(*waiting.requeue_after, std::chrono::hours(24)) << "looked at again in a day at the latest";
  // Deleted at its TTL and applied again, the cache still holding the one deleted.
  const Json finished = Job("brief");
  ASSERT_TRUE(api_.Delete(kube::kTrainingJobs, "default", "brief").ok());
  Submit(TrainingJob("brief", {{"parallelism", {{"workers", 1}}}}));
  jobs_.Put(finished);
  Reconcile(brief);
  EXPECT_TRUE(api_.Get(kube::kTrainingJobs, "default", "brief").ok()) << "the new job of the name is left";
  // Nor where the server cannot be asked whose the name is: the delete is of
  // the finished job's uid alone.
  api_.RefuseLists("TrainingJob", UnavailableError("the server is busy"));
  EXPECT_TRUE(reconciler_.Reconcile(brief).ok());
  EXPECT_TRUE(api_.Get(kube::kTrainingJobs, "default", "brief").ok()) << "the new job of the name is left";
}

// A job's completionTime is its coordinator's finishedAt, the kubelet's clock
// on its node, only where that lies between the last time the operator saw it
// running (its start, its /progress read) and now: an edge
// node an hour behind (no clock battery, no NTP) had a job of a one-hour TTL
// deleted the moment it succeeded (found in review).
TEST_F(ReconcilerTest, ACompletionTimeOffTheOperatorsClockIsNowAndTheTtlCountsFromIt) {
  AddNode(ANode("gateway"));
  // Started at now, read running 20 s later where `read`, ended `finished`, seen ended 30 s after its start.
  auto finish_at = [&](const std::string& name, kube::WallTime finished, bool read = false) {
    const std::string key =
        Submit(TrainingJob(name, {{"parallelism", {{"workers", 1}}}, {"ttlSecondsAfterFinished", 3600}}));
    Reconcile(key);
    jobs_.Put(Job(name));
    SyncPods([&](Json& pod) {
      if (pod["metadata"]["name"].get<std::string>().starts_with(name + "-")) Run(pod);
    });
    Reconcile(key);  // running: its startTime
    jobs_.Put(Job(name));
    if (read) {
      now_ += std::chrono::seconds(20);
      const std::string ip = (*api_.Get(kube::kPods, "default", name + "-coordinator"))["status"]["podIP"];
      progress_.by_ip[ip] = {{"state", "training"}, {"iteration", 10}};
      Reconcile(key);
      jobs_.Put(Job(name));
      now_ += std::chrono::seconds(10);
    } else {
      now_ += std::chrono::seconds(30);
    }
    SyncPods([&](Json& pod) {
      if (!pod["metadata"]["name"].get<std::string>().starts_with(name + "-")) return;
      pod["status"] = {{"phase", "Succeeded"},
                       {"containerStatuses",
                        {{{"name", "agent"},
                          {"state",
                           {{"terminated", {{"exitCode", 0}, {"finishedAt", kube::FormatKubeTime(finished)}}}}}}}}};
    });
    Reconcile(key);
    jobs_.Put(Job(name));
    EXPECT_EQ(Job(name)["status"]["phase"], api::phase::kSucceeded);
    return key;
  };
  const std::string behind = finish_at("behind", now_ + std::chrono::seconds(30) - std::chrono::hours(1));
  EXPECT_EQ(Job("behind")["status"]["completionTime"], kube::FormatKubeTime(now_)) << "before it started: now";
  Reconcile(behind);
  EXPECT_TRUE(api_.Get(kube::kTrainingJobs, "default", "behind").ok()) << "kept for its hour";
  const std::string ahead = finish_at("ahead", now_ + std::chrono::hours(1));
  EXPECT_EQ(Job("ahead")["status"]["completionTime"], kube::FormatKubeTime(now_)) << "after now: now";
  // A time between the two is the node's, as when the job ended while no
  // operator ran.
  const kube::WallTime ended = now_ + std::chrono::seconds(20);
  finish_at("plausible", ended);
  EXPECT_EQ(Job("plausible")["status"]["completionTime"], kube::FormatKubeTime(ended));
  // After its start, but before the operator last read it running: a node
  // behind by less than the run's length.
  finish_at("read", now_ + std::chrono::seconds(10), /*read=*/true);
  EXPECT_EQ(Job("read")["status"]["completionTime"], kube::FormatKubeTime(now_)) << "before it was read running: now";
}

// A pass that placed a job and could not store its status (the API
// answered 503): the retry goes on from the status it computed. It had
// started again from the stored one, and with the new pods not yet in the
// pod cache placed the job again, a second set of workers beside the first
// (found in review).
TEST_F(ReconcilerTest, APlacementWhoseStatusWasNotStoredIsNotPlacedAgain) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  const std::string key = Submit(TrainingJob("team"));
  api_.RefuseStatusWrites("TrainingJob", UnavailableError("etcd leader changed"));
  EXPECT_FALSE(reconciler_.Reconcile(key).ok());
  const std::vector<std::string> placed = PodNodes();
  ASSERT_EQ(placed.size(), 3u);
  // Retried before the pods' watch brings them, and again with them.
  EXPECT_FALSE(reconciler_.Reconcile(key).ok());
  EXPECT_EQ(PodNodes(), placed) << "no second team";
  // Its spec edited meanwhile: the team placed is of the spec before, and
  // that is said, where the stored status (observedGeneration 0) had let it
  // pass in silence (found in review).
  ASSERT_TRUE(api_.MergePatch(kube::kTrainingJobs, "default", "team",
                              {{"metadata", {{"generation", 2}}}, {"spec", {{"parallelism", {{"workers", 3}}}}}})
                  .ok());
  jobs_.Put(Job("team"));
  api_.RefuseStatusWrites("TrainingJob", Status::Ok());
  SyncPods();
  Reconcile(key);
  EXPECT_EQ(PodNodes(), placed);
  const Json status = Job("team")["status"];
  EXPECT_TRUE(ConditionIs(status, api::condition::kPlaced, true)) << status.dump();
  EXPECT_EQ(status["phase"], api::phase::kPlacing);
  int said = 0;
  for (const Json& e : api_.All(kube::kEvents)) said += e.value("reason", "") == api::reason::kSpecNotApplied;
  EXPECT_EQ(said, 1);
}

TEST_F(ReconcilerTest, AGangNotRunningWithinItsTimeoutIsTornDownAndWaitsHoldingNothing) {
  const std::string key = APlacedTeamOnTwoNodes({{"placement", {{"gangTimeout", "1m"}}}});
  SyncPods();  // placed, never running
  now_ += std::chrono::seconds(59);
  Reconcile(key);
  EXPECT_EQ(api_.All(kube::kPods).size(), 3u);
  now_ += std::chrono::seconds(1);
  Reconcile(key);
  EXPECT_TRUE(api_.All(kube::kPods).empty());
  const Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kPending);
  const Json* placed = FindCondition(status, api::condition::kPlaced);
  EXPECT_EQ(placed->value("reason", ""), api::reason::kGangTimeout);
  EXPECT_NE(placed->value("message", "").find("0/3 pods running after spec.placement.gangTimeout (1m)"),
            std::string::npos)
      << *placed;
}

// A node of a gang that has not run lost, its pod there evicted: torn down
// at once, the node named, and placed again on ready nodes. Made again there,
// its pod had been refused while the evicted one could not end on the dead
// node (AlreadyExists until the gang's timeout, the node named nowhere: a
// soak trial). Nothing had trained: no recovery.
TEST_F(ReconcilerTest, AGangWhoseNodeIsLostBeforeItRanIsPlacedAgainAtOnceElsewhere) {
  const std::string key = APlacedTeamOnTwoNodes({{"placement", {{"gangTimeout", "10m"}}}});
  SyncPods();  // placed, not running yet
  ASSERT_EQ(PodNodes(), (std::vector<std::string>{"team-coordinator@gateway", "team-worker-0@gateway",
                                                  "team-worker-1@robot-1"}));
  AddNode(ANode("robot-2").Scoring(0.5).WithLink(20));
  nodes_.Put(ANode("robot-1").Scoring(0.5).WithLink(30).NotReady());
  Reconcile(key);  // within nodeLossGrace: its pod is not evicted yet, and is waited for
  EXPECT_EQ(Job("team")["status"]["phase"], api::phase::kPlacing);
  auto on_robot_1 = [](const Json& pod) { return pod["spec"]["nodeName"] == "robot-1"; };
  EvictPods(on_robot_1);
  jobs_.Put(Job("team"));
  const std::vector<Json> before_teardown = api_.All(kube::kPods);
  api_.ResetWrites();
  Reconcile(key);
  EXPECT_EQ(api_.Writes("create Pod"), 0) << "nothing made again on the lost node";
  jobs_.Put(Job("team"));
  Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kPending);
  const Json* placed = FindCondition(status, api::condition::kPlaced);
  EXPECT_EQ(placed->value("reason", ""), api::reason::kNodeLost);
  EXPECT_EQ(placed->value("message", ""), "node robot-1 (team-worker-1) was lost before the gang ran: torn down, "
                                          "holding nothing, to be placed again on ready nodes");
  EXPECT_FALSE(status.contains("recoveries"));

  // While its own pods end on the ready node, the job still says why they
  // were torn down: it said, 16 ms later, that it waited for pods "of an
  // earlier plan" (a soak trial).
  {
    std::vector<Json> ending = before_teardown;
    for (Json& pod : ending) pod["metadata"]["deletionTimestamp"] = "2026-11-29T12:00:30Z";
    pods_.Replace(ending);
  }
  Reconcile(key);
  jobs_.Put(Job("team"));
  status = Job("team")["status"];
  placed = FindCondition(status, api::condition::kPlaced);
  EXPECT_EQ(placed->value("reason", ""), api::reason::kNodeLost) << placed->dump();
  EXPECT_EQ(status["phase"], api::phase::kPending);

  // The pods left end, but the evicted one, stranded on its node; the job is
  // placed again at once, not after a back-off, and not on robot-1.
  SyncPods();
  EvictPods(on_robot_1);
  Reconcile(key);
  jobs_.Put(Job("team"));
  SyncPods();
  EvictPods(on_robot_1);
  Reconcile(key);
  jobs_.Put(Job("team"));
  status = Job("team")["status"];
  EXPECT_TRUE(ConditionIs(status, api::condition::kPlaced, true)) << status;
  std::vector<std::string> nodes;
  for (const std::string& pod : PodNodes()) {
    if (pod != "team-worker-1@robot-1") nodes.push_back(pod.substr(pod.find('@') + 1));
  }
  EXPECT_EQ(std::count(nodes.begin(), nodes.end(), "robot-1"), 0) << ::testing::PrintToString(PodNodes());
  EXPECT_EQ(nodes.size(), 3u) << ::testing::PrintToString(PodNodes());
}

// A gang that cannot start (an image that cannot be pulled) is torn down
// saying why, and waits a back-off that doubles before it is placed again:
// it was placed again at once, every gangTimeout, forever.
TEST_F(ReconcilerTest, AGangThatTimesOutSaysWhyAndBacksOffBeforeItIsPlacedAgain) {
  const std::string key = APlacedTeamOnTwoNodes({{"placement", {{"gangTimeout", "1m"}}}});
  auto cannot_pull = [](Json& pod) {
    pod["status"] = {{"phase", "Pending"},
                     {"containerStatuses",
                      {{{"name", "agent"},
                        {"state", {{"waiting", {{"reason", "ErrImagePull"}, {"message", "nope:1.0 not found"}}}}}}}}};
  };
  auto time_out = [&] {
    SyncPods(cannot_pull);
    now_ += std::chrono::minutes(1);
    Reconcile(key);
    jobs_.Put(Job("team"));
    pods_.Replace(api_.All(kube::kPods));
  };
  time_out();
  Json status = Job("team")["status"];
  EXPECT_EQ(status["gangTimeouts"], 1);
  const std::string said = FindCondition(status, api::condition::kPlaced)->value("message", "");
  // Said once for the pods it holds, not once a pod.
  EXPECT_NE(said.find("0/3 pods running: team-coordinator, team-worker-0, team-worker-1: ErrImagePull (nope:1.0 "
                      "not found) after"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("to be placed again in 1m"), std::string::npos) << said;

  now_ += std::chrono::seconds(30);
  Reconcile(key);
  jobs_.Put(Job("team"));
  EXPECT_TRUE(api_.All(kube::kPods).empty()) << "placed again within its back-off";
  EXPECT_EQ(Job("team")["status"]["phase"], api::phase::kPending);
  now_ += std::chrono::seconds(30);
  EXPECT_EQ(Reconcile(key).placement, "placed");
  jobs_.Put(Job("team"));
  pods_.Replace(api_.All(kube::kPods));

  time_out();
  status = Job("team")["status"];
  EXPECT_EQ(status["gangTimeouts"], 2);
  EXPECT_NE(FindCondition(status, api::condition::kPlaced)->value("message", "").find("placed again in 2m"),
            std::string::npos);
  now_ += std::chrono::seconds(90);
  Reconcile(key);
  EXPECT_TRUE(api_.All(kube::kPods).empty()) << "the second back-off is twice the first";
  now_ += std::chrono::seconds(30);
  jobs_.Put(Job("team"));
  EXPECT_EQ(Reconcile(key).placement, "placed");
  jobs_.Put(Job("team"));
  SyncPods(Run);
  Reconcile(key);
  EXPECT_FALSE(Job("team")["status"].contains("gangTimeouts")) << "a gang that runs starts its back-off over";
}

// A pod of a gang that has not run, failed by the kubelet on a ready node
// (evicted under memory pressure, refused at admission): the gang cannot
// start as placed, so it is torn down at once and placed again after the
// back-off of a gang timed out. The coordinator's had failed the job for
// good (found in review); a worker's waited out the whole gangTimeout.
class PodFailedBeforeTheGangRanTest : public ReconcilerTest, public ::testing::WithParamInterface<std::string> {};
INSTANTIATE_TEST_SUITE_P(CoordinatorOrWorker, PodFailedBeforeTheGangRanTest,
                         ::testing::Values("team-coordinator", "team-worker-1"));

TEST_P(PodFailedBeforeTheGangRanTest, TheGangIsPlacedAgainAfterABackOff) {
  const std::string failed = GetParam();
  const std::string key = APlacedTeamOnTwoNodes({{"placement", {{"gangTimeout", "10m"}}}});
  SyncPods([&](Json& pod) {
    if (pod["metadata"]["name"] != failed) return;
    pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}, {"message", "The node was low on resource: memory."}};
  });
  Reconcile(key);
  jobs_.Put(Job("team"));
  const Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kPending) << status.dump(1);
  EXPECT_EQ(status["gangTimeouts"], 1);
  EXPECT_FALSE(status.contains("recoveries")) << "nothing had trained";
  const Json* placed = FindCondition(status, api::condition::kPlaced);
  ASSERT_NE(placed, nullptr);
  EXPECT_EQ(placed->value("reason", ""), api::reason::kGangTimeout);
  const std::string node = failed == "team-coordinator" ? "gateway" : "robot-1";
  EXPECT_EQ(placed->value("message", ""), failed + " failed on " + node +
                                              " (Evicted: The node was low on resource: memory.) before the gang "
                                              "ran: torn down, holding nothing, to be placed again in 10m");
  EXPECT_TRUE(api_.All(kube::kPods).empty()) << "torn down, holding nothing";
}

// A spec mended after its gang timed out (the image it could not pull) is
// placed at once, its row of timeouts starting over: it had waited out the
// back-off, its status naming the old image meanwhile (a new user's trial).
TEST_F(ReconcilerTest, ASpecChangedAfterAGangTimeoutIsPlacedWithoutWaitingOutTheBackOff) {
  const std::string key = APlacedTeamOnTwoNodes({{"placement", {{"gangTimeout", "1m"}}}});
  SyncPods();  // placed, never running
  now_ += std::chrono::minutes(1);
  Reconcile(key);
  jobs_.Put(Job("team"));
  pods_.Replace(api_.All(kube::kPods));
  ASSERT_EQ(Job("team")["status"]["gangTimeouts"], 1);
  now_ += std::chrono::seconds(10);
  Reconcile(key);
  jobs_.Put(Job("team"));
  EXPECT_TRUE(api_.All(kube::kPods).empty()) << "the same spec waits out its back-off";

  ASSERT_TRUE(api_.MergePatch(kube::kTrainingJobs, "default", "team",
                              {{"metadata", {{"generation", 2}}},
                               {"spec", {{"template", {{"image", "edgetrain/agent:mended"}}}}}})
                  .ok());
  jobs_.Put(Job("team"));
  now_ += std::chrono::seconds(1);
  EXPECT_EQ(Reconcile(key).placement, "placed");
  EXPECT_EQ(api_.All(kube::kPods).size(), 3u);
  EXPECT_FALSE(Job("team")["status"].contains("gangTimeouts")) << "a new spec starts a new row";
}

// Mended while its gang was starting (it said SpecNotApplied), then timed
// out: the timeout is the old spec's, and the mended one is placed at once.
TEST_F(ReconcilerTest, ASpecMendedWhileItsGangStartedIsPlacedAtOnceAfterItTimesOut) {
  const std::string key = APlacedTeamOnTwoNodes({{"placement", {{"gangTimeout", "1m"}}}});
  SyncPods();  // placed, never running
  ASSERT_TRUE(api_.MergePatch(kube::kTrainingJobs, "default", "team",
                              {{"metadata", {{"generation", 2}}},
                               {"spec", {{"template", {{"image", "edgetrain/agent:mended"}}}}}})
                  .ok());
  jobs_.Put(Job("team"));
  now_ += std::chrono::seconds(10);
  Reconcile(key);
  jobs_.Put(Job("team"));
  now_ += std::chrono::minutes(1);
  Reconcile(key);  // the gang of generation 1 times out
  jobs_.Put(Job("team"));
  pods_.Replace(api_.All(kube::kPods));
  ASSERT_EQ(FindCondition(Job("team")["status"], api::condition::kPlaced)->value("reason", ""),
            api::reason::kGangTimeout);
  // Said as it is: it said "to be placed again in 1m" of a gang placed again at once.
  const std::string said = FindCondition(Job("team")["status"], api::condition::kPlaced)->value("message", "");
  EXPECT_NE(said.find("to be placed again now, its spec having changed since it was placed"), std::string::npos)
      << said;
  now_ += std::chrono::seconds(1);
  EXPECT_EQ(Reconcile(key).placement, "placed") << "not after the back-off";
  EXPECT_FALSE(Job("team")["status"].contains("gangTimeouts")) << "the mended spec starts a new row";
}

TEST_F(ReconcilerTest, WaitingJobsArePlacedByPriorityThenAge) {
  // Room for one job of one at a time.
  AddNode(ANode("gateway").WithAllocatable("1", "1Gi"));
  ASSERT_TRUE(api_.Create(kube::kPriorityClasses, "", {{"metadata", {{"name", "urgent"}}}, {"value", 1000}}).ok());
  const Json one = {{"parallelism", {{"workers", 1}}}};
  const std::string old_key = Submit(TrainingJob("old", one, "2026-11-22T09:00:00Z"));
  const std::string young_key = Submit(TrainingJob("young", one, "2026-11-22T09:30:00Z"));
  Json urgent_spec = one;
  urgent_spec["placement"] = {{"priorityClassName", "urgent"}};
  const std::string urgent_key = Submit(TrainingJob("urgent", urgent_spec, "2026-11-22T09:59:00Z"));

  EXPECT_EQ(Reconcile(young_key).placement, "unschedulable") << "the urgent job is first in line";
  EXPECT_EQ(Reconcile(old_key).placement, "unschedulable") << "and before the old one too";
  EXPECT_EQ(Reconcile(urgent_key).placement, "placed");
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"urgent-coordinator@gateway"}));
  EXPECT_EQ(Job("young")["status"]["phase"], api::phase::kPending);
  EXPECT_TRUE(api_.All(kube::kServices).size() == 1) << "a waiting job holds nothing";
}

// An elder waiting out the back-off of its gang's timeout holds nothing in
// line: its turn, which it could not take until the back-off ended, had held
// its room from a younger job that fitted only there (found in review).
TEST_F(ReconcilerTest, AJobWaitingOutAGangTimeoutsBackOffLeavesItsRoomToYoungerJobs) {
  AddNode(ANode("gateway").WithAllocatable("1", "1Gi"));  // room for one job of one
  const Json one = {{"parallelism", {{"workers", 1}}}, {"placement", {{"gangTimeout", "1m"}}}};
  const std::string old_key = Submit(TrainingJob("old", one, "2026-11-22T09:00:00Z"));
  ASSERT_EQ(Reconcile(old_key).placement, "placed");
  jobs_.Put(Job("old"));
  SyncPods();  // placed, never running
  now_ += std::chrono::minutes(1);
  Reconcile(old_key);  // torn down: back-off of 1m
  jobs_.Put(Job("old"));
  pods_.Replace(api_.All(kube::kPods));
  ASSERT_EQ(FindCondition(Job("old")["status"], api::condition::kPlaced)->value("reason", ""),
            api::reason::kGangTimeout);

  const std::string young_key = Submit(TrainingJob("young", one, "2026-11-22T09:30:00Z"));
  EXPECT_EQ(Reconcile(young_key).placement, "placed") << "the elder holds nothing while it backs off";
  jobs_.Put(Job("young"));
  SyncPods();
  now_ += std::chrono::minutes(1);  // the back-off over: the young job's pod holds the room
  EXPECT_EQ(Reconcile(old_key).placement, "unschedulable");
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"young-coordinator@gateway"}));
}

// A PriorityClass that cannot be read for a moment keeps the value it was
// last read with: taken for 0, its job went behind every other until the
// next pass (found in review).
TEST_F(ReconcilerTest, APriorityClassThatCannotBeReadForAMomentKeepsItsPlaceInLine) {
  AddNode(ANode("gateway").WithAllocatable("1", "1Gi"));  // room for one job of one
  ASSERT_TRUE(api_.Create(kube::kPriorityClasses, "", {{"metadata", {{"name", "urgent"}}}, {"value", 1000}}).ok());
  const Json one = {{"parallelism", {{"workers", 1}}}};
  const std::string old_key = Submit(TrainingJob("old", one, "2026-11-22T09:00:00Z"));
  Json urgent_spec = one;
  urgent_spec["placement"] = {{"priorityClassName", "urgent"}};
  const std::string urgent_key = Submit(TrainingJob("urgent", urgent_spec, "2026-11-22T09:59:00Z"));
  EXPECT_EQ(Reconcile(old_key).placement, "unschedulable") << "the urgent job is first in line";
  // The line looked at anew (a node changed) while the class cannot be read.
  AddNode(ANode("robot-1").WithAllocatable("0", "1Gi"));
  api_.RefuseGets("PriorityClass", UnavailableError("the server is busy"));
  EXPECT_EQ(Reconcile(old_key).placement, "unschedulable") << "still behind the urgent job";
  api_.RefuseGets("PriorityClass", Status::Ok());
  EXPECT_EQ(Reconcile(urgent_key).placement, "placed");
}

TEST_F(ReconcilerTest, AJobDeletedWhileItsStatusIsWrittenIsLeftAlone) {
  AddNode(ANode("gateway"));
  const std::string key = Submit(TrainingJob("brief", {{"parallelism", {{"workers", 1}}}}));
  // Deleted in the API; the watch has not told the cache yet.
  ASSERT_TRUE(api_.Delete(kube::kTrainingJobs, "default", "brief").ok());
  Reconcile(key);  // succeeds: nothing left to write to, and nothing to retry
  jobs_.Remove(key);  // the watch's word
  EXPECT_FALSE(jobs_.Get(key).has_value()) << "the status write did not bring it back into the cache";
}

TEST_F(ReconcilerTest, WaitingJobsShareOneReservationPassAndKeepTheirOrder) {
  // Room for three jobs of one; six wait, reconciled youngest first, before
  // the pod informer has shown any pod.
  AddNode(ANode("gateway").WithAllocatable("3", "4Gi"));
  const Json one = {{"parallelism", {{"workers", 1}}}};
  std::vector<std::string> keys;
  for (int i = 0; i < 6; ++i) {
    keys.push_back(Submit(TrainingJob("j" + std::to_string(i), one, "2026-11-22T09:0" + std::to_string(i) + ":00Z")));
  }
  for (int i = 5; i >= 0; --i) {
    EXPECT_EQ(Reconcile(keys[i]).placement, i < 3 ? "placed" : "unschedulable") << keys[i];
    jobs_.Put(Job("j" + std::to_string(i)));
  }
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"j0-coordinator@gateway", "j1-coordinator@gateway",
                                                  "j2-coordinator@gateway"}))
      << "the three eldest, and no node given twice before the informer shows their pods";
  EXPECT_EQ(reconciler_.ReservationPasses(), 1u) << "one pass served every reconcile; placing as it said keeps it";

  // A younger job joins behind everyone: it is added to the pass.
  const std::string late = Submit(TrainingJob("late", one, "2026-11-22T09:30:00Z"));
  EXPECT_EQ(Reconcile(late).placement, "unschedulable");
  EXPECT_EQ(reconciler_.ReservationPasses(), 1u);
  EXPECT_EQ(reconciler_.ReservationExtensions(), 1u);
  // The pods the pass assumed are seen as they were assumed: still one pass.
  SyncPods();
  EXPECT_EQ(Reconcile(keys[3]).placement, "unschedulable");
  EXPECT_EQ(reconciler_.ReservationPasses(), 1u);

  // A team publishes the link it measured on the node again, newer and the
  // same: nothing placement reads has changed, and the pass stands.
  Json measured = ANode("gateway").WithAllocatable("3", "4Gi");
  measured["metadata"]["annotations"][kMeasuredUplink] = "20000000";
  measured["metadata"]["annotations"][kMeasuredAt] = "2026-11-22T19:01:00Z";
  nodes_.Put(measured);
  EXPECT_EQ(Reconcile(keys[3]).placement, "unschedulable");
  EXPECT_EQ(reconciler_.ReservationPasses(), 2u) << "a new measurement is a change";
  measured["metadata"]["annotations"][kMeasuredAt] = "2026-11-22T19:01:30Z";
  nodes_.Put(measured);
  EXPECT_EQ(Reconcile(keys[3]).placement, "unschedulable");
  EXPECT_EQ(reconciler_.ReservationPasses(), 2u) << "the same measurement, published again, is not";

  // One leaves: room for the next in line, the eldest waiting, not the latest.
  ASSERT_TRUE(api_.Delete(kube::kPods, "default", "j0-coordinator").ok());
  SyncPods();
  EXPECT_EQ(Reconcile(late).placement, "unschedulable") << "j3 is ahead of it";
  EXPECT_EQ(Reconcile(keys[3]).placement, "placed");
  EXPECT_EQ(reconciler_.ReservationPasses(), 3u);
}

// A job suspended and resumed waits for room as any job in line: older than
// the job placed in its room meanwhile, it was given that room as its
// elders left it, the younger job's taken turn not counted, and placed on a
// node it filled (200% of its cpu) ahead of the job waiting (a new user's
// trial).
TEST_F(ReconcilerTest, AResumedJobWaitsForRoomAsAnyJobInLine) {
  AddNode(ANode("gateway").WithAllocatable("1", "1Gi"));  // room for one job of one
  const Json one = {{"parallelism", {{"workers", 1}}}};
  const std::string first = Submit(TrainingJob("first", one, "2026-11-22T09:00:00Z"));
  ASSERT_EQ(Reconcile(first).placement, "placed");
  jobs_.Put(Job("first"));
  SyncPods(Run);
  Reconcile(first);
  jobs_.Put(Job("first"));
  Json suspended = Job("first");
  suspended["spec"]["suspend"] = true;
  jobs_.Put(suspended);
  Reconcile(first);
  jobs_.Put(Job("first"));
  SyncPods();
  ASSERT_TRUE(api_.All(kube::kPods).empty());

  const std::string second = Submit(TrainingJob("second", one, "2026-11-22T09:10:00Z"));
  ASSERT_EQ(Reconcile(second).placement, "placed") << "the room the suspended job left";
  jobs_.Put(Job("second"));
  SyncPods(Run);
  const std::string third = Submit(TrainingJob("third", one, "2026-11-22T09:20:00Z"));
  EXPECT_EQ(Reconcile(third).placement, "unschedulable");
  jobs_.Put(Job("third"));

  Json resumed = Job("first");
  resumed["spec"]["suspend"] = false;
  jobs_.Put(resumed);
  EXPECT_EQ(Reconcile(first).placement, "unschedulable") << "the room is the second job's\n" << log_text_.str();
  EXPECT_EQ(PodNodes(), (std::vector<std::string>{"second-coordinator@gateway"})) << "no node given twice";
}

TEST_F(ReconcilerTest, ThePlanIsReadFromThePlanInformersCacheNotAskedOfTheApi) {
  std::map<std::string, int> requests;
  kube::ObservedKubeClient counted(
      api_, [](const std::string&, StatusCode) {}, [&](const std::string& verb) { ++requests[verb]; });
  kube::Store plans;
  Reconciler cached(counted, jobs_, pods_, nodes_, progress_, events_, log_, [this] { return now_; }, {}, &plans);
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1"));
  const std::string key = Submit(TrainingJob("team"));
  StatusOr<ReconcileOutcome> placed = cached.Reconcile(key);
  ASSERT_TRUE(placed.ok()) << placed.status().ToString();
  EXPECT_EQ(placed->placement, "placed");
  // A job not yet placed has no plan to read, and its team's credentials
  // (Secrets NAME-tls and NAME-ca) are made without asking whether they exist.
  EXPECT_EQ(requests["get"], 0);
  EXPECT_EQ(plans.Size(), 1u) << "the plan written is cached before the watch brings it";

  jobs_.Put(Job("team"));
  SyncPods();
  requests.clear();
  ASSERT_TRUE(cached.Reconcile(key).ok());
  EXPECT_EQ(requests, (std::map<std::string, int>{})) << "a placed job whose pods start asks nothing of the API";
}

// A job writing its model among the files the operator mounts in its pods
// (/data): under edgetrain run it may, on Kubernetes not.
Json OutputAmongItsFiles() { return {{"output", {{"path", "/data/out"}}}}; }

TEST_F(ReconcilerTest, AJobTheOperatorCannotRunIsInvalidAndMakesNothing) {
  AddNode(ANode("gateway"));
  const std::string key = Submit(TrainingJob("piped", OutputAmongItsFiles()));
  Reconcile(key);
  const Json status = Job("piped")["status"];
  EXPECT_EQ(status["phase"], api::phase::kFailed);
  const Json* invalid = FindCondition(status, api::condition::kInvalid);
  ASSERT_NE(invalid, nullptr);
  EXPECT_EQ(invalid->value("reason", ""), api::reason::kInvalidSpec);
  EXPECT_NE(invalid->value("message", "").find("spec.output.path"), std::string::npos) << *invalid;
  EXPECT_EQ(api_.Writes("create Pod") + api_.Writes("create Service") + api_.Writes("create ConfigMap"), 0);
}

TEST_F(ReconcilerTest, AnInvalidJobIsFinishedSoItsTtlDeletesItAndAFixStartsItAgain) {
  AddNode(ANode("gateway"));
  Json piped = OutputAmongItsFiles();
  piped["ttlSecondsAfterFinished"] = 60;
  const std::string key = Submit(TrainingJob("piped", piped));
  Reconcile(key);
  jobs_.Put(Job("piped"));
  EXPECT_EQ(Job("piped")["status"]["completionTime"], Job("piped")["status"]["conditions"][0]["lastTransitionTime"])
      << "Failed for being invalid: finished now";
  now_ += std::chrono::seconds(30);
  ReconcileOutcome waiting = Reconcile(key);
  ASSERT_TRUE(waiting.requeue_after.has_value());
  EXPECT_EQ(*waiting.requeue_after, std::chrono::seconds(30));

  // Fixed within its TTL: it is no longer finished, and runs.
  Json fixed = Job("piped");
  fixed["spec"]["output"]["path"] = "/models/out";
  fixed["metadata"]["generation"] = 2;
  StatusOr<Json> updated = api_.Update(kube::kTrainingJobs, "default", fixed);
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  jobs_.Put(*updated);
  Reconcile(key);
  jobs_.Put(Job("piped"));
  EXPECT_FALSE(Job("piped")["status"].contains("completionTime"));
  EXPECT_NE(Job("piped")["status"]["phase"], api::phase::kFailed);
  now_ += std::chrono::seconds(60);
  Reconcile(key);
  EXPECT_TRUE(api_.Get(kube::kTrainingJobs, "default", "piped").ok()) << "a running job has no TTL";

  // Left invalid, it goes once the TTL has passed.
  const std::string other = Submit(TrainingJob("left", piped));
  Reconcile(other);
  jobs_.Put(Job("left"));
  now_ += std::chrono::seconds(60);
  Reconcile(other);
  EXPECT_FALSE(api_.Get(kube::kTrainingJobs, "default", "left").ok()) << "deleted as a Failed job is";
}

TEST_F(ReconcilerTest, SuspendTakesThePodsAwayAndKeepsThePlan) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  const std::string key = Submit(TrainingJob("team"));
  Reconcile(key);
  SyncPods(Run);
  jobs_.Put(Job("team"));
  Reconcile(key);
  ASSERT_EQ(Job("team")["status"]["phase"], api::phase::kRunning) << "the team has run";
  // A pod that only carries the job's label is not the job's: it was deleted
  // with the job's pods (a security review).
  ASSERT_TRUE(api_.Create(kube::kPods, "default",
                          {{"apiVersion", "v1"},
                           {"kind", "Pod"},
                           {"metadata", {{"name", "innocent"}, {"namespace", "default"},
                                         {"labels", {{kJobLabel, "team"}}}}},
                           {"spec", {{"containers", {{{"name", "web"}, {"image", "nginx"}}}}}}})
                  .ok());
  SyncPods();
  Json job = Job("team");
  job["spec"]["suspend"] = true;
  jobs_.Put(job);
  Reconcile(key);
  ASSERT_EQ(api_.All(kube::kPods).size(), 1u) << "the job's gone, the other left";
  EXPECT_EQ(api_.All(kube::kPods)[0]["metadata"]["name"], "innocent");
  ASSERT_TRUE(api_.Delete(kube::kPods, "default", "innocent").ok());
  SyncPods();
  EXPECT_TRUE(api_.All(kube::kPods).empty());
  EXPECT_EQ(api_.All(kube::kConfigMaps).size(), 1u);
  EXPECT_EQ(Job("team")["status"]["phase"], api::phase::kSuspended);
  EXPECT_FALSE(Job("team")["status"].contains("workers")) << "no pods, no workers listed";
  EXPECT_NE(log_text_.str().find("it starts over when set to false (its checkpoint went with its pods"),
            std::string::npos)
      << "on emptyDir nothing is resumed from\n" << log_text_.str();

  // An hour later it is resumed: its pods start again, which is no recovery,
  // and the hour suspended is not recovery time.
  now_ += std::chrono::hours(1);
  job = Job("team");
  job["spec"]["suspend"] = false;
  jobs_.Put(job);
  std::vector<std::string> phases;
  // Its pods are made, then reconciled while they start, then they run.
  for (int pass = 0; pass < 4 && Job("team")["status"]["phase"] != api::phase::kRunning; ++pass) {
    if (pass >= 2) {
      SyncPods(Run);
    } else {
      SyncPods();
    }
    const ReconcileOutcome outcome = Reconcile(key);
    jobs_.Put(Job("team"));
    const Json status = Job("team")["status"];
    phases.push_back(status["phase"].get<std::string>() + "/" +
                     FindCondition(status, api::condition::kRunning)->value("reason", ""));
    EXPECT_EQ(outcome.recovered_after, std::nullopt);
  }
  EXPECT_EQ(Job("team")["status"]["phase"], api::phase::kRunning);
  for (const std::string& p : phases) EXPECT_EQ(p.find("Recovering"), std::string::npos) << p;
  // Resuming from its placement on, not Starting for a pass first.
  ASSERT_FALSE(phases.empty());
  EXPECT_EQ(phases[0], "Placing/Resuming");
  EXPECT_EQ(log_text_.str().find("after the team stopped being whole"), std::string::npos) << log_text_.str();
}

// A resumed job whose pods do not start (its claim deleted while it was
// suspended, a node gone) is torn down at its gang timeout as a new job is:
// it had stood Placing Resuming, holding its nodes, for good (a new user's
// trial).
TEST_F(ReconcilerTest, AResumedJobsGangTimesOutAsANewJobsDoes) {
  const std::string key = ARunningTeamOnThreeNodes({{"placement", {{"gangTimeout", "1m"}}}});
  ProgressReadOnceThenSilent(key);
  ASSERT_TRUE(Job("team")["status"].contains("progress"));
  SetSuspend(key, true);
  ASSERT_EQ(Job("team")["status"]["phase"], api::phase::kSuspended);
  SetSuspend(key, false);  // placed anew; its pods never start
  SyncPods();
  Reconcile(key);
  jobs_.Put(Job("team"));
  ASSERT_EQ(Job("team")["status"]["phase"], api::phase::kPlacing);
  EXPECT_FALSE(Job("team")["status"].contains("progress"))
      << "no output volume: it starts over, and the last run's figures are not its progress";
  now_ += std::chrono::seconds(61);
  SyncPods();
  Reconcile(key);
  const Json status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kPending) << status.dump();
  EXPECT_EQ(FindCondition(status, api::condition::kPlaced)->value("reason", ""), api::reason::kGangTimeout);
  EXPECT_EQ(status["gangTimeouts"], 1);
  EXPECT_TRUE(api_.All(kube::kPods).empty()) << "holding nothing";
}

// A resumed job's pod lost before its new gang has run is no member of a
// team that trained: no recovery is counted and the job does not read
// Recovering (it had, and its gang then never timed out: found in review).
TEST_F(ReconcilerTest, APodOfAResumedGangLostBeforeItRunsIsNoRecovery) {
  const std::string key = ARunningTeamOnThreeNodes({{"placement", {{"gangTimeout", "1m"}}}});
  SetSuspend(key, true);
  SetSuspend(key, false);  // placed anew
  SyncPods();
  Reconcile(key);
  jobs_.Put(Job("team"));
  ASSERT_EQ(Job("team")["status"]["phase"], api::phase::kPlacing);
  SyncPods([](Json& pod) {  // the resumed plan's pods are of its generation: team-worker-1-g2
    if (pod["metadata"]["name"].get<std::string>().starts_with("team-worker-1")) {
      pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
    }
  });
  Reconcile(key);
  jobs_.Put(Job("team"));
  const Json status = Job("team")["status"];
  EXPECT_NE(status["phase"], api::phase::kRecovering) << status.dump();
  EXPECT_EQ(status.value("recoveries", 0), 0) << status.dump();
  for (const Json& e : api_.All(kube::kEvents)) {
    EXPECT_NE(e.value("reason", ""), api::reason::kWorkerLost) << e.dump();
  }
}

// Suspended, a job has no team: what its last read said of its links is
// settled, not left True through the suspension and after (a new user's
// trial: Stalled and BandwidthDegraded naming a deleted coordinator). And
// resumed, Running no longer says it is suspended while it waits for room.
TEST_F(ReconcilerTest, ASuspendedJobSettlesItsLinkConditionsAndAResumedOneSaysSo) {
  const std::string key = ARunningTeamOnThreeNodes(Json::object());
  ProgressReadOnceThenSilent(key);
  now_ += std::chrono::seconds(40);
  Reconcile(key);
  jobs_.Put(Job("team"));
  ASSERT_TRUE(ConditionIs(Job("team")["status"], api::condition::kStalled, true));
  SetSuspend(key, true);
  Json status = Job("team")["status"];
  const Json* stalled = FindCondition(status, api::condition::kStalled);
  EXPECT_EQ(stalled->value("status", ""), "False");
  EXPECT_EQ(stalled->value("reason", ""), api::reason::kSuspended);
  EXPECT_EQ(stalled->value("message", "").rfind("suspended; the last read said ProgressUnreadable: ", 0), 0u)
      << *stalled;
  // Resumed onto a cluster with no room for it now.
  for (const char* node : {"gateway", "robot-1", "robot-2"}) nodes_.Put(ANode(node).NotReady());
  SetSuspend(key, false);
  status = Job("team")["status"];
  EXPECT_EQ(status["phase"], api::phase::kPending);
  EXPECT_EQ(FindCondition(status, api::condition::kRunning)->value("reason", ""), api::reason::kResuming)
      << status.dump();
}

// What placement found (no node matches) a suspended job keeps: it turned
// Valid while suspended, and on resume Invalid again, a second Event.
TEST_F(ReconcilerTest, ASuspendedJobKeepsWhatPlacementFoundAndSaysItOnce) {
  AddNode(ANode("gateway"));
  const std::string key = Submit(TrainingJob("team", {{"placement", {{"nodeSelector", {{"disk", "ssd"}}}}}}));
  Reconcile(key);
  jobs_.Put(Job("team"));
  for (bool suspend : {true, false}) {
    SetSuspend(key, suspend);
    EXPECT_EQ(FindCondition(Job("team")["status"], api::condition::kInvalid)->value("reason", ""),
              api::reason::kNoMatchingNode)
        << "suspend " << suspend;
  }
  int said = 0;
  for (const Json& e : api_.All(kube::kEvents)) said += e.value("reason", "") == api::reason::kNoMatchingNode;
  EXPECT_EQ(said, 1);
}

// A job whose output is on a volume of one node (a local-path claim, named
// its node when first bound) takes its coordinator there when placed anew:
// resumed after its gateway was lost, it went to robot-1, whose pod could
// never mount the volume (a new user's trial). A shared claim goes anywhere.
TEST_F(ReconcilerTest, AJobPlacedAnewTakesItsCoordinatorToItsOutputVolumesNode) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  AddNode(ANode("robot-2").Scoring(0.5).WithLink(20));
  auto claim = [&](const std::string& name, const char* mode) {
    ASSERT_TRUE(api_.Create(kube::kPersistentVolumeClaims, "default",
                            {{"apiVersion", "v1"},
                             {"kind", "PersistentVolumeClaim"},
                             {"metadata",
                              {{"name", name},
                               {"namespace", "default"},
                               {"annotations", {{"volume.kubernetes.io/selected-node", "robot-2"}}}}},
                             {"spec", {{"accessModes", {mode}}}},
                             {"status", {{"phase", "Bound"}}}})
                    .ok());
  };
  claim("local", "ReadWriteOnce");
  claim("shared", "ReadWriteMany");
  auto output = [](const char* name) {
    return Json{{"output", {{"path", "/models/x"}, {"volume", {{"persistentVolumeClaim", {{"claimName", name}}}}}}}};
  };
  const std::string local = Submit(TrainingJob("local", output("local")));
  Reconcile(local);
  EXPECT_EQ(api_.Get(kube::kPods, "default", "local-coordinator")->at("spec").at("nodeName"), "robot-2");
  const std::string shared = Submit(TrainingJob("shared", output("shared")));
  Reconcile(shared);
  EXPECT_EQ(api_.Get(kube::kPods, "default", "shared-coordinator")->at("spec").at("nodeName"), "gateway")
      << "a shared claim follows the coordinator";

  // Its node gone: it waits for it, saying why, rather than placing a pod
  // that can never start.
  nodes_.Put(ANode("robot-2").NotReady());
  const std::string later = Submit(TrainingJob("later", output("local")));
  Reconcile(later);
  const Json status = Job("later")["status"];
  EXPECT_EQ(status["phase"], api::phase::kPending);
  EXPECT_EQ(FindCondition(status, api::condition::kPlaced)
                ->value("message", "")
                .rfind("the coordinator goes only to robot-2 (its output claim local's volume is there), which "
                       "cannot take it: ",
                       0),
            0u)
      << status.dump();
}

// An output claim that does not exist: the coordinator's pod waits to
// mount it, which its container's state does not say. It was in the
// operator's log alone, the job "2/3 pods running" (a new user's trial).
TEST_F(ReconcilerTest, AMissingOutputClaimIsSaidInAnEventAndWhileThePodsStart) {
  const std::string key = APlacedTeamOnTwoNodes(
      {{"output", {{"path", "/models/team"}, {"volume", {{"persistentVolumeClaim", {{"claimName", "no-such-claim"}}}}}}}});
  int said = 0;
  for (const Json& e : api_.All(kube::kEvents)) {
    if (e.value("reason", "") != api::reason::kOutputClaimMissing) continue;
    ++said;
    EXPECT_EQ(e.value("type", ""), "Warning");
    EXPECT_NE(e.value("message", "").find("PersistentVolumeClaim no-such-claim does not exist in namespace default"),
              std::string::npos)
        << e;
  }
  EXPECT_EQ(said, 1);
  // The workers run; the coordinator waits for its claim.
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] != "team-coordinator") Run(pod);
  });
  Reconcile(key);
  const Json status = Job("team")["status"];
  const std::string message = FindCondition(status, api::condition::kRunning)->value("message", "");
  EXPECT_NE(message.find("2/3 pods running"), std::string::npos) << message;
  EXPECT_NE(message.find("team-coordinator: spec.output.volume's PersistentVolumeClaim no-such-claim does not exist"),
            std::string::npos)
      << message;
  // Made as the message asks: an unbound claim is named the coordinator's
  // node, as at placement; a local-path claim made later had waited for a
  // scheduler that never sees the bound pod.
  ASSERT_TRUE(api_.Create(kube::kPersistentVolumeClaims, "default",
                          {{"apiVersion", "v1"},
                           {"kind", "PersistentVolumeClaim"},
                           {"metadata", {{"name", "no-such-claim"}, {"namespace", "default"}}},
                           {"spec", {{"accessModes", {"ReadWriteOnce"}}}},
                           {"status", {{"phase", "Pending"}}}})
                  .ok());
  jobs_.Put(Job("team"));
  Reconcile(key);
  const Json pvc = *api_.Get(kube::kPersistentVolumeClaims, "default", "no-such-claim");
  EXPECT_EQ(pvc.value("/metadata/annotations/volume.kubernetes.io~1selected-node"_json_pointer, std::string()),
            "gateway")
      << pvc.dump();
  EXPECT_NE(FindCondition(Job("team")["status"], api::condition::kRunning)
                ->value("message", "")
                .find("team-coordinator: its output claim no-such-claim is not bound yet"),
            std::string::npos);
}

// A worker's pod left being deleted on a node that was lost (a replaced
// worker's, on a real cluster, until the kubelet comes back) never ends:
// resuming the job waited on it for good, Pending PodsEnding (a new user's
// trial). It is placed past it, its pods named after a later generation.
TEST_F(ReconcilerTest, AResumedJobIsPlacedPastAPodStrandedOnALostNode) {
  AddNode(ANode("robot-3").Scoring(0.5).WithLink(25));
  const std::string key = ARunningTeamOnThreeNodes(Json::object());
  Json stranded = *api_.Get(kube::kPods, "default", "team-worker-1");
  const std::string lost_node = stranded["spec"]["nodeName"];
  ASSERT_NE(lost_node, "gateway");
  SetSuspend(key, true);
  ASSERT_EQ(Job("team")["status"]["phase"], api::phase::kSuspended);
  // Its node lost, the pod's delete never confirmed by its kubelet.
  nodes_.Put(ANode(lost_node).NotReady());
  stranded["metadata"].erase("resourceVersion");
  stranded["metadata"]["deletionTimestamp"] = kube::FormatKubeTime(now_);
  ASSERT_TRUE(api_.Create(kube::kPods, "default", stranded).ok());
  SyncPods();

  SetSuspend(key, false);
  const Json status = Job("team")["status"];
  EXPECT_NE(FindCondition(status, api::condition::kPlaced)->value("reason", ""), api::reason::kPodsEnding)
      << status.dump();
  std::set<std::string> made;
  for (const Json& pod : api_.All(kube::kPods)) made.insert(pod["metadata"]["name"].get<std::string>());
  EXPECT_TRUE(made.contains("team-worker-1")) << "the stranded pod, left as it is";
  EXPECT_EQ(made.size(), 4u) << "and the new plan's three beside it";
  EXPECT_TRUE(made.contains("team-worker-0-g2") && made.contains("team-worker-1-g2") &&
              made.contains("team-coordinator"))
      << "the workers' a later generation's";
  for (const Json& pod : api_.All(kube::kPods)) {
    if (pod["metadata"]["name"] != "team-worker-1") {
      EXPECT_NE(pod["spec"]["nodeName"], lost_node);
    }
  }
  EXPECT_NE(log_text_.str().find("not waiting for team-worker-1: being deleted on a lost node"), std::string::npos)
      << log_text_.str();
  // Its team runs beside it.
  SyncPods([](Json& pod) {
    if (!pod["metadata"].contains("deletionTimestamp")) Run(pod);
  });
  Reconcile(key);
  jobs_.Put(Job("team"));
  EXPECT_EQ(Job("team")["status"]["phase"], api::phase::kRunning) << Job("team")["status"].dump();
  for (const Json& w : Job("team")["status"]["workers"]) {
    EXPECT_NE(w.value("name", ""), "team-worker-1") << "the stranded pod is none of its team's";
  }
}

// What edgetrain-agent profile-layers leaves in its pod's termination message:
// three layers, the last one light.
constexpr const char* kTimedLayers =
    R"({"layers":[{"name":"fc1","forwardSeconds":2e-4,"backwardSeconds":4e-4,"parameterBytes":16640,"activationBytes":256},)"
    R"({"name":"fc2","forwardSeconds":2e-4,"backwardSeconds":4e-4,"parameterBytes":8256,"activationBytes":128},)"
    R"({"name":"classifier","forwardSeconds":1e-5,"backwardSeconds":2e-5,"parameterBytes":1290,"activationBytes":40}]})";

// A user's TorchScript module in a pipeline: its check pod times the module's
// layers (no separate size check: placement takes the size from them), and
// its stages run the module from its ConfigMap, as a data-parallel team's
// workers do.
TEST_F(ReconcilerTest, AModulesPipelineHasItsLayersTimedThenItsStagesRunTheModule) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  const Json module = {{"name", nullptr}, {"hidden", nullptr}, {"torchscript", {{"path", "net.pt"}, {"configMap", "net"}}}};
  const std::string key = Submit(TrainingJob("piped", {{"model", module}, {"parallelism", {{"mode", "pipeline"}}}}));
  Reconcile(key);
  const Json check = *api_.Get(kube::kPods, "default", "piped-model-check");
  const Json& args = check["spec"]["containers"][0]["args"];
  EXPECT_EQ(args[0], "profile-layers");
  EXPECT_TRUE(std::any_of(args.begin(), args.end(), [](const Json& a) {
    return a.get<std::string>().starts_with("--model={") && a.get<std::string>().find("/model/net.pt") != std::string::npos;
  })) << args;
  jobs_.Put(Job("piped"));
  SyncPods(CheckEnds(0, kTimedLayers));
  Reconcile(key);
  jobs_.Put(Job("piped"));
  EXPECT_EQ(Reconcile(key).placement, "placed") << Job("piped")["status"].dump();
  StatusOr<JobPlan> plan =
      DecodeJobPlan((*api_.Get(kube::kConfigMaps, "default", "piped-plan"))["data"]["plan.json"].get<std::string>());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->pipeline.has_value());
  ASSERT_TRUE(plan->pipeline->planned_from.has_value()) << "what the head plans again from";
  EXPECT_EQ(plan->pipeline->planned_from->layers.size(), 3u);
  int stages = 0;
  for (const Json& pod : api_.All(kube::kPods)) {
    if (pod["metadata"]["labels"].value(kRoleLabel, "") != "stage") continue;
    ++stages;
    EXPECT_NE(pod["spec"]["volumes"].dump().find("\"net\""), std::string::npos) << "the module's ConfigMap\n" << pod;
  }
  EXPECT_GE(stages, 1);
}

// A module that is not an nn.Sequential is timed as one layer that says why
// it is not cut: a pipeline of it is invalid, as a module the agent refused,
// and auto places it whole, saying why.
TEST_F(ReconcilerTest, AModuleTimedWholeIsInvalidAsAPipelineAndRunsWholeUnderAuto) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  const Json module = {{"name", nullptr}, {"hidden", nullptr}, {"torchscript", {{"path", "net.pt"}, {"configMap", "net"}}}};
  const std::string whole =
      R"({"layers":[{"name":"TwoPaths","forwardSeconds":2e-4,"backwardSeconds":4e-4,"parameterBytes":16640,)"
      R"("activationBytes":40,"cannotCut":"/model/net.pt is a TwoPaths, whose forward may use its children in any order"}]})";
  for (const char* mode : {"pipeline", "auto"}) {
    SCOPED_TRACE(mode);
    const std::string name = std::string("whole-") + mode;
    const std::string key = Submit(TrainingJob(name, {{"model", module}, {"parallelism", {{"mode", mode}}}}));
    Reconcile(key);
    jobs_.Put(Job(name));
    SyncPods(CheckEnds(0, whole));
    Reconcile(key);
    jobs_.Put(Job(name));
    if (std::string(mode) == "pipeline") {
      const Json status = Job(name)["status"];
      EXPECT_EQ(status["phase"], api::phase::kFailed) << status.dump();
      const Json* invalid = FindCondition(status, api::condition::kInvalid);
      ASSERT_NE(invalid, nullptr) << status.dump();
      EXPECT_EQ((*invalid)["message"],
                "spec.model.torchscript: a pipeline cuts a model between the children of an nn.Sequential, and "
                "/model/net.pt is a TwoPaths, whose forward may use its children in any order: script an "
                "nn.Sequential whose children each take the one before's output and share no weight, or train it "
                "with parallelism.mode auto (which runs it whole) or dataParallel");
      continue;
    }
    EXPECT_EQ(Reconcile(key).placement, "placed") << Job(name)["status"].dump();
    const Json status = Job(name)["status"];
    const Json* placed = FindCondition(status, api::condition::kPlaced);
    ASSERT_NE(placed, nullptr);
    EXPECT_NE((*placed)["message"].get<std::string>().find(
                  "; /model/net.pt is a TwoPaths, whose forward may use its children in any order, so it runs whole"),
              std::string::npos)
        << (*placed)["message"];
    EXPECT_EQ(status["modelCheck"]["layers"][0]["cannotCut"],
              "/model/net.pt is a TwoPaths, whose forward may use its children in any order");
    EXPECT_NE(log_text_.str().find("reason=LayersTimed the module was timed whole"), std::string::npos)
        << "not its \"1 layers\" cut into stages";
  }
  // Timed whole under auto, then edited to a hybrid before it is placed
  // again (the mode is not in the check's digest, so its layers stand): as
  // invalid as when first timed, not a plan that never fits retried for ever.
  const std::string key = Submit(TrainingJob("whole-edited", {{"model", module}, {"parallelism", {{"mode", "auto"}}}}));
  Reconcile(key);
  jobs_.Put(Job("whole-edited"));
  SyncPods(CheckEnds(0, whole));
  Reconcile(key);  // the layers written to status
  ASSERT_TRUE(Job("whole-edited")["status"].contains("modelCheck"));
  ASSERT_TRUE(api_.MergePatch(kube::kTrainingJobs, "default", "whole-edited",
                              {{"metadata", {{"generation", 2}}}, {"spec", {{"parallelism", {{"mode", "hybrid"}}}}}})
                  .ok());
  jobs_.Put(Job("whole-edited"));
  Reconcile(key);
  const Json edited = Job("whole-edited")["status"];
  EXPECT_EQ(edited["phase"], api::phase::kFailed) << edited.dump();
  EXPECT_TRUE(ConditionIs(edited, api::condition::kInvalid, true)) << edited.dump();
}

// A pipeline job of two stages, its layers timed, placed on a gateway and a
// robot, and running: what the tests of its losses start from.
class PipelineReconcilerTest : public ReconcilerTest {
 protected:
  // A pipeline job `name` of `parallelism` on a gateway and a robot: its
  // check pod made, its layers timed, then its team placed (or not).
  std::string APipelineAfterItsLayersAreTimed(const std::string& name, const Json& parallelism,
                                              Json spec_patch = Json::object()) {
    AddNode(ANode("gateway"));
    AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
    spec_patch["parallelism"] = parallelism;
    const std::string key = Submit(TrainingJob(name, spec_patch));
    Reconcile(key);
    jobs_.Put(Job(name));
    SyncPods(CheckEnds(0, kTimedLayers));
    Reconcile(key);
    jobs_.Put(Job(name));
    Reconcile(key);
    return key;
  }

  std::string ARunningPipeline(const Json& spec_patch = Json::object()) {
    const std::string key = APipelineAfterItsLayersAreTimed("piped", {{"mode", "pipeline"}}, spec_patch);
    jobs_.Put(Job("piped"));
    SyncPods(Run);
    Reconcile(key);
    jobs_.Put(Job("piped"));
    EXPECT_EQ(Job("piped")["status"]["phase"], api::phase::kRunning);
    return key;
  }

  // A running pipeline whose output is on a claim of `mode` on the gateway,
  // where its head runs, and the gateway then lost: the first reconcile's.
  ReconcileOutcome APipelinesHeadLostWithItsOutputOnAClaim(const char* mode) {
    EXPECT_TRUE(api_.Create(kube::kPersistentVolumeClaims, "default",
                            {{"apiVersion", "v1"},
                             {"kind", "PersistentVolumeClaim"},
                             {"metadata",
                              {{"name", "out"},
                               {"namespace", "default"},
                               {"annotations", {{"volume.kubernetes.io/selected-node", "gateway"}}}}},
                             {"spec", {{"accessModes", {mode}}}},
                             {"status", {{"phase", "Bound"}}}})
                    .ok());
    const std::string key = ARunningPipeline(
        {{"output", {{"path", "/models/x"}, {"volume", {{"persistentVolumeClaim", {{"claimName", "out"}}}}}}}});
    EXPECT_EQ(api_.Get(kube::kPods, "default", "piped-coordinator")->at("spec").at("nodeName"), "gateway");
    nodes_.Put(ANode("gateway").NotReady());
    EXPECT_TRUE(api_.Delete(kube::kPods, "default", "piped-coordinator").ok());
    SyncPods();
    const ReconcileOutcome outcome = Reconcile(key);
    jobs_.Put(Job("piped"));
    return outcome;
  }
};

// Issue 15: a pipeline job's layers are timed in a pod of its own, then its
// team is placed as any other, the planner cuts the layers into stages over
// the nodes placement chose, and each stage's device runs --role=stage.
TEST_F(ReconcilerTest, APipelinesLayersAreTimedThenItsStagesCutOverThePlacedNodes) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  const std::string key = Submit(TrainingJob("piped", {{"parallelism", {{"mode", "pipeline"}}}}));
  Reconcile(key);
  const Json check = *api_.Get(kube::kPods, "default", "piped-model-check");
  EXPECT_EQ(check["spec"]["containers"][0]["args"][0], "profile-layers");
  const Json& args = check["spec"]["containers"][0]["args"];
  EXPECT_NE(std::find(args.begin(), args.end(), "--batch=64"), args.end()) << args;
  // The optimizer's step of each layer is timed too: a stage pays it every step.
  EXPECT_TRUE(std::any_of(args.begin(), args.end(), [](const Json& a) {
    return a.get<std::string>().starts_with("--optimizer={") && a.get<std::string>().find("\"adam\"") != std::string::npos;
  })) << args;
  EXPECT_EQ(FindCondition(Job("piped")["status"], api::condition::kPlaced)->value("reason", ""),
            api::reason::kCheckingLayers);

  jobs_.Put(Job("piped"));
  SyncPods(CheckEnds(0, kTimedLayers));
  EXPECT_EQ(Reconcile(key).placement, "");
  Json job = Job("piped");
  ASSERT_EQ(job["status"]["modelCheck"]["layers"].size(), 3u) << job["status"];
  EXPECT_EQ(job["status"]["modelCheck"]["layers"][2]["name"], "classifier");
  EXPECT_NE(log_text_.str().find("reason=LayersTimed the model's 3 layers were timed"), std::string::npos);

  jobs_.Put(job);
  EXPECT_EQ(Reconcile(key).placement, "placed");
  job = Job("piped");
  EXPECT_FALSE(api_.Get(kube::kPods, "default", "piped-model-check").ok()) << "read, then gone";
  const Json plan_map = *api_.Get(kube::kConfigMaps, "default", "piped-plan");
  StatusOr<JobPlan> plan = DecodeJobPlan(plan_map["data"]["plan.json"].get<std::string>());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->pipeline.has_value());
  ASSERT_EQ(plan->pipeline->stages.size(), 2u) << "pipeline: every stage on a device of its own";
  EXPECT_EQ(plan->pipeline->stages.front().first_layer, 0);
  EXPECT_EQ(plan->pipeline->stages.back().end_layer, 3);
  const Json* placed = FindCondition(job["status"], api::condition::kPlaced);
  EXPECT_NE(placed->value("message", "").find("; pipeline as asked: layers 0-"), std::string::npos) << *placed;
  EXPECT_EQ(job["status"]["pipeline"]["stages"].size(), 2u);
  EXPECT_GT(job["status"]["pipeline"]["predictedSamplesPerSecond"].get<int64_t>(), 0);
  int stages = 0;
  for (const Json& pod : api_.All(kube::kPods)) {
    const std::string name = pod["metadata"]["name"];
    if (name == "piped-coordinator") continue;
    ++stages;
    EXPECT_EQ(pod["metadata"]["labels"]["edgetrain.dev/role"], "stage") << name;
    EXPECT_EQ(pod["spec"]["containers"][0]["args"][0], "--role=stage") << name;
  }
  EXPECT_EQ(stages, 2);
}

// A pipeline no plan of which fits the nodes placement gave it holds no turn
// in line: it could not use that room, and had held it from a younger job
// (found in review).
TEST_F(ReconcilerTest, APipelineNoPlanOfWhichFitsLeavesItsRoomToYoungerJobs) {
  AddNode(ANode("gateway").WithAllocatable("2", "8Gi"));  // room for the pipeline's team of three, and no more
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30).WithAllocatable("1", "8Gi"));
  const std::string key =
      Submit(TrainingJob("piped", {{"parallelism", {{"mode", "pipeline"}}}}, "2026-11-22T09:00:00Z"));
  Reconcile(key);
  jobs_.Put(Job("piped"));
  // A layer of 20 GB: no device holds it.
  SyncPods(CheckEnds(0, R"({"layers":[{"name":"fc1","forwardSeconds":2e-4,"backwardSeconds":4e-4,)"
                        R"("parameterBytes":20000000000,"activationBytes":256},)"
                        R"({"name":"classifier","forwardSeconds":1e-5,"backwardSeconds":2e-5,)"
                        R"("parameterBytes":1290,"activationBytes":40}]})"));
  Reconcile(key);
  jobs_.Put(Job("piped"));
  pods_.Replace(api_.All(kube::kPods));
  EXPECT_EQ(Reconcile(key).placement, "unschedulable");
  jobs_.Put(Job("piped"));
  ASSERT_EQ(FindCondition(Job("piped")["status"], api::condition::kPlaced)->value("reason", ""),
            api::reason::kNoPipelineFits);

  const std::string young = Submit(TrainingJob("young", {{"parallelism", {{"workers", 1}}}}, "2026-11-22T09:30:00Z"));
  EXPECT_EQ(Reconcile(young).placement, "placed") << "the pipeline that cannot use its turn holds nothing";
}

// A layout by hand whose layers a user's module has not (known once they
// are timed): the spec's mistake, which no node changes, so the job is
// Invalid and Failed at once rather than waiting as unschedulable; nothing is
// made, and it stays Failed, said once, until its spec changes (the
// manifest's own check passing it again had set it Pending, to fail anew at
// every pass).
TEST_F(PipelineReconcilerTest, AStageLayoutNamingLayersTheModelLacksFailsTheJobOnceTheLayersAreTimed) {
  const std::string key =
      APipelineAfterItsLayersAreTimed("misdrawn", {{"mode", "pipeline"}, {"stages", "0-3:0/4-5:1"}}, kOwnModule);
  const Json job = Job("misdrawn");
  EXPECT_EQ(job["status"]["phase"], "Failed") << job["status"];
  const Json* invalid = FindCondition(job["status"], api::condition::kInvalid);
  ASSERT_NE(invalid, nullptr) << job["status"];
  EXPECT_EQ(invalid->value("reason", ""), api::reason::kInvalidStages);
  EXPECT_EQ(invalid->value("message", ""), "spec.parallelism.stages: the model has layers 0-2 (edgetrain plan lists "
                                           "them)");
  const Json completed = job["status"]["completionTime"];
  for (int look = 0; look < 3; ++look) {
    jobs_.Put(Job("misdrawn"));
    Reconcile(key);
  }
  EXPECT_EQ(Job("misdrawn")["status"]["phase"], "Failed");
  EXPECT_EQ(Job("misdrawn")["status"]["completionTime"], completed) << "its TTL counts from the first";
  int said = 0;
  for (const Json& e : api_.All(kube::kEvents)) said += e.value("reason", "") == api::reason::kInvalidStages;
  EXPECT_EQ(said, 1) << "once, not once a look";
  EXPECT_FALSE(api_.Get(kube::kConfigMaps, "default", "misdrawn-plan").ok()) << "nothing placed";
  EXPECT_FALSE(api_.Get(kube::kPods, "default", "misdrawn-coordinator").ok());
}

// A built-in model's layers its spec tells: a layout past them is refused as
// the manifest is read, before a pod times anything.
TEST_F(PipelineReconcilerTest, AStageLayoutPastABuiltInModelsLayersIsAnInvalidSpecBeforeAnyPod) {
  AddNode(ANode("gateway"));
  AddNode(ANode("robot-1").Scoring(0.5).WithLink(30));
  const std::string key =
      Submit(TrainingJob("overdrawn", {{"parallelism", {{"mode", "pipeline"}, {"stages", "0-1:0/2-5:1"}}}}));
  Reconcile(key);
  const Json job = Job("overdrawn");
  EXPECT_EQ(job["status"]["phase"], api::phase::kFailed) << job["status"];
  const Json* failed = FindCondition(job["status"], api::condition::kFailed);
  ASSERT_NE(failed, nullptr) << job["status"];
  EXPECT_EQ(failed->value("reason", ""), api::reason::kInvalidSpec);
  EXPECT_NE(failed->value("message", "").find("spec.parallelism.stages: the model has layers 0-1"), std::string::npos)
      << *failed;
  EXPECT_EQ(api_.Writes("create Pod"), 0) << "no check pod: the spec tells the mlp's fc1 and classifier";
}

// Issue 16: a pipeline's device lost is not replaced: the head replays its
// step, or rebuilds its stage from a replica. The operator keeps it out of the
// gang, deletes what is left of its pod, and says what the head did.
TEST_F(PipelineReconcilerTest, APipelinesLostDeviceIsNotReplacedAndTheHeadsReplaysAreReported) {
  const std::string key = ARunningPipeline();
  ASSERT_EQ(Job("piped")["status"]["phase"], api::phase::kRunning);
  const std::string head = (*api_.Get(kube::kPods, "default", "piped-coordinator"))["status"]["podIP"];
  progress_.by_ip[head] = {{"iteration", 40},
                           {"workers", {{{"rank", 0}, {"layers", {{"first", 0}, {"end", 2}}}}, {{"rank", 1}}}},
                           {"replays", {{"count", 0}, {"microBatches", 0}, {"restoredStages", 0}}}};
  Reconcile(key);
  jobs_.Put(Job("piped"));
  Json status = Job("piped")["status"];
  EXPECT_FALSE(ConditionIs(status, api::condition::kReplaying, true));
  EXPECT_EQ(FindCondition(status, api::condition::kReplaying)->value("reason", ""), api::reason::kNothingLost);
  for (const Json& w : status["workers"]) {
    if (w["name"] == "piped-worker-0") {
      EXPECT_EQ(w["layers"], "0-1");
    }
  }

  // Rank 1's pod is evicted: out of the gang, not made again.
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "piped-worker-1") pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
  });
  api_.ResetWrites();
  ReconcileOutcome lost = Reconcile(key);
  EXPECT_EQ(lost.replan, "") << "no new plan: the head trains on";
  jobs_.Put(Job("piped"));
  status = Job("piped")["status"];
  EXPECT_EQ(status["pipeline"]["lostRanks"], Json::array({1}));
  EXPECT_EQ(api_.Writes("create Pod"), 0);
  EXPECT_EQ(api_.Writes("delete Pod"), 1);
  EXPECT_NE(log_text_.str().find("reason=StageDeviceLost stage device 1 on robot-1: its pod on robot-1 failed (Evicted)"),
            std::string::npos)
      << log_text_.str();

  // The head still lists it, not connected, until its next step lets it go:
  // that is no rejoin.
  SyncPods();
  progress_.by_ip[head] = {{"iteration", 40},
                           {"workers", {{{"rank", 0}}, {{"rank", 1}, {"active", false}}}},
                           {"replays", {{"count", 0}, {"microBatches", 0}, {"restoredStages", 0}}}};
  Reconcile(key);
  jobs_.Put(Job("piped"));
  Reconcile(key);
  jobs_.Put(Job("piped"));
  EXPECT_EQ(Job("piped")["status"]["pipeline"]["lostRanks"], Json::array({1}));
  EXPECT_EQ(log_text_.str().find("StageDeviceRejoined"), std::string::npos) << log_text_.str();

  // The head rebuilt its stage on rank 0 from a replica: Replaying, once.
  SyncPods();
  progress_.by_ip[head] = {{"iteration", 41},
                           {"workers", {{{"rank", 0}, {"layers", {{"first", 0}, {"end", 3}}}}}},
                           {"replays",
                            {{"count", 1}, {"microBatches", 4}, {"recoverySeconds", 0.1}, {"restoredStages", 1},
                             {"stepsLost", 12}}}};
  api_.ResetWrites();
  Reconcile(key);
  jobs_.Put(Job("piped"));
  status = Job("piped")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRunning);
  const Json* replaying = FindCondition(status, api::condition::kReplaying);
  ASSERT_NE(replaying, nullptr);
  EXPECT_EQ(replaying->value("status", ""), "True");
  EXPECT_EQ(replaying->value("message", ""),
            "the head recovered from 1 loss mid-step (4 micro-batches run again on every stage, 0.10 s of recovery) "
            "and rebuilt 1 stage from a replica, losing 12 steps of those layers' updates");
  EXPECT_EQ(status["pipeline"]["replays"]["restoredStages"], 1);
  EXPECT_EQ(api_.Writes("create Pod"), 0);
  EXPECT_EQ(api_.Writes("create Event"), 1);
  // A pass that reads the head no newer keeps it True: the next write
  // turned it False milliseconds later, and no one saw it (a new user's trial).
  Reconcile(key);
  jobs_.Put(Job("piped"));
  EXPECT_TRUE(ConditionIs(Job("piped")["status"], api::condition::kReplaying, true)) << "the same read";
  // The next read that shows nothing new turns it False.
  now_ += std::chrono::seconds(5);
  Reconcile(key);
  EXPECT_EQ(FindCondition(Job("piped")["status"], api::condition::kReplaying)->value("reason", ""),
            api::reason::kTrainingOn)
      << "nothing new since";
  EXPECT_EQ(api_.Writes("create Event"), 1) << "the replay's Event once";

  // A device of a group lost mid-step, its shares computed again by its group.
  progress_.by_ip[head]["iteration"] = 60;
  progress_.by_ip[head]["replays"]["count"] = 2;
  progress_.by_ip[head]["replays"]["covered"] = 1;
  progress_.by_ip[head]["replays"]["coveredShares"] = 4;
  progress_.by_ip[head]["replays"]["rerunShares"] = 2;
  progress_.by_ip[head]["replays"]["recoverySeconds"] = 0.15;
  now_ += std::chrono::seconds(5);
  Reconcile(key);
  jobs_.Put(Job("piped"));
  status = Job("piped")["status"];
  replaying = FindCondition(status, api::condition::kReplaying);
  ASSERT_NE(replaying, nullptr);
  EXPECT_EQ(replaying->value("status", ""), "True");
  EXPECT_EQ(replaying->value("message", ""),
            "the head recovered from 2 losses mid-step (4 micro-batches run again on every stage, 4 shares of 1 lost "
            "device computed by their groups (2 of them again), 0.15 s of recovery) and rebuilt 1 stage from a "
            "replica, losing 12 steps of those layers' updates");
  EXPECT_EQ(status["pipeline"]["replays"]["coveredShares"], 4);
  EXPECT_EQ(status["pipeline"]["replays"]["rerunShares"], 2);
  // Every field the status holds is the CRD's: an API server prunes the
  // rest (covered and coveredShares were pruned, found in review).
  const auto schema = api::TrainingJobSchema();
  ASSERT_TRUE(schema.ok());
  Json checked = status;
  for (const api::FieldError& e : api::ValidateAndDefault((*schema)["properties"]["status"], checked, "status")) {
    ADD_FAILURE() << e.ToString();
  }
}

// A stage left with no device, whose head then fails (no replica to rebuild
// it from): a restarted head would start from the plan and wait for a device
// that is never made again, while the job showed Running. Its first failure
// fails the job, with the head's words and why no restart can help.
TEST_F(PipelineReconcilerTest, AHeadThatFailsForAStageLeftWithoutDevicesFailsTheJobAtOnce) {
  const std::string key = ARunningPipeline();
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "piped-worker-1") pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
  });
  Reconcile(key);
  jobs_.Put(Job("piped"));
  EXPECT_NE(log_text_.str().find("its stage rebuilt from a replica"), std::string::npos)
      << "rank 0 is left: the head may rebuild stage 2 on it\n" << log_text_.str();
  const Json failed = {{"state", "failed"},
                       {"error", "stage 2 lost its only device at step 41 (rank 1), and the head has no replica of "
                                 "its layers yet"}};
  SyncPods([&](Json& pod) {
    if (pod["metadata"]["name"] != "piped-coordinator") return;
    const Json ended = {{"exitCode", 1}, {"reason", "Error"}, {"message", failed.dump()}};
    const Json agent = {{"name", "agent"},
                        {"restartCount", 1},
                        {"state", {{"running", Json::object()}}},
                        {"lastState", {{"terminated", ended}}}};
    pod["status"]["containerStatuses"] = Json::array({agent});
  });
  Reconcile(key);
  jobs_.Put(Job("piped"));
  const Json status = Job("piped")["status"];
  EXPECT_EQ(status["phase"], api::phase::kFailed);
  const Json* why = FindCondition(status, api::condition::kFailed);
  ASSERT_NE(why, nullptr);
  EXPECT_EQ(why->value("message", ""),
            "the coordinator failed, exit code 1 (Error): stage 2 lost its only device at step 41 (rank 1), and the "
            "head has no replica of its layers yet; restarting it cannot help: stage 2 of the plan has no device left "
            "(rank 1 lost for good, its pod gone), and a pipeline's lost devices are not replaced; delete the job and "
            "apply it again to start over");
}

// A device the head let go of while its pod runs on (its agent restarted in
// place, its link cut) keeps its pod, and when the head lists it again it has
// rejoined: out of status.pipeline.lostRanks, with an Event.
TEST_F(PipelineReconcilerTest, APipelineDeviceTheHeadLetGoOfKeepsItsPodAndRejoins) {
  const std::string key = ARunningPipeline();
  const std::string head = (*api_.Get(kube::kPods, "default", "piped-coordinator"))["status"]["podIP"];
  // The head lists the device it let go of as not active and in no stage.
  progress_.by_ip[head] = {{"iteration", 40},
                           {"workers",
                            {{{"rank", 0}, {"layers", {{"first", 0}, {"end", 3}}}}, {{"rank", 1}, {"active", false}}}}};
  api_.ResetWrites();
  Reconcile(key);
  jobs_.Put(Job("piped"));
  EXPECT_EQ(Job("piped")["status"]["pipeline"]["lostRanks"], Json::array({1}));
  EXPECT_EQ(api_.Writes("delete Pod"), 0) << "its pod stays";
  EXPECT_NE(log_text_.str().find("the head let it go (silent past its deadline, or its stream broke); the head trains "
                                 "on without it (its step replayed, or its stage rebuilt from a replica); its pod "
                                 "stays, and it rejoins a stage if it comes back"),
            std::string::npos)
      << log_text_.str();
  Reconcile(key);
  jobs_.Put(Job("piped"));
  EXPECT_EQ(Job("piped")["status"]["phase"], api::phase::kRunning) << "its pod still runs: the gang is whole";
  EXPECT_EQ(api_.Writes("delete Pod"), 0);

  progress_.by_ip[head] = {{"iteration", 60}, {"workers", {{{"rank", 0}}, {{"rank", 1}}}}};
  Reconcile(key);
  jobs_.Put(Job("piped"));
  EXPECT_EQ(Job("piped")["status"]["pipeline"]["lostRanks"], Json::array());
  EXPECT_NE(log_text_.str().find("reason=StageDeviceRejoined stage device 1 on robot-1 is back"), std::string::npos)
      << log_text_.str();
}

// A device lost with its node (not ready when its pod was evicted) has its pod
// made again, once, when the node is back, to rejoin a stage.
TEST_F(PipelineReconcilerTest, APipelineDeviceLostWithItsNodeHasItsPodMadeAgainWhenTheNodeIsBack) {
  const std::string key = ARunningPipeline();

  nodes_.Put(ANode("robot-1").Scoring(0.5).WithLink(30).NotReady());
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "piped-worker-1") pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
  });
  Reconcile(key);
  jobs_.Put(Job("piped"));
  Json status = Job("piped")["status"];
  EXPECT_EQ(status["pipeline"]["lostRanks"], Json::array({1}));
  EXPECT_EQ(status["pipeline"]["awaitingNodes"], Json::array({1}));
  EXPECT_NE(log_text_.str().find("its node is not ready: its pod is made again there once it is back, and it "
                                 "rejoins a stage"),
            std::string::npos)
      << log_text_.str();
  SyncPods();
  ASSERT_FALSE(api_.Get(kube::kPods, "default", "piped-worker-1").ok()) << "the evicted pod goes";

  // Still not ready: nothing is made. The pipeline trains on without it,
  // and says so ("every agent runs" was said: a new user's trial).
  const std::string head = (*api_.Get(kube::kPods, "default", "piped-coordinator"))["status"]["podIP"];
  progress_.by_ip[head] = {{"iteration", 40},
                           {"workers",
                            {{{"rank", 0}, {"layers", {{"first", 0}, {"end", 3}}}}, {{"rank", 1}, {"active", false}}}}};
  api_.ResetWrites();
  Reconcile(key);
  jobs_.Put(Job("piped"));
  EXPECT_EQ(api_.Writes("create Pod"), 0);
  status = Job("piped")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRunning);
  const Json* running = FindCondition(status, api::condition::kRunning);
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->value("message", ""),
            "the pipeline trains on without its lost stage device 1 (its node awaited)");

  // Ready, its NoExecute taint of the time it was not still on: not back
  // yet (a pod made there then was evicted at once: a new user's trial).
  nodes_.Put(ANode("robot-1").Scoring(0.5).WithLink(30).Tainted("node.kubernetes.io/unreachable", "", "NoExecute"));
  Reconcile(key);
  jobs_.Put(Job("piped"));
  EXPECT_EQ(api_.Writes("create Pod"), 0);

  // Back: its pod is made again on it, once. The pipeline trains on while
  // it starts: Running, and no recovery counted (it had read 0.2-1.2 s for
  // devices out 37-70 s: the same trial).
  nodes_.Put(ANode("robot-1").Scoring(0.5).WithLink(30));
  const ReconcileOutcome made = Reconcile(key);
  jobs_.Put(Job("piped"));
  EXPECT_EQ(api_.Writes("create Pod"), 1);
  EXPECT_FALSE(made.recovered_after.has_value());
  EXPECT_EQ(Job("piped")["status"]["phase"], api::phase::kRunning);
  const StatusOr<Json> again = api_.Get(kube::kPods, "default", "piped-worker-1");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)["spec"]["nodeName"], "robot-1");
  status = Job("piped")["status"];
  EXPECT_EQ(status["pipeline"]["awaitingNodes"], Json::array());
  EXPECT_EQ(status["pipeline"]["lostRanks"], Json::array({1})) << "until the head lists it again";
  EXPECT_NE(log_text_.str().find("reason=StageDeviceReturning stage device 1 on robot-1: its node is back"),
            std::string::npos)
      << log_text_.str();

  // Evicted again on a ready node: gone for good.
  SyncPods([](Json& pod) {
    if (pod["metadata"]["name"] == "piped-worker-1") pod["status"] = {{"phase", "Failed"}, {"reason", "OutOfcpu"}};
  });
  Reconcile(key);
  jobs_.Put(Job("piped"));
  SyncPods();
  api_.ResetWrites();
  Reconcile(key);
  jobs_.Put(Job("piped"));
  Reconcile(key);
  EXPECT_EQ(api_.Writes("create Pod"), 0);
}

// A pipeline's head lost with its node is placed anew under the next plan
// generation, as a team's coordinator is; the stage devices elsewhere keep
// their pods and slots (the new head trains on from the state they hold),
// and the one lost with the node is not replaced: the head goes on without
// it, as for any device lost.
// A pipeline's head whose output is on a shared claim (ReadWriteMany) is
// placed anew, its claim going with it; one on a claim bound to its node
// ends the job, saying so. A shared claim had been taken for bound, and its
// job failed (a new user's trial).
TEST_F(PipelineReconcilerTest, APipelinesHeadOnASharedOutputClaimIsPlacedAnew) {
  EXPECT_EQ(APipelinesHeadLostWithItsOutputOnAClaim("ReadWriteMany").replan, api::reason::kCoordinatorLost);
  EXPECT_EQ(Job("piped")["status"]["phase"], api::phase::kRecovering);
  EXPECT_EQ(api_.Get(kube::kPods, "default", "piped-coordinator-g2")->at("spec").at("nodeName"), "robot-1");
}

TEST_F(PipelineReconcilerTest, APipelinesHeadOnAClaimBoundToItsNodeEndsTheJob) {
  APipelinesHeadLostWithItsOutputOnAClaim("ReadWriteOnce");
  const Json status = Job("piped")["status"];
  EXPECT_EQ(status["phase"], api::phase::kFailed);
  const Json* failed = FindCondition(status, api::condition::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_NE(failed->value("message", "").find("on a claim (spec.output.volume) bound to its node"), std::string::npos)
      << *failed;
}

TEST_F(PipelineReconcilerTest, APipelinesHeadLostWithItsNodeIsPlacedAnewAndItsStagesStay) {
  const std::string key = ARunningPipeline();
  ASSERT_EQ(Job("piped")["status"]["phase"], api::phase::kRunning);
  const std::vector<std::string> before = PodNodes();
  ASSERT_NE(std::find(before.begin(), before.end(), "piped-coordinator@gateway"), before.end()) << ::testing::PrintToString(before);
  ASSERT_EQ(std::count_if(before.begin(), before.end(),
                          [](const std::string& p) { return p.starts_with("piped-worker-") && p.ends_with("@robot-1"); }),
            1)
      << "a stage's device elsewhere: " << ::testing::PrintToString(before);
  // Its node silent past the grace, its pod deleted.
  nodes_.Put(ANode("gateway").NotReady());
  ASSERT_TRUE(api_.Delete(kube::kPods, "default", "piped-coordinator").ok());
  SyncPods();
  EXPECT_EQ(Reconcile(key).replan, api::reason::kCoordinatorLost);
  jobs_.Put(Job("piped"));
  const Json status = Job("piped")["status"];
  EXPECT_EQ(status["phase"], api::phase::kRecovering);
  EXPECT_EQ(FindCondition(status, api::condition::kFailed), nullptr) << status.dump();
  EXPECT_NE(FindCondition(status, api::condition::kRunning)
                ->value("message", "")
                .find("placed anew on robot-1, to train on from the state its stages hold (plan generation 2"),
            std::string::npos)
      << status.dump();
  const std::vector<std::string> after = PodNodes();
  EXPECT_NE(std::find(after.begin(), after.end(), "piped-coordinator-g2@robot-1"), after.end())
      << ::testing::PrintToString(after);
  for (const std::string& pod : before) {
    if (pod.starts_with("piped-worker-") && pod.ends_with("@robot-1")) {
      EXPECT_NE(std::find(after.begin(), after.end(), pod), after.end()) << pod << " stays";
    }
  }
  EXPECT_EQ(std::count_if(after.begin(), after.end(), [](const std::string& p) { return p.find("-g2") != std::string::npos; }),
            1)
      << "only the head is made anew: " << ::testing::PrintToString(after);
  const Json map = *api_.Get(kube::kConfigMaps, "default", "piped-plan");
  EXPECT_EQ(CoordinatorSeatOf(map).node, "robot-1");
  StatusOr<JobPlan> plan = DecodeJobPlan(map["data"]["plan.json"].get<std::string>());
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(plan->pipeline.has_value()) << "the stages as they were";
  for (const WorkerSlot& slot : plan->workers) EXPECT_EQ(SlotSince(*plan, slot.rank), 1) << "rank " << slot.rank;
}

}  // namespace
}  // namespace edgetrain::operator_

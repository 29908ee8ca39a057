#include "operator/controller/job_objects.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "core/duration_text.h"
#include "core/quantity.h"
#include "operator/controller/job_labels.h"

namespace edgetrain::operator_ {
namespace {

// Not the API's default /dev/termination-log: a file the kubelet binds into
// /run serves alike on K3s and in the node emulator, whose /dev is the host's.
constexpr const char* kTerminationLog = "/run/edgetrain/termination-log";


const Json& Spec(const JobObject& job) { return job.manifest.object.at("spec"); }

// The agent's container resources: the template's, or placement's defaults, so
// that placement's fit and the scheduler's accounting agree.
Json ResourcesOf(const JobObject& job, const api::PodDefaults& defaults) {
  Json resources = Spec(job).value("/template/resources"_json_pointer, Json::object());
  Json& requests = resources["requests"];
  if (!requests.is_object()) requests = Json::object();
  // A request left out is its limit, as the Pod API defaults it (placement
  // counts it so: api::TeamRequestOf); else placement's default.
  const Json limits = resources.value("limits", Json::object());
  if (!requests.contains("cpu")) {
    requests["cpu"] = limits.contains("cpu") ? limits["cpu"] : Json(FormatCpuMillis(defaults.requests.cpu_millis));
  }
  if (!requests.contains("memory")) {
    requests["memory"] = limits.contains("memory") ? limits["memory"] : Json(FormatBytes(defaults.requests.memory_bytes));
  }
  return resources;
}

// The volumes with a user's own files, read-only in every agent's pod where
// api::ResolveClusterPaths made the spec's relative paths point.
struct FileMounts {
  Json volumes = Json::array();
  Json mounts = Json::array();
};

FileMounts FileMountsOf(const JobObject& job) {
  FileMounts files;
  const Json& spec = Spec(job);
  if (spec.contains("/data/volume"_json_pointer)) {
    const Json& volume = spec["data"]["volume"];
    Json source = volume.contains("configMap")
                      ? Json{{"configMap", {{"name", volume["configMap"]["name"]}}}}
                      : Json{{"persistentVolumeClaim",
                              {{"claimName", volume["persistentVolumeClaim"]["claimName"]}, {"readOnly", true}}}};
    source["name"] = "data";
    files.volumes.push_back(source);
    files.mounts.push_back({{"name", "data"}, {"mountPath", api::kDataMountPath}, {"readOnly", true}});
  }
  if (spec.contains("/model/torchscript/configMap"_json_pointer)) {
    files.volumes.push_back({{"name", "model"}, {"configMap", {{"name", spec["model"]["torchscript"]["configMap"]}}}});
    files.mounts.push_back({{"name", "model"}, {"mountPath", api::kModelMountPath}, {"readOnly", true}});
  }
  return files;
}

std::string ImageOf(const JobObject& job, const PodOptions& options) {
  const std::string image = Spec(job).value("/template/image"_json_pointer, std::string());
  return image.empty() ? options.default_image : image;
}

// FNV-1a's 64 bits of `text`, in hex: the same in every build, unlike std::hash,
// so a restarted or upgraded operator knows a check it made.
std::string DigestOf(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

// The restricted Pod Security Standard, for the container and its pod.
Json RestrictedContainerSecurity() {
  return {{"allowPrivilegeEscalation", false}, {"readOnlyRootFilesystem", true}, {"capabilities", {{"drop", {"ALL"}}}}};
}
Json RestrictedPodSecurity() {
  return {{"runAsNonRoot", true},
          {"runAsUser", 65532},
          {"runAsGroup", 65532},
          {"fsGroup", 65532},
          {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

Json OwnerReference(const JobObject& job) {
  return {{"apiVersion", "edgetrain.dev/v1alpha1"}, {"kind", "TrainingJob"}, {"name", job.name},
          {"uid", job.uid},  {"controller", true},    {"blockOwnerDeletion", true}};
}

}  // namespace

Json Metadata(const JobObject& job, const std::string& name, Json labels) {
  return {{"name", name},
          {"namespace", job.namespace_},
          {"labels", std::move(labels)},
          {"ownerReferences", Json::array({OwnerReference(job)})}};
}

bool JobMayWrite(const Json& found, const std::string& job) {
  for (const Json& owner : found.value("/metadata/ownerReferences"_json_pointer, Json::array())) {
    const std::string api_version = owner.value("apiVersion", "");
    if (owner.value("kind", "") == "TrainingJob" && owner.value("name", "") == job &&
        owner.value("controller", false) && api_version.rfind("edgetrain.dev/", 0) == 0) {
      return true;
    }
  }
  return false;
}

bool OwnedByJob(const Json& found, const JobObject& job) {
  for (const Json& owner : found.value("/metadata/ownerReferences"_json_pointer, Json::array())) {
    if (owner.value("uid", "") == job.uid) return true;
  }
  return false;
}

std::string NameTakenMessage(const std::string& kind, const Json& found, const JobObject& job) {
  const std::string name = found.value("/metadata/name"_json_pointer, std::string());
  return kind + " " + name + " is already in namespace " + job.namespace_ + " and is not a TrainingJob " + job.name +
         "'s: the job's objects take that name, and the operator leaves it alone; apply the job under another "
         "name (or remove the " + kind + " first, then delete the job and apply it again)";
}

Json LabelsOf(const JobObject& job) { return {{kJobLabel, job.name}, {kManagedBy, kOperatorName}}; }

bool IsPipeline(const JobObject& job) { return job.manifest.spec.parallelism.mode != ParallelismMode::kDataParallel; }

bool HasOutputVolume(const JobObject& job) {
  return Spec(job).contains("/output/volume/persistentVolumeClaim"_json_pointer);
}

std::optional<std::string> OutputClaimOf(const JobObject& job) {
  const Json claim = Spec(job).value("/output/volume/persistentVolumeClaim/claimName"_json_pointer, Json());
  return claim.is_string() ? std::optional<std::string>(claim.get<std::string>()) : std::nullopt;
}

std::string OutputDirOf(const JobObject& job) {
  const auto& path = job.manifest.spec.output.path;
  return path ? *path : "/models/" + job.name;
}

const NodeView* NodeNamed(const std::vector<NodeView>& nodes, const std::string& name) {
  auto it = std::find_if(nodes.begin(), nodes.end(), [&](const NodeView& n) { return n.name == name; });
  return it == nodes.end() ? nullptr : &*it;
}

void PutSlotOn(WorkerSlot& slot, const std::string& node, const std::vector<NodeView>& nodes) {
  slot.node = node;
  const NodeView* view = NodeNamed(nodes, node);
  slot.slowdown = view ? view->emulated_slowdown : 1;
  slot.power = view ? view->power : PowerProfile{};
  // The job's own rates, when it names them, win (the agent reads those first).
  if (view) slot.stream = view->emulated_stream;
}

JobPlan PlanOf(const JobObject& job, const TeamPlacement& placement, const std::vector<NodeView>& nodes,
               int64_t generation) {
  JobPlan plan;
  plan.job = job.name;
  plan.generation = generation;
  plan.spec_json = job.manifest.SpecJson();
  plan.spec = job.manifest.spec;
  plan.output_dir = OutputDirOf(job);
  for (size_t rank = 0; rank < placement.worker_nodes.size(); ++rank) {
    WorkerSlot slot;
    slot.rank = static_cast<int>(rank);
    PutSlotOn(slot, placement.worker_nodes[rank], nodes);
    plan.workers.push_back(slot);
  }
  // A job of one computes on the coordinator's node, and draws its power.
  if (plan.workers.empty()) {
    if (const NodeView* node = NodeNamed(nodes, placement.coordinator_node)) {
      plan.slowdown = node->emulated_slowdown;
      plan.power = node->power;
    }
  }
  return plan;
}

JobObject AsPlaced(const JobObject& job, const JobPlan& plan) {
  JobObject placed = job;
  if (plan.spec_json.empty()) return placed;
  Json spec = Json::parse(plan.spec_json, nullptr, /*allow_exceptions=*/false);
  if (!spec.is_object()) return placed;
  placed.manifest.object["spec"] = std::move(spec);
  placed.manifest.spec = plan.spec;
  return placed;
}

Json ServiceFor(const JobObject& job) {
  Json selector = {{kJobLabel, job.name}, {kRoleLabel, "coordinator"}};
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", Metadata(job, ServiceName(job.name), LabelsOf(job))},
          {"spec",
           {// Headless: the DNS name coordinator.<service> is the coordinator pod's
            // own address, the same on K3s's CoreDNS and the node emulator.
            {"clusterIP", "None"},
            // Workers resolve the coordinator while it is still loading data.
            {"publishNotReadyAddresses", true},
            {"selector", selector},
            {"ports",
             {{{"name", "peers"}, {"port", kPeerPort}, {"targetPort", kPeerPort}},
              {{"name", "http"}, {"port", kHttpPort}, {"targetPort", kHttpPort}}}}}}};
}

Json PlanConfigMapFor(const JobObject& job, const JobPlan& plan, const CoordinatorSeat& coordinator) {
  Json labels = LabelsOf(job);
  labels[kGenerationLabel] = std::to_string(plan.generation);
  Json metadata = Metadata(job, PlanConfigMapName(job.name), labels);
  metadata["annotations"] = {{kCoordinatorNodeAnnotation, coordinator.node}};
  if (coordinator.since_generation > 1) {
    metadata["annotations"][kCoordinatorSinceAnnotation] = std::to_string(coordinator.since_generation);
  }
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", metadata},
          {"data", {{"plan.json", EncodeJobPlan(plan)}}}};
}

CoordinatorSeat CoordinatorSeatOf(const Json& plan_config_map) {
  const Json annotations = plan_config_map.value("/metadata/annotations"_json_pointer, Json::object());
  CoordinatorSeat seat;
  seat.node = annotations.value(kCoordinatorNodeAnnotation, std::string());
  const std::string since = annotations.value(kCoordinatorSinceAnnotation, std::string("1"));
  seat.since_generation = std::max<int64_t>(1, std::atoll(since.c_str()));
  return seat;
}

std::vector<Json> PodsFor(const JobObject& job, const JobPlan& plan, const CoordinatorSeat& coordinator,
                          const PodOptions& options) {
  const Json& spec = Spec(job);
  const FileMounts files = FileMountsOf(job);
  const std::string world = std::to_string(std::max<size_t>(1, plan.workers.size()));
  const Json output_volume =
      spec.contains("/output/volume/persistentVolumeClaim"_json_pointer)
          ? Json{{"name", "output"},
                 {"persistentVolumeClaim", {{"claimName", spec["output"]["volume"]["persistentVolumeClaim"]["claimName"]}}}}
          : Json{{"name", "output"}, {"emptyDir", Json::object()}};
  // The volume holds the output folder itself, or /models/<job> by default.
  const std::string output_mount = job.manifest.spec.output.path.value_or("/models");

  // A node gone silent (its Wi-Fi behind a wall) is waited out for
  // nodeLossGrace before its pods are evicted: a fade is not a loss.
  const int64_t grace_seconds = std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(job.manifest.spec.fault_tolerance.node_loss_grace).count());
  Json tolerations = spec.value("/template/tolerations"_json_pointer, Json::array());
  for (const char* key : {"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"}) {
    const bool given = std::any_of(tolerations.begin(), tolerations.end(),
                                   [&](const Json& t) { return t.value("key", "") == key; });
    if (!given) {
      tolerations.push_back(
          {{"key", key}, {"operator", "Exists"}, {"effect", "NoExecute"}, {"tolerationSeconds", grace_seconds}});
    }
  }

  // A job of one talks to no one; a team's agents talk over mutual TLS.
  const bool team = !plan.workers.empty();
  auto pod = [&](const std::string& name, const std::string& role, int rank, const std::string& node,
                 std::vector<std::string> role_args) {
    Json labels = LabelsOf(job);
    labels[kRoleLabel] = role;
    const bool peer = role != "coordinator";
    labels[kGenerationLabel] = std::to_string(peer ? SlotSince(plan, rank) : plan.generation);
    if (peer) labels[kRankLabel] = std::to_string(rank);
    std::vector<std::string> args = {"--role=" + role, "--job=" + job.name, "--rank=" + std::to_string(rank),
                                     "--world=" + world, "--plan=/etc/edgetrain/plan.json",
                                     "--http=$(POD_IP):" + std::to_string(kHttpPort),
                                     "--termination-log=" + std::string(kTerminationLog)};
    args.insert(args.end(), role_args.begin(), role_args.end());
    Json mounts = Json::array({{{"name", "plan"}, {"mountPath", api::kPlanMountPath}, {"readOnly", true}}});
    Json volumes = Json::array({{{"name", "plan"}, {"configMap", {{"name", PlanConfigMapName(job.name)}}}}});
    if (team) {
      // The job's identity: readable by the agent's group (fsGroup) alone.
      args.push_back(std::string("--tls-dir=") + api::kTlsMountPath);
      args.push_back("--tls-reload=" + FormatDuration(options.tls_reload));
      args.push_back("--keepalive=" + FormatDuration(options.agent_keepalive));
      mounts.push_back({{"name", "tls"}, {"mountPath", api::kTlsMountPath}, {"readOnly", true}});
      volumes.push_back({{"name", "tls"}, {"secret", {{"secretName", AgentTlsSecretName(job.name)}, {"defaultMode", 0440}}}});
    }
    if (role == "coordinator") {
      // Only the coordinator writes: checkpoints and the model.
      mounts.push_back({{"name", "output"}, {"mountPath", output_mount}});
      volumes.push_back(output_volume);
    }
    // Every agent reads the data and the module: workers train, the coordinator evaluates.
    mounts.insert(mounts.end(), files.mounts.begin(), files.mounts.end());
    volumes.insert(volumes.end(), files.volumes.begin(), files.volumes.end());
    Json container = {
        {"name", "agent"},
        {"image", ImageOf(job, options)},
        {"args", args},
        {"env", {{{"name", "POD_IP"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}}}},
        {"ports",
         {{{"name", "peers"}, {"containerPort", kPeerPort}}, {{"name", "http"}, {"containerPort", kHttpPort}}}},
        {"resources", ResourcesOf(job, options.defaults)},
        // The agent answers /healthz once its libraries are loaded, half a
        // second after it starts on this project's idle 2-core machine and
        // over a second on a busy one: a probe sooner fails, and leaves a
        // warning event on the pod (a new user's trial saw one on every agent
        // at 1 s). Readiness gates nothing of the team's (the Service
        // publishes addresses not ready), so waiting longer costs nothing.
        {"readinessProbe",
         {{"httpGet", {{"path", "/healthz"}, {"port", "http"}}}, {"initialDelaySeconds", 3}, {"periodSeconds", 2}}},
        // The agent writes its result here; the kubelet puts it in the pod's status,
        // where the operator reads how the job ended. A crash leaves the log's tail.
        {"terminationMessagePath", kTerminationLog},
        {"terminationMessagePolicy", "FallbackToLogsOnError"},
        {"securityContext", RestrictedContainerSecurity()},
        {"volumeMounts", mounts}};
    Json pod_spec = {
        {"nodeName", node},  // bound as a gang scheduler binds: placement decided
        // A crashed agent restarts in place: a worker rejoins, the coordinator
        // resumes from its checkpoint. Exit 0 ends the pod Succeeded.
        {"restartPolicy", "OnFailure"},
        {"terminationGracePeriodSeconds", options.termination_grace_seconds},
        {"enableServiceLinks", false},
        {"automountServiceAccountToken", false},
        {"securityContext", RestrictedPodSecurity()},
        {"containers", {container}},
        {"volumes", volumes}};
    pod_spec["tolerations"] = tolerations;
    if (spec.contains("/placement/priorityClassName"_json_pointer)) {
      pod_spec["priorityClassName"] = spec["placement"]["priorityClassName"];
    }
    if (role == "coordinator") {
      pod_spec["hostname"] = "coordinator";
      pod_spec["subdomain"] = ServiceName(job.name);
    }
    return Json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", Metadata(job, name, labels)}, {"spec", pod_spec}};
  };

  std::vector<Json> pods;
  std::vector<std::string> coordinator_args;
  if (!plan.workers.empty()) coordinator_args.push_back("--listen=$(POD_IP):" + std::to_string(kPeerPort));
  pods.push_back(pod(CoordinatorPodName(job.name, coordinator.since_generation), "coordinator", 0, coordinator.node,
                     coordinator_args));
  // The coordinator's DNS name (its hostname in the job's Service) follows
  // whichever pod holds the seat: a coordinator placed anew is found there.
  const std::string reach = "--coordinator=coordinator." + ServiceName(job.name) + ":" + std::to_string(kPeerPort);
  for (const WorkerSlot& slot : plan.workers) {
    // A pipeline's device the plan leaves out (too slow to keep pace) has no pod.
    if (plan.pipeline && !StageOfRank(*plan.pipeline, slot.rank).ok()) continue;
    pods.push_back(pod(WorkerPodName(job.name, slot.rank, SlotSince(plan, slot.rank)),
                       plan.pipeline ? "stage" : "worker", slot.rank, slot.node, {reach, "--listen=$(POD_IP):0"}));
  }
  return pods;
}

Json ModelCheckPodFor(const JobObject& job, const PodOptions& options) {
  const Json& spec = Spec(job);
  const FileMounts files = FileMountsOf(job);
  Json labels = LabelsOf(job);
  labels[kRoleLabel] = kModelCheckRole;
  // The spec's paths are already the pod's own (api::ResolveClusterPaths,
  // when the reconciler read the job).
  Json args = {"check-model", "--model=" + spec.at("model").dump(), "--data=" + spec.at("data").dump(),
               "--termination-log=" + std::string(kTerminationLog)};
  if (IsPipeline(job)) {
    // Timed in passes of the job's batch and of fewer samples, as the
    // planner's micro-batches will be (core/layer_cost.h).
    args[0] = "profile-layers";
    args.push_back("--batch=" + std::to_string(job.manifest.spec.data.batch_size));
    // A stage steps its layers' weights once a step: the planner counts it.
    if (spec.contains("optimizer")) args.push_back("--optimizer=" + spec.at("optimizer").dump());
  }
  Json container = {{"name", "check"},
                    {"image", ImageOf(job, options)},
                    {"args", args},
                    {"resources", ResourcesOf(job, options.defaults)},
                    {"terminationMessagePath", kTerminationLog},
                    {"terminationMessagePolicy", "FallbackToLogsOnError"},
                    {"securityContext", RestrictedContainerSecurity()},
                    {"volumeMounts", files.mounts}};
  Json pod_spec = {{"restartPolicy", "Never"},
                   {"enableServiceLinks", false},
                   {"automountServiceAccountToken", false},
                   {"securityContext", RestrictedPodSecurity()},
                   {"containers", {container}},
                   {"volumes", files.volumes},
                   {"tolerations", spec.value("/template/tolerations"_json_pointer, Json::array())}};
  if (spec.contains("/placement/nodeSelector"_json_pointer)) {
    pod_spec["nodeSelector"] = spec["placement"]["nodeSelector"];
  }
  if (spec.contains("/placement/priorityClassName"_json_pointer)) {
    pod_spec["priorityClassName"] = spec["placement"]["priorityClassName"];
  }
  Json metadata = Metadata(job, ModelCheckPodName(job.name), labels);
  metadata["annotations"] = {{kModelCheckAnnotation, DigestOf(pod_spec.dump())}};
  return Json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata}, {"spec", pod_spec}};
}

Json FileVolumesOf(const JobObject& job) { return FileMountsOf(job).volumes; }

std::string ModelCheckOf(const Json& pod) {
  return pod.value("/metadata/annotations"_json_pointer, Json::object()).value(kModelCheckAnnotation, "");
}

Duration GangTimeoutOf(const JobObject& job) {
  const std::string text =
      job.manifest.object.at("spec").value("/placement/gangTimeout"_json_pointer, std::string("5m"));
  StatusOr<Duration> d = ParseDuration(text);
  return d.ok() ? *d : std::chrono::minutes(5);
}

}  // namespace edgetrain::operator_

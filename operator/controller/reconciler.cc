#include "operator/controller/reconciler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "api/capabilities.h"
#include "api/job_conditions.h"
#include "core/cluster_placement.h"
#include "core/duration_text.h"
#include "core/pipeline_problem.h"
#include "operator/controller/cluster_view.h"
#include "operator/controller/gang.h"
#include "operator/controller/job_labels.h"
#include "operator/controller/job_status.h"
#include "operator/controller/model_check.h"
#include "operator/controller/stage_plan.h"

namespace edgetrain::operator_ {

namespace phase = api::phase;
namespace condition = api::condition;
namespace reason = api::reason;

// Readings of a node's link (one a status read) averaged before the first is
// published: one alone can be a fading link's peak or trough.
constexpr int kLinkReadingsToPublish = 3;

kube::Store::IndexFunc PodsByJobIndex() {
  return [](const Json& pod) -> std::vector<std::string> {
    const Json& meta = pod.at("metadata");
    const std::string job = meta.value("/labels"_json_pointer, Json::object()).value(kJobLabel, "");
    // The job's pods are those a TrainingJob of its name controls: a pod that
    // only carried the label (a hand-written team's, anyone's) was counted
    // among them, and deleted with them on suspend, at the job's end and
    // before it was placed again (a security review).
    if (job.empty() || !JobMayWrite(pod, job)) return {};
    return {meta.value("namespace", "") + "/" + job};
  };
}

struct Reconciler::Pass {
  std::string key;
  Json object;        // the TrainingJob as cached
  JobObject job;      // once valid
  Json status;        // what is being computed
  Json stored_status; // what the API has
  int64_t generation = 0;
  std::string now;
  std::vector<Json> pods;            // the team's, not the model check's
  std::optional<Json> model_check;   // the pod checking a TorchScript module
  ReconcileOutcome outcome;
  // An object under a name of the job's is another's (JobMayWrite): what
  // was being made stops, and the job fails NameTaken.
  std::string name_taken;

  std::string Phase() const { return status.value("phase", ""); }
  void Requeue(Duration d) {
    if (!outcome.requeue_after || d < *outcome.requeue_after) outcome.requeue_after = d;
  }
  void Set(const char* type, bool value, const char* why, const std::string& message) {
    SetCondition(status, {type, value, why, message}, now, generation);
  }
};

Reconciler::Reconciler(kube::KubeClient& client, kube::Store& jobs, kube::Store& pods, kube::Store& nodes,
                       ProgressSource& progress, EventRecorder& events, LineLog& log,
                       std::function<kube::WallTime()> wall_now, ReconcilerOptions options, kube::Store* plans)
    : client_(client),
      jobs_(jobs),
      pods_(pods),
      progress_(progress),
      events_(events),
      log_(log),
      wall_now_(std::move(wall_now)),
      options_(std::move(options)),
      line_(jobs, pods, nodes, options_.pods.defaults, options_.unschedulable_retry),
      plans_(plans) {}

StatusOr<Json> Reconciler::PlanConfigMap(const JobObject& job, bool placed) {
  if (plans_) {
    if (std::optional<Json> cached = plans_->Get(job.namespace_ + "/" + PlanConfigMapName(job.name))) return *cached;
    if (!placed) return NotFoundError("no plan ConfigMap cached");
  }
  return client_.Get(kube::kConfigMaps, job.namespace_, PlanConfigMapName(job.name));
}

Status Reconciler::WritePlanConfigMap(Pass& pass, const Json& config_map) {
  StatusOr<Json> existing = PlanConfigMap(pass.job, /*placed=*/!plans_);
  if (!existing.ok() && existing.status().code() != StatusCode::kNotFound) return existing.status();
  auto write = [&](const StatusOr<Json>& current) -> StatusOr<Json> {
    if (!current.ok()) return client_.Create(kube::kConfigMaps, pass.job.namespace_, config_map);
    if (!JobMayWrite(*current, pass.job.name)) return NameTaken(pass, kube::kConfigMaps, *current);
    Json updated = config_map;
    updated["metadata"]["resourceVersion"] = (*current)["metadata"]["resourceVersion"];
    return client_.Update(kube::kConfigMaps, pass.job.namespace_, updated);
  };
  StatusOr<Json> written = write(existing);
  if (!written.ok() && plans_ &&
      (written.status().code() == StatusCode::kAlreadyExists || written.status().code() == StatusCode::kAborted)) {
    // The cache was behind the API: read it, and write again on what it has.
    written = write(client_.Get(kube::kConfigMaps, pass.job.namespace_, PlanConfigMapName(pass.job.name)));
  }
  if (!written.ok()) {
    return written.status().WithContext("writing ConfigMap " + PlanConfigMapName(pass.job.name));
  }
  // Later reconciles see it before the watch brings it.
  if (plans_) plans_->Put(*written);
  return Status::Ok();
}

StatusOr<ReconcileOutcome> Reconciler::Reconcile(const std::string& key) {
  std::optional<Json> object = jobs_.Get(key);
  // Gone: its pods, Service and ConfigMap go by their ownerReferences.
  if (!object || object->at("metadata").contains("deletionTimestamp")) {
    std::lock_guard lock(said_mu_);
    refused_.erase(key);  // what was said of a job gone
    noted_.erase(key);
    return ReconcileOutcome{};
  }
  Pass pass;
  pass.key = key;
  pass.object = *object;
  pass.stored_status = object->value("status", Json::object());
  pass.status = pass.stored_status;
  pass.generation = object->at("metadata").value("generation", int64_t{1});
  pass.now = kube::FormatKubeTime(wall_now_());
  for (Json& pod : pods_.ByIndex(kPodsByJob, key)) {
    const bool checks_model =
        pod.value("/metadata/labels"_json_pointer, Json::object()).value(kRoleLabel, "") == kModelCheckRole;
    if (checks_model) {
      pass.model_check = std::move(pod);
    } else {
      pass.pods.push_back(std::move(pod));
    }
  }

  EDGETRAIN_RETURN_IF_ERROR(Validate(pass));
  if (pass.job.name.empty()) {  // invalid: the status says why, nothing else is done but its TTL
    // find() on a spec that is not an object finds nothing: no TTL.
    EDGETRAIN_RETURN_IF_ERROR(ExpireAfterTtl(pass, pass.object.value("spec", Json::object())));
    EDGETRAIN_RETURN_IF_ERROR(WriteStatus(pass));
    return pass.outcome;
  }
  Status done;
  const std::string current = pass.Phase();
  const bool suspending = pass.job.manifest.object.at("spec").value("suspend", false);
  SayIfSpecNotApplied(pass, suspending);
  if (current == phase::kSucceeded || current == phase::kFailed) {
    done = Finished(pass);
  } else if (suspending) {
    done = Suspend(pass);
  } else {
    done = Place(pass);
  }
  if (!pass.name_taken.empty()) {
    // Nothing of the other's is written, and the job cannot run under its
    // name: it fails, as a spec refused does, and says whose the name is.
    line_.Forget(pass.key);
    FailInvalid(pass, reason::kNameTaken, pass.name_taken);
    done = Status::Ok();
  }
  ReportRefusal(pass, done);
  if (!done.ok()) return done;
  // Ended in this pass: the next one (Finished) deletes its pods by
  // cleanPodPolicy and counts its TTL down. A change of its status alone
  // wakes no reconcile, and a job whose pods had all ended changes none.
  const std::string now_in = pass.Phase();
  if (now_in != current && (now_in == phase::kSucceeded || now_in == phase::kFailed)) pass.Requeue(Duration::zero());
  pass.status["observedGeneration"] = pass.generation;
  EDGETRAIN_RETURN_IF_ERROR(WriteStatus(pass));
  return pass.outcome;
}

Status Reconciler::WaitInvalid(Pass& pass, const char* why, const std::string& message) {
  // Said once: by the stored status, since this reconcile cleared Invalid
  // before it looked (NoMatchingNode came three times for one apply, a new
  // user's trial).
  const Json* said = FindCondition(pass.stored_status, condition::kInvalid);
  if (!said || said->value("reason", "") != why) {
    events_.Record(pass.object, "Warning", why, message);
    log_.Job(pass.key, why, message);
  }
  pass.status["phase"] = phase::kPending;
  pass.Set(condition::kInvalid, true, why, message);
  pass.Set(condition::kPlaced, false, reason::kUnschedulable, message);
  pass.Requeue(options_.unschedulable_retry);
  return Status::Ok();
}

void Reconciler::SayIfSpecNotApplied(Pass& pass, bool suspending) {
  const std::string current = pass.Phase();
  const int64_t observed = pass.stored_status.value("observedGeneration", int64_t{0});
  const bool placed = current == phase::kPlacing || current == phase::kRunning || current == phase::kRecovering;
  if (!placed || suspending || observed == 0 || observed == pass.generation) return;
  // Its team was planned from the spec it had: workers, model, data and
  // budget are in every agent's plan. An edit was silently ignored while
  // observedGeneration said it was seen (a new user's trial).
  const std::string message = "spec changed (generation " + std::to_string(pass.generation) +
                              ") while the job runs: it keeps the spec it was placed with until it is placed "
                              "again; to apply the change now, suspend and resume it (spec.suspend), or delete "
                              "it and apply it again";
  events_.Record(pass.object, "Warning", reason::kSpecNotApplied, message);
  log_.Job(pass.key, reason::kSpecNotApplied, message);
}

void Reconciler::ReportRefusal(const Pass& pass, const Status& done) {
  std::lock_guard lock(said_mu_);
  // Refused (403, 400, 422): what the job asks, or the operator's rights, and
  // not a passing trouble (a conflict, a server busy), which back-off mends.
  const bool refused = done.code() == StatusCode::kFailedPrecondition || done.code() == StatusCode::kInvalidArgument;
  if (!refused) {
    if (done.ok()) refused_.erase(pass.key);
    return;
  }
  std::string& said = refused_[pass.key];
  if (said == done.message()) return;  // one Event a refusal, not one a retry
  said = done.message();
  events_.Record(pass.object, "Warning", reason::kRequestRefused,
                 "the API server refused a request for this job, retried with back-off: " + done.message());
}

void Reconciler::FailInvalid(Pass& pass, const std::string& why, const std::string& invalid) {
  const bool news = !ConditionIs(pass.status, condition::kInvalid, true) ||
                    pass.stored_status.value("observedGeneration", int64_t{0}) != pass.generation;
  pass.Set(condition::kInvalid, true, why.c_str(), invalid);
  pass.Set(condition::kFailed, true, why.c_str(), invalid);
  pass.status["phase"] = phase::kFailed;
  // Failed, so finished: ttlSecondsAfterFinished counts from here.
  if (news || !pass.status.contains("completionTime")) pass.status["completionTime"] = pass.now;
  pass.status["observedGeneration"] = pass.generation;
  if (news) {
    events_.Record(pass.object, "Warning", why, invalid);
    log_.Job(pass.key, why, invalid);
  }
}

// The same validation as `edgetrain validate`: an object stored under an older
// CRD, or one that asks what the operator cannot run, is Invalid and makes nothing.
Status Reconciler::Validate(Pass& pass) {
  Json manifest = pass.object;
  manifest.erase("status");
  StatusOr<api::TrainingJobManifest> parsed = api::ParseTrainingJob(manifest.dump(), pass.key);
  std::string invalid, why;
  api::SupportCheck support;
  if (!parsed.ok()) {
    invalid = parsed.status().message();
    why = reason::kInvalidSpec;
  } else {
    support = api::CheckSupport(*parsed, api::Runner::kKubernetes);
    if (!support.unsupported.empty()) {
      why = reason::kNotSupported;
      for (const api::FieldError& e : support.unsupported) invalid += (invalid.empty() ? "" : "; ") + e.ToString();
    }
  }
  if (!invalid.empty()) {
    FailInvalid(pass, why, invalid);
    return Status::Ok();  // pass.job stays unnamed: nothing more to do
  }
  // What edgetrain validate and run say of the spec as notes (a field that
  // does not apply to its mode, say), said once a generation: on a cluster
  // they went unsaid. The status's observedGeneration keeps that across an
  // operator's restart; noted_ across the retries of a reconcile that fails
  // before it writes the status.
  bool say_notes = pass.stored_status.value("observedGeneration", int64_t{0}) != pass.generation;
  if (say_notes && !support.notes.empty()) {
    std::lock_guard lock(said_mu_);
    auto [it, first] = noted_.try_emplace(pass.key, pass.generation);
    say_notes = first || it->second != pass.generation;
    it->second = pass.generation;
  }
  if (say_notes) {
    for (const std::string& note : support.notes) {
      events_.Record(pass.object, "Normal", reason::kSpecNote, note);
      log_.Job(pass.key, reason::kSpecNote, note);
    }
  }
  // A module an agent refused (or whose check crashed) is the spec's fault
  // until the spec changes: then it is checked again.
  const Json* failed = FindCondition(pass.status, condition::kFailed);
  const std::string failed_for =
      failed && ConditionIs(pass.status, condition::kFailed, true) ? failed->value("reason", "") : "";
  const bool model_refused = failed_for == reason::kInvalidModel || failed_for == reason::kModelCheckFailed;
  const bool refused_as_written =
      model_refused && failed->value("observedGeneration", int64_t{0}) == pass.generation;
  // What placement found (no node matches, no such PriorityClass) is looked
  // at again only when placing: a suspended job keeps it. It had turned
  // Valid while suspended, and on resume Invalid again, said a second time.
  const Json* said_invalid = FindCondition(pass.status, condition::kInvalid);
  const std::string invalid_for = said_invalid ? said_invalid->value("reason", "") : "";
  const bool placements_finding = invalid_for == reason::kNoMatchingNode || invalid_for == reason::kNoPriorityClass;
  const bool suspended = pass.object.value("/spec/suspend"_json_pointer, false);
  // A name another object holds stays taken (Failed, NameTaken): it read
  // Invalid False, Valid, from the next pass on (a user's trial).
  const bool name_taken = failed_for == reason::kNameTaken;
  if (said_invalid && !refused_as_written && !name_taken && !(placements_finding && suspended)) {
    pass.Set(condition::kInvalid, false, "Valid", "");
  }
  // A job that failed only for what its spec says starts again once fixed.
  const bool spec_refused = failed_for == reason::kInvalidSpec || failed_for == reason::kNotSupported;
  if (pass.Phase() == phase::kFailed && (spec_refused || (model_refused && !refused_as_written))) {
    pass.Set(condition::kFailed, false, "Valid", "");
    pass.status["phase"] = phase::kPending;
    pass.status.erase("completionTime");
  }
  // The pods see the files a manifest names relatively in the volumes it gives.
  if (Status resolved = api::ResolveClusterPaths(*parsed); !resolved.ok()) return resolved;
  const Json& meta = pass.object.at("metadata");
  pass.job = {pass.object, *parsed, meta.value("namespace", "default"), meta.value("name", ""), meta.value("uid", "")};
  return Status::Ok();
}

std::optional<Duration> Reconciler::SinceTransition(const Json& status, const char* type) const {
  const Json* condition = FindCondition(status, type);
  if (condition == nullptr) return std::nullopt;
  const auto since = kube::ParseKubeTime(condition->value("lastTransitionTime", ""));
  if (!since) return std::nullopt;
  return std::chrono::duration_cast<Duration>(wall_now_() - *since);
}

Status Reconciler::Finished(Pass& pass) {
  EDGETRAIN_RETURN_IF_ERROR(CleanPods(pass));
  return ExpireAfterTtl(pass, pass.job.manifest.object.at("spec"));
}

Status Reconciler::ExpireAfterTtl(Pass& pass, const Json& spec) {
  // An invalid job's spec may hold anything: a TTL that is not a count of seconds is none.
  const auto ttl = spec.find("ttlSecondsAfterFinished");
  if (ttl == spec.end() || !ttl->is_number_integer() || ttl->get<int64_t>() < 0) return Status::Ok();
  const kube::WallTime now = wall_now_();
  // A completionTime that does not parse (written by hand) counts from now.
  const kube::WallTime finished = kube::ParseKubeTime(pass.status.value("completionTime", pass.now)).value_or(now);
  const auto expires = finished + std::chrono::seconds(ttl->get<int64_t>());
  if (now >= expires) {
    log_.Job(pass.key, "Expired", "deleted: ttlSecondsAfterFinished has passed since it finished");
    const Json& meta = pass.object.at("metadata");
    Status deleted = client_.Delete(kube::kTrainingJobs, meta.value("namespace", "default"), meta.value("name", ""));
    if (!deleted.ok() && deleted.code() != StatusCode::kNotFound) return deleted;
    pass.status = pass.stored_status;  // nothing to write to a deleted object
    return Status::Ok();
  }
  pass.Requeue(std::chrono::duration_cast<Duration>(expires - now));
  return Status::Ok();
}

Status Reconciler::CleanPods(Pass& pass) {
  const std::string policy = pass.job.manifest.object.at("spec").value("cleanPodPolicy", "Running");
  if (policy == "None") return Status::Ok();
  std::vector<std::string> doomed;
  std::vector<Json> pods = pass.pods;
  if (pass.model_check) pods.push_back(*pass.model_check);  // a check that outlived its job's end
  for (const Json& pod : pods) {
    if (pod.at("metadata").contains("deletionTimestamp")) continue;
    const std::string p = pod.value("/status/phase"_json_pointer, std::string());
    if (policy == "All" || (p != "Succeeded" && p != "Failed")) doomed.push_back(pod["metadata"]["name"]);
  }
  return DeletePods(pass, doomed);
}

Status Reconciler::DeletePods(Pass& pass, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    Status deleted = client_.Delete(kube::kPods, pass.job.namespace_, name);
    if (!deleted.ok() && deleted.code() != StatusCode::kNotFound) return deleted;
  }
  return Status::Ok();
}

Status Reconciler::DeleteAllPods(Pass& pass) {
  std::vector<std::string> names;
  for (const Json& pod : pass.pods) {
    if (!pod.at("metadata").contains("deletionTimestamp")) names.push_back(pod["metadata"]["name"]);
  }
  if (pass.model_check && !pass.model_check->at("metadata").contains("deletionTimestamp")) {
    names.push_back(ModelCheckPodName(pass.job.name));
  }
  return DeletePods(pass, names);
}

Status Reconciler::Suspend(Pass& pass) {
  EDGETRAIN_RETURN_IF_ERROR(DeleteAllPods(pass));
  if (pass.Phase() != phase::kSuspended) {
    // Its checkpoint outlives its pods only on a claim: on the default
    // emptyDir it goes with them.
    // One that never ran has no checkpoint to speak of (it was told its
    // checkpoint went with its pods: a new user's trial).
    const std::string message =
        !pass.status.contains("startTime") ? "spec.suspend is true: no pods; it is placed when set to false"
        : HasOutputVolume(pass.job)
            ? "spec.suspend is true: no pods; it resumes from its checkpoint when set to false"
            : "spec.suspend is true: no pods; it starts over when set to false (its checkpoint went with its pods: "
              "give spec.output.volume a claim to resume from it)";
    events_.Record(pass.object, "Normal", reason::kSuspended, message);
    log_.Job(pass.key, reason::kSuspended, message);
  }
  pass.status["phase"] = phase::kSuspended;
  // No team, no links: Stalled and BandwidthDegraded said a deleted
  // coordinator's silence through the suspension and after (a new user's
  // trial).
  SettleLinkConditions(pass, reason::kSuspended, "suspended");
  // No pods, no workers: it listed the deleted pods with their figures (a
  // new user's trial). An ended job keeps its list: what each worker did.
  pass.status.erase("workers");
  // Nor an ETA: a suspended job's read "2m55s" still.
  if (pass.status.contains("progress") && pass.status["progress"].is_object()) pass.status["progress"].erase("eta");
  pass.Set(condition::kPlaced, false, reason::kSuspended, "suspended");
  pass.Set(condition::kRunning, false, reason::kSuspended, "suspended");
  return Status::Ok();
}

int Reconciler::PriorityOfClass(const std::string& name) {
  if (name.empty()) return 0;
  StatusOr<Json> pc = client_.Get(kube::kPriorityClasses, "", name);
  return pc.ok() ? pc->value("value", 0) : 0;
}

// The plan in the job's ConfigMap, if one was made: its generation.
namespace {

struct StoredPlan {
  int64_t generation = 0;
  std::optional<JobPlan> plan;
  CoordinatorSeat coordinator;
};

StatusOr<StoredPlan> ReadPlan(const StatusOr<Json>& map) {
  if (!map.ok()) {
    if (map.status().code() == StatusCode::kNotFound) return StoredPlan{};
    return map.status();
  }
  StoredPlan stored;
  StatusOr<JobPlan> plan = DecodeJobPlan(map->value("/data/plan.json"_json_pointer, std::string()));
  if (!plan.ok()) return stored;  // edited by hand: placed again
  stored.generation = plan->generation;
  stored.plan = *plan;
  stored.coordinator = CoordinatorSeatOf(*map);
  return stored;
}

// Whether rank `rank` of `plan` has a pod: a pipeline's devices that the plan
// leaves out, or that were lost (`lost`), have none.
bool HasPod(const JobPlan& plan, int rank, const std::set<int>& lost) {
  return !plan.pipeline || (StageOfRank(*plan.pipeline, rank).ok() && !lost.count(rank));
}

std::vector<std::string> PodNamesOf(const JobObject& job, const JobPlan& plan, const CoordinatorSeat& coordinator,
                                    const std::set<int>& lost) {
  std::vector<std::string> names = {CoordinatorPodName(job.name, coordinator.since_generation)};
  for (const WorkerSlot& slot : plan.workers) {
    if (HasPod(plan, slot.rank, lost)) names.push_back(WorkerPodName(job.name, slot.rank, SlotSince(plan, slot.rank)));
  }
  return names;
}

// The ranks listed at `pointer` of `status`.
std::set<int> RanksAt(const Json& status, const char* pointer) {
  std::set<int> ranks;
  const Json list = status.value(Json::json_pointer(pointer), Json::array());
  if (!list.is_array()) return ranks;
  for (const Json& r : list) {
    if (r.is_number_integer()) ranks.insert(r.get<int>());
  }
  return ranks;
}

// A condition's message that keeps what it first said and how things stand
// now: "FIRST<separator>NOW". Each retry replaces the last "now" rather than
// appending its own to it.
std::string FirstWordsAndNow(const std::string& before, const std::string& separator, const std::string& now) {
  return before.substr(0, before.find(separator)) + separator + now;
}

// What a job whose output claim does not exist is told, in its Event and
// its starting message.
std::string MissingClaimWords(const std::string& claim, const std::string& ns) {
  return "spec.output.volume's PersistentVolumeClaim " + claim + " does not exist in namespace " +
         (ns.empty() ? "default" : ns) + ": the coordinator's pod waits to mount it until it is made";
}

// "2/3 pods running", and why the others wait where the kubelet says: an
// image that cannot be pulled was seen only on the pods.
std::string StartingMessage(const Gang& gang) {
  std::string message = std::to_string(gang.running) + "/" + std::to_string(gang.expected) + " pods running";
  // Pods held for the same reason are named together: an image that cannot
  // be pulled repeated the kubelet's 300 characters once a pod (a new
  // user's trial). Each entry is "pod: why".
  std::vector<std::pair<std::string, std::string>> reasons;  // why, the pods it holds
  for (const std::string& held : gang.held) {
    const size_t colon = held.find(": ");
    const std::string pod = held.substr(0, colon);
    const std::string why = colon == std::string::npos ? "" : held.substr(colon + 2);
    auto same = std::find_if(reasons.begin(), reasons.end(), [&](const auto& r) { return r.first == why; });
    if (same == reasons.end()) {
      reasons.emplace_back(why, pod);
    } else {
      same->second += ", " + pod;
    }
  }
  for (size_t i = 0; i < reasons.size() && i < 3; ++i) {
    message += (i ? "; " : ": ") + reasons[i].second + (reasons[i].first.empty() ? "" : ": " + reasons[i].first);
  }
  if (reasons.size() > 3) message += "; and " + std::to_string(reasons.size() - 3) + " more reasons";
  return message;
}

// Why a pipeline cannot train on, restarted, without the devices `gone`
// (lost for good: pipeline devices are not replaced): a stage of its plan has
// none of its devices left, and a restarted head starts from the plan, with
// no replica of that stage to rebuild it from. Empty when every stage has one.
std::string StageLeftWithoutDevices(const PipelineLayout& pipeline, const std::set<int>& gone) {
  for (size_t s = 0; s < pipeline.stages.size(); ++s) {
    const std::vector<int>& ranks = pipeline.stages[s].ranks;
    if (ranks.empty() || !std::all_of(ranks.begin(), ranks.end(), [&](int r) { return gone.count(r) > 0; })) continue;
    std::string names;
    for (int r : ranks) names += (names.empty() ? "" : ", ") + std::to_string(r);
    return "stage " + std::to_string(s + 1) + " of the plan has no device left (" +
           (ranks.size() == 1 ? "rank " + names + " lost for good, its pod gone"
                              : "ranks " + names + " lost for good, their pods gone") +
           "), and a pipeline's lost devices are not replaced; delete the job and apply it again to start over";
  }
  return "";
}

// status.pipeline.lostRanks: a pipeline's devices lost so far.
std::set<int> LostRanksOf(const Json& status) { return RanksAt(status, "/pipeline/lostRanks"); }

// status.pipeline as placed: what the planner chose, and its stages.
Json PipelineStatusOf(const StagePlan& cut) {
  Json stages = Json::array();
  for (const PipelineStagePlan& stage : cut.layout.stages) {
    stages.push_back({{"layers", std::to_string(stage.first_layer) + "-" + std::to_string(stage.end_layer - 1)},
                      {"ranks", stage.ranks}});
  }
  return {{"plan", cut.reason},
          {"stages", stages},
          {"microBatches", cut.layout.micro_batches},
          {"predictedSamplesPerSecond", std::llround(cut.predicted_samples_per_s)}};
}

const Json* PodNamed(const std::vector<Json>& pods, const std::string& name) {
  for (const Json& pod : pods) {
    if (pod.value("/metadata/name"_json_pointer, std::string()) == name) return &pod;
  }
  return nullptr;
}

// Why a worker's pod of a team that has run is lost, or empty if it is not: it
// failed (evicted, or its node rejected it), it is being deleted (an eviction
// after nodeLossGrace, a pre-emption, a drain, a person), or it is gone though
// it was placed by an earlier plan (so not merely not yet in the cache).
std::string LossOf(const Json* pod, int64_t slot_since, int64_t generation) {
  if (!pod) return slot_since < generation ? "its pod is gone" : "";
  const std::string node = pod->value("/spec/nodeName"_json_pointer, std::string());
  if (pod->at("metadata").contains("deletionTimestamp")) return "its pod on " + node + " is being deleted";
  if (pod->value("/status/phase"_json_pointer, std::string()) == "Failed") {
    const std::string why = pod->value("/status/reason"_json_pointer, std::string("Failed"));
    return "its pod on " + node + " failed (" + why + ")";
  }
  return "";
}

// The next plan generation: the ranks `replaced` placed on `to` (in rank
// order), every other worker keeping its slot and stream. `said`: where each
// went, "worker 1 to robot-2, worker 3 to spot-1".
JobPlan NextGeneration(const JobPlan& plan, const std::set<int>& replaced, const std::vector<std::string>& to,
                       const std::vector<NodeView>& nodes, std::string& said) {
  JobPlan next = plan;
  next.generation = plan.generation + 1;
  size_t placed = 0;
  for (WorkerSlot& slot : next.workers) {
    if (!replaced.count(slot.rank)) {
      slot.since_generation = SlotSince(plan, slot.rank);
      continue;
    }
    PutSlotOn(slot, to[placed++], nodes);
    slot.since_generation = next.generation;
    said += (said.empty() ? "" : ", ") + std::string("worker ") + std::to_string(slot.rank) + " to " + slot.node;
  }
  return next;
}

// When the team stopped being whole, by the cluster's own word: a lost pod's
// delete asked for (its deletionTimestamp less its grace), its agent's end
// (a failed pod's finishedAt), a node of the team gone silent (the
// NodeNotReady the status has said since), a lost worker gone silent
// (its silentSince in the status), a lost coordinator's /progress unanswered
// since its last read (status.progress.unreadSince, or Stalled,
// ProgressUnreadable). None: nothing earlier than now.
// A recovery timed from when this operator saw it was shown as 0.65 s when
// the team had been short a worker for 17 s (a new user's trial: the loss
// came while no replica led).
std::optional<kube::WallTime> LossEvidence(const Json& stored_status, const std::vector<std::string>& lost_names,
                                           const std::vector<const Json*>& lost_pods,
                                           const std::vector<NodeView>& lost_nodes, bool coordinator_lost) {
  std::optional<kube::WallTime> earliest;
  auto consider = [&](const std::string& text, std::chrono::seconds less = std::chrono::seconds(0)) {
    if (std::optional<kube::WallTime> t = kube::ParseKubeTime(text)) {
      const kube::WallTime at = *t - less;
      if (!earliest || at < *earliest) earliest = at;
    }
  };
  for (const Json* pod : lost_pods) {
    if (!pod) continue;
    const Json& meta = pod->at("metadata");
    if (meta.contains("deletionTimestamp")) {
      consider(meta.value("deletionTimestamp", ""), std::chrono::seconds(meta.value("deletionGracePeriodSeconds", 0)));
    }
    for (const Json& c : pod->value("/status/containerStatuses"_json_pointer, Json::array())) {
      consider(c.value("/state/terminated/finishedAt"_json_pointer, std::string()));
    }
  }
  if (const Json* degraded = FindCondition(stored_status, condition::kBandwidthDegraded);
      degraded && degraded->value("status", "") == "True" && degraded->value("reason", "") == reason::kNodeNotReady) {
    consider(degraded->value("lastTransitionTime", ""));
  }
  // A lost worker silent since (status.workers' silentSince, its last read):
  // by name, for a pod already gone from the cache has no labels to read.
  for (const std::string& name : lost_names) {
    for (const Json& w : stored_status.value("workers", Json::array())) {
      if (w.value("name", "") == name) consider(w.value("silentSince", ""));
    }
  }
  // The node's own word: a condition that was already True for a link down
  // kept its time, and an eviction after nodeLossGrace was taken for the
  // start of a loss whose node had gone silent 15 s before (a new user's trial).
  for (const NodeView& node : lost_nodes) {
    if (!node.ready) consider(node.not_ready_since);
  }
  // A coordinator whose node died: its /progress went unanswered from its
  // last read, 40 s before its node was called NotReady. Its recovery was
  // counted 12 s where the team had stood 50 s (a new user's trial), and,
  // lost before --stalled-after, from its node's NotReady: 5.2 s where it had
  // stood 10 (another). Unanswered since a read, it is lost from that read.
  // Not a read of an earlier coordinator's (one replaced, or before a
  // suspension), older than the lost one's pod (first of `lost_pods`): taken
  // for its loss, it was older than the team's last start, and the recovery
  // was counted from when the operator saw it (found in review).
  const bool unread = stored_status.contains("/progress/unreadSince"_json_pointer) ||
                      (ConditionIs(stored_status, condition::kStalled, true) &&
                       FindCondition(stored_status, condition::kStalled)->value("reason", "") ==
                           reason::kProgressUnreadable);
  const std::string read_time = stored_status.value("/progress/readTime"_json_pointer, std::string());
  const std::optional<kube::WallTime> read_at = kube::ParseKubeTime(read_time);
  const std::optional<kube::WallTime> made =
      !lost_pods.empty() && lost_pods.front()
          ? kube::ParseKubeTime(lost_pods.front()->value("/metadata/creationTimestamp"_json_pointer, std::string()))
          : std::nullopt;
  if (coordinator_lost && unread && read_at && (!made || *read_at >= *made)) consider(read_time);
  return earliest;
}

// A loss that is the leaving node's own doing: a pod deleted or gone, not
// failed, on a node still ready that said it is leaving. `kubectl drain`
// cordons the node and evicts its pods a moment later; both often reach the
// same reconcile, and the eviction was counted a loss against maxRecoveries
// where the cordon alone was a move (a new user's trial).
bool LeavingsOwnDoing(const Json* pod, const NodeView* node) {
  const bool failed = pod && pod->value("/status/phase"_json_pointer, std::string()) == "Failed";
  return !failed && node && node->ready && !node->leaving.empty();
}

// spec.placement.gangTimeout (the CRD defaults it, and its pattern is a duration).
Duration GangTimeoutOf(const JobObject& job) {
  const std::string text =
      job.manifest.object.at("spec").value("/placement/gangTimeout"_json_pointer, std::string("5m"));
  StatusOr<Duration> d = ParseDuration(text);
  return d.ok() ? *d : std::chrono::minutes(5);
}

// Where a plan's pods go, as placement said it.
TeamPlacement PlacementOf(const JobPlan& plan, const CoordinatorSeat& coordinator) {
  TeamPlacement placement;
  placement.coordinator_node = coordinator.node;
  placement.worker_nodes.resize(plan.workers.size());
  for (const WorkerSlot& slot : plan.workers) placement.worker_nodes.at(static_cast<size_t>(slot.rank)) = slot.node;
  return placement;
}

// How long a job whose gang timed out `timeouts` times in a row waits,
// Pending and holding nothing, before it is placed again: one gangTimeout,
// doubling with each, up to eight. A gang that cannot start (an image that
// cannot be pulled) was placed again at once, every gangTimeout, forever (a
// new user's trial); a cluster short of room a while gets it back in time.
Duration GangBackOff(Duration timeout, int64_t timeouts) {
  return timeout * (int64_t{1} << std::clamp<int64_t>(timeouts - 1, 0, 3));
}

std::string Describe(const TeamPlacement& placement) {
  std::string text = "coordinator on " + placement.coordinator_node;
  if (!placement.worker_nodes.empty()) {
    text += "; workers on";
    for (size_t rank = 0; rank < placement.worker_nodes.size(); ++rank) {
      text += (rank ? ", " : " ") + placement.worker_nodes[rank] + " (" + std::to_string(rank) + ")";
    }
  }
  return text;
}

}  // namespace

Status Reconciler::Place(Pass& pass) {
  // Resumed: Running no longer says suspended, though the job waits for
  // room, or for a node to match (it read Suspended while Pending
  // Unschedulable, a new user's trial).
  if (const Json* running = FindCondition(pass.status, condition::kRunning);
      running && running->value("reason", "") == reason::kSuspended) {
    pass.Set(condition::kRunning, false, reason::kResuming, "resumed: not placed yet");
  }
  EDGETRAIN_ASSIGN_OR_RETURN(
      StoredPlan stored, ReadPlan(PlanConfigMap(pass.job, ConditionIs(pass.status, condition::kPlaced, true))));
  if (stored.plan && ConditionIs(pass.status, condition::kPlaced, true)) {
    return Follow(pass, *stored.plan, stored.coordinator);
  }
  // A status that never said Placed, with pods of the stored plan, and only
  // those: a replica placed the job and died before it wrote the status.
  // Deleting them and placing anew would start the team again for nothing.
  const Json* placed = FindCondition(pass.status, condition::kPlaced);
  const bool never_placed = !placed || placed->value("reason", "") == reason::kUnschedulable ||
                            placed->value("reason", "") == reason::kPodsEnding;
  if (stored.plan && !pass.pods.empty() && never_placed) {
    // Each pod exactly as the plan makes it: its name, its node and its
    // generation.
    std::map<std::string, const Json*> planned;
    const std::vector<Json> plan_pods = PodsFor(pass.job, *stored.plan, stored.coordinator, options_.pods);
    for (const Json& pod : plan_pods) planned[pod["metadata"]["name"].get<std::string>()] = &pod;
    const bool all_of_plan = std::all_of(pass.pods.begin(), pass.pods.end(), [&](const Json& pod) {
      const auto it = planned.find(pod.value("/metadata/name"_json_pointer, std::string()));
      if (it == planned.end() || pod.at("metadata").contains("deletionTimestamp")) return false;
      const Json& want = *it->second;
      return pod.value("/spec/nodeName"_json_pointer, std::string()) == want["spec"]["nodeName"] &&
             pod.value("/metadata/labels"_json_pointer, Json::object()).value(kGenerationLabel, std::string()) ==
                 want["metadata"]["labels"][kGenerationLabel];
    });
    if (all_of_plan) return TakeUp(pass, *stored.plan, stored.coordinator);
  }
  // Not placed: pods of an earlier plan go first (they hold their nodes).
  // Not one already being deleted on a node that is lost (not Ready, or
  // gone): it ends only once its node comes back, and holds nothing
  // placement would choose. A worker replaced with its node left such a pod,
  // and resuming the job waited on it for good (a new user's trial). The new
  // plan's pods are named after a later generation than any of its (below),
  // so they never take its name.
  std::vector<Json> ending, stranded;
  {
    // The nodes of pods being deleted only: the rest are waited for anyway.
    std::vector<std::string> nodes;
    for (const Json& pod : pass.pods) {
      if (pod.at("metadata").contains("deletionTimestamp")) {
        nodes.push_back(pod.value("/spec/nodeName"_json_pointer, std::string()));
      }
    }
    const std::vector<NodeView> views = nodes.empty() ? std::vector<NodeView>() : line_.Views(nodes, Measured());
    for (const Json& pod : pass.pods) {
      const std::string node = pod.value("/spec/nodeName"_json_pointer, std::string());
      const NodeView* view = NodeNamed(views, node);
      const bool lost = !node.empty() && (!view || !view->ready);
      (pod.at("metadata").contains("deletionTimestamp") && lost ? stranded : ending).push_back(pod);
    }
  }
  if (!ending.empty()) {
    EDGETRAIN_RETURN_IF_ERROR(DeleteAllPods(pass));
    pass.status["phase"] = phase::kPending;
    // Said: a job applied again right after it was deleted waited out its
    // old pods' grace (30 s) with no condition, event or log line (a new
    // user's trial).
    std::string names;
    for (const Json& pod : ending) {
      names += (names.empty() ? "" : ", ") + pod["metadata"].value("name", std::string());
    }
    // A placed job whose plan ConfigMap went (deleted by hand): its own
    // team, which reads the plan, ends, and the job is placed again. Said as
    // such: "pods of an earlier plan" read as someone else's, and no Event
    // said why a running team was torn down (a new user's trial).
    const bool just_deleted = !stored.plan && ConditionIs(pass.status, condition::kPlaced, true);
    const std::string kPlanGone = "its plan ConfigMap ";
    const bool plan_deleted = just_deleted || (placed && placed->value("reason", "") == reason::kPodsEnding &&
                                               placed->value("message", "").rfind(kPlanGone, 0) == 0);
    const std::string pods = std::to_string(ending.size()) + (ending.size() == 1 ? " pod" : " pods");
    const std::string what =
        plan_deleted ? kPlanGone + PlanConfigMapName(pass.job.name) +
                           " is gone, and its team, which reads it, ends: waiting for its " + pods +
                           " to end before it is placed again (what they trained goes with them unless "
                           "spec.output.volume keeps its checkpoint)"
                     : "waiting for " + pods +
                           " of an earlier plan, or of a job of this name deleted before, to end and free their nodes";
    if (just_deleted) {
      events_.Record(pass.object, "Warning", reason::kPlanDeleted, what);
      log_.Job(pass.key, reason::kPlanDeleted, what);
    }
    // (After a gang timeout, its reason stays: its back-off counts from it.)
    if (!placed || placed->value("reason", "") != reason::kGangTimeout) {
      pass.Set(condition::kPlaced, false, reason::kPodsEnding, what + " (" + names + ")");
    }
    pass.Requeue(std::chrono::seconds(1));
    return Status::Ok();
  }
  // After a gang timeout: its back-off first, unless the spec has changed
  // since it timed out. A user who mended the image it could not pull had
  // waited out the back-off, the status naming the old image meanwhile (a new
  // user's trial: 37 s at a gangTimeout of 20 s; minutes at the default's).
  if (placed && placed->value("reason", "") == reason::kGangTimeout) {
    if (placed->value("observedGeneration", pass.generation) != pass.generation) {
      pass.status.erase("gangTimeouts");  // a new spec starts a new row
      log_.Job(pass.key, "SpecChanged",
               "its spec changed since its gang timed out: placed again now, not after the back-off");
    } else {
      const Duration backoff = GangBackOff(GangTimeoutOf(pass.job), pass.status.value("gangTimeouts", int64_t{1}));
      const Duration waited = SinceTransition(pass.status, condition::kPlaced).value_or(backoff);
      if (waited < backoff) {
        pass.status["phase"] = phase::kPending;
        pass.Requeue(backoff - waited);
        return Status::Ok();
      }
    }
  }

  const bool own_module = pass.job.manifest.spec.model.kind == ModelKind::kTorchScript;
  StatusOr<TeamRequest> request =
      api::TeamRequestOf(pass.job.manifest, options_.pods.defaults, MeasuredSizeOf(pass));
  if (!request.ok()) {
    // Validate reads every request first, with the same parser; kept so that
    // a request it ever lets through fails as an invalid spec does, and
    // fixing it starts the job again (Invalid alone had been read as valid
    // by the next pass: Failed for good, with no reason).
    FailInvalid(pass, reason::kInvalidSpec, request.status().message());
    return Status::Ok();
  }
  for (const std::string& bad : line_.Unreadable()) log_.Job(pass.key, "NodeUnreadable", bad);

  pass.status["phase"] = phase::kPending;
  if (!request->node_selector.empty() && !line_.AnyNodeMatches(request->node_selector)) {
    // Not final: a node labelled so may join; any Node change looks again.
    return WaitInvalid(pass, reason::kNoMatchingNode,
                       "spec.placement.nodeSelector matches none of the cluster's " +
                           std::to_string(line_.NodeCount()) + " nodes");
  }
  // A PriorityClass that does not exist: the API server would refuse every
  // pod, after the plan was written. The job had no phase at all, and each
  // retry placed it again under a new plan generation (a new user's trial).
  if (const std::string name = pass.object.value("/spec/placement/priorityClassName"_json_pointer, std::string());
      !name.empty()) {
    StatusOr<Json> found = client_.Get(kube::kPriorityClasses, "", name);
    if (!found.ok() && found.status().code() == StatusCode::kNotFound) {
      // Not final: the class may be created. PriorityClasses are not watched.
      return WaitInvalid(pass, reason::kNoPriorityClass,
                         "spec.placement.priorityClassName: no PriorityClass named " + name +
                             " exists, and the API server refuses pods that name one; create it, or change the field");
    }
  }
  if (FindCondition(pass.status, condition::kInvalid)) pass.Set(condition::kInvalid, false, "Valid", "");
  const bool pipeline = IsPipeline(pass.job);
  if (own_module || pipeline) {
    EDGETRAIN_ASSIGN_OR_RETURN(const bool measured, CheckModel(pass));
    if (!measured) return Status::Ok();  // being checked, or refused: the status says which
  }

  // Resumed, its coordinator goes back to the node its output volume is on:
  // placed elsewhere, its pod could never mount it (a new user's trial).
  request->coordinator_only_on = OutputVolumeNode(pass);

  // Jobs first in line take their room first; this one gets what is left
  // (its turn in the waiting line's reservation pass).
  const Json& meta = pass.object.at("metadata");
  const uint64_t passes_before = line_.passes();
  const auto pass_started = std::chrono::steady_clock::now();
  const TeamPlacement placement = line_.PlacementOf(
      pass.key, *request, pass.object.value("/spec/placement/priorityClassName"_json_pointer, std::string()),
      meta.value("creationTimestamp", ""), [this](const std::string& name) { return PriorityOfClass(name); },
      Measured());
  if (line_.passes() != passes_before) {
    // A whole pass is the one costly step of placing: say when one was made.
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - pass_started).count();
    log_.Job(pass.key, "ReservationPass",
             "every job waiting for room given its place anew, in priority order, over " +
                 std::to_string(line_.NodeCount()) + " nodes, in " +
                 std::to_string(static_cast<int64_t>(std::llround(ms))) + " ms");
  }
  if (!placement.placed) {
    const std::string message = placement.unschedulable;
    const Json* placed = FindCondition(pass.status, condition::kPlaced);
    const bool news = !placed || placed->value("message", "") != message;
    // After a gang timeout, the reason stays GangTimeout until placed again.
    const bool timed_out = placed && placed->value("reason", "") == reason::kGangTimeout;
    pass.Set(condition::kPlaced, false, timed_out ? reason::kGangTimeout : reason::kUnschedulable,
             timed_out ? FirstWordsAndNow(placed->value("message", ""), "; now: ", message) : message);
    if (news && !timed_out) {
      events_.Record(pass.object, "Warning", reason::kUnschedulable, message);
      log_.Job(pass.key, reason::kUnschedulable, message);
    }
    pass.outcome.placement = "unschedulable";
    pass.Requeue(options_.unschedulable_retry);
    return Status::Ok();
  }

  // Past any pod still left of the job (stranded on a lost node, above):
  // pods are named after the generation their slot was given at.
  int64_t generation = stored.generation + 1;
  for (const Json& pod : stranded) {
    const std::string made_at =
        pod.value("/metadata/labels"_json_pointer, Json::object()).value(kGenerationLabel, std::string());
    generation = std::max<int64_t>(generation, std::atoll(made_at.c_str()) + 1);
  }
  if (!stranded.empty()) {
    std::string names;
    for (const Json& pod : stranded) names += (names.empty() ? "" : ", ") + pod["metadata"].value("name", std::string());
    const bool one = stranded.size() == 1;
    log_.Job(pass.key, "PlacedPastLostPods",
             "not waiting for " + names + (one ? ": being deleted on a lost node, which must come back (or the pod be "
                                                 "deleted with --force) for it to end; it holds nothing this placement "
                                                 "would choose"
                                               : ": being deleted on lost nodes, which must come back (or the pods be "
                                                 "deleted with --force) for them to end; they hold nothing this "
                                                 "placement would choose"));
  }
  std::vector<std::string> chosen = placement.worker_nodes;
  chosen.push_back(placement.coordinator_node);
  const std::vector<NodeView> views = line_.Views(chosen, Measured());
  JobPlan plan = PlanOf(pass.job, placement, views, generation);
  std::string stages;  // a pipeline's, said with where it was placed
  if (pipeline) {
    StatusOr<StagePlan> cut = CutStages(pass, placement, views);
    if (!cut.ok()) {
      line_.Forget(pass.key);
      const std::string message = "no " + std::string(NameOf(pass.job.manifest.spec.parallelism.mode)) +
                                  " plan fits the nodes placement chose (" + Describe(placement) +
                                  "): " + cut.status().message();
      const Json* placed = FindCondition(pass.status, condition::kPlaced);
      if (!placed || placed->value("message", "") != message) {
        events_.Record(pass.object, "Warning", reason::kNoPipelineFits, message);
        log_.Job(pass.key, reason::kNoPipelineFits, message);
      }
      pass.Set(condition::kPlaced, false, reason::kNoPipelineFits, message);
      pass.outcome.placement = "unschedulable";
      pass.Requeue(options_.unschedulable_retry);
      return Status::Ok();
    }
    plan.pipeline = cut->layout;
    stages = cut->reason;
    pass.status["pipeline"] = PipelineStatusOf(*cut);
  }
  // Its pods hold what its turn reserved from now, before the informer shows
  // them (assumed before they are made, as kube-scheduler assumes before it
  // binds, so the other worker never sees them unannounced).
  // Named after this generation only if a stranded pod holds the plain name.
  const bool name_held = std::any_of(stranded.begin(), stranded.end(), [&](const Json& pod) {
    return pod["metadata"].value("name", std::string()) == CoordinatorPodName(pass.job.name, 1);
  });
  const CoordinatorSeat coordinator{placement.coordinator_node, name_held ? generation : 1};
  const std::vector<Json> pods = PodsFor(pass.job, plan, coordinator, options_.pods);
  line_.Placed(pass.key, pods, wall_now_());
  if (Status applied = ApplyObjects(pass, plan, coordinator, pods); !applied.ok()) {
    line_.Forget(pass.key);
    return applied;
  }
  const std::string message = Describe(placement) + (stages.empty() ? "" : "; " + stages);
  pass.Set(condition::kPlaced, true, reason::kPlaced, message);
  // A job that has run and keeps no checkpoint (no output volume) starts
  // over: what was read of its last run is not its progress (kubectl get tj
  // showed the old accuracy until the first read).
  if (!HasOutputVolume(pass.job)) pass.status.erase("progress");
  // A job that has run is placed anew only when resumed (a loss keeps its
  // plan): Resuming from the start, where it read Starting for a pass.
  pass.Set(condition::kRunning, false, pass.status.contains("startTime") ? reason::kResuming : reason::kStarting,
           "0/" + std::to_string(pods.size()) + " pods running");
  pass.status["phase"] = phase::kPlacing;
  events_.Record(pass.object, "Normal", reason::kPlaced, message);
  log_.Job(pass.key, reason::kPlaced, message + " (plan generation " + std::to_string(generation) + ")");
  pass.outcome.placement = "placed";
  // Its pods' changes wake it; else the gang timeout is when to look again.
  pass.Requeue(GangTimeoutOf(pass.job));
  return Status::Ok();
}

std::optional<ModelSize> Reconciler::MeasuredSizeOf(const Pass& pass) {
  if (pass.job.manifest.spec.model.kind != ModelKind::kTorchScript) return std::nullopt;  // the spec says
  const std::string check = ModelCheckOf(ModelCheckPodFor(pass.job, options_.pods));
  if (!IsPipeline(pass.job)) return CheckedSizeOf(pass.status, check);
  // A pipeline's check timed the module's layers: its size from them.
  const std::optional<CheckedLayers> checked = CheckedLayersOf(pass.status, check);
  if (!checked) return std::nullopt;
  const std::vector<NodeView> timed_on = line_.Views({checked->node}, Measured());
  return SizeOfLayers(checked->layers, pass.job.manifest.spec.data.batch_size,
                      timed_on.empty() ? nullptr : &timed_on[0]);
}

StatusOr<StagePlan> Reconciler::CutStages(const Pass& pass, const TeamPlacement& placement,
                                          const std::vector<NodeView>& views) {
  const std::optional<CheckedLayers> checked =
      CheckedLayersOf(pass.status, ModelCheckOf(ModelCheckPodFor(pass.job, options_.pods)));
  if (!checked) return FailedPreconditionError("the model's layers have not been timed");
  auto view_of = [&](const std::string& name) -> const NodeView* {
    auto it = std::find_if(views.begin(), views.end(), [&](const NodeView& v) { return v.name == name; });
    return it == views.end() ? nullptr : &*it;
  };
  std::vector<NodeView> devices;
  for (const std::string& node : placement.worker_nodes) {
    const NodeView* view = view_of(node);
    if (!view) return FailedPreconditionError("node " + node + " is not known");
    devices.push_back(*view);
  }
  std::vector<NodeView> timed_on = line_.Views({checked->node}, Measured());
  return PlanStagesOn(pass.job.manifest.spec, devices, checked->layers, timed_on.empty() ? nullptr : &timed_on[0],
                      checked->transport);
}

StatusOr<bool> Reconciler::CheckModel(Pass& pass) {
  const Json check_pod = ModelCheckPodFor(pass.job, options_.pods);
  const std::string check = ModelCheckOf(check_pod);
  // A pipeline's check times the layers of its model, a module's loads it.
  const bool layers = IsPipeline(pass.job);
  const std::string module = ModuleOf(pass.job.manifest);
  const std::string pod_name = ModelCheckPodName(pass.job.name);
  const char* checking = layers ? reason::kCheckingLayers : reason::kCheckingModel;
  auto delete_check = [&]() -> Status {
    if (!pass.model_check || pass.model_check->at("metadata").contains("deletionTimestamp")) return Status::Ok();
    return DeletePods(pass, {pod_name});
  };
  // The job ends here: the module refused (Invalid), or its check failed.
  auto end_job = [&](bool refused, const std::string& message) -> Status {
    const char* why = refused ? reason::kInvalidModel : reason::kModelCheckFailed;
    if (refused) pass.Set(condition::kInvalid, true, why, message);
    pass.Set(condition::kPlaced, false, why, message);
    pass.Set(condition::kFailed, true, why, message);
    pass.status["phase"] = phase::kFailed;
    pass.status["completionTime"] = pass.now;
    events_.Record(pass.object, "Warning", why, message);
    log_.Job(pass.key, why, message);
    return delete_check();
  };
  // Measured, and the size or the layers in the status: placed by them from here.
  if (layers ? CheckedLayersOf(pass.status, check).has_value() : CheckedSizeOf(pass.status, check).has_value()) {
    // A module timed whole under auto, its job since edited to a pipeline or
    // hybrid (the mode is not in the check's digest): as invalid as when
    // first timed, not a plan that never fits retried for ever (found in review).
    if (layers) {
      if (Status split = CheckSplitAllowed(pass.job.manifest.spec, CheckedLayersOf(pass.status, check)->layers);
          !split.ok()) {
        EDGETRAIN_RETURN_IF_ERROR(end_job(/*refused=*/true, split.message()));
        return false;
      }
    }
    EDGETRAIN_RETURN_IF_ERROR(delete_check());
    return true;
  }
  pass.status["phase"] = phase::kPending;
  // A check the job no longer asks for (it was edited): gone before this
  // one is made; its deletion wakes the job.
  if (pass.model_check && ModelCheckOf(*pass.model_check) != check) {
    EDGETRAIN_RETURN_IF_ERROR(delete_check());
    return false;
  }
  if (!pass.model_check) {
    EDGETRAIN_RETURN_IF_ERROR(CreateOwn(pass, kube::kPods, check_pod));
    pass.status.erase("modelCheck");  // another check's
    const std::string message =
        layers ? "an agent times each layer of the model in pod " + pod_name +
                     ", for the pipeline planner to cut them into stages once the team's nodes are chosen"
               : "an agent loads the module " + module + " in pod " + pod_name +
                     " to check it and measure its step before the team is placed";
    pass.Set(condition::kPlaced, false, checking, message);
    log_.Job(pass.key, checking, message);
    return false;
  }
  ModelCheck result = ReadModelCheck(*pass.model_check);
  // A module taken whole, timed for a pipeline or hybrid it cannot be split
  // into: as invalid as a module the agent refused (auto runs it whole).
  if (Status split = CheckSplitAllowed(pass.job.manifest.spec, result.layers);
      result.state == ModelCheckState::kMeasured && !split.ok()) {
    result.state = ModelCheckState::kRefused;
    result.message = split.message();
  }
  switch (result.state) {
    case ModelCheckState::kChecking:
      pass.Set(condition::kPlaced, false, checking,
               (layers ? "timing the model's layers: " : "checking the module " + module + ": ") + result.message);
      return false;
    case ModelCheckState::kMeasured: {
      if (layers) {
        if (result.layers.empty()) {  // a result of another kind: the check pod is not this job's
          EDGETRAIN_RETURN_IF_ERROR(delete_check());
          return false;
        }
        // Written first, placed on the next pass, as a module's size is.
        pass.status["modelCheck"] = LayersCheckStatus(check, result.layers, result.transport, result.node);
        // A module taken whole is one layer no plan cuts: said so, not "its 1
        // layers ... cut into stages" (a user's trial).
        const bool whole = result.layers.size() == 1 && !result.layers[0].cannot_cut.empty();
        const std::string on = result.node.empty() ? "" : " on " + result.node;
        const std::string message =
            whole ? "the module was timed whole" + on + ", as one layer (" + result.layers[0].cannot_cut +
                        "): the planner runs it whole once the team's nodes are chosen"
                  : "the model's " + std::to_string(result.layers.size()) + " layers were timed" + on +
                        ": the pipeline planner cuts them into stages once the team's nodes are chosen";
        pass.Set(condition::kPlaced, false, checking, message);
        events_.Record(pass.object, "Normal", reason::kLayersTimed, message);
        log_.Job(pass.key, reason::kLayersTimed, message);
        pass.Requeue(Duration::zero());
        return false;
      }
      // Written first, placed on the next pass, asked for now (a change of
      // its status alone wakes no reconcile): the waiting line costs the
      // job's turn from the status it reads, which must hold the size.
      pass.status["modelCheck"] = ModelCheckStatus(module, check, result.size);
      const std::string message = "the module " + module + " trains: " + std::to_string(result.size.parameters) +
                                  " parameters, as costly as " + std::to_string(result.size.multiply_adds) +
                                  " multiply-adds a sample";
      pass.Set(condition::kPlaced, false, reason::kCheckingModel, message);
      events_.Record(pass.object, "Normal", reason::kModelChecked, message);
      log_.Job(pass.key, reason::kModelChecked, message);
      pass.Requeue(Duration::zero());
      return false;
    }
    case ModelCheckState::kRefused:
    case ModelCheckState::kFailed:
      EDGETRAIN_RETURN_IF_ERROR(end_job(result.state == ModelCheckState::kRefused, result.message));
      return false;
  }
  return false;
}

Status Reconciler::TakeUp(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator) {
  // The plan's ConfigMap is there (it was read back); its Service and the
  // output claim's node may not be. Its missing pods are Follow's to make.
  EDGETRAIN_RETURN_IF_ERROR(CreateOwn(pass, kube::kServices, ServiceFor(pass.job)));
  EDGETRAIN_RETURN_IF_ERROR(ClaimOutputVolume(pass, coordinator.node));
  EDGETRAIN_RETURN_IF_ERROR(KeepTeamCredentials(pass, plan, /*making_pods=*/true));
  const std::string message = Describe(PlacementOf(plan, coordinator)) + " (taken up: plan generation " +
                              std::to_string(plan.generation) +
                              ", placed by a replica that stopped before it said so)";
  pass.Set(condition::kPlaced, true, reason::kPlaced, message);
  events_.Record(pass.object, "Normal", reason::kPlaced, message);
  log_.Job(pass.key, reason::kPlaced, message);
  pass.outcome.placement = "placed";
  return Follow(pass, plan, coordinator);
}

Status Reconciler::ApplyObjects(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator,
                                const std::vector<Json>& pods) {
  EDGETRAIN_RETURN_IF_ERROR(CreateOwn(pass, kube::kServices, ServiceFor(pass.job)));
  // The plan replaces an earlier generation's.
  EDGETRAIN_RETURN_IF_ERROR(WritePlanConfigMap(pass, PlanConfigMapFor(pass.job, plan, coordinator)));
  EDGETRAIN_RETURN_IF_ERROR(ClaimOutputVolume(pass, coordinator.node));
  EDGETRAIN_RETURN_IF_ERROR(KeepTeamCredentials(pass, plan, /*making_pods=*/true));
  for (const Json& pod : pods) EDGETRAIN_RETURN_IF_ERROR(CreateOwn(pass, kube::kPods, pod));
  return Status::Ok();
}

Status Reconciler::CreateOwn(Pass& pass, const kube::ResourceType& type, const Json& object) {
  const std::string name = object["metadata"]["name"];
  StatusOr<Json> made = client_.Create(type, pass.job.namespace_, object);
  if (made.ok()) return Status::Ok();
  if (made.status().code() != StatusCode::kAlreadyExists) {
    return made.status().WithContext("creating " + type.kind + " " + name);
  }
  // Made by an earlier pass, or left by an earlier job of the name: the
  // job's. Anything else's is left alone. Pods are read from the informer,
  // which holds every pod (the operator may not get one); one it does not
  // hold yet was made just now, by an earlier pass that the watch has not
  // caught up with: anyone else's was listed long before.
  Json found;
  if (type.plural == kube::kPods.plural) {
    std::optional<Json> cached = pods_.Get(pass.job.namespace_ + "/" + name);
    if (!cached) return Status::Ok();
    found = std::move(*cached);
  } else {
    StatusOr<Json> read = client_.Get(type, pass.job.namespace_, name);
    if (!read.ok()) return read.status().WithContext("reading " + type.kind + " " + name);
    found = std::move(*read);
  }
  if (JobMayWrite(found, pass.job.name)) return Status::Ok();
  return NameTaken(pass, type, found);
}

Status Reconciler::NameTaken(Pass& pass, const kube::ResourceType& type, const Json& found) {
  pass.name_taken = NameTakenMessage(type.kind, found, pass.job);
  return Status(StatusCode::kAlreadyExists, pass.name_taken);
}

void Reconciler::ReportQuarantines(Pass& pass) {
  const Json before = pass.object.value("/status/workers"_json_pointer, Json::array());
  for (const Json& worker : pass.status["workers"]) {
    if (!worker.contains("quarantined")) continue;
    const std::string name = worker.value("name", "");
    const bool said = std::any_of(before.begin(), before.end(), [&](const Json& w) {
      return w.value("name", "") == name && w.contains("quarantined");
    });
    if (said) continue;
    const std::string message = name + " on " + worker.value("node", "?") + " is quarantined (" +
                                worker["quarantined"].get<std::string>() + "): the team goes on without it";
    events_.Record(pass.object, "Warning", reason::kWorkerQuarantined, message);
    log_.Job(pass.key, reason::kWorkerQuarantined, message);
  }
}

Status Reconciler::KeepTeamCredentials(Pass& pass, const JobPlan& plan, bool making_pods) {
  if (plan.workers.empty()) return Status::Ok();  // a job of one talks to no one
  const kube::WallTime now = wall_now_();
  // A running team's Secrets are read only when its status says the
  // certificate is due; before pods are made, always.
  if (!making_pods && !CredentialsDue(pass.status, now)) return Status::Ok();
  EDGETRAIN_ASSIGN_OR_RETURN(CredentialsKept kept, KeepCredentials(client_, pass.job, now, options_.credentials,
                                                                    !pass.status.contains("credentials")));
  if (!kept.name_taken.empty()) {
    pass.name_taken = kept.name_taken;
    return Status(StatusCode::kAlreadyExists, pass.name_taken);
  }
  pass.status["credentials"] = kept.status;
  if (!kept.reason.empty()) {
    events_.Record(pass.object, "Normal", kept.reason, kept.message);
    log_.Job(pass.key, kept.reason, kept.message);
  }
  return Status::Ok();
}

std::optional<TeamRequest::Pin> Reconciler::OutputVolumeNode(const Pass& pass) {
  const std::optional<std::string> claimed = OutputClaimOf(pass.job);
  if (!claimed) return std::nullopt;
  const std::string& claim = *claimed;
  StatusOr<Json> pvc = client_.Get(kube::kPersistentVolumeClaims, pass.job.namespace_, claim);
  if (!pvc.ok()) return std::nullopt;
  const Json modes = pvc->value("/spec/accessModes"_json_pointer, Json::array());
  if (std::find(modes.begin(), modes.end(), "ReadWriteMany") != modes.end()) return std::nullopt;
  const std::string node =
      pvc->value("/metadata/annotations/volume.kubernetes.io~1selected-node"_json_pointer, std::string());
  if (node.empty()) return std::nullopt;
  return TeamRequest::Pin{node, "its output claim " + claim + "'s volume is there"};
}

Status Reconciler::SayWhatTheOutputClaimLacks(Pass& pass, const CoordinatorSeat& coordinator, Gang& gang) {
  const std::optional<std::string> claim = OutputClaimOf(pass.job);
  if (!claim) return Status::Ok();
  const std::string pod = CoordinatorPodName(pass.job.name, coordinator.since_generation);
  const Json* made = PodNamed(pass.pods, pod);
  if (!made || made->value("/status/phase"_json_pointer, std::string()) == "Running") return Status::Ok();
  StatusOr<Json> pvc = client_.Get(kube::kPersistentVolumeClaims, pass.job.namespace_, *claim);
  if (!pvc.ok() && pvc.status().code() == StatusCode::kNotFound) {
    gang.held.push_back(pod + ": " + MissingClaimWords(*claim, pass.job.namespace_));
  } else if (pvc.ok() && pvc->value("/status/phase"_json_pointer, std::string()) != "Bound") {
    // Made after the pods were (as the message above asks): named the
    // coordinator's node now, as at placement, or a local-path claim
    // waits for a scheduler that never sees the bound pod, for good.
    EDGETRAIN_RETURN_IF_ERROR(ClaimOutputVolume(pass, coordinator.node));
    gang.held.push_back(pod + ": its output claim " + *claim + " is not bound yet");
  }
  return Status::Ok();
}

// A claim of a WaitForFirstConsumer class (K3s's local-path) is provisioned on
// the node its first scheduled pod lands on. The operator's pods are bound, not
// scheduled, so it names the coordinator's node as the scheduler would.
Status Reconciler::ClaimOutputVolume(Pass& pass, const std::string& node) {
  const std::optional<std::string> claimed = OutputClaimOf(pass.job);
  if (!claimed) return Status::Ok();
  const std::string& claim = *claimed;
  StatusOr<Json> pvc = client_.Get(kube::kPersistentVolumeClaims, pass.job.namespace_, claim);
  if (!pvc.ok()) {
    // The pod waits for its claim (ContainerCreating) until it appears, or
    // the gang times out. Said as a Warning: a missing claim was in the
    // operator's log alone, the job "2/3 pods running" (a new user's trial).
    const std::string message = pvc.status().code() == StatusCode::kNotFound
                                    ? MissingClaimWords(claim, pass.job.namespace_)
                                    : "claim " + claim + ": " + pvc.status().message();
    events_.Record(pass.object, "Warning", reason::kOutputClaimMissing, message);
    log_.Job(pass.key, reason::kOutputClaimMissing, message);
    return Status::Ok();
  }
  if (pvc->value("/status/phase"_json_pointer, std::string()) == "Bound" ||
      pvc->contains("/metadata/annotations/volume.kubernetes.io~1selected-node"_json_pointer)) {
    return Status::Ok();
  }
  StatusOr<Json> patched = client_.MergePatch(kube::kPersistentVolumeClaims, pass.job.namespace_, claim,
                                              {{"metadata", {{"annotations", {{"volume.kubernetes.io/selected-node", node}}}}}});
  return patched.ok() ? Status::Ok() : patched.status();
}

StatusOr<std::optional<Json>> Reconciler::JobAtTheServer(const Pass& pass) {
  kube::ListOptions one;  // a list of the one name: what the roles grant
  one.field_selector = "metadata.name=" + pass.object["metadata"].value("name", std::string());
  EDGETRAIN_ASSIGN_OR_RETURN(Json fresh, client_.List(kube::kTrainingJobs,
                                                      pass.object["metadata"].value("namespace", "default"), one));
  if (!fresh.contains("items") || fresh["items"].empty()) return std::optional<Json>();
  Json current = fresh["items"][0];
  current["kind"] = kube::kTrainingJobs.kind;  // a list's items carry neither
  current["apiVersion"] = kube::kTrainingJobs.ApiVersion();
  return std::optional<Json>(std::move(current));
}

bool Reconciler::DeletedAtTheServer(const Pass& pass) {
  StatusOr<std::optional<Json>> current = JobAtTheServer(pass);
  if (!current.ok()) return false;  // unknown: acted on as the cache says
  // Gone, going, or another job of its name made since.
  return !*current || (**current)["metadata"].contains("deletionTimestamp") ||
         (**current)["metadata"].value("uid", "") != pass.object["metadata"].value("uid", "");
}

Status Reconciler::Follow(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator) {
  // A job deleted mid-run: the garbage collector deletes its pods and Secrets
  // once it is gone, and the pods' watch can bring that before the jobs'
  // watch brings the deletion, the cache still holding the job. Followed
  // then, its credentials were issued again and a worker whose pod was going
  // replaced (a WorkerLost event, a recovery counted: a new user's trial, 1
  // delete in 10). A pod going is rare: the server is asked whether the job
  // is.
  const bool pod_going = std::any_of(pass.pods.begin(), pass.pods.end(), [](const Json& pod) {
    return pod.at("metadata").contains("deletionTimestamp");
  });
  if (pod_going && DeletedAtTheServer(pass)) return Status::Ok();
  // Its agents' certificate renewed under them once due.
  EDGETRAIN_RETURN_IF_ERROR(KeepTeamCredentials(pass, plan, /*making_pods=*/false));
  // The team's nodes as declared (the waiting line keeps them parsed, once a
  // change): whether one is leaving, ready, and the link placement planned on.
  std::map<std::string, NodeView> team_nodes;
  {
    std::vector<std::string> wanted;
    for (const WorkerSlot& slot : plan.workers) wanted.push_back(slot.node);
    for (const Json& pod : pass.pods) wanted.push_back(pod.value("/spec/nodeName"_json_pointer, std::string()));
    for (NodeView& view : line_.Views(wanted, MeasuredLinks{})) team_nodes.emplace(view.name, std::move(view));
  }
  auto team_node = [&](const std::string& name) -> const NodeView* {
    auto it = team_nodes.find(name);
    return it == team_nodes.end() ? nullptr : &it->second;
  };
  // A pipeline's devices lost so far whose pods failed or went are out of
  // the gang: what is left of their pods goes as stale. One the head let go
  // of while its pod runs on (its agent restarted in place, its link cut)
  // keeps its pod: it rejoins its stage if it comes back. So does one lost
  // with its node (not ready when its pod went), once the node is back
  // (ready, not cordoned, not leaving): its pod is made again there, once,
  // and the device rejoins.
  const std::set<int> lost_stages = plan.pipeline ? LostRanksOf(pass.status) : std::set<int>{};
  std::set<int> awaiting = plan.pipeline ? RanksAt(pass.status, "/pipeline/awaitingNodes") : std::set<int>{};
  std::set<int> gone;
  std::vector<std::string> returning;
  for (int rank : lost_stages) {
    if (rank < 0 || rank >= static_cast<int>(plan.workers.size())) continue;
    const int64_t since = SlotSince(plan, rank);
    const Json* pod = PodNamed(pass.pods, WorkerPodName(pass.job.name, rank, since));
    if (pod && LossOf(pod, since, plan.generation).empty()) continue;
    const NodeView* node = team_node(plan.workers[rank].node);
    if (pod && (!node || !node->ready) && !awaiting.count(rank)) {  // going with its node
      awaiting.insert(rank);
      pass.status["pipeline"]["awaitingNodes"] = Json(std::vector<int>(awaiting.begin(), awaiting.end()));
    }
    if (!pod && awaiting.count(rank) && node && node->ready && !node->cordoned && node->leaving.empty()) {
      returning.push_back("stage device " + std::to_string(rank) + " on " + node->name);
      awaiting.erase(rank);
      pass.status["pipeline"]["awaitingNodes"] = Json(std::vector<int>(awaiting.begin(), awaiting.end()));
      continue;
    }
    gone.insert(rank);
  }
  const std::vector<std::string> names = PodNamesOf(pass.job, plan, coordinator, gone);
  GangRules rules;
  rules.max_restarts = pass.job.manifest.spec.fault_tolerance.max_recoveries;
  rules.restart_cannot_mend = plan.pipeline ? StageLeftWithoutDevices(*plan.pipeline, gone) : "";
  Gang gang = ObserveGang(pass.pods, names, rules);
  EDGETRAIN_RETURN_IF_ERROR(DeletePods(pass, gang.stale));
  if (gang.state == GangState::kStarting) EDGETRAIN_RETURN_IF_ERROR(SayWhatTheOutputClaimLacks(pass, coordinator, gang));
  for (const std::string& device : returning) {
    const std::string message = device + ": its node is back, and its pod is made again there to rejoin a stage";
    events_.Record(pass.object, "Normal", reason::kStageDeviceReturning, message);
    log_.Job(pass.key, reason::kStageDeviceReturning, message);
  }

  // A team that has run loses its coordinator's node, or is warned it will:
  // the coordinator is placed anew, the workers stay (docs/operator.md,
  // "Recovery"). Its pod failing is its node's doing (an eviction, a node
  // that refused it): the agent's own failures restart it in place. A
  // pipeline's head likewise: the new head trains on from the state its
  // stages hold (docs/pipeline.md, "A head that starts behind").
  const bool has_run = pass.status.contains("startTime");
  if (has_run && gang.state != GangState::kSucceeded && !plan.workers.empty() && !HasOutputVolume(pass.job)) {
    const Json* pod = PodNamed(pass.pods, CoordinatorPodName(pass.job.name, coordinator.since_generation));
    const NodeView* node = team_node(coordinator.node);
    // Failed by its node, or going; a pod merely gone (deleted by someone) is
    // made again on its node while that node is ready.
    std::string loss = pod ? LossOf(pod, coordinator.since_generation, plan.generation) : "";
    if (!pod && (!node || !node->ready)) loss = "its pod is gone, and its node " + coordinator.node + " with it";
    // The cause said first, as of a worker ("its pod is being deleted" of a
    // killed node read as if someone had deleted it: a new user's trial).
    if (!loss.empty() && pod && node && !node->ready) loss = "its node " + coordinator.node + " is lost; " + loss;
    if (!loss.empty() && LeavingsOwnDoing(pod, node)) {
      return MoveCoordinator(pass, plan, coordinator,
                             loss + "; its node " + coordinator.node + " is leaving (" + node->leaving + ")",
                             /*moving=*/true);
    }
    if (!loss.empty()) return MoveCoordinator(pass, plan, coordinator, loss, /*moving=*/false);
    if (node && !node->leaving.empty()) {
      return MoveCoordinator(pass, plan, coordinator,
                             "its node " + coordinator.node + " is leaving (" + node->leaving + ")", /*moving=*/true);
    }
  }

  // A pipeline's head lost with its node, its output on a claim that does
  // not follow it to another node: the job fails, saying so, rather than
  // wait for a node that may not come back. (Its agent's own failures
  // restart it in its pod.)
  if (plan.pipeline && HasOutputVolume(pass.job) && has_run && gang.state != GangState::kSucceeded &&
      gang.state != GangState::kFailed) {
    const Json* pod = PodNamed(pass.pods, CoordinatorPodName(pass.job.name, coordinator.since_generation));
    const NodeView* node = team_node(coordinator.node);
    std::string loss = pod ? LossOf(pod, coordinator.since_generation, plan.generation) : "";
    if (!pod && (!node || !node->ready)) loss = "its pod is gone, and its node " + coordinator.node + " with it";
    if (!loss.empty()) {
      EndFailed(pass, reason::kCoordinatorLost,
                "the pipeline's head: " + loss + "; its output is on a claim (spec.output.volume), which does not "
                "follow it to another node, so the job ends here");
      return CleanPods(pass);
    }
  }

  // A pipeline that has run loses a device: its head replays the step
  // without it, or rebuilds its stage from a replica; it is not replaced
  // (docs/pipeline.md, "Replay").
  if (plan.pipeline && has_run && gang.state != GangState::kSucceeded && gang.state != GangState::kFailed) {
    std::map<int, std::string> lost;
    // The pods the status last saw running.
    const Json seen = pass.stored_status.value("workers", Json::array());
    for (const WorkerSlot& slot : plan.workers) {
      if (!HasPod(plan, slot.rank, lost_stages)) continue;
      const int64_t since = SlotSince(plan, slot.rank);
      const std::string name = WorkerPodName(pass.job.name, slot.rank, since);
      const Json* pod = PodNamed(pass.pods, name);
      // One gone that the status saw running was deleted; one it never saw
      // (just made: after a suspension the job has run before) is not yet in
      // the cache.
      const bool ran = seen.is_array() && std::any_of(seen.begin(), seen.end(), [&](const Json& w) {
                         return w.is_object() && w.value("name", "") == name;
                       });
      const std::string loss = pod ? LossOf(pod, since, plan.generation) : ran ? "its pod is gone" : "";
      if (loss.empty()) continue;
      lost[slot.rank] = loss;
      // Its node gone silent with it: its pod is made again when it is back.
      const NodeView* node = team_node(slot.node);
      if (!node || !node->ready) awaiting.insert(slot.rank);
    }
    if (!lost.empty()) {
      pass.status["pipeline"]["awaitingNodes"] = Json(std::vector<int>(awaiting.begin(), awaiting.end()));
      return LoseStageDevices(pass, plan, lost, /*pods_gone=*/true);
    }
  }

  // A team that has run loses a worker: only that worker is replaced, and the
  // running coordinator adopts the new plan (docs/operator.md, "Recovery").
  if (!plan.pipeline && has_run && gang.state != GangState::kSucceeded && gang.state != GangState::kFailed) {
    std::map<int, std::string> lost;
    std::set<int> moves;
    for (const WorkerSlot& slot : plan.workers) {
      const int64_t since = SlotSince(plan, slot.rank);
      const Json* pod = PodNamed(pass.pods, WorkerPodName(pass.job.name, slot.rank, since));
      std::string loss = LossOf(pod, since, plan.generation);
      const NodeView* node = team_node(slot.node);
      // Its pod gone with its Node object (deleted, the pod garbage-collected
      // after it): made again, it was bound to a node that no longer exists,
      // collected again, and so on every second (a new user's trial).
      if (loss.empty() && !pod && !node) loss = "its pod is gone, and its node " + slot.node + " with it";
      if (!loss.empty()) {
        // Said first when it is the cause: "its pod is being deleted" of a
        // killed node read as if someone had deleted it (a new user's trial).
        lost[slot.rank] = (node && !node->ready ? "its node " + slot.node + " is lost; " : std::string()) + loss;
        if (LeavingsOwnDoing(pod, node)) {
          lost[slot.rank] += "; its node " + slot.node + " is leaving (" + node->leaving + ")";
          moves.insert(slot.rank);
        }
        continue;
      }
      // Warned: the worker moves before its node goes, which costs a rejoin
      // instead of the work since its last push and nodeLossGrace of waiting.
      if (node && !node->leaving.empty()) {
        lost[slot.rank] = "its node " + slot.node + " is leaving (" + node->leaving + ")";
        moves.insert(slot.rank);
      }
    }
    if (!lost.empty()) return Recover(pass, plan, coordinator, lost, moves);
  }

  switch (gang.state) {
    case GangState::kSucceeded: {
      const Json result = gang.result.value_or(Json::object());
      const std::string stop = result.value("stopReason", "");
      const bool target = result.value("reachedTarget", false);
      const char* why = target ? reason::kTargetReached : stop.empty() ? reason::kEnded : reason::kBudgetSpent;
      std::string message = target         ? "reached its target accuracy"
                            : stop.empty() ? "the coordinator ended well (exit 0) but reported no result"
                                           : "ended at its budget (" + stop + ")";
      if (result.contains("accuracy") && result["accuracy"].is_number()) {
        char text[64];
        std::snprintf(text, sizeof text, ": test accuracy %.4f", result["accuracy"].get<double>());
        message += text;
      }
      pass.status["phase"] = phase::kSucceeded;
      pass.status["completionTime"] = gang.ended_at.empty() ? pass.now : gang.ended_at;
      pass.Set(condition::kComplete, true, why, message);
      pass.Set(condition::kRunning, false, reason::kStopped, "the job has ended");
      SettleLinkConditions(pass, reason::kStopped, "the job has ended");
      if (!result.empty()) {
        pass.status["progress"] = ProgressStatusOf(result);
        // Each worker's figures as the result gives them, which the job's
        // totals are of: the last /progress read left them seconds behind
        // (a team's samples summed to 1,307,392 under a total of 1,353,600;
        // a job of 3 s had none; a new user's trial). A result too long
        // for a termination message leaves its workers out: then as read.
        if (result.contains("workers") && result["workers"].is_array() && !result["workers"].empty()) {
          Json workers = WorkersStatusOf(GangPods(pass.pods, names), result);
          KeepWhatWasRead(workers, pass.stored_status.value("workers", Json::array()));
          pass.status["workers"] = std::move(workers);
        }
        Json model = Json::object();
        if (result.contains("modelPath") && !result["modelPath"].get<std::string>().empty()) {
          model["path"] = result["modelPath"];
        }
        if (result.contains("iteration")) model["iteration"] = result["iteration"];
        if (result.contains("accuracy") && result["accuracy"].is_number()) model["accuracy"] = result["accuracy"];
        pass.status["model"] = model;
      }
      events_.Record(pass.object, "Normal", why, message);
      log_.Job(pass.key, why, message);
      return CleanPods(pass);
    }
    case GangState::kFailed: {
      EndFailed(pass, gang.failure_reason.c_str(), gang.failure);
      return CleanPods(pass);
    }
    case GangState::kAbsent:
    case GangState::kStarting: {
      // Back from a suspension, placed anew, its pods start again: no member
      // was lost, and the time it was suspended is no recovery's. (A team
      // that has run is placed anew only then, or after such a placement's
      // gang timed out: a loss keeps its plan.) Its gang times out as a new
      // job's does; a resumed job whose pods could not start (its claim
      // gone) had held its nodes for good (a new user's trial).
      const Json* running = FindCondition(pass.status, condition::kRunning);
      const std::string was = running ? running->value("reason", "") : "";
      const bool resuming = has_run && (was == reason::kSuspended || was == reason::kResuming ||
                                        was == reason::kStarting || was == reason::kGangTimeout);
      if (has_run && !resuming) {  // a replacement is starting; the team trains on without it
        EDGETRAIN_RETURN_IF_ERROR(CreateMissing(pass, plan, coordinator, gang));
        pass.status["phase"] = phase::kRecovering;
        // What was lost stays said, with how far its replacement is: it
        // became "2/3 pods running" a moment after the loss (a new user's trial).
        std::string message = StartingMessage(gang);
        // A move ahead of a warning stays said as one while its pods start:
        // "Recovering" of a cordoned node's worker read as a loss (a new
        // user's trial), though no recovery is counted.
        const char* why = was == reason::kWorkerMoved      ? reason::kWorkerMoved
                          : was == reason::kCoordinatorMoved ? reason::kCoordinatorMoved
                                                             : reason::kRecovering;
        if (running && (was == reason::kRecovering || why != reason::kRecovering)) {
          const std::string before = running->value("message", "");
          const std::string lost = before.substr(0, before.find("; now "));
          // Only what a loss said (Replanned's, AwaitRoom's), never a count of pods.
          if (!lost.empty() && lost.find(" pods running") == std::string::npos) {
            message = FirstWordsAndNow(before, "; now ", message);
          }
        }
        pass.Set(condition::kRunning, false, why, message);
        // The team trains on meanwhile: its figures stood still for the 22 s
        // a replacement took to start (a new user's trial).
        (void)ReadProgress(pass, gang);
        pass.Requeue(options_.status_interval);
        return Status::Ok();
      }
      const Duration timeout = GangTimeoutOf(pass.job);
      const Duration waited = SinceTransition(pass.status, condition::kPlaced).value_or(Duration::zero());
      if (waited >= timeout) {
        EDGETRAIN_RETURN_IF_ERROR(DeleteAllPods(pass));
        const int64_t timeouts = pass.status.value("gangTimeouts", int64_t{0}) + 1;
        pass.status["gangTimeouts"] = timeouts;
        // Why the others waited, in the kubelet's words: the event said only
        // "0/4 pods running" of an image that could not be pulled.
        const std::string message = StartingMessage(gang) + " after spec.placement.gangTimeout (" +
                                    FormatDuration(timeout) + "): torn down, holding nothing, to be placed again in " +
                                    FormatDuration(GangBackOff(timeout, timeouts)) + " (timed out " +
                                    std::to_string(timeouts) + (timeouts == 1 ? " time" : " times in a row") + ")";
        pass.status["phase"] = phase::kPending;
        pass.Set(condition::kPlaced, false, reason::kGangTimeout, message);
        pass.Set(condition::kRunning, false, reason::kGangTimeout, message);
        events_.Record(pass.object, "Warning", reason::kGangTimeout, message);
        log_.Job(pass.key, reason::kGangTimeout, message);
        pass.Requeue(std::chrono::seconds(1));
        return Status::Ok();
      }
      // A pod of the plan deleted by someone is made again, on its node.
      EDGETRAIN_RETURN_IF_ERROR(CreateMissing(pass, plan, coordinator, gang));
      pass.status["phase"] = phase::kPlacing;
      pass.Set(condition::kRunning, false, resuming ? reason::kResuming : reason::kStarting, StartingMessage(gang));
      // Any change of its pods wakes it, so it need not poll: looking at 1,000
      // placed jobs every status interval kept a 5,000-node site's operator
      // busy enough to slow the placing of the rest several times over.
      pass.Requeue(timeout - waited);
      return Status::Ok();
    }
    case GangState::kRunning: {
      if (pass.Phase() != phase::kRunning) {
        std::string message = gang.expected == 1   ? std::string("its pod runs")
                              : gang.expected == 2 ? std::string("both pods of the gang run")
                                                   : "all " + std::to_string(gang.expected) + " pods of the gang run";
        // Since the Running condition turned False: the loss, or the move, was
        // seen. Without that time (a status written by hand) nothing is said.
        if (pass.Phase() == phase::kRecovering) {
          if (auto took = SinceTransition(pass.stored_status, condition::kRunning)) {
            pass.outcome.recovered_after = took;
            message += " again, " + FormatDuration(*took) + " after the team stopped being whole";
          }
        }
        events_.Record(pass.object, "Normal", reason::kTraining, message);
        log_.Job(pass.key, reason::kTraining, message);
      }
      pass.status["phase"] = phase::kRunning;
      pass.status.erase("gangTimeouts");  // its back-off starts over
      if (!pass.status.contains("startTime")) pass.status["startTime"] = pass.now;
      if (gang.restarting.empty()) {
        pass.Set(condition::kRunning, true, reason::kTraining, "every agent runs");
      } else {
        // Its pod runs, its agent does not: shown as training while the
        // coordinator was in CrashLoopBackOff (a new user's trial).
        std::string message = "restarting in place: " + gang.restarting.front();
        for (size_t i = 1; i < gang.restarting.size(); ++i) message += "; " + gang.restarting[i];
        pass.Set(condition::kRunning, false, reason::kRestarting, message);
      }
      std::string unread;  // why /progress did not answer
      // Asked even on a node not ready: at the edge a node whose kubelet has
      // lost the API server may still train and answer (found in review).
      const Json progress = ReadProgress(pass, gang, &unread);
      // Every pod runs, but the coordinator has not started the team: its
      // workers are not all in (nodeLossGrace after the first). Shown as
      // Training, a team whose workers could not reach the coordinator
      // trained nothing for 52 s unsaid (a security review).
      const bool team_waiting = progress.value("state", "") == "starting";
      // Nothing read yet of a job that never said how it goes (the
      // coordinator not serving yet): not Training either, which it read
      // for a moment before WaitingForTeam, then Training (a new user's
      // trial).
      const bool never_read = progress.empty() && !pass.stored_status.contains("progress");
      if (gang.restarting.empty() && (team_waiting || never_read) && !plan.workers.empty()) {
        pass.Set(condition::kRunning, true, reason::kWaitingForTeam,
                 team_waiting ? "every agent runs; the coordinator waits for its workers to connect before the team "
                                "starts (up to spec.faultTolerance.nodeLossGrace after the first; a worker that cannot "
                                "reach it says why in its log)"
                              : "every agent runs; the coordinator has not said yet that its team has started");
      }
      // The gang's pods: not a replaced worker's old pod, still Terminating on
      // a node gone silent, which would be listed with its replacement's
      // figures and keep BandwidthDegraded on for a node the team has left.
      const std::vector<Json> gang_pods = GangPods(pass.pods, names);
      Json workers = WorkersStatusOf(gang_pods, progress, kube::ParseKubeTime(pass.now), options_.links.link_down_after);
      // No progress read (the coordinator ending, a slow answer): each pod
      // keeps what was last read of it. The job's last status lost every
      // worker's batch, samples and stall as it ended (a new user's trial).
      if (progress.empty()) KeepWhatWasRead(workers, pass.stored_status.value("workers", Json::array()));
      pass.status["workers"] = std::move(workers);
      ReportQuarantines(pass);
      if (plan.pipeline && progress.contains("workers") && progress["workers"].is_array() &&
          !progress["workers"].empty()) {
        // The head lists the devices it trains with, with their layers, and
        // the others of its plan as not active with none: one it let go of
        // (silent past its deadline, its stream broken) while its pod runs on
        // is lost. (One not connected with layers is still in its stage,
        // until the head's next step lets it go.)
        std::set<int> in_stages, active;
        for (const Json& w : progress["workers"]) {
          const bool on = w.value("active", true);
          if (on || w.contains("layers")) in_stages.insert(w.value("rank", -1));
          if (on) active.insert(w.value("rank", -1));
        }
        std::map<int, std::string> let_go;
        for (const WorkerSlot& slot : plan.workers) {
          if (HasPod(plan, slot.rank, lost_stages) && !in_stages.count(slot.rank)) {
            let_go[slot.rank] = "the head let it go (silent past its deadline, or its stream broke)";
          }
        }
        if (!let_go.empty()) return LoseStageDevices(pass, plan, let_go, /*pods_gone=*/false);
        // And one it lists again, connected, whose pod runs, is back: it
        // rejoined a stage between steps. (A device lost between steps is
        // listed, not connected, until the head's next step lets it go.)
        std::set<int> still = lost_stages;
        for (int rank : lost_stages) {
          if (!active.count(rank) || gone.count(rank)) continue;
          still.erase(rank);
          const std::string message = "stage device " + std::to_string(rank) + " on " + plan.workers[rank].node +
                                      " is back: it rejoined a stage between steps";
          events_.Record(pass.object, "Normal", reason::kStageDeviceRejoined, message);
          log_.Job(pass.key, reason::kStageDeviceRejoined, message);
        }
        if (still.size() != lost_stages.size()) {
          pass.status["pipeline"]["lostRanks"] = Json(std::vector<int>(still.begin(), still.end()));
        }
      }
      if (plan.pipeline) ReportReplays(pass, progress);
      PublishMeasuredLinks(pass, plan, coordinator.node, progress);
      // What placement expected of each link, to tell a fade from a weak link.
      std::vector<double> planned(plan.workers.size(), 0);
      for (const WorkerSlot& slot : plan.workers) {
        const NodeView* node = team_node(slot.node);
        if (node && node->link_mbps && slot.rank >= 0 && slot.rank < static_cast<int>(planned.size())) {
          planned[slot.rank] = *node->link_mbps;
        }
      }
      // Unanswered, /progress says nothing of the team: the conditions stay
      // as last read, and past --stalled-after the team is not known to
      // step. They said every link was healthy while the coordinator's node
      // was dead, its figures 47 s old (a new user's trial).
      const std::optional<kube::WallTime> read_at =
          progress.empty()
              ? kube::ParseKubeTime(pass.stored_status.value("/progress/readTime"_json_pointer, std::string()))
              : std::nullopt;
      const bool unanswered = read_at.has_value();  // it answered before, not now
      // The first read it did not answer: a coordinator lost since is lost
      // from its last answer (LossEvidence), not from its node's NotReady.
      if (unanswered && !pass.stored_status.contains("/progress/unreadSince"_json_pointer)) {
        pass.status["progress"]["unreadSince"] = pass.now;
      }
      if (unanswered && gang.restarting.empty()) {
        // Its pods run, but its coordinator said nothing this time: not
        // "every agent runs", which the status said for the seconds between
        // its node's death and the node's NotReady (a user's trial). A
        // coordinator placed since the last read has not answered yet.
        const Json* pod = PodNamed(pass.pods, CoordinatorPodName(pass.job.name, coordinator.since_generation));
        const std::optional<kube::WallTime> made =
            pod ? kube::ParseKubeTime(pod->value("/metadata/creationTimestamp"_json_pointer, std::string()))
                : std::nullopt;
        const std::string read_time = pass.stored_status.value("/progress/readTime"_json_pointer, std::string());
        const std::string why = unread.empty() ? "no address" : unread;
        if (made && *made > *read_at && !plan.workers.empty()) {
          pass.Set(condition::kRunning, true, reason::kWaitingForTeam,
                   "every pod runs; the coordinator, placed anew, has not answered yet (" + why + ")");
        } else {
          pass.Set(condition::kRunning, true, reason::kTraining,
                   "every pod runs; the coordinator's /progress has not answered since " + read_time + " (" + why +
                       "): status.progress is as read then");
        }
      }
      if (unanswered) {
        const std::optional<kube::WallTime> now = kube::ParseKubeTime(pass.now);
        // Silent since the last read, or since its pod was made if later: a
        // coordinator of a job resumed after a minute suspended, or placed
        // anew, was called stalled for that minute before it could answer
        // (a new user's trial: "has not answered for 53 s").
        std::optional<kube::WallTime> since = read_at;
        if (const Json* pod = PodNamed(pass.pods, CoordinatorPodName(pass.job.name, coordinator.since_generation))) {
          const std::optional<kube::WallTime> made =
              kube::ParseKubeTime(pod->value("/metadata/creationTimestamp"_json_pointer, std::string()));
          if (made && *made > *since) since = made;
        }
        if (now && *now - *since >= options_.links.stalled_after) {
          const auto silent = std::chrono::duration_cast<std::chrono::seconds>(*now - *since);
          pass.Set(condition::kStalled, true, reason::kProgressUnreadable,
                   "the coordinator's /progress has not answered for " + std::to_string(silent.count()) + " s (" +
                       (unread.empty() ? "no address" : unread) + "); status.progress is as read at " +
                       pass.stored_status.value("/progress/readTime"_json_pointer, std::string()));
        }
      }
      std::map<int, double> pod_age_s;
      if (const std::optional<kube::WallTime> now = kube::ParseKubeTime(pass.now)) {
        for (const Json& pod : gang_pods) {
          const std::string rank = pod.value("/metadata/labels"_json_pointer, Json::object()).value(kRankLabel, "");
          const std::optional<kube::WallTime> made =
              kube::ParseKubeTime(pod.value("/metadata/creationTimestamp"_json_pointer, std::string()));
          if (rank.empty() || !made) continue;
          pod_age_s[std::atoi(rank.c_str())] = std::max(0.0, ToSeconds(*now - *made));
        }
      }
      const LinkHealth health = LinkHealthOf(progress, planned, options_.links, pod_age_s);
      // Before the team starts its workers' links are not known either: they
      // read LinksHealthy for 2.5 minutes while no worker could reach the
      // coordinator (a security review). Said once the team trains.
      const bool judged = !unanswered && !team_waiting;
      if (judged) {
        pass.Set(condition::kStalled, health.stalled, health.stalled ? reason::kWaitingOnLinks : reason::kLinksHealthy,
                 health.stall_message);
      }
      // A node gone silent is first a fading link: its pods tolerate it for
      // nodeLossGrace, and the team's deadline leaves its worker out meanwhile.
      // Each node named once, with its pods (it was named again for each).
      std::map<std::string, std::vector<std::string>> waited_out;
      for (const Json& pod : gang_pods) {
        const std::string node = pod.value("/spec/nodeName"_json_pointer, std::string());
        const NodeView* view = team_node(node);
        if (view && !view->ready) waited_out[node].push_back(pod["metadata"]["name"].get<std::string>());
      }
      std::string silent;
      for (const auto& [node, pods] : waited_out) {
        std::string names;
        for (size_t i = 0; i < pods.size(); ++i) {
          names += (i == 0 ? "" : i + 1 == pods.size() ? " and " : ", ") + pods[i];
        }
        silent += (silent.empty() ? "" : "; ") + std::string("node ") + node + " is not ready: " + names +
                  (pods.size() == 1 ? " is" : " are") + " waited out for nodeLossGrace (" +
                  FormatDuration(pass.job.manifest.spec.fault_tolerance.node_loss_grace) + ")";
      }
      const Json* degraded = FindCondition(pass.stored_status, condition::kBandwidthDegraded);
      if (!silent.empty()) {
        pass.Set(condition::kBandwidthDegraded, true, reason::kNodeNotReady, silent);
      } else if (judged) {
        pass.Set(condition::kBandwidthDegraded, health.degraded,
                 health.degraded ? health.degraded_reason : reason::kLinksHealthy, health.degraded_message);
      } else if (degraded && degraded->value("reason", "") == reason::kNodeNotReady) {
        // Its pods on the silent node replaced (the coordinator placed anew,
        // its team not started yet): the job said for seconds that it waited
        // out pods it no longer had (a user's trial).
        pass.Set(condition::kBandwidthDegraded, false, reason::kNodesReady,
                 "every node of the team is ready; its links are judged once it trains");
      }
      pass.Requeue(options_.status_interval);
      return Status::Ok();
    }
  }
  return Status::Ok();
}

Json Reconciler::ReadProgress(Pass& pass, const Gang& gang, std::string* unread) {
  if (gang.coordinator_ip.empty()) return Json::object();
  StatusOr<Json> read = progress_.Progress(gang.coordinator_ip, kHttpPort);
  if (!read.ok()) {
    if (unread) *unread = read.status().message();
    return Json::object();
  }
  pass.status["progress"] = ProgressStatusOf(*read);
  pass.status["progress"]["readTime"] = pass.now;  // its figures are as of then, should it stop answering
  return std::move(*read);
}

Status Reconciler::LoseStageDevices(Pass& pass, const JobPlan& plan, const std::map<int, std::string>& lost,
                                    bool pods_gone) {
  std::set<int> all = LostRanksOf(pass.status);
  for (const auto& [rank, why] : lost) all.insert(rank);
  // Whether any device of the plan is left for the head to train on.
  bool any_left = false;
  for (const PipelineStagePlan& stage : plan.pipeline->stages) {
    for (int r : stage.ranks) any_left = any_left || !all.count(r);
  }
  std::vector<std::string> doomed;
  for (const auto& [rank, why] : lost) {
    const std::string node = rank < static_cast<int>(plan.workers.size()) ? plan.workers[rank].node : "?";
    // Lost with its node, its pod is made again there once the node is
    // back, evicted or not: "its pod stays" and "it is not replaced" were
    // both said of a device whose node was killed (a new user's trial).
    const std::vector<NodeView> views = line_.Views({node}, MeasuredLinks{});
    const bool node_lost = views.empty() || !views.front().ready;
    const std::string message =
        "stage device " + std::to_string(rank) + " on " + node + ": " + why +
        (any_left ? "; the head trains on without it (its step replayed, or its stage rebuilt from a replica)"
                  : "; no device of the pipeline is left, and the head cannot train on without it") +
        (node_lost   ? "; its node is not ready: its pod is made again there once it is back, and it rejoins a stage"
         : pods_gone ? ", and it is not replaced"
                     : "; its pod stays, and it rejoins a stage if it comes back");
    events_.Record(pass.object, "Warning", reason::kStageDeviceLost, message);
    log_.Job(pass.key, reason::kStageDeviceLost, message);
    // A failed pod holds its node for nothing.
    const Json* pod = PodNamed(pass.pods, WorkerPodName(pass.job.name, rank, SlotSince(plan, rank)));
    if (pods_gone && pod && !pod->at("metadata").contains("deletionTimestamp")) {
      doomed.push_back((*pod)["metadata"]["name"]);
    }
  }
  EDGETRAIN_RETURN_IF_ERROR(DeletePods(pass, doomed));
  pass.status["pipeline"]["lostRanks"] = Json(std::vector<int>(all.begin(), all.end()));
  // Looked at again soon: the gang without them, and the head's replays.
  pass.Requeue(std::chrono::seconds(1));
  return Status::Ok();
}

void Reconciler::ReportReplays(Pass& pass, const Json& progress) {
  const Json replays = progress.value("replays", Json());
  if (!replays.is_object()) return;
  auto count = [](const Json& r, const char* key) { return r.is_object() ? r.value(key, int64_t{0}) : int64_t{0}; };
  const Json before = pass.stored_status.value("/pipeline/replays"_json_pointer, Json());
  const int64_t steps = count(replays, "count"), restored = count(replays, "restoredStages");
  const bool fresh = steps > count(before, "count") || restored > count(before, "restoredStages") ||
                     count(replays, "covered") > count(before, "covered");
  Json kept = Json::object();
  for (const char* key :
       {"count", "microBatches", "restoredStages", "stepsLost", "repartitions", "rejoined", "covered", "coveredShares",
        "rerunShares"}) {
    kept[key] = count(replays, key);
  }
  kept["recoverySeconds"] = replays.value("recoverySeconds", 0.0);
  pass.status["pipeline"]["replays"] = kept;
  if (steps == 0 && restored == 0 && kept["covered"].get<int64_t>() == 0) {
    pass.Set(condition::kReplaying, false, reason::kNothingLost, "no device lost");
    return;
  }
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.2f", kept["recoverySeconds"].get<double>());
  auto counted = [&](const char* key, const char* one, const char* many) {
    const int64_t n = kept[key].get<int64_t>();
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  // A device of a group lost mid-step has its shares computed again by its
  // group, nothing else run again; other losses run the step again on every stage.
  std::string message = "the head recovered from " + counted("count", "loss", "losses") + " mid-step (" +
                        counted("microBatches", "micro-batch", "micro-batches") + " run again on every stage, ";
  if (kept["covered"].get<int64_t>() > 0) {
    message += counted("coveredShares", "share", "shares") + " of " + counted("covered", "lost device", "lost devices") +
               " computed by their groups (" + std::to_string(kept["rerunShares"].get<int64_t>()) +
               " of them again), ";
  }
  message += std::string(seconds) + " s of recovery)";
  if (restored > 0) {
    message += " and rebuilt " + std::to_string(restored) + " stage" + (restored == 1 ? "" : "s") +
               " from a replica, losing " + std::to_string(kept["stepsLost"].get<int64_t>()) +
               (kept["stepsLost"].get<int64_t>() == 1 ? " step" : " steps") + " of those layers' updates";
  }
  // A pass that read nothing new of the head (its progress as the last
  // read left it) keeps what that read said: a replay's True was written
  // over by the next write, milliseconds later, and no one saw it (a new
  // user's trial). It turns False at the next read that shows none new.
  const std::string read_now = pass.status.value("/progress/readTime"_json_pointer, std::string());
  const Json* said = FindCondition(pass.stored_status, condition::kReplaying);
  const bool same_read =
      !read_now.empty() && read_now == pass.stored_status.value("/progress/readTime"_json_pointer, std::string());
  if (!fresh && same_read && said && said->value("status", "") == "True") {
    pass.Set(condition::kReplaying, true, reason::kReplayed, message);
    return;
  }
  pass.Set(condition::kReplaying, fresh, fresh ? reason::kReplayed : reason::kTrainingOn, message);
  if (fresh) {
    events_.Record(pass.object, "Warning", reason::kReplayed, message);
    log_.Job(pass.key, reason::kReplayed, message);
  }
}

void Reconciler::PublishMeasuredLinks(Pass& pass, const JobPlan& plan, const std::string& coordinator_node,
                                      const Json& progress) {
  if (!progress.contains("workers")) return;
  const kube::WallTime now = wall_now_();
  for (const Json& w : progress["workers"]) {
    const int rank = w.value("rank", -1);
    if (rank < 0 || rank >= static_cast<int>(plan.workers.size()) || !w.value("active", true)) continue;
    const std::string node = plan.workers[rank].node;
    // A worker beside the coordinator crosses no link worth telling of.
    if (node == coordinator_node) continue;
    const double up = w.value("bandwidthMbps", 0.0), down = w.value("downlinkMbps", 0.0);
    if (!(up > 0) && !(down > 0)) continue;
    double up_mean = 0, down_mean = 0;
    {
      std::lock_guard<std::mutex> lock(published_mu_);
      LinkReadings& r = published_[node];
      if (up > 0 && std::isfinite(up)) {
        r.up_sum += up;
        ++r.up_n;
      }
      if (down > 0 && std::isfinite(down)) {
        r.down_sum += down;
        ++r.down_n;
      }
      // A few readings first, then at most once a measurement interval.
      if (std::max(r.up_n, r.down_n) < kLinkReadingsToPublish || now - r.published < options_.measurement_interval) {
        continue;
      }
      up_mean = r.up_n ? r.up_sum / r.up_n : 0;
      down_mean = r.down_n ? r.down_sum / r.down_n : 0;
      r = LinkReadings{now};
    }
    Json annotations = {{kMeasuredAt, kube::FormatKubeTime(now)}};
    if (up_mean > 0) annotations[kMeasuredUplink] = std::to_string(std::llround(up_mean * 1e6));
    if (down_mean > 0) annotations[kMeasuredDownlink] = std::to_string(std::llround(down_mean * 1e6));
    StatusOr<Json> patched = client_.MergePatch(kube::kNodes, "", node, {{"metadata", {{"annotations", annotations}}}});
    if (!patched.ok()) log_.Job(pass.key, "LinkNotPublished", node + ": " + patched.status().message());
  }
}

Status Reconciler::CreateMissing(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator,
                                 const Gang& gang) {
  if (gang.missing.empty() || coordinator.node.empty()) return Status::Ok();
  // The pods mount the team's credentials: their Secret must be there, whatever
  // the status says (deleted by hand, or left by an earlier job of the name).
  EDGETRAIN_RETURN_IF_ERROR(KeepTeamCredentials(pass, plan, /*making_pods=*/true));
  std::vector<Json> missing;
  for (Json& pod : PodsFor(pass.job, plan, coordinator, options_.pods)) {
    const std::string name = pod["metadata"]["name"];
    if (std::find(gang.missing.begin(), gang.missing.end(), name) != gang.missing.end()) missing.push_back(pod);
  }
  // Counted on their nodes before they are made, so that a waiting job's turn
  // is not given the room they take.
  line_.Placed(pass.key, missing, wall_now_());
  for (const Json& pod : missing) EDGETRAIN_RETURN_IF_ERROR(CreateOwn(pass, kube::kPods, pod));
  return Status::Ok();
}

Status Reconciler::AwaitRoom(Pass& pass, const char* event_reason, const std::string& message) {
  pass.Set(condition::kRunning, false, reason::kRecovering, message);
  // Said once: the message changes when what is missing does.
  if (FindCondition(pass.stored_status, condition::kRunning) == nullptr ||
      FindCondition(pass.stored_status, condition::kRunning)->value("message", "") != message) {
    events_.Record(pass.object, "Warning", event_reason, message);
    log_.Job(pass.key, event_reason, message);
  }
  pass.Requeue(options_.unschedulable_retry);
  return Status::Ok();
}

bool Reconciler::RecoveriesExhausted(Pass& pass, const std::string& what, int recoveries) {
  const int allowed = pass.job.manifest.spec.fault_tolerance.max_recoveries;
  if (recoveries <= allowed) return false;
  const std::string message = what + "; that would be recovery " + std::to_string(recoveries) +
                              ", more than spec.faultTolerance.maxRecoveries (" + std::to_string(allowed) + ")";
  EndFailed(pass, reason::kRecoveriesExhausted, message);
  return true;
}

void Reconciler::SettleLinkConditions(Pass& pass, const char* why, const std::string& what) {
  // What the last read said of the team's links is of a team no longer
  // training: a job that succeeded kept "worker 1 silent for 43 s: its link
  // is down" of a worker replaced seconds before the end (a new user's trial).
  for (const char* type : {condition::kStalled, condition::kBandwidthDegraded}) {
    const Json* c = FindCondition(pass.status, type);
    if (!c || c->value("status", "") != "True") continue;
    const std::string last = c->value("reason", "") + ": " + c->value("message", "");
    pass.Set(type, false, why, what + "; the last read said " + last);
  }
}

void Reconciler::EndFailed(Pass& pass, const char* why, const std::string& message) {
  pass.status["phase"] = phase::kFailed;
  pass.status["completionTime"] = pass.now;
  pass.Set(condition::kFailed, true, why, message);
  pass.Set(condition::kRunning, false, reason::kStopped, "the job has ended");
  SettleLinkConditions(pass, reason::kStopped, "the job has ended");
  events_.Record(pass.object, "Warning", why, message);
  log_.Job(pass.key, why, message);
}

Status Reconciler::MoveCoordinator(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator,
                                   const std::string& why, bool moving) {
  const std::string what = "the coordinator: " + why;
  // A move ahead of a warning is no failure: only losses count against maxRecoveries.
  const char* event_reason = moving ? reason::kCoordinatorMoved : reason::kCoordinatorLost;
  const int recoveries = pass.status.value("recoveries", 0) + (moving ? 0 : 1);
  if (!moving && RecoveriesExhausted(pass, what, recoveries)) return CleanPods(pass);

  // Workers lost with it, on its node: placed anew in the same plan, one
  // loss and one recovery. The node's loss counted twice against
  // maxRecoveries, a plan generation each (a new user's trial).
  // A pipeline's stage devices lost with it are not: its head replays
  // without them, or rebuilds their stages, as for any device lost.
  // Its node lost (not ready past the grace, or gone) takes them all, their
  // pods' own losses seen or not yet: the cluster marks a dead node's pods
  // one at a time, and a worker whose pod was not yet marked was lost a
  // moment later as a second recovery, in a plan generation of its own
  // (a new user's trial).
  const std::vector<NodeView> nodes = line_.Cluster(Measured());
  const auto its_node = std::find_if(nodes.begin(), nodes.end(),
                                     [&](const NodeView& n) { return n.name == coordinator.node; });
  const bool node_lost = its_node == nodes.end() || !its_node->ready;
  std::set<int> fellows;
  if (!moving && !plan.pipeline) {
    for (const WorkerSlot& slot : plan.workers) {
      if (slot.node != coordinator.node) continue;
      const int64_t since = SlotSince(plan, slot.rank);
      const Json* pod = PodNamed(pass.pods, WorkerPodName(pass.job.name, slot.rank, since));
      if (node_lost || !pod || !LossOf(pod, since, plan.generation).empty()) fellows.insert(slot.rank);
    }
  }

  // Anywhere the placement policy would put a coordinator (not the node it
  // leaves: not ready, or leaving), on what every pod now holds; the workers
  // stay where they are, but those lost with it.
  StatusOr<TeamRequest> request =
      api::TeamRequestOf(pass.job.manifest, options_.pods.defaults, MeasuredSizeOf(pass));
  if (!request.ok()) return request.status();
  request->solo = false;
  request->workers = static_cast<int>(fellows.size());
  for (const WorkerSlot& slot : plan.workers) {
    if (!fellows.count(slot.rank)) ++request->workers_on[slot.node];
  }
  const TeamPlacement seat = PlaceTeam(nodes, *request);
  pass.status["phase"] = phase::kRecovering;
  if (!seat.placed) return AwaitRoom(pass, event_reason, what + "; no node for it yet: " + seat.unschedulable);

  // The next generation: every worker keeps its slot (and its stream: its
  // hello is of a generation the new coordinator admits), the coordinator's
  // seat is new, and so is its pod's name, while the old one may still be
  // Terminating on a node that cannot confirm its end.
  std::string with_it;
  const JobPlan next = NextGeneration(plan, fellows, seat.worker_nodes, nodes, with_it);
  const CoordinatorSeat moved{seat.coordinator_node, next.generation};
  EDGETRAIN_RETURN_IF_ERROR(WritePlanConfigMap(pass, PlanConfigMapFor(pass.job, next, moved)));
  std::vector<std::string> doomed;
  std::vector<const Json*> lost_pods;
  const std::string old_name = CoordinatorPodName(pass.job.name, coordinator.since_generation);
  std::vector<std::string> lost_names = {old_name};
  for (int rank : fellows) lost_names.push_back(WorkerPodName(pass.job.name, rank, SlotSince(plan, rank)));
  for (const std::string& name : lost_names) lost_pods.push_back(PodNamed(pass.pods, name));
  for (const Json* pod : lost_pods) {
    if (pod && !pod->at("metadata").contains("deletionTimestamp")) doomed.push_back((*pod)["metadata"]["name"]);
  }
  EDGETRAIN_RETURN_IF_ERROR(DeletePods(pass, doomed));
  Gang fresh;
  fresh.missing.push_back(CoordinatorPodName(pass.job.name, moved.since_generation));
  for (int rank : fellows) fresh.missing.push_back(WorkerPodName(pass.job.name, rank, next.generation));
  EDGETRAIN_RETURN_IF_ERROR(CreateMissing(pass, next, moved, fresh));

  return Replanned(pass, event_reason, moving ? std::nullopt : std::optional<int>(recoveries),
                   what + "; placed anew on " + moved.node +
                       (plan.pipeline ? ", to train on from the state its stages hold"
                                      : ", to train on from its workers' copy of the model") +
                       (with_it.empty() ? "" : "; lost with it and replaced: " + with_it),
                   next, moved,
                   LossEvidence(pass.stored_status, lost_names, lost_pods, line_.Views({coordinator.node}, MeasuredLinks{}),
                                /*coordinator_lost=*/true));
}

Status Reconciler::Recover(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator,
                           const std::map<int, std::string>& lost, const std::set<int>& moves) {
  std::string what;
  for (const auto& [rank, why] : lost) what += (what.empty() ? "worker " : "; worker ") + std::to_string(rank) + ": " + why;
  // A move ahead of a warning is no failure: only losses count against maxRecoveries.
  const bool only_moves = moves.size() == lost.size();
  const char* event_reason = only_moves ? reason::kWorkerMoved : reason::kWorkerLost;
  const int recoveries = pass.status.value("recoveries", 0) + (only_moves ? 0 : 1);
  if (!only_moves && RecoveriesExhausted(pass, what, recoveries)) return CleanPods(pass);

  // Re-place the lost ranks only: around the survivors, beside the coordinator
  // where it is, on what every pod now holds (the lost ones included, which
  // still hold a silent node until they are gone).
  StatusOr<TeamRequest> request =
      api::TeamRequestOf(pass.job.manifest, options_.pods.defaults, MeasuredSizeOf(pass));
  if (!request.ok()) return request.status();
  request->solo = false;
  request->workers = static_cast<int>(lost.size());
  request->coordinator_on = coordinator.node;
  for (const WorkerSlot& slot : plan.workers) {
    if (!lost.count(slot.rank)) ++request->workers_on[slot.node];
  }
  const std::vector<NodeView> nodes = line_.Cluster(Measured());
  const TeamPlacement replacement = PlaceTeam(nodes, *request);
  pass.status["phase"] = phase::kRecovering;
  if (!replacement.placed) {
    return AwaitRoom(pass, event_reason, what + "; no node for a replacement yet: " + replacement.unschedulable);
  }

  std::set<int> replaced;
  for (const auto& [rank, why] : lost) replaced.insert(rank);
  std::string moved;
  const JobPlan next = NextGeneration(plan, replaced, replacement.worker_nodes, nodes, moved);
  // The coordinator reads the new plan from its mounted ConfigMap and fences
  // out only the replaced ranks; the survivors train on.
  EDGETRAIN_RETURN_IF_ERROR(WritePlanConfigMap(pass, PlanConfigMapFor(pass.job, next, coordinator)));
  // The lost pods that are not already going, go (an evicted pod stays Failed).
  std::vector<std::string> doomed;
  for (const auto& [rank, why] : lost) {
    const Json* pod = PodNamed(pass.pods, WorkerPodName(pass.job.name, rank, SlotSince(plan, rank)));
    if (pod && !pod->at("metadata").contains("deletionTimestamp")) doomed.push_back((*pod)["metadata"]["name"]);
  }
  EDGETRAIN_RETURN_IF_ERROR(DeletePods(pass, doomed));
  Gang fresh;
  for (const auto& [rank, why] : lost) fresh.missing.push_back(WorkerPodName(pass.job.name, rank, next.generation));
  EDGETRAIN_RETURN_IF_ERROR(CreateMissing(pass, next, coordinator, fresh));

  std::vector<const Json*> lost_pods;
  std::vector<std::string> lost_names, lost_nodes;
  for (const auto& [rank, why] : lost) {
    lost_names.push_back(WorkerPodName(pass.job.name, rank, SlotSince(plan, rank)));
    lost_pods.push_back(PodNamed(pass.pods, lost_names.back()));
    lost_nodes.push_back(plan.workers[static_cast<size_t>(rank)].node);
  }
  return Replanned(pass, event_reason, only_moves ? std::nullopt : std::optional<int>(recoveries),
                   what + "; replaced: " + moved, next, coordinator,
                   LossEvidence(pass.stored_status, lost_names, lost_pods, line_.Views(lost_nodes, MeasuredLinks{}),
                                /*coordinator_lost=*/false));
}

Status Reconciler::Replanned(Pass& pass, const char* event_reason, std::optional<int> recovery,
                             const std::string& what, const JobPlan& next, const CoordinatorSeat& coordinator,
                             std::optional<kube::WallTime> lost_since) {
  const int allowed = pass.job.manifest.spec.fault_tolerance.max_recoveries;
  const int64_t generation = next.generation;
  // Where the team is now: Placed said where the first plan put it, and
  // stayed so through every move and replacement (a new user's trial).
  pass.Set(condition::kPlaced, true, reason::kPlaced,
           Describe(PlacementOf(next, coordinator)) + " (plan generation " + std::to_string(generation) + ")");
  const std::string message =
      what + " (plan generation " + std::to_string(generation) +
      (recovery ? ", recovery " + std::to_string(*recovery) + " of " + std::to_string(allowed) + ")"
                : ", moved ahead of the loss)");
  if (recovery) pass.status["recoveries"] = *recovery;
  const bool was_running = ConditionIs(pass.stored_status, condition::kRunning, true);
  // A move is said as one (WorkerMoved, CoordinatorMoved), a loss as Recovering.
  pass.Set(condition::kRunning, false, recovery ? reason::kRecovering : event_reason, message);
  // The team stopped being whole when the cluster says it did, not when this
  // reconcile saw it: the recovery's time (its Event, its histogram) counts
  // from there. Never before the team last ran whole.
  const Json* running = FindCondition(pass.stored_status, condition::kRunning);
  const std::optional<kube::WallTime> ran_since =
      running ? kube::ParseKubeTime(running->value("lastTransitionTime", "")) : std::nullopt;
  if (was_running && lost_since && *lost_since < wall_now_() && (!ran_since || *lost_since >= *ran_since)) {
    for (Json& c : pass.status["conditions"]) {
      if (c.value("type", "") == condition::kRunning) c["lastTransitionTime"] = kube::FormatKubeTime(*lost_since);
    }
  }
  events_.Record(pass.object, recovery ? "Warning" : "Normal", event_reason, message);
  log_.Job(pass.key, event_reason, message);
  pass.outcome.placement = "placed";
  pass.outcome.replan = event_reason;
  pass.Requeue(options_.status_interval);
  return Status::Ok();
}

Status Reconciler::WriteStatus(Pass& pass) {
  SetPhaseReason(pass.status);  // what kubectl get tj shows beside the phase
  KeepTransitionTimes(pass.status, pass.stored_status);
  if (pass.status == pass.stored_status) return Status::Ok();
  Json object = pass.object;
  object["status"] = pass.status;
  const std::string ns =
      pass.job.namespace_.empty() ? pass.object["metadata"].value("namespace", "default") : pass.job.namespace_;
  const std::string read_version = pass.object["metadata"].value("resourceVersion", std::string());
  StatusOr<Json> written = client_.UpdateStatus(kube::kTrainingJobs, ns, object);
  // Deleted meanwhile: there is nothing left to write to (the watch removes it).
  if (!written.ok() && written.status().code() == StatusCode::kNotFound) return Status::Ok();
  if (!written.ok() && written.status().code() == StatusCode::kAborted) {
    // A conflict: the cache is behind the object. The watch brings it in its
    // time; taken now, the retry works on it rather than on what conflicted.
    if (StatusOr<std::optional<Json>> current = JobAtTheServer(pass); current.ok() && *current) {
      jobs_.Refresh(**current, read_version);
    }
  }
  if (!written.ok()) return written.status().WithContext("writing the status of " + pass.key);
  // The cache learns of it by the watch; until then, later reconciles of this
  // key see it already, unless the watch removed it or brought it, or a newer
  // one, first: a write's answer can come back after the watch's next event,
  // and put over it, it held the cache behind for good once nothing changed
  // the job again (every write then conflicted: minutes of retries in a full
  // make test).
  jobs_.Refresh(*written, read_version);
  return Status::Ok();
}

}  // namespace edgetrain::operator_

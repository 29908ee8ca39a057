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
#include "operator/controller/reconciler_pass.h"
#include "operator/controller/stage_plan.h"
#include "operator/controller/team_members.h"

namespace edgetrain::operator_ {

namespace phase = api::phase;
namespace condition = api::condition;
namespace reason = api::reason;

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
  pass.wrote_plan = true;
  return Status::Ok();
}

StatusOr<ReconcileOutcome> Reconciler::Reconcile(const std::string& key) {
  // A pass reads what the job's own agents wrote — its coordinator's
  // /progress, an agent's termination message — and the job's image decides
  // what that is. A value of another type than edgetrain's agents write
  // ({"iteration": "12"}) threw out of the JSON accessors and ended the
  // operator, which ended again on the same job at every restart, leaving
  // every job of the cluster unmanaged (found in review). Such a pass fails
  // alone, and is retried with back-off, as one an API refused.
  try {
    return ReconcileOnce(key);
  } catch (const std::exception& e) {
    const std::string why = std::string("a value this job's agents wrote (its /progress or a termination message) "
                                        "is not what edgetrain's agents write: ") + e.what();
    // Said on the job too: the pass fails before it writes a status, and
    // kubectl describe showed nothing of why the job stood still (found in
    // review). Alike each time, the Event counts on.
    if (const std::optional<Json> object = jobs_.Get(key)) {
      events_.Record(*object, "Warning", reason::kAgentOutputUnreadable, why + "; its pass is retried with back-off");
    }
    return InternalError(why);
  }
}

StatusOr<ReconcileOutcome> Reconciler::ReconcileOnce(const std::string& key) {
  std::optional<Json> object = jobs_.Get(key);
  // Gone: its pods, Service and ConfigMap go by their ownerReferences.
  if (!object || object->at("metadata").contains("deletionTimestamp")) {
    std::lock_guard lock(said_mu_);
    refused_.erase(key);  // what was said of a job gone
    noted_.erase(key);
    files_missing_said_.erase(key);
    unstored_.erase(key);
    return ReconcileOutcome{};
  }
  Pass pass;
  pass.key = key;
  pass.object = *object;
  pass.stored_status = object->value("status", Json::object());
  pass.status = pass.stored_status;
  pass.generation = object->at("metadata").value("generation", int64_t{1});
  pass.wall_now = wall_now_();
  pass.now = kube::FormatKubeTime(pass.wall_now);
  TakeUnstored(pass);
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
  if (pass.job.name.empty()) {  // invalid: the status says why; its team, if it had one, ends
    // A running job edited into a spec that is not valid has failed, and
    // ends as any failed job: its conditions settled, its pods gone by its
    // cleanPodPolicy once that end is stored. They had run on and held
    // their nodes, Running saying "every agent runs" beside Failed (found
    // in review).
    if (ConditionIs(pass.status, condition::kRunning, true)) {
      pass.Set(condition::kRunning, false, reason::kStopped, "the job has ended");
    }
    SettleLinkConditions(pass, reason::kStopped, "the job has ended");
    // find() on a spec that is not an object finds nothing: no TTL.
    EDGETRAIN_RETURN_IF_ERROR(ExpireAfterTtl(pass, pass.object.value("spec", Json::object())));
    EDGETRAIN_RETURN_IF_ERROR(WriteStatus(pass));
    // An invalid spec's policy may be anything: one that is none of the three is the default.
    const Json spec = pass.object.value("spec", Json::object());
    const Json policy = spec.is_object() ? spec.value("cleanPodPolicy", Json("Running")) : Json("Running");
    const bool known = policy == "All" || policy == "Running" || policy == "None";
    EDGETRAIN_RETURN_IF_ERROR(CleanPodsBy(pass, known ? policy.get<std::string>() : "Running",
                                          pass.object["metadata"].value("namespace", "default")));
    return pass.outcome;
  }
  Status done;
  const std::string current = pass.Phase();
  const bool suspending = pass.job.manifest.object.at("spec").value("suspend", false);
  SayIfSpecNotApplied(pass, suspending);
  if (current == phase::kSucceeded || current == phase::kFailed) {
    done = TidyFinishedJob(pass);
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
  const Status written = WriteStatus(pass);
  KeepUnstored(pass, written);
  if (!written.ok()) return written;
  return pass.outcome;
}

void Reconciler::TakeUnstored(Pass& pass) {
  std::lock_guard lock(said_mu_);
  const auto it = unstored_.find(pass.key);
  if (it == unstored_.end()) return;
  // Of this job, and nothing has written its status since: else what is
  // stored now is the truth.
  if (it->second.uid != pass.object.value("/metadata/uid"_json_pointer, std::string()) ||
      it->second.stored != pass.stored_status) {
    unstored_.erase(it);
    return;
  }
  pass.status = it->second.computed;
  pass.wrote_plan = true;
}

void Reconciler::KeepUnstored(const Pass& pass, const Status& written) {
  std::lock_guard lock(said_mu_);
  const std::string phase = pass.Phase();
  if (written.ok() || !pass.wrote_plan || phase == phase::kSucceeded || phase == phase::kFailed) {
    unstored_.erase(pass.key);
    return;
  }
  unstored_[pass.key] = {pass.object.value("/metadata/uid"_json_pointer, std::string()), pass.stored_status,
                         pass.status};
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
  // Of the status the pass goes on from: a status carried over a failed
  // write (unstored_) observed its own generation, where the stored one may
  // say 0 and let an edit since go unsaid (found in review).
  const int64_t observed = pass.ObservedGeneration();
  const bool placed = current == phase::kPlacing || current == phase::kRunning || current == phase::kRecovering;
  const bool ended = current == phase::kSucceeded || current == phase::kFailed;
  if (!(placed && !suspending) && !ended) return;
  if (observed == 0 || observed == pass.generation) return;
  // Its team was planned from the spec it had: workers, model, data and
  // budget are in every agent's plan. An edit was silently ignored while
  // observedGeneration said it was seen (a new user's trial); an ended
  // job's too (an energy budget raised on a job that had spent it).
  // Of the fields, those the operator reads as the job ends do apply.
  const std::string applies = " (ttlSecondsAfterFinished and cleanPodPolicy apply as they now are)";
  const std::string message =
      ended ? "spec changed (generation " + std::to_string(pass.generation) + ") after the job ended: an ended job "
                  "does not train again" + applies + "; to train it again, delete it and apply it anew"
            : "spec changed (generation " + std::to_string(pass.generation) + ") while " +
                  // A gang still being placed has not run: "while the job
                  // runs" was said of one whose pods could not pull their
                  // image (a new user's trial).
                  (current == phase::kPlacing ? std::string("its team is being placed") : "the job runs") +
                  ": it keeps the spec it was placed with until it is placed again" + applies +
                  "; to apply the change now, suspend and resume it (spec.suspend), or delete it and apply it again";
  events_.Record(pass.object, "Warning", reason::kSpecNotApplied, message);
  log_.Job(pass.key, reason::kSpecNotApplied, message);
}

namespace {

// Refused (403, 400, 422): what the job asks, or the operator's rights, and
// not a passing trouble (a conflict, a server busy), which back-off mends.
bool Refused(const Status& done) {
  return done.code() == StatusCode::kFailedPrecondition || done.code() == StatusCode::kInvalidArgument;
}

}  // namespace

void Reconciler::ReportRefusal(const Pass& pass, const Status& done) {
  std::lock_guard lock(said_mu_);
  const bool refused = Refused(done);
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

std::string Reconciler::SayPodNotMade(Pass& pass, const Status& made) {
  const std::string said = "a pod could not be made: " + made.message();
  const Json* before = FindCondition(pass.stored_status, condition::kRunning);
  if (Refused(made) && (!before || before->value("message", "").find(said) == std::string::npos)) {
    events_.Record(pass.object, "Warning", reason::kRequestRefused,
                   "the API server refused a request for this job, retried with back-off: " + made.message());
  }
  return said;
}

void Reconciler::FailInvalid(Pass& pass, const std::string& why, const std::string& invalid) {
  const bool news = !ConditionIs(pass.status, condition::kInvalid, true) ||
                    pass.ObservedGeneration() != pass.generation;
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
    // The user's to mend comes first: a job both wrong here and asking for
    // what has not landed is InvalidSpec, with every field named.
    why = !support.invalid.empty() ? reason::kInvalidSpec : reason::kNotSupported;
    for (const auto* errors : {&support.invalid, &support.unsupported}) {
      for (const api::FieldError& e : *errors) invalid += (invalid.empty() ? "" : "; ") + e.ToString();
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
  bool say_notes = pass.ObservedGeneration() != pass.generation;
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
  // So is a layout of stages that names layers the model, as checked, has not.
  const bool model_refused = failed_for == reason::kInvalidModel || failed_for == reason::kModelCheckFailed ||
                             failed_for == reason::kInvalidStages;
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

Status Reconciler::TidyFinishedJob(Pass& pass) {
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
  // Compared in seconds: a TTL of "never" (1e10 s, say) added to a time of
  // the wall clock's nanoseconds overflowed, and the job was deleted the
  // moment it finished (found in review).
  const int64_t ttl_s = ttl->get<int64_t>();
  const int64_t since_s = std::chrono::duration_cast<std::chrono::seconds>(now - finished).count();
  if (since_s >= ttl_s) {
    // The cache's job may be one deleted at its TTL already, and a new one of
    // its name applied since: the server says which (found in review).
    if (DeletedAtTheServer(pass)) {
      pass.status = pass.stored_status;
      return Status::Ok();
    }
    log_.Job(pass.key, "Expired", "deleted: ttlSecondsAfterFinished has passed since it finished");
    const Json& meta = pass.object.at("metadata");
    // Of its uid alone: a job of its name applied since (after the look
    // above, or where the look could not be had) is the server's to keep
    // (found in review). Aborted: that is what happened.
    Status deleted = client_.DeleteUid(kube::kTrainingJobs, meta.value("namespace", "default"),
                                       meta.value("name", ""), meta.value("uid", ""));
    if (!deleted.ok() && deleted.code() != StatusCode::kNotFound && deleted.code() != StatusCode::kAborted) {
      return deleted;
    }
    pass.status = pass.stored_status;  // nothing to write to a deleted object
    return Status::Ok();
  }
  // Looked at again when due, or in a day at the latest: a wait of years is none a clock keeps.
  pass.Requeue(std::chrono::seconds(std::min<int64_t>(ttl_s - since_s, 24 * 3600)));
  return Status::Ok();
}

Status Reconciler::CleanPods(Pass& pass) {
  return CleanPodsBy(pass, pass.job.manifest.object.at("spec").value("cleanPodPolicy", "Running"),
                     pass.job.namespace_);
}

Status Reconciler::CleanPodsBy(Pass& pass, const std::string& policy, const std::string& ns) {
  if (policy == "None") return Status::Ok();
  std::vector<std::string> doomed;
  std::vector<Json> pods = pass.pods;
  if (pass.model_check) pods.push_back(*pass.model_check);  // a check that outlived its job's end
  for (const Json& pod : pods) {
    if (pod.at("metadata").contains("deletionTimestamp")) continue;
    const std::string p = pod.value("/status/phase"_json_pointer, std::string());
    if (policy == "All" || (p != "Succeeded" && p != "Failed")) doomed.push_back(pod["metadata"]["name"]);
  }
  return DeletePods(pass, doomed, ns);
}

Status Reconciler::DeletePods(Pass& pass, const std::vector<std::string>& names, std::optional<std::string> ns) {
  for (const std::string& name : names) {
    Status deleted = client_.Delete(kube::kPods, ns ? *ns : pass.job.namespace_, name);
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
  if (pass.Phase() != phase::kSuspended) {
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
  // The status says what the Event said: whether it starts over (its
  // message read "suspended", and a resumed job's ETA a whole budget, with
  // nothing of why: a new user's trial).
  pass.Set(condition::kPlaced, false, reason::kSuspended, message);
  pass.Set(condition::kRunning, false, reason::kSuspended, message);
  return Status::Ok();
}

int Reconciler::PriorityOfClass(const std::string& name) {
  if (name.empty()) return 0;
  StatusOr<Json> pc = client_.Get(kube::kPriorityClasses, "", name);
  std::lock_guard lock(priorities_mu_);
  if (pc.ok()) return priorities_[name] = pc->value("value", 0);
  if (pc.status().code() == StatusCode::kNotFound) {
    priorities_.erase(name);
    return 0;
  }
  const auto known = priorities_.find(name);
  return known != priorities_.end() ? known->second : 0;
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

// What a job whose output claim does not exist is told, in its Event and
// its starting message.
std::string MissingClaimWords(const std::string& claim, const std::string& ns) {
  return "spec.output.volume's PersistentVolumeClaim " + claim + " does not exist in namespace " +
         (ns.empty() ? "default" : ns) + ": the coordinator's pod waits to mount it until it is made";
}

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
  // A placed job's plan gone: deleted by hand, or by the garbage collector
  // with the job, whose deletion the jobs' watch may bring after the plans'
  // (a deleted job's last Event said its plan was gone and it would be
  // placed again: a new user's trial, twice). Rare: the server is asked.
  if (!stored.plan && ConditionIs(pass.status, condition::kPlaced, true) && DeletedAtTheServer(pass)) {
    return Status::Ok();
  }
  // A status that never said Placed, with pods of the stored plan, and only
  // those: a replica placed the job and died before it wrote the status.
  // Deleting them and placing anew would start the team again for nothing.
  // Of the reasons a job waits with, those under which no pod of its stored
  // plan is made: a job whose module was being checked, or whose pipeline
  // fitted no device, had its plan's pods deleted and placed again as the
  // next generation (found in review).
  const Json* placed = FindCondition(pass.status, condition::kPlaced);
  const std::string waited = placed ? placed->value("reason", "") : "";
  const bool never_placed = !placed || waited == reason::kUnschedulable || waited == reason::kPodsEnding ||
                            waited == reason::kCheckingModel || waited == reason::kCheckingLayers ||
                            waited == reason::kNoPipelineFits;
  if (stored.plan && !pass.pods.empty() && never_placed) {
    // Each pod exactly as the plan makes it: its name, its node and its
    // generation.
    std::map<std::string, const Json*> planned;
    const std::vector<Json> plan_pods = PodsFor(pass.job, *stored.plan, stored.coordinator, options_.pods);
    for (const Json& pod : plan_pods) planned[pod["metadata"]["name"].get<std::string>()] = &pod;
    // This job's own, not an earlier one's of its name (applied again at once).
    const bool all_of_plan = std::all_of(pass.pods.begin(), pass.pods.end(), [&](const Json& pod) {
      const auto it = planned.find(pod.value("/metadata/name"_json_pointer, std::string()));
      if (it == planned.end() || pod.at("metadata").contains("deletionTimestamp") || !OwnedByJob(pod, pass.job)) {
        return false;
      }
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
    // After a gang timeout, its reason stays: its back-off counts from it.
    // After a node lost, too: the gang's own pods, torn down, read as
    // another plan's 16 ms after the job said why (a soak trial).
    if (!placed || (placed->value("reason", "") != reason::kGangTimeout &&
                    placed->value("reason", "") != reason::kNodeLost)) {
      pass.Set(condition::kPlaced, false, reason::kPodsEnding, what + " (" + names + ")");
    }
    pass.Requeue(options_.recheck_after);
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
    } else if (const auto ends = GangBackOffEnds(pass.job.manifest.object.at("spec"), pass.status, pass.generation);
               ends && wall_now_() < *ends) {
      pass.status["phase"] = phase::kPending;
      pass.Requeue(std::chrono::duration_cast<Duration>(*ends - wall_now_()));
      return Status::Ok();
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
  EDGETRAIN_ASSIGN_OR_RETURN(request->coordinator_only_on, OutputVolumeNode(pass));

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
    const std::optional<CheckedLayers> checked =
        CheckedLayersOf(pass.status, ModelCheckOf(ModelCheckPodFor(pass.job, options_.pods)));
    // A layout by hand that is not one of this model, as its check timed it:
    // no node changes that, and the job fails until its spec does.
    if (Status fits = checked ? CheckStagesFitTheLayers(pass.job.manifest.spec, checked->layers.size()) : Status::Ok();
        !fits.ok()) {
      line_.Forget(pass.key);
      FailInvalid(pass, reason::kInvalidStages, fits.message());
      return Status::Ok();
    }
    StatusOr<StagePlan> cut = checked ? CutStages(pass, *checked, placement, views)
                                      : FailedPreconditionError("the model's layers have not been timed");
    if (!cut.ok()) {
      line_.Forget(pass.key);
      const std::string message = "no " + std::string(NameOf(pass.job.manifest.spec.parallelism.mode)) +
                                  " plan fits the nodes placement chose (" + DescribePlacement(placement) +
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
  if (Status applied = ApplyObjects(pass, plan, coordinator); !applied.ok()) {
    line_.Forget(pass.key);
    return applied;
  }
  // A pod the API server refuses (a quota, a LimitRange) leaves the job
  // placed, its gang's timeout running, as one refused while the gang starts
  // does: returned as the pass's error, the job showed no phase and no
  // condition, and each retry placed it again under a new plan generation
  // (found in review). Its gang's look makes the rest.
  Status made = Status::Ok();
  for (const Json& pod : pods) {
    made = CreateOwn(pass, kube::kPods, pod);
    if (!made.ok()) break;
  }
  if (!made.ok() && !pass.name_taken.empty()) {
    line_.Forget(pass.key);
    return made;
  }
  const std::string not_made = made.ok() ? "" : "; " + SayPodNotMade(pass, made);
  const std::string message = DescribePlacement(placement) + (stages.empty() ? "" : "; " + stages);
  pass.Set(condition::kPlaced, true, reason::kPlaced, message);
  // A job that has run and keeps no checkpoint (no output volume) starts
  // over: what was read of its last run is not its progress (kubectl get tj
  // showed the old accuracy until the first read).
  if (!HasOutputVolume(pass.job)) pass.status.erase("progress");
  // A job that has run is placed anew only when resumed (a loss keeps its
  // plan): Resuming from the start, where it read Starting for a pass.
  pass.Set(condition::kRunning, false, pass.status.contains("startTime") ? reason::kResuming : reason::kStarting,
           "0/" + std::to_string(pods.size()) + " pods running" + not_made);
  pass.status["phase"] = phase::kPlacing;
  events_.Record(pass.object, "Normal", reason::kPlaced, message);
  log_.Job(pass.key, reason::kPlaced, message + " (plan generation " + std::to_string(generation) + ")");
  pass.outcome.placement = "placed";
  // Its pods' changes wake it; else the gang timeout is when to look again,
  // or soon, for a pod refused.
  pass.Requeue(not_made.empty() ? GangTimeoutOf(pass.job) : std::min(GangTimeoutOf(pass.job), options_.recheck_after));
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

StatusOr<StagePlan> Reconciler::CutStages(const Pass& pass, const CheckedLayers& checked,
                                          const TeamPlacement& placement, const std::vector<NodeView>& views) {
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
  std::vector<NodeView> timed_on = line_.Views({checked.node}, Measured());
  return PlanStagesOn(pass.job.manifest.spec, devices, checked.layers, timed_on.empty() ? nullptr : &timed_on[0],
                      checked.transport, checked.stage_pass);
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
    case ModelCheckState::kChecking: {
      std::string message =
          (layers ? "timing the model's layers: " : "checking the module " + module + ": ") + result.message;
      // Waiting to mount a ConfigMap or claim that is not there: said, not
      // "Pending (ContainerCreating)" for as long as it is missing (a user's
      // trial waited 2.5 minutes on a ConfigMap's typo, said only in the
      // pod's events).
      if (pass.model_check->value("/status/phase"_json_pointer, std::string("Pending")) == "Pending") {
        EDGETRAIN_ASSIGN_OR_RETURN(const std::vector<std::string> files, MissingFileVolumes(pass));
        SayFilesMissing(pass, files, "pod " + pod_name);
        if (!files.empty()) {
          message = (layers ? "timing the model's layers" : "checking the module " + module) + ": pod " + pod_name +
                    " waits to mount the job's files: " + files.front() +
                    (files.size() > 1 ? " (and " + std::to_string(files.size() - 1) + " more)" : "");
        }
      }
      pass.Set(condition::kPlaced, false, checking, message);
      return false;
    }
    case ModelCheckState::kMeasured: {
      if (layers) {
        if (result.layers.empty()) {  // a result of another kind: the check pod is not this job's
          EDGETRAIN_RETURN_IF_ERROR(delete_check());
          return false;
        }
        // Written first, placed on the next pass, as a module's size is.
        pass.status["modelCheck"] = LayersCheckStatus(check, result.layers, result.transport, result.stage_pass, result.node);
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
  const std::string message = DescribePlacement(PlacementOf(plan, coordinator)) + " (taken up: plan generation " +
                              std::to_string(plan.generation) +
                              ", placed by a pass whose status was never stored: a replica that stopped, or a "
                              "write that failed)";
  pass.Set(condition::kPlaced, true, reason::kPlaced, message);
  events_.Record(pass.object, "Normal", reason::kPlaced, message);
  log_.Job(pass.key, reason::kPlaced, message);
  pass.outcome.placement = "placed";
  return Follow(pass, plan, coordinator);
}

Status Reconciler::ApplyObjects(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator) {
  EDGETRAIN_RETURN_IF_ERROR(CreateOwn(pass, kube::kServices, ServiceFor(pass.job)));
  // The plan replaces an earlier generation's.
  EDGETRAIN_RETURN_IF_ERROR(WritePlanConfigMap(pass, PlanConfigMapFor(pass.job, plan, coordinator)));
  EDGETRAIN_RETURN_IF_ERROR(ClaimOutputVolume(pass, coordinator.node));
  return KeepTeamCredentials(pass, plan, /*making_pods=*/true);
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
  if (!JobMayWrite(found, pass.job.name)) return NameTaken(pass, type, found);
  // An earlier job's of this name, deleted and applied again before the
  // garbage collector took what the first owned: taken for this one's, its
  // plan ran the old spec, and its objects then went with the old job (found
  // in review). The collector deletes it; the pass is retried until it has.
  if (!OwnedByJob(found, pass.job)) {
    return UnavailableError(type.kind + " " + name + " is an earlier TrainingJob " + pass.job.name +
                            "'s, which the garbage collector has yet to delete");
  }
  return Status::Ok();
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

StatusOr<std::optional<TeamRequest::Pin>> Reconciler::OutputVolumeNode(const Pass& pass) {
  const std::optional<std::string> claimed = OutputClaimOf(pass.job);
  if (!claimed) return std::optional<TeamRequest::Pin>();
  const std::string& claim = *claimed;
  StatusOr<Json> pvc = client_.Get(kube::kPersistentVolumeClaims, pass.job.namespace_, claim);
  // A claim not there pins nothing; one the API would not give (a 5xx, a
  // timeout) is not known to pin nothing: the pass is retried. Taken for
  // none, a coordinator was moved off the node its claim's volume is on,
  // where it could never mount it (found in review).
  if (!pvc.ok() && pvc.status().code() == StatusCode::kNotFound) return std::optional<TeamRequest::Pin>();
  if (!pvc.ok()) return pvc.status();
  const Json modes = pvc->value("/spec/accessModes"_json_pointer, Json::array());
  if (std::find(modes.begin(), modes.end(), "ReadWriteMany") != modes.end()) return std::optional<TeamRequest::Pin>();
  const std::string node =
      pvc->value("/metadata/annotations/volume.kubernetes.io~1selected-node"_json_pointer, std::string());
  if (node.empty()) return std::optional<TeamRequest::Pin>();
  return std::optional<TeamRequest::Pin>(TeamRequest::Pin{node, "its output claim " + claim + "'s volume is there"});
}

StatusOr<std::vector<std::string>> Reconciler::MissingFileVolumes(const Pass& pass) {
  std::vector<std::string> missing;
  const std::string ns = pass.job.namespace_.empty() ? "default" : pass.job.namespace_;
  for (const Json& volume : FileVolumesOf(pass.job)) {
    const bool config_map = volume.contains("configMap");
    const std::string name = config_map ? volume["configMap"].value("name", std::string())
                                        : volume.value("/persistentVolumeClaim/claimName"_json_pointer, std::string());
    const StatusOr<Json> found =
        client_.Get(config_map ? kube::kConfigMaps : kube::kPersistentVolumeClaims, pass.job.namespace_, name);
    if (found.ok()) continue;
    if (found.status().code() != StatusCode::kNotFound) return found.status();
    const std::string field = volume.value("name", std::string()) == "model" ? "spec.model.torchscript.configMap"
                                                                              : "spec.data.volume";
    missing.push_back(field + "'s " + (config_map ? "ConfigMap " : "PersistentVolumeClaim ") + name +
                      " does not exist in namespace " + ns);
  }
  return missing;
}

void Reconciler::SayFilesMissing(Pass& pass, const std::vector<std::string>& missing, const std::string& pod) {
  // Said once while it lasts: each reconcile of the waiting pod finds it again.
  if (missing.empty()) {
    std::lock_guard lock(said_mu_);
    files_missing_said_.erase(pass.key);  // made since: said again should it go
    return;
  }
  std::string message = pod + " waits to mount the job's files: ";
  for (size_t i = 0; i < missing.size(); ++i) message += (i > 0 ? "; " : "") + missing[i];
  message += " (the pod starts once it is made)";
  std::lock_guard lock(said_mu_);
  auto [it, first] = files_missing_said_.try_emplace(pass.key, message);
  if (!first && it->second == message) return;
  it->second = message;
  events_.Record(pass.object, "Warning", reason::kFilesMissing, message);
  log_.Job(pass.key, reason::kFilesMissing, message);
}

Status Reconciler::SayWhatThePodsLack(Pass& pass, const CoordinatorSeat& coordinator, Gang& gang) {
  // The job's own files, which every pod mounts: a typo in a ConfigMap's
  // name left the team "2/3 pods running" until its gang timed out, and
  // only the pods' own events said why (a user's trial).
  if (gang.running < gang.expected && !FileVolumesOf(pass.job).empty()) {
    EDGETRAIN_ASSIGN_OR_RETURN(const std::vector<std::string> files, MissingFileVolumes(pass));
    for (const std::string& missing : files) gang.held.push_back("every pod: " + missing);
    SayFilesMissing(pass, files, "every pod of the team");
  }
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

Status Reconciler::WriteStatus(Pass& pass) {
  SetPhaseReason(pass.status);  // what kubectl get tj shows beside the phase
  KeepTransitionTimes(pass.status, pass.stored_status);
  if (pass.status == pass.stored_status) return Status::Ok();
  Json object = pass.object;
  object["status"] = pass.status;
  const std::string ns =
      pass.job.namespace_.empty() ? pass.object["metadata"].value("namespace", "default") : pass.job.namespace_;
  std::string read_version = pass.object["metadata"].value("resourceVersion", std::string());
  StatusOr<Json> written = client_.UpdateStatus(kube::kTrainingJobs, ns, object);
  // Deleted meanwhile: there is nothing left to write to (the watch removes it).
  if (!written.ok() && written.status().code() == StatusCode::kNotFound) return Status::Ok();
  if (!written.ok() && written.status().code() == StatusCode::kAborted) {
    // A conflict: the cache is behind the object. The watch brings it in its
    // time; taken now, the retry works on it rather than on what conflicted.
    if (StatusOr<std::optional<Json>> current = JobAtTheServer(pass); current.ok() && *current) {
      jobs_.Refresh(**current, read_version);
      // Only its spec or metadata changed since the pass read it (a label
      // added, an edit), its status as the pass found it: this pass's status
      // is written on it. The retry had found the pass's work done - a
      // recovery's plan written, a team's pods made - and never counted or
      // said it (found in review). A spec changed is the next pass's to take.
      const Json& found = **current;
      if (found.value("status", Json::object()) == pass.stored_status &&
          found.value("/metadata/uid"_json_pointer, std::string()) ==
              pass.object.value("/metadata/uid"_json_pointer, std::string())) {
        object = found;
        object["status"] = pass.status;
        read_version = found["metadata"].value("resourceVersion", std::string());
        written = client_.UpdateStatus(kube::kTrainingJobs, ns, object);
      }
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

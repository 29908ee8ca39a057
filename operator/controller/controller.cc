#include "operator/controller/controller.h"

#include <map>
#include <set>
#include <vector>

#include "api/job_conditions.h"
#include "operator/controller/cluster_view.h"
#include "operator/controller/job_labels.h"
#include "operator/controller/job_status.h"

namespace edgetrain::operator_ {
namespace {

// The pod cache's index of pods by the node they are bound to.
constexpr const char* kPodsByNode = "node";

// Why a Failed job failed: its Failed condition's reason, or its Invalid
// one's (a spec refused once it ran, InvalidStages say).
std::string FailedReason(const Json& job) {
  const Json status = job.value("status", Json::object());
  for (const char* type : {api::condition::kFailed, api::condition::kInvalid}) {
    if (ConditionIs(status, type, true)) return FindCondition(status, type)->value("reason", "Unknown");
  }
  return "Unknown";
}

}  // namespace

Controller::Controller(kube::KubeClient& client, Clock& clock, ProgressSource& progress, OperatorMetrics& metrics,
                       LineLog& log, std::function<kube::WallTime()> wall_now, ControllerOptions options)
    : client_(client),
      clock_(clock),
      metrics_(metrics),
      log_(log),
      options_(std::move(options)),
      jobs_(client, kube::kTrainingJobs, options_.namespace_, clock, options_.informers),
      // Every pod, not only the jobs': what other pods hold on a node counts for placement.
      pods_(client, kube::kPods, "", clock, options_.informers),
      nodes_(client, kube::kNodes, "", clock, options_.informers),
      plans_(client, kube::kConfigMaps, options_.namespace_, clock, [&] {
        kube::InformerOptions only_ours = options_.informers;
        only_ours.label_selector = std::string(kManagedBy) + "=" + kOperatorName;
        return only_ours;
      }()),
      queue_(clock, options_.queue),
      events_(client, wall_now, log),
      reconciler_(client, jobs_.store(), pods_.store(), nodes_.store(), progress, events_, log, wall_now,
                  options_.reconciler, &plans_.store()) {
  pods_.store().AddIndex(kPodsByJob, PodsByJobIndex());
  // Every phase is a series from the start, at 0.
  for (const char* phase : {api::phase::kPending, api::phase::kPlacing, api::phase::kRunning, api::phase::kRecovering,
                            api::phase::kSucceeded, api::phase::kFailed, api::phase::kSuspended}) {
    metrics_.SetJobsInPhase(phase, 0);
  }
  jobs_.store().AddListener([this](const std::string& key, const Json* job) { CountPhase(key, job); });
  jobs_.OnChange([this](kube::WatchEventType type, const Json& job) {
    if (ChangedBeyondStatus(type, job)) queue_.Add(kube::KeyOf(job));
  });
  pods_.OnChange([this](kube::WatchEventType type, const Json& pod) {
    for (const std::string& key : PodsByJobIndex()(pod)) {
      if (options_.namespace_.empty() || key.rfind(options_.namespace_ + "/", 0) == 0) queue_.Add(key);
    }
    // A pod of ours gone or ended leaves room: jobs waiting for it look again
    // now, not at the next --unschedulable-retry (a job waited 25 s for room
    // freed by one deleted: a new user's trial).
    const std::string phase = pod.value("/status/phase"_json_pointer, std::string());
    if (type == kube::WatchEventType::kDeleted || phase == "Succeeded" || phase == "Failed") EnqueueWaitingJobs();
  });
  pods_.store().AddIndex(kPodsByNode, [](const Json& pod) -> std::vector<std::string> {
    const std::string node = pod.value("/spec/nodeName"_json_pointer, std::string());
    return node.empty() ? std::vector<std::string>{} : std::vector<std::string>{node};
  });
  // Room may have appeared (or gone): jobs waiting for it look again.
  nodes_.OnChange([this](kube::WatchEventType type, const Json& node) {
    EnqueueWaitingJobs();
    EnqueueJobsOnNode(type, node);
  });
}

Controller::~Controller() { queue_.ShutDown(); }

// Visits the cached jobs in place: copying 1,000 of them for every Node
// change, or after every reconcile, cost more than the reconcile itself.
// Recovering ones too: a lost pod's replacement may wait for room, and a
// node back took 16-21 s, the --unschedulable-retry's rest, to be used (a
// new user's trial).
void Controller::EnqueueWaitingJobs() {
  std::vector<std::string> waiting;
  jobs_.store().ForEach([&](const Json& job) {
    const std::string phase = job.value("/status/phase"_json_pointer, std::string(api::phase::kPending));
    if (phase == api::phase::kPending || phase == api::phase::kRecovering) waiting.push_back(kube::KeyOf(job));
  });
  for (const std::string& key : waiting) queue_.Add(key);
}

bool Controller::ChangedBeyondStatus(kube::WatchEventType type, const Json& job) {
  const std::string key = kube::KeyOf(job);
  std::lock_guard lock(jobs_mu_);
  if (type == kube::WatchEventType::kDeleted) {
    job_fingerprint_.erase(key);
    return true;
  }
  // All of it but what every write changes (its status, its version, who
  // wrote which field): its spec, labels, annotations, deletion, owners.
  Json rest = job;
  rest.erase("status");
  if (rest.contains("metadata") && rest["metadata"].is_object()) {
    rest["metadata"].erase("resourceVersion");
    rest["metadata"].erase("managedFields");
  }
  std::string fingerprint = rest.dump();
  auto [it, added] = job_fingerprint_.try_emplace(key, fingerprint);
  if (added) return true;
  if (it->second == fingerprint) return false;
  it->second = std::move(fingerprint);
  return true;
}

void Controller::EnqueueJobsOnNode(kube::WatchEventType type, const Json& node) {
  const std::string name = node.value("/metadata/name"_json_pointer, std::string());
  std::string state;  // gone: none
  if (type != kube::WatchEventType::kDeleted) {
    StatusOr<NodeView> view = NodeViewOfNode(node);
    if (!view.ok()) return;  // unreadable: placement leaves it out and says so
    state = std::string(view->ready ? "ready" : "not ready") + "|" + view->leaving;
  }
  {
    std::lock_guard lock(nodes_mu_);
    auto [it, added] = node_state_.try_emplace(name, state);
    // A node first seen has no change for its jobs to act on.
    if (added && state.empty()) node_state_.erase(it);
    if (added || it->second == state) return;
    it->second = state;
    if (state.empty()) node_state_.erase(it);
  }
  // A running job reads its nodes on its own only every --status-interval,
  // and a node's warning that it leaves changes none of its pods: a worker
  // there was moved up to an interval later, out of the notice it had.
  std::set<std::string> keys;
  for (const Json& pod : pods_.store().ByIndex(kPodsByNode, name)) {
    for (const std::string& key : PodsByJobIndex()(pod)) {
      if (options_.namespace_.empty() || key.rfind(options_.namespace_ + "/", 0) == 0) keys.insert(key);
    }
  }
  for (const std::string& key : keys) queue_.Add(key);
}

void Controller::CountPhase(const std::string& key, const Json* job) {
  std::lock_guard lock(phases_mu_);
  std::optional<std::string> was_in;
  if (auto was = phase_of_.find(key); was != phase_of_.end()) {
    was_in = was->second;
    metrics_.SetJobsInPhase(was->second, --in_phase_[was->second]);
    phase_of_.erase(was);
  }
  if (!job) return;
  const std::string phase = job->value("/status/phase"_json_pointer, std::string(api::phase::kPending));
  phase_of_[key] = phase;
  metrics_.SetJobsInPhase(phase, ++in_phase_[phase]);
  // Seen to fail, not found failed: a job already Failed when this replica
  // first listed it was counted by the replica that led then.
  if (phase == api::phase::kFailed && was_in && *was_in != api::phase::kFailed) {
    metrics_.CountJobFailure(FailedReason(*job));
  }
}

void Controller::Work() {
  while (std::optional<std::string> key = queue_.Get()) {
    const TimePoint started = clock_.Now();
    StatusOr<ReconcileOutcome> outcome = reconciler_.Reconcile(*key);
    const double seconds = std::chrono::duration<double>(clock_.Now() - started).count();
    metrics_.ObserveReconcile(seconds, outcome.ok());
    if (outcome.ok()) {
      queue_.Forget(*key);
      if (outcome->requeue_after) queue_.AddAfter(*key, *outcome->requeue_after);
      if (!outcome->placement.empty()) metrics_.CountPlacement(outcome->placement);
      if (!outcome->replan.empty()) metrics_.CountReplan(outcome->replan);
      if (outcome->recovered_after) metrics_.ObserveRecovery(ToSeconds(*outcome->recovered_after));
    } else {
      log_.Job(*key, "ReconcileFailed",
               outcome.status().ToString() + " (retry " + std::to_string(queue_.Retries(*key) + 1) + ")");
      queue_.AddRateLimited(*key);
    }
    queue_.Done(*key);
    metrics_.SetQueueDepth(queue_.Length());
  }
}

std::string Controller::ListFailure() const {
  for (const kube::Informer* informer : {&jobs_, &pods_, &nodes_, &plans_}) {
    const Status failed = informer->LastListError();
    if (failed.ok()) continue;
    const bool no_crd = failed.code() == StatusCode::kNotFound && informer == &jobs_;
    return "cannot list " + informer->type().plural + ", its cache kept as last listed: " + failed.message() +
           (no_crd ? " (is the TrainingJob CRD installed? kubectl apply -f crds/)" : "");
  }
  return "";
}

void Controller::Run(const std::atomic<bool>& stop) {
  std::vector<ClockThread> threads;
  threads.push_back(clock_.StartThread("trainingjob informer", [&] { jobs_.Run(stop); }));
  threads.push_back(clock_.StartThread("pod informer", [&] { pods_.Run(stop); }));
  threads.push_back(clock_.StartThread("node informer", [&] { nodes_.Run(stop); }));
  threads.push_back(clock_.StartThread("plan informer", [&] { plans_.Run(stop); }));
  // Reconciling on a half-filled cache would place on nodes it has not seen yet.
  for (kube::Informer* informer : {&jobs_, &pods_, &nodes_, &plans_}) {
    std::string said;
    while (!stop.load() && !informer->WaitForSync(clock_.Now() + std::chrono::milliseconds(200))) {
      // Why it waits, each time that changes: an operator started before its
      // CRD was applied waited in silence, /readyz saying "caches are being
      // filled" for ever (a new user's trial).
      metrics_.SetQueueDepth(queue_.Length());  // what waits for the caches (below)
      const Status failed = informer->LastListError();
      if (failed.ok()) SetWaiting("");  // listed: the next one's words, if any
      if (failed.ok() || failed.message() == said) continue;
      said = failed.message();
      const bool no_crd = failed.code() == StatusCode::kNotFound && informer == &jobs_;
      SetWaiting("cannot list " + informer->type().plural + " yet: " + said +
                 (no_crd ? " (is the TrainingJob CRD installed? kubectl apply -f crds/)" : ""));
      log_.Write(Waiting());
    }
  }
  SetWaiting("");
  std::string said;  // the list failure said last, once the caches were filled
  if (!stop.load()) {
    synced_ = true;
    log_.Write("caches filled: " + std::to_string(jobs_.store().Size()) + " TrainingJobs, " +
               std::to_string(nodes_.store().Size()) + " Nodes, " +
               std::to_string(pods_.store().Size()) + " Pods; " + std::to_string(options_.workers) +
               " reconcile workers");
    for (int i = 0; i < options_.workers; ++i) {
      threads.push_back(clock_.StartThread("reconcile worker", [this] { Work(); }));
    }
  }
  while (!stop.load()) {
    clock_.SleepFor(std::chrono::milliseconds(100));
    // Here too, not only as a reconcile ends: with every worker stuck in one,
    // the gauge kept what it read when the last ended (0, on a quiet
    // operator), and EdgetrainOperatorStuck, which asks for work waiting,
    // could not fire for what it was written for (found in review).
    metrics_.SetQueueDepth(queue_.Length());
    // A list that fails once the caches are filled (the CRD deleted, the
    // operator's rights taken away) leaves them as they were: said, as it
    // was before they filled, and again once it lists (it went unsaid in the
    // log and /readyz: a new user's trial).
    const std::string failing = ListFailure();
    if (failing == said) continue;
    log_.Write(failing.empty() ? std::string("every informer lists again") : failing);
    said = failing;
    SetWaiting(failing);
  }
  queue_.ShutDown();
  for (ClockThread& t : threads) t.Join();
}

}  // namespace edgetrain::operator_

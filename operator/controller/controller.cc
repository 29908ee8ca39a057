#include "operator/controller/controller.h"

#include <map>
#include <vector>

#include "api/job_conditions.h"
#include "operator/controller/job_labels.h"
#include "operator/controller/job_status.h"

namespace edgetrain::operator_ {

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
  jobs_.OnChange([this](kube::WatchEventType, const Json& job) { queue_.Add(kube::KeyOf(job)); });
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
  // Room may have appeared (or gone): jobs waiting for it look again.
  nodes_.OnChange([this](kube::WatchEventType, const Json&) { EnqueueWaitingJobs(); });
}

Controller::~Controller() { queue_.ShutDown(); }

// Visits the cached jobs in place: copying 1,000 of them for every Node
// change, or after every reconcile, cost more than the reconcile itself.
void Controller::EnqueueWaitingJobs() {
  std::vector<std::string> waiting;
  jobs_.store().ForEach([&](const Json& job) {
    if (job.value("/status/phase"_json_pointer, std::string(api::phase::kPending)) == api::phase::kPending) {
      waiting.push_back(kube::KeyOf(job));
    }
  });
  for (const std::string& key : waiting) queue_.Add(key);
}

void Controller::CountPhase(const std::string& key, const Json* job) {
  std::lock_guard lock(phases_mu_);
  if (auto was = phase_of_.find(key); was != phase_of_.end()) {
    metrics_.SetJobsInPhase(was->second, --in_phase_[was->second]);
    phase_of_.erase(was);
  }
  if (!job) return;
  const std::string phase = job->value("/status/phase"_json_pointer, std::string(api::phase::kPending));
  phase_of_[key] = phase;
  metrics_.SetJobsInPhase(phase, ++in_phase_[phase]);
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

void Controller::Run(const std::atomic<bool>& stop) {
  std::vector<ClockThread> threads;
  threads.push_back(clock_.StartThread("trainingjob informer", [&] { jobs_.Run(stop); }));
  threads.push_back(clock_.StartThread("pod informer", [&] { pods_.Run(stop); }));
  threads.push_back(clock_.StartThread("node informer", [&] { nodes_.Run(stop); }));
  threads.push_back(clock_.StartThread("plan informer", [&] { plans_.Run(stop); }));
  // Reconciling on a half-filled cache would place on nodes it has not seen yet.
  for (kube::Informer* informer : {&jobs_, &pods_, &nodes_, &plans_}) {
    while (!stop.load() && !informer->WaitForSync(clock_.Now() + std::chrono::milliseconds(200))) {
    }
  }
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
  while (!stop.load()) clock_.SleepFor(std::chrono::milliseconds(100));
  queue_.ShutDown();
  for (ClockThread& t : threads) t.Join();
}

}  // namespace edgetrain::operator_

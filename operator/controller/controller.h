#pragma once
// The TrainingJob controller: informers on TrainingJobs, Pods and Nodes feed a
// rate-limited work queue of job keys, and reconcile workers drain it. A job
// is queued when anything of it but its status changes (the status is the
// operator's own to write), when one of its pods changes, when a Node it has
// pods on turns ready or not or warns that it is leaving, and - while it
// waits to be placed - when any Node changes; a reconcile may ask to look again
// later (requeueAfter); a failed one backs off per job.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/clock.h"
#include "operator/controller/line_log.h"
#include "operator/controller/reconciler.h"
#include "operator/kube/informer.h"
#include "operator/kube/kube_client.h"
#include "operator/kube/work_queue.h"
#include "operator/operator_metrics.h"

namespace edgetrain::operator_ {

struct ControllerOptions {
  int workers = 2;            // reconciles at once (never two of one job)
  std::string namespace_;     // empty: every namespace
  kube::InformerOptions informers;
  kube::WorkQueueOptions queue;
  ReconcilerOptions reconciler;
};

class Controller {
 public:
  Controller(kube::KubeClient& client, Clock& clock, ProgressSource& progress, OperatorMetrics& metrics,
             LineLog& log, std::function<kube::WallTime()> wall_now, ControllerOptions options);
  ~Controller();

  // Runs until `stop`: the informers, then (once their caches are filled) the
  // workers.
  void Run(const std::atomic<bool>& stop);
  // Every informer has listed once: /readyz.
  bool Synced() const { return synced_.load(); }
  // Why a list fails, while one does: before the caches are filled
  // ("cannot list trainingjobs yet: ..."), or after, when a relist fails
  // and a cache stays as it was; else empty. /readyz.
  std::string Waiting() const {
    std::lock_guard lock(waiting_mu_);
    return waiting_;
  }

 private:
  // The first informer's whose last list failed, and why; empty: none.
  std::string ListFailure() const;
  void Work();
  void EnqueueWaitingJobs();
  // Whether the job changed in more than its status since it was last seen.
  // Its status is the operator's to write, and each write came back by the
  // watch to be reconciled again: its coordinator's /progress read again and,
  // moved on, written again, up to five times a read, the /progress read
  // every 2-3 s against --status-interval 5 s (a new user's trial). A
  // reconcile that needs another look asks for it (requeueAfter).
  bool ChangedBeyondStatus(kube::WatchEventType type, const Json& job);
  // The jobs with a pod on `node`, when what their reconcile reads of it
  // changed: whether it is ready, and whether it is leaving.
  void EnqueueJobsOnNode(kube::WatchEventType type, const Json& node);
  // The jobs-by-phase gauges, kept as the job cache changes: counting every
  // job after every reconcile was O(jobs) a reconcile, under the cache's lock.
  void CountPhase(const std::string& key, const Json* job);

  kube::KubeClient& client_;
  Clock& clock_;
  OperatorMetrics& metrics_;
  LineLog& log_;
  const ControllerOptions options_;
  kube::Informer jobs_, pods_, nodes_;
  // The operator's own ConfigMaps (job plans): read from here, not with a GET
  // each reconcile, which at 1,000 jobs was most of the requests it made.
  kube::Informer plans_;
  kube::WorkQueue queue_;
  EventRecorder events_;
  Reconciler reconciler_;
  std::atomic<bool> synced_{false};
  void SetWaiting(std::string why) {
    std::lock_guard lock(waiting_mu_);
    waiting_ = std::move(why);
  }
  mutable std::mutex waiting_mu_;
  std::string waiting_;  // guarded by waiting_mu_
  std::mutex phases_mu_;
  std::map<std::string, std::string> phase_of_;  // job key -> its phase; guarded by phases_mu_
  std::map<std::string, size_t> in_phase_;       // phase -> jobs; guarded by phases_mu_
  std::mutex jobs_mu_;
  std::map<std::string, std::string> job_fingerprint_;  // job key -> all of it but its status; guarded by jobs_mu_
  std::mutex nodes_mu_;
  std::map<std::string, std::string> node_state_;  // node -> "ready|leaving" as last seen; guarded by nodes_mu_
};

}  // namespace edgetrain::operator_

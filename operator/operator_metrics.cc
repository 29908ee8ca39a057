#include "operator/operator_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <mutex>

#include "api/job_conditions.h"

namespace edgetrain::operator_ {

struct OperatorMetrics::Impl {
  prometheus::Registry registry;
  prometheus::Family<prometheus::Histogram>& reconcile =
      prometheus::BuildHistogram()
          .Name("edgetrain_operator_reconcile_duration_seconds")
          .Help("Time one reconcile of a TrainingJob took, by result (ok, error)")
          .Register(registry);
  prometheus::Gauge& queue_depth = prometheus::BuildGauge()
                                       .Name("edgetrain_operator_queue_depth")
                                       .Help("TrainingJobs queued for a reconcile, ready now")
                                       .Register(registry)
                                       .Add({});
  prometheus::Family<prometheus::Gauge>& jobs =
      prometheus::BuildGauge().Name("edgetrain_operator_jobs").Help("TrainingJobs by phase").Register(registry);
  prometheus::Family<prometheus::Counter>& placements =
      prometheus::BuildCounter()
          .Name("edgetrain_operator_placements_total")
          .Help("Attempts to place a job's gang, by result (placed, unschedulable)")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& replans =
      prometheus::BuildCounter()
          .Name("edgetrain_operator_replans_total")
          .Help("New plans given to running teams, by reason (WorkerLost, WorkerMoved, CoordinatorLost, CoordinatorMoved)")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& job_failures =
      prometheus::BuildCounter()
          .Name("edgetrain_operator_job_failures_total")
          .Help("TrainingJobs this replica saw go Failed while it led, by the Failed condition's reason")
          .Register(registry);
  prometheus::Histogram& recovery =
      prometheus::BuildHistogram()
          .Name("edgetrain_operator_recovery_seconds")
          // Said whole: a soak trial read "(or having one moved)" as any
          // move, and took a sample for each loss.
          .Help("From a running team losing a worker (or having one moved off a leaving node) to every pod of it "
                "running on a ready node again; losses mended in one stretch are one sample")
          .Register(registry)
          .Add({}, prometheus::Histogram::BucketBoundaries{1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 120, 300, 600});
  prometheus::Gauge& leader = prometheus::BuildGauge()
                                  .Name("edgetrain_operator_leader")
                                  .Help("1 while this replica holds the leader lease and reconciles, else 0")
                                  .Register(registry)
                                  .Add({});
  prometheus::Gauge& client_qps_limit =
      prometheus::BuildGauge()
          .Name("edgetrain_operator_client_qps_limit")
          .Help("The client-side limit on API requests a second in force; 0 once the API server shows it does "
                "priority and fairness and --qps was not given")
          .Register(registry)
          .Add({});
  prometheus::Family<prometheus::Counter>& api_errors =
      prometheus::BuildCounter()
          .Name("edgetrain_operator_api_errors_total")
          .Help("Kubernetes API requests that failed, by verb and status code")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& api_requests =
      prometheus::BuildCounter()
          .Name("edgetrain_operator_api_requests_total")
          .Help("Kubernetes API requests made, by verb (what the client-side --qps limit spends)")
          .Register(registry);
  // One counter per verb, found once: the family's Add looks labels up under a lock.
  std::mutex requests_mu;
  std::map<std::string, prometheus::Counter*> requests_by_verb;  // guarded by requests_mu
};

namespace {
// Fine enough about 100 ms (the scale benchmark's p99 target) for
// histogram_quantile to say which side of it a percentile falls.
const prometheus::Histogram::BucketBoundaries kReconcileBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075,
                                                                  0.1,   0.15,   0.25,  0.5,  1,     2.5,  5};
}  // namespace

// Every series of a known label value exists from the start, at 0, so that its
// first increment is a rise Prometheus' rate() sees (a series born at 1 is not).
OperatorMetrics::OperatorMetrics() : impl_(std::make_unique<Impl>()) {
  for (const char* result : {"ok", "error"}) impl_->reconcile.Add({{"result", result}}, kReconcileBuckets);
  for (const char* result : {"placed", "unschedulable"}) impl_->placements.Add({{"result", result}});
  for (const char* reason : {"WorkerLost", "WorkerMoved", "CoordinatorLost", "CoordinatorMoved"}) {
    impl_->replans.Add({{"reason", reason}});
  }
  // Every reason the reconciler fails a job with (a reason first seen at 1 is
  // a rise increase() misses).
  namespace why = api::reason;
  for (const char* reason : {why::kInvalidSpec, why::kNotSupported, why::kInvalidModel, why::kInvalidStages,
                             why::kNameTaken, why::kModelCheckFailed, why::kCoordinatorFailed, why::kCoordinatorLost,
                             why::kRecoveriesExhausted, why::kWorkersRefused}) {
    impl_->job_failures.Add({{"reason", reason}});
  }
  // Every verb the client sends (kube::ObservedKubeClient): `delete` and
  // `patch` had no series until first sent (a user's trial of the metrics).
  // And its refusals, 401 and 403 (FAILED_PRECONDITION, kube/kube_client.cc):
  // EdgetrainOperatorRequestsRefused's increase() missed a burst of them
  // whose series began at its first count (a user's trial of the alerts).
  for (const char* verb : {"get", "list", "create", "update", "patch", "delete", "watch"}) {
    CountApiRequests(verb, 0);
    impl_->api_errors.Add({{"verb", verb}, {"code", StatusCodeName(StatusCode::kFailedPrecondition)}});
  }
}
OperatorMetrics::~OperatorMetrics() = default;

void OperatorMetrics::ObserveReconcile(double seconds, bool ok) {
  impl_->reconcile.Add({{"result", ok ? "ok" : "error"}}, kReconcileBuckets).Observe(seconds);
}
void OperatorMetrics::SetQueueDepth(size_t depth) { impl_->queue_depth.Set(static_cast<double>(depth)); }
void OperatorMetrics::SetJobsInPhase(const std::string& phase, size_t jobs) {
  impl_->jobs.Add({{"phase", phase}}).Set(static_cast<double>(jobs));
}
void OperatorMetrics::CountPlacement(const std::string& result) { impl_->placements.Add({{"result", result}}).Increment(); }
void OperatorMetrics::CountReplan(const std::string& reason) { impl_->replans.Add({{"reason", reason}}).Increment(); }
void OperatorMetrics::CountApiError(const std::string& verb, StatusCode code) {
  impl_->api_errors.Add({{"verb", verb}, {"code", StatusCodeName(code)}}).Increment();
}
void OperatorMetrics::CountApiRequest(const std::string& verb) { CountApiRequests(verb, 1); }
void OperatorMetrics::CountApiRequests(const std::string& verb, int requests) {
  prometheus::Counter* counter;
  {
    std::lock_guard lock(impl_->requests_mu);
    prometheus::Counter*& c = impl_->requests_by_verb[verb];
    if (!c) c = &impl_->api_requests.Add({{"verb", verb}});
    counter = c;
  }
  counter->Increment(requests);
}
void OperatorMetrics::CountJobFailure(const std::string& reason) {
  impl_->job_failures.Add({{"reason", reason}}).Increment();
}
void OperatorMetrics::ObserveRecovery(double seconds) { impl_->recovery.Observe(seconds); }
void OperatorMetrics::SetLeader(bool leading) { impl_->leader.Set(leading ? 1 : 0); }
void OperatorMetrics::SetClientQpsLimit(double qps) { impl_->client_qps_limit.Set(qps); }
std::string OperatorMetrics::Render() const {
  return prometheus::TextSerializer().Serialize(impl_->registry.Collect());
}

}  // namespace edgetrain::operator_

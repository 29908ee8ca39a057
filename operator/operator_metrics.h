#pragma once
// The operator's own Prometheus metrics (docs/metrics.md, "The operator"):
// how long reconciles take, how deep the queue is, jobs by phase, placements
// and API errors by verb and code. prometheus-cpp stays behind this header.

#include <memory>
#include <string>

#include "core/status.h"

namespace edgetrain::operator_ {

class OperatorMetrics {
 public:
  OperatorMetrics();
  ~OperatorMetrics();

  void ObserveReconcile(double seconds, bool ok);
  void SetQueueDepth(size_t depth);
  void SetJobsInPhase(const std::string& phase, size_t jobs);
  void CountPlacement(const std::string& result);  // "placed" | "unschedulable"
  void CountReplan(const std::string& reason);     // a running team's new plan: WorkerLost | WorkerMoved | CoordinatorLost | CoordinatorMoved
  void ObserveRecovery(double seconds);            // a recovering team whole again, this long after
  // A job seen to go Failed, by its Failed condition's reason: an event to
  // alert on, where the jobs in phase Failed stay until they are deleted.
  void CountJobFailure(const std::string& reason);
  void CountApiError(const std::string& verb, StatusCode code);
  void CountApiRequest(const std::string& verb);
  void SetLeader(bool leading);
  void SetClientQpsLimit(double qps);  // 0: none (the API server does priority and fairness)

  std::string Render() const;

 private:
  void CountApiRequests(const std::string& verb, int requests);  // 0: its series made, at 0

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace edgetrain::operator_

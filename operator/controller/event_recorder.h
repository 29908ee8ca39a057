#pragma once
// Kubernetes Events about a TrainingJob: each decision the operator takes
// (placed, unschedulable, torn down after the gang timeout, succeeded, failed),
// so that `kubectl describe tj` tells the job's story. An event that cannot be
// written is logged and otherwise ignored: events are never worth failing a
// reconcile for.

#include <atomic>
#include <functional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "operator/controller/line_log.h"
#include "operator/kube/kube_client.h"
#include "operator/kube/kube_time.h"

namespace edgetrain::operator_ {

class EventRecorder {
 public:
  EventRecorder(kube::KubeClient& client, std::function<kube::WallTime()> wall_now, LineLog& log)
      : client_(client), wall_now_(std::move(wall_now)), log_(log) {}

  // `type` is "Normal" or "Warning"; `reason` one of api/job_conditions.h's.
  void Record(const nlohmann::json& job, const std::string& type, const std::string& reason,
              const std::string& message);

 private:
  kube::KubeClient& client_;
  std::function<kube::WallTime()> wall_now_;
  LineLog& log_;
  std::atomic<uint64_t> sequence_{0};
};

}  // namespace edgetrain::operator_

#pragma once
// Kubernetes Events about a TrainingJob: each decision the operator takes
// (placed, unschedulable, torn down after the gang timeout, succeeded, failed),
// so that `kubectl describe tj` tells the job's story. An event that cannot be
// written is logged and otherwise ignored: events are never worth failing a
// reconcile for.
//
// An event said again of the same job, alike in type, reason and message,
// counts on the one already written (its count and lastTimestamp, as
// client-go's recorder does), so that describe shows "(x4 over 3m)" rather
// than four lines: a job waiting for room said Unschedulable once for each
// change of room and back, and a worker's loss twice.

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <ostream>
#include <string>
#include <unordered_map>

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

  // Events remembered to count on, the least recently said forgotten first
  // (client-go keeps as many).
  static constexpr size_t kRemembered = 4096;

 private:
  // An event written, as said so far.
  struct Said {
    std::string name;
    std::string namespace_;
    int64_t count = 0;
  };
  // The event counted on, if one alike was said before: its count raised
  // there. False when none was, or its object is gone (Events expire, an
  // hour by default): a new one is written.
  bool CountOn(const std::string& key, const std::string& stamp);
  void Remember(const std::string& key, Said said);

  kube::KubeClient& client_;
  std::function<kube::WallTime()> wall_now_;
  LineLog& log_;
  std::atomic<uint64_t> sequence_{0};
  std::mutex mu_;
  std::list<std::string> recent_;  // keys, the most recently said first
  std::unordered_map<std::string, std::pair<Said, std::list<std::string>::iterator>> said_;
};

}  // namespace edgetrain::operator_

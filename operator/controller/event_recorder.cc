#include "operator/controller/event_recorder.h"

#include <cstdio>

#include "operator/controller/job_labels.h"

namespace edgetrain::operator_ {

void EventRecorder::Record(const nlohmann::json& job, const std::string& type, const std::string& reason,
                           const std::string& message) {
  const nlohmann::json& meta = job.at("metadata");
  const std::string ns = meta.value("namespace", "default");
  const std::string name = meta.value("name", "");
  const kube::WallTime now = wall_now_();
  // Named as client-go names them: the object's name and a unique suffix.
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, ".%llx%04llx",
                static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                    now.time_since_epoch())
                                                    .count()),
                static_cast<unsigned long long>(sequence_++ & 0xffff));
  const std::string stamp = kube::FormatKubeTime(now);
  nlohmann::json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", name + suffix}, {"namespace", ns}}},
      {"involvedObject",
       {{"apiVersion", job.value("apiVersion", "edgetrain.dev/v1alpha1")},
        {"kind", "TrainingJob"},
        {"name", name},
        {"namespace", ns},
        {"uid", meta.value("uid", "")},
        {"resourceVersion", meta.value("resourceVersion", "")}}},
      {"reason", reason},
      {"message", message},
      {"type", type},
      {"count", 1},
      {"firstTimestamp", stamp},
      {"lastTimestamp", stamp},
      {"source", {{"component", kOperatorName}}},
      {"reportingComponent", kOperatorName},
  };
  StatusOr<nlohmann::json> made = client_.Create(kube::kEvents, ns, event);
  if (!made.ok()) {
    log_.Job(ns + "/" + name, reason, "event not recorded: " + made.status().message());
  }
}

}  // namespace edgetrain::operator_

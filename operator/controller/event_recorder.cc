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
  const std::string stamp = kube::FormatKubeTime(now);
  // The object's uid is part of what is alike: a job deleted and made again
  // under its name starts its story afresh.
  const std::string key = ns + "/" + name + "/" + meta.value("uid", "") + "\n" + type + "\n" + reason + "\n" + message;
  if (CountOn(key, stamp)) return;
  // Named as client-go names them: the object's name and a unique suffix.
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, ".%llx%04llx",
                static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                    now.time_since_epoch())
                                                    .count()),
                static_cast<unsigned long long>(sequence_++ & 0xffff));
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
    return;
  }
  Remember(key, {made->value("/metadata/name"_json_pointer, name + suffix), ns, 1});
}

bool EventRecorder::CountOn(const std::string& key, const std::string& stamp) {
  Said said;
  {
    std::lock_guard lock(mu_);
    const auto it = said_.find(key);
    if (it == said_.end()) return false;
    it->second.first.count += 1;
    said = it->second.first;
    recent_.splice(recent_.begin(), recent_, it->second.second);
  }
  const StatusOr<nlohmann::json> patched =
      client_.MergePatch(kube::kEvents, said.namespace_, said.name, {{"count", said.count}, {"lastTimestamp", stamp}});
  if (patched.ok()) return true;
  std::lock_guard lock(mu_);
  if (const auto it = said_.find(key); it != said_.end()) {
    recent_.erase(it->second.second);
    said_.erase(it);
  }
  return false;
}

void EventRecorder::Remember(const std::string& key, Said said) {
  std::lock_guard lock(mu_);
  if (const auto it = said_.find(key); it != said_.end()) {
    recent_.erase(it->second.second);
    said_.erase(it);
  }
  recent_.push_front(key);
  said_.emplace(key, std::pair{std::move(said), recent_.begin()});
  while (said_.size() > kRemembered) {
    said_.erase(recent_.back());
    recent_.pop_back();
  }
}

}  // namespace edgetrain::operator_

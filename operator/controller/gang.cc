#include "operator/controller/gang.h"

#include <algorithm>
#include <map>

#include "api/job_conditions.h"
#include "core/duration_text.h"
#include "operator/controller/job_labels.h"
#include "operator/controller/job_status.h"

namespace edgetrain::operator_ {
namespace {

const Json* AgentStatus(const Json& pod) {
  const Json* statuses = pod.contains("status") ? &pod["status"] : nullptr;
  if (!statuses || !statuses->contains("containerStatuses")) return nullptr;
  for (const Json& c : (*statuses)["containerStatuses"]) {
    if (c.value("name", "") == "agent") return &c;
  }
  return nullptr;
}

// The agent's exit, once its container has ended for good or for now:
// state.terminated, else lastState.terminated (restarting).
const Json* Terminated(const Json& agent, bool last) {
  const char* which = last ? "lastState" : "state";
  if (agent.contains(which) && agent[which].contains("terminated")) return &agent[which]["terminated"];
  return nullptr;
}

std::string Describe(const Json& terminated) {
  std::string text = "exit code " + std::to_string(terminated.value("exitCode", -1));
  const std::string reason = terminated.value("reason", "");
  if (!reason.empty()) text += " (" + reason + ")";
  return text;
}

// The agent's result JSON, when its termination message is one.
std::optional<Json> ResultOf(const Json& terminated) {
  Json j = Json::parse(terminated.value("message", ""), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("state") || !j["state"].is_string()) return std::nullopt;
  return j;
}

// ": its error", from a result that has one: as text, whatever the image
// wrote there ({"error": {"code": 1}} had thrown, and ended the operator).
std::string ErrorSaid(const std::optional<Json>& result) {
  if (!result || !result->contains("error")) return "";
  const Json& error = (*result)["error"];
  return ": " + (error.is_string() ? error.get<std::string>() : error.dump());
}

// Why the agent's container waits, when that is worth saying: not the
// ordinary start (ContainerCreating, PodInitializing).
std::string WaitingFor(const Json& pod) {
  const Json* agent = AgentStatus(pod);
  if (!agent || !agent->contains("state") || !(*agent)["state"].contains("waiting")) return "";
  const Json& waiting = (*agent)["state"]["waiting"];
  const std::string reason = waiting.value("reason", "");
  if (reason.empty() || reason == "ContainerCreating" || reason == "PodInitializing") return "";
  const std::string message = waiting.value("message", "");
  return message.empty() ? reason : reason + " (" + message + ")";
}

}  // namespace

bool InGang(const Json& pod, const std::vector<std::string>& expected_pods) {
  const Json& meta = pod.at("metadata");
  return !meta.contains("deletionTimestamp") &&
         std::find(expected_pods.begin(), expected_pods.end(), meta.value("name", "")) != expected_pods.end();
}

std::vector<Json> GangPods(const std::vector<Json>& pods, const std::vector<std::string>& expected_pods) {
  std::vector<Json> gang;
  for (const Json& pod : pods) {
    if (InGang(pod, expected_pods)) gang.push_back(pod);
  }
  return gang;
}

Gang ObserveGang(const std::vector<Json>& pods, const std::vector<std::string>& expected_pods, const GangRules& rules) {
  Gang gang;
  gang.expected = static_cast<int>(expected_pods.size());
  std::map<std::string, const Json*> current;
  for (const Json& pod : pods) {
    const Json& meta = pod.at("metadata");
    const std::string name = meta.value("name", "");
    if (InGang(pod, expected_pods)) {
      current[name] = &pod;
    } else if (!meta.contains("deletionTimestamp")) {  // not the plan's: to delete
      gang.stale.push_back(name);
    }
  }
  for (const std::string& name : expected_pods) {
    if (!current.count(name)) gang.missing.push_back(name);
  }
  gang.present = static_cast<int>(current.size());

  // The coordinator decides how the job ends.
  const std::string& coordinator_name = expected_pods.front();
  if (auto it = current.find(coordinator_name); it != current.end()) {
    const Json& pod = *it->second;
    const std::string phase = pod.value("/status/phase"_json_pointer, std::string());
    gang.coordinator_ip = pod.value("/status/podIP"_json_pointer, std::string());
    if (const Json* agent = AgentStatus(pod)) {
      gang.coordinator_restarts = agent->value("restartCount", 0);
      if (const Json* done = Terminated(*agent, false); done && phase == "Succeeded") {
        gang.state = GangState::kSucceeded;
        gang.result = ResultOf(*done);
        if (done->contains("finishedAt") && (*done)["finishedAt"].is_string()) gang.ended_at = (*done)["finishedAt"];
        return gang;
      }
      // Exit 2 is the agent saying its input is wrong: restarting cannot help.
      for (bool last : {false, true}) {
        const Json* ended = Terminated(*agent, last);
        if (ended && ended->value("exitCode", 0) == 2) {
          gang.state = GangState::kFailed;
          gang.failure_reason = api::reason::kCoordinatorFailed;
          gang.failure = "the coordinator refused its input: " + Describe(*ended);
          gang.failure += ErrorSaid(ResultOf(*ended));
          gang.result = ResultOf(*ended);
          return gang;
        }
      }
      for (bool last : {false, true}) {
        const Json* ended = Terminated(*agent, last);
        if (rules.restart_cannot_mend.empty() || !ended || ended->value("exitCode", 0) == 0) continue;
        gang.state = GangState::kFailed;
        gang.failure_reason = api::reason::kCoordinatorFailed;
        gang.failure = "the coordinator failed, " + Describe(*ended);
        gang.failure += ErrorSaid(ResultOf(*ended));
        gang.failure += "; restarting it cannot help: " + rules.restart_cannot_mend;
        gang.result = ResultOf(*ended);
        return gang;
      }
      if (agent->value("restartCount", 0) > rules.max_restarts) {
        gang.state = GangState::kFailed;
        gang.failure_reason = api::reason::kCoordinatorFailed;
        const Json* last = Terminated(*agent, true);
        gang.failure = "the coordinator failed " + std::to_string(agent->value("restartCount", 0)) +
                       " times, more than spec.faultTolerance.maxRecoveries (" + std::to_string(rules.max_restarts) +
                       ")" + (last ? "; last " + Describe(*last) : "");
        return gang;
      }
    }
    if (phase == "Failed") {
      gang.state = GangState::kFailed;
      gang.coordinator_pod_failed = true;
      gang.failure_reason = api::reason::kCoordinatorFailed;
      gang.failure = "the coordinator's pod failed: " + pod.value("/status/reason"_json_pointer, std::string("?")) +
                     " " + pod.value("/status/message"_json_pointer, std::string());
      return gang;
    }
  }
  // Every worker refused its input (exit 2: a model that computes NaN, a
  // part of the data it cannot read) and is not running again: restarting
  // cannot help, and they crash-looped while the job was shown running.
  if (expected_pods.size() > 1) {
    std::string said;
    bool every_one = true;
    for (size_t i = 1; i < expected_pods.size() && every_one; ++i) {
      const auto it = current.find(expected_pods[i]);
      const Json* agent = it == current.end() ? nullptr : AgentStatus(*it->second);
      const Json* refused = nullptr;
      if (agent && !(agent->contains("state") && (*agent)["state"].contains("running"))) {
        for (bool last : {false, true}) {
          const Json* ended = Terminated(*agent, last);
          if (ended && ended->value("exitCode", 0) == 2 && !refused) refused = ended;
        }
      }
      every_one = refused != nullptr;
      if (refused && said.empty()) {
        said = expected_pods[i] + " " + Describe(*refused);
        said += ErrorSaid(ResultOf(*refused));
      }
    }
    if (every_one) {
      gang.state = GangState::kFailed;
      gang.failure_reason = api::reason::kWorkersRefused;
      gang.failure = "every worker refused its input (exit 2), which restarting cannot mend; " + said;
      return gang;
    }
  }
  for (const auto& [name, pod] : current) {
    const std::string phase = pod->value("/status/phase"_json_pointer, std::string());
    // A worker that ended well (the coordinator told it to stop) counts as done.
    if (phase == "Running" || (phase == "Succeeded" && name != coordinator_name)) {
      ++gang.running;
      if (phase == "Running") {
        if (std::string why = WaitingFor(*pod); !why.empty()) gang.restarting.push_back(name + ": " + why);
        if (const Json* agent = AgentStatus(*pod); agent && !agent->value("ready", false)) ++gang.not_ready;
      }
    } else if (std::string why = WaitingFor(*pod); !why.empty()) {
      gang.held.push_back(name + ": " + why);
    }
  }
  if (gang.present == 0) {
    gang.state = GangState::kAbsent;
  } else if (gang.running == gang.expected) {
    gang.state = GangState::kRunning;
  } else {
    gang.state = GangState::kStarting;
  }
  return gang;
}

bool GangTimedOut(const Gang& gang, TimePoint placed_at, TimePoint now, Duration timeout) {
  return gang.state == GangState::kStarting || gang.state == GangState::kAbsent ? now - placed_at >= timeout : false;
}

std::string StartingMessage(const Gang& gang) {
  std::string message = std::to_string(gang.running) + "/" + std::to_string(gang.expected) + " pods running";
  // Pods held for the same reason are named together: an image that cannot
  // be pulled repeated the kubelet's 300 characters once a pod (a new
  // user's trial). Each entry is "pod: why".
  std::vector<std::pair<std::string, std::string>> reasons;  // why, the pods it holds
  for (const std::string& held : gang.held) {
    const size_t colon = held.find(": ");
    const std::string pod = held.substr(0, colon);
    const std::string why = colon == std::string::npos ? "" : held.substr(colon + 2);
    auto same = std::find_if(reasons.begin(), reasons.end(), [&](const auto& r) { return r.first == why; });
    if (same == reasons.end()) {
      reasons.emplace_back(why, pod);
    } else {
      same->second += ", " + pod;
    }
  }
  for (size_t i = 0; i < reasons.size() && i < 3; ++i) {
    message += (i ? "; " : ": ") + reasons[i].second + (reasons[i].first.empty() ? "" : ": " + reasons[i].first);
  }
  if (reasons.size() > 3) message += "; and " + std::to_string(reasons.size() - 3) + " more reasons";
  return message;
}

Duration GangBackOff(Duration timeout, int64_t timeouts) {
  return timeout * (int64_t{1} << std::clamp<int64_t>(timeouts - 1, 0, 3));
}

std::optional<kube::WallTime> GangBackOffEnds(const Json& spec, const Json& status, int64_t generation) {
  const Json* placed = FindCondition(status, api::condition::kPlaced);
  if (!placed || placed->value("status", "") != "False" ||
      placed->value("reason", "") != api::reason::kGangTimeout ||
      placed->value("observedGeneration", generation) != generation) {
    return std::nullopt;
  }
  const std::optional<kube::WallTime> since = kube::ParseKubeTime(placed->value("lastTransitionTime", ""));
  if (!since) return std::nullopt;
  const StatusOr<Duration> timeout =
      ParseDuration(spec.value("/placement/gangTimeout"_json_pointer, std::string("5m")));
  const Duration backoff = GangBackOff(timeout.ok() ? *timeout : std::chrono::minutes(5),
                                       status.value("gangTimeouts", int64_t{1}));
  return *since + std::chrono::duration_cast<kube::WallTime::duration>(backoff);
}

}  // namespace edgetrain::operator_

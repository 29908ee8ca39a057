#include "operator/controller/job_status.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "api/job_conditions.h"
#include "core/duration_text.h"
#include "operator/controller/job_labels.h"

namespace edgetrain::operator_ {

const Json* FindCondition(const Json& status, const std::string& type) {
  if (!status.contains("conditions")) return nullptr;
  for (const Json& c : status["conditions"]) {
    if (c.value("type", "") == type) return &c;
  }
  return nullptr;
}

bool ConditionIs(const Json& status, const std::string& type, bool value) {
  const Json* c = FindCondition(status, type);
  return c && c->value("status", "") == (value ? "True" : "False");
}

void SetCondition(Json& status, const ConditionUpdate& update, const std::string& now, int64_t generation) {
  if (!status.contains("conditions") || !status["conditions"].is_array()) status["conditions"] = Json::array();
  const std::string value = update.status ? "True" : "False";
  for (Json& c : status["conditions"]) {
    if (c.value("type", "") != update.type) continue;
    if (c.value("status", "") != value) c["lastTransitionTime"] = now;
    c["status"] = value;
    c["reason"] = update.reason;
    c["message"] = update.message;
    c["observedGeneration"] = generation;
    return;
  }
  status["conditions"].push_back({{"type", update.type},
                                  {"status", value},
                                  {"reason", update.reason},
                                  {"message", update.message},
                                  {"lastTransitionTime", now},
                                  {"observedGeneration", generation}});
}

void KeepTransitionTimes(Json& status, const Json& stored) {
  if (!status.contains("conditions") || !status["conditions"].is_array()) return;
  for (Json& c : status["conditions"]) {
    const Json* before = FindCondition(stored, c.value("type", ""));
    if (before && before->value("status", "") == c.value("status", "") && before->contains("lastTransitionTime")) {
      c["lastTransitionTime"] = before->at("lastTransitionTime");
    }
  }
}

PhaseReason PhaseReasonOf(const Json& status) {
  namespace condition = api::condition;
  namespace phase = api::phase;
  const std::string current = status.value("phase", "");
  // The first of `types` whose condition has `value` and a reason.
  auto first = [&](std::initializer_list<const char*> types, bool value) -> std::optional<PhaseReason> {
    for (const char* type : types) {
      const Json* c = FindCondition(status, type);
      if (c && c->value("status", "") == (value ? "True" : "False") && !c->value("reason", "").empty()) {
        return PhaseReason{c->value("reason", ""), c->value("message", "")};
      }
    }
    return std::nullopt;
  };
  std::optional<PhaseReason> why;
  if (current == phase::kFailed) {
    why = first({condition::kFailed, condition::kInvalid}, true);
  } else if (current == phase::kSucceeded) {
    why = first({condition::kComplete}, true);
  } else if (current == phase::kPending || current == phase::kSuspended) {
    // Refused until the spec or the cluster changes, or not placed yet.
    why = first({condition::kInvalid}, true);
    if (!why) why = first({condition::kPlaced}, false);
  } else if (current == phase::kPlacing || current == phase::kRecovering) {
    why = first({condition::kRunning}, false);  // Starting, Resuming; Recovering, with what was lost
  } else if (current == phase::kRunning) {
    // What holds the team before what merely slows it, and a replay after both.
    why = first({condition::kStalled, condition::kBandwidthDegraded, condition::kReplaying}, true);
    // Training; or Restarting, an agent restarted in place while its pod runs.
    if (!why) why = first({condition::kRunning}, true);
    if (!why) why = first({condition::kRunning}, false);
  }
  return why.value_or(PhaseReason{});
}

void SetPhaseReason(Json& status) {
  const PhaseReason why = PhaseReasonOf(status);
  if (why.reason.empty()) {
    status.erase("reason");
    status.erase("message");
    return;
  }
  status["reason"] = why.reason;
  status["message"] = why.message;
}

std::string EtaText(double seconds) {
  // A figure of the coordinator's /progress, which a job's own image serves:
  // not finite, or past the longest duration edgetrain counts, is that longest.
  const double longest = ToSeconds(kLongestDuration);
  seconds = std::isfinite(seconds) ? std::min(seconds, longest) : longest;
  return FormatDuration(std::chrono::seconds(static_cast<int64_t>(std::llround(std::max(0.0, seconds)))));
}

namespace {
// `x` rounded to `digits` significant digits (0, NaN and infinities as they are).
double ToSignificantDigits(double x, int digits) {
  if (x == 0 || !std::isfinite(x)) return x;
  const double scale = std::pow(10.0, digits - static_cast<int>(std::ceil(std::log10(std::fabs(x)))));
  return std::round(x * scale) / scale;
}
}  // namespace

Json ProgressStatusOf(const Json& progress) {
  Json out = Json::object();
  for (const char* key : {"iteration", "samples", "loss", "accuracy", "energyJoules"}) {
    // A value the coordinator does not have yet is null there, and left out here.
    if (progress.contains(key) && progress[key].is_number()) out[key] = progress[key];
  }
  // To four places, as `kubectl get tj` shows it (it printed 0.9111111111111111;
  // a test set's accuracy has no more to say than that).
  if (out.contains("accuracy")) out["accuracy"] = std::round(out["accuracy"].get<double>() * 1e4) / 1e4;
  // To the joule's tenth, the model's resolution at best (kubectl describe
  // showed 999.4560457439998: a new user's trial); the loss to four
  // significant digits, not places: a job trained well read "Loss: 0" where
  // its metric said 0.00077 (another trial).
  if (out.contains("energyJoules")) out["energyJoules"] = std::round(out["energyJoules"].get<double>() * 10) / 10;
  if (out.contains("loss")) out["loss"] = ToSignificantDigits(out["loss"].get<double>(), 4);
  if (progress.contains("etaSeconds") && progress["etaSeconds"].is_number()) {
    out["eta"] = EtaText(progress["etaSeconds"].get<double>());
  }
  // Training has stopped, and why: a coordinator that then ends answers no
  // more, which is its finishing, not a silence (SayProgressUnanswered).
  if (progress.contains("stopReason") && progress["stopReason"].is_string() &&
      !progress["stopReason"].get<std::string>().empty()) {
    out["stopReason"] = progress["stopReason"];
  }
  return out;
}

void KeepWhatWasRead(Json& workers, const Json& stored, bool with_states) {
  if (!stored.is_array()) return;
  for (Json& w : workers) {
    for (const Json& was : stored) {
      if (!was.is_object() || was.value("name", "") != w.value("name", "")) continue;
      for (const auto& [key, value] : was.items()) {
        if (!with_states && (key == "silentSince" || key == "quarantined")) continue;
        if (!w.contains(key)) w[key] = value;
      }
    }
  }
}

Json WorkersStatusOf(const std::vector<Json>& pods, const Json& progress, std::optional<kube::WallTime> read_at,
                     Duration silent_after, const std::map<int, GoneWorker>& gone) {
  std::map<int, const Json*> by_rank;
  if (progress.contains("workers")) {
    for (const Json& w : progress["workers"]) by_rank[w.value("rank", -1)] = &w;
  }
  // A worker's or stage device's figures, as /progress gives them.
  auto fill = [&](Json& w, const Json& p) {
    if (p.contains("batchSize")) w["batchSize"] = p["batchSize"];
    // 0 is the coordinator's "not measured yet" (a push too small to time).
    if (p.contains("bandwidthMbps") && p["bandwidthMbps"].is_number() && p["bandwidthMbps"].get<double>() > 0) {
      w["bandwidthMbps"] = p["bandwidthMbps"];
    }
    // To four places, as the accuracy (kubectl describe showed
    // 0.7389800848370992: a new user's trial).
    if (p.contains("stallFraction") && p["stallFraction"].is_number()) {
      w["stallFraction"] = std::round(p["stallFraction"].get<double>() * 1e4) / 1e4;
    }
    if (p.contains("quarantined") && p["quarantined"].is_string()) w["quarantined"] = p["quarantined"];
    // When it went silent, not when the operator read so: a recovery was
    // timed 30.7 s of 40.7, from a LinkDown seen 10 s after its node's
    // kill (a new user's trial).
    // Finite, and within the longest duration edgetrain counts, or none.
    if (const double silent = p.value("silentSeconds", 0.0); read_at && std::isfinite(silent) &&
                                                               silent >= ToSeconds(silent_after) &&
                                                               silent <= ToSeconds(kLongestDuration)) {
      w["silentSince"] = kube::FormatKubeTimePrecise(
          *read_at - std::chrono::duration_cast<kube::WallTime::duration>(std::chrono::duration<double>(silent)));
    }
    // What it trained on, and of a stream what arrived: the counts edgetrain
    // run's tables give (a new user found none of them on Kubernetes).
    if (p.contains("samples") && p["samples"].is_number_integer()) w["samples"] = p["samples"];
    if (p.contains("injectedSamples") && p["injectedSamples"].is_number_integer()) {
      w["injectedSamples"] = p["injectedSamples"];
    }
    if (p.contains("stream") && p["stream"].is_object()) {
      Json stream = Json::object();
      for (const char* key : {"arrived", "dropped", "backlog"}) {
        if (p["stream"].contains(key) && p["stream"][key].is_number_integer()) stream[key] = p["stream"][key];
      }
      w["stream"] = stream;
    }
    // A stage's layers as they are now: a lost neighbour's taken on, or moved.
    if (p.contains("/layers/first"_json_pointer) && p.contains("/layers/end"_json_pointer)) {
      w["layers"] = std::to_string(p["layers"]["first"].get<int>()) + "-" +
                    std::to_string(p["layers"]["end"].get<int>() - 1);
    }
  };
  Json workers = Json::array();
  std::set<int> listed;
  for (const Json& pod : pods) {
    const Json labels = pod.value("/metadata/labels"_json_pointer, Json::object());
    const std::string role = labels.value(kRoleLabel, "");
    if (role.empty()) continue;
    Json w = {{"name", pod.value("/metadata/name"_json_pointer, std::string())},
              {"node", pod.value("/spec/nodeName"_json_pointer, std::string())},
              {"role", role}};
    if (role == "worker" || role == "stage") {
      const int rank = std::atoi(labels.value(kRankLabel, "-1").c_str());
      listed.insert(rank);
      if (auto it = by_rank.find(rank); it != by_rank.end()) fill(w, *it->second);
    }
    workers.push_back(w);
  }
  for (const auto& [rank, p] : by_rank) {
    auto it = gone.find(rank);
    if (listed.count(rank) || it == gone.end()) continue;
    Json w = {{"name", it->second.name}, {"node", it->second.node}, {"role", "worker"}};
    fill(w, *p);
    workers.push_back(w);
  }
  return workers;
}

LinkHealth LinkHealthOf(const Json& progress, const std::vector<double>& planned_mbps, const LinkRules& rules,
                        const std::map<int, double>& pod_age_s) {
  LinkHealth health;
  if (!progress.contains("workers")) return health;
  std::string below, down, waits_on;
  int silent = 0;
  auto add = [](std::string& list, const std::string& item) { list += (list.empty() ? "" : ", ") + item; };
  char text[160];
  for (const Json& w : progress["workers"]) {
    const int rank = w.value("rank", -1);
    double out = w.value("silentSeconds", 0.0);
    if (auto age = pod_age_s.find(rank); age != pod_age_s.end()) out = std::min(out, age->second);
    const bool gone_quiet = out >= ToSeconds(rules.link_down_after) && w.value("quarantined", "").empty();
    if (!w.value("active", true)) {
      // Out of the team: it does not wait, but its link may be down.
      if (gone_quiet) {
        std::snprintf(text, sizeof text, "worker %d silent for %.0f s", rank, out);
        add(down, text);
        ++silent;
        std::snprintf(text, sizeof text, "worker %d (out of the team, silent for %.0f s)", rank, out);
        add(waits_on, text);
      }
      continue;
    }
    if (gone_quiet) {
      // Still in the team, not yet counted out, and as silent: its link is
      // down as surely (LinkDown came 23 s after a cut, once the
      // coordinator had counted it out; a new user's trial), and its other
      // figures are as old as its silence.
      std::snprintf(text, sizeof text, "worker %d silent for %.0f s", rank, out);
      add(down, text);
      ++silent;
      if (w.value("holdingTeam", false)) {
        std::snprintf(text, sizeof text, "worker %d (silent for %.0f s)", rank, out);
        add(waits_on, text);
      }
      continue;
    }
    const bool measured = w.contains("bandwidthMbps") && w["bandwidthMbps"].is_number() &&
                          w["bandwidthMbps"].get<double>() > 0;  // 0: pushes too small to time
    if (w.value("holdingTeam", false)) {
      if (measured) {
        std::snprintf(text, sizeof text, "worker %d (its link at %.1f Mbit/s)", rank, w["bandwidthMbps"].get<double>());
      } else {
        std::snprintf(text, sizeof text, "worker %d (its link not measured)", rank);
      }
      add(waits_on, text);
    }
    if (!measured || rank < 0 || rank >= static_cast<int>(planned_mbps.size()) || planned_mbps[rank] <= 0) continue;
    const double mbps = w["bandwidthMbps"].get<double>();
    if (mbps < kDegradedShare * planned_mbps[rank]) {
      std::snprintf(text, sizeof text, "worker %d at %.1f Mbit/s of %.1f planned", rank, mbps, planned_mbps[rank]);
      add(below, text);
    }
  }
  if (const double idle = progress.value("secondsSinceStep", 0.0); idle >= ToSeconds(rules.stalled_after)) {
    health.stalled = true;
    std::snprintf(text, sizeof text, "no step for %.0f s", idle);
    health.stall_message = text + (waits_on.empty() ? std::string("; no worker holds the team")
                                                    : "; the team waits on " + waits_on);
  }
  if (!below.empty()) {
    health.degraded = true;
    health.degraded_reason = api::reason::kLinkBelowPlan;
    health.degraded_message = below;
  }
  if (!down.empty()) {
    // A link down says more than one below plan.
    health.degraded = true;
    health.degraded_reason = api::reason::kLinkDown;
    health.degraded_message = down + (silent == 1 ? ": its link is down or it is gone" : ": their links are down or they are gone") +
                              (below.empty() ? "" : "; " + below);
  }
  return health;
}

std::string FirstWordsAndNow(const std::string& before, const std::string& separator, const std::string& now) {
  return before.substr(0, before.find(separator)) + separator + now;
}

}  // namespace edgetrain::operator_

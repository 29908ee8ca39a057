#include "operator/controller/job_status.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

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

std::string EtaText(double seconds) {
  return FormatDuration(std::chrono::seconds(static_cast<int64_t>(std::llround(std::max(0.0, seconds)))));
}

Json ProgressStatusOf(const Json& progress) {
  Json out = Json::object();
  for (const char* key : {"iteration", "samples", "loss", "accuracy", "energyJoules"}) {
    // A value the coordinator does not have yet is null there, and left out here.
    if (progress.contains(key) && progress[key].is_number()) out[key] = progress[key];
  }
  if (progress.contains("etaSeconds") && progress["etaSeconds"].is_number()) {
    out["eta"] = EtaText(progress["etaSeconds"].get<double>());
  }
  return out;
}

Json WorkersStatusOf(const std::vector<Json>& pods, const Json& progress) {
  std::map<int, const Json*> by_rank;
  if (progress.contains("workers")) {
    for (const Json& w : progress["workers"]) by_rank[w.value("rank", -1)] = &w;
  }
  Json workers = Json::array();
  for (const Json& pod : pods) {
    const Json labels = pod.value("/metadata/labels"_json_pointer, Json::object());
    const std::string role = labels.value(kRoleLabel, "");
    if (role.empty()) continue;
    Json w = {{"name", pod.value("/metadata/name"_json_pointer, std::string())},
              {"node", pod.value("/spec/nodeName"_json_pointer, std::string())},
              {"role", role}};
    if (role == "worker") {
      const int rank = std::atoi(labels.value(kRankLabel, "-1").c_str());
      if (auto it = by_rank.find(rank); it != by_rank.end()) {
        const Json& p = *it->second;
        if (p.contains("batchSize")) w["batchSize"] = p["batchSize"];
        // 0 is the coordinator's "not measured yet" (a push too small to time).
        if (p.contains("bandwidthMbps") && p["bandwidthMbps"].is_number() && p["bandwidthMbps"].get<double>() > 0) {
          w["bandwidthMbps"] = p["bandwidthMbps"];
        }
        if (p.contains("stallFraction") && p["stallFraction"].is_number()) w["stallFraction"] = p["stallFraction"];
        if (p.contains("quarantined") && p["quarantined"].is_string()) w["quarantined"] = p["quarantined"];
      }
    }
    workers.push_back(w);
  }
  return workers;
}

LinkHealth LinkHealthOf(const Json& progress, const std::vector<double>& planned_mbps, Duration link_down_after) {
  LinkHealth health;
  if (!progress.contains("workers")) return health;
  double stall_sum = 0;
  int active = 0;
  std::string below, down;
  int silent = 0;
  double longest_out = 0;
  for (const Json& w : progress["workers"]) {
    if (!w.value("active", true)) {
      // Out of the team: it does not wait, but its link may be down.
      const double out = w.value("silentSeconds", 0.0);
      if (out >= ToSeconds(link_down_after) && w.value("quarantined", "").empty()) {
        char text[160];
        std::snprintf(text, sizeof text, "%sworker %d silent for %.0f s", down.empty() ? "" : ", ",
                      w.value("rank", -1), out);
        down += text;
        ++silent;
        longest_out = std::max(longest_out, out);
      }
      continue;
    }
    ++active;
    stall_sum += w.value("stallFraction", 0.0);
    const int rank = w.value("rank", -1);
    if (rank < 0 || rank >= static_cast<int>(planned_mbps.size()) || planned_mbps[rank] <= 0) continue;
    if (!w.contains("bandwidthMbps") || !w["bandwidthMbps"].is_number()) continue;
    const double measured = w["bandwidthMbps"].get<double>();
    // 0: not measured yet (pushes too small to time); a link that is down
    // counts the worker out, which is told above.
    if (measured > 0 && measured < kDegradedShare * planned_mbps[rank]) {
      char text[160];
      std::snprintf(text, sizeof text, "%sworker %d at %.1f Mbit/s of %.1f planned", below.empty() ? "" : ", ", rank,
                    measured, planned_mbps[rank]);
      below += text;
    }
  }
  if (active > 0 && stall_sum / active >= kStalledFraction) {
    health.stalled = true;
    char text[160];
    std::snprintf(text, sizeof text, "workers wait for rows %.0f%% of the time", 100 * stall_sum / active);
    health.stall_message = text;
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
    if (active == 0) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "every worker is out of the team, silent for up to %.0f s: the team waits for their links",
                    longest_out);
      health.stalled = true;
      health.stall_message = text;
    }
  }
  return health;
}

}  // namespace edgetrain::operator_

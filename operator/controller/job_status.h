#pragma once
// A TrainingJob's status as the operator writes it: conditions that keep the
// time they last changed, the coordinator's /progress as the status's progress,
// and each agent's node, role, batch, bandwidth and stall. Computed in memory; the
// reconciler writes it once, only when it differs from what is stored.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "operator/kube/kube_time.h"

namespace edgetrain::operator_ {

using Json = nlohmann::json;

struct ConditionUpdate {
  std::string type;    // api::condition
  bool status = true;  // "True" or "False"
  std::string reason;  // api::reason
  std::string message;
};

// Sets a condition of `status["conditions"]`: its lastTransitionTime becomes
// `now` only when its status flips (or it is new), as Kubernetes' conditions do.
void SetCondition(Json& status, const ConditionUpdate& update, const std::string& now, int64_t generation);
// A condition `status` holds with the status `stored` gave it keeps the
// transition time `stored` had: a pass that cleared a condition and set it
// again (Invalid, every look at a job no node matches) had stamped it anew,
// though nothing had changed, and written the status for that alone.
void KeepTransitionTimes(Json& status, const Json& stored);
// A condition's message that keeps what it first said and how things stand
// now: "FIRST<separator>NOW". Each retry replaces the last "now" rather than
// appending its own to it.
std::string FirstWordsAndNow(const std::string& before, const std::string& separator, const std::string& now);
// The condition of that type, or null.
const Json* FindCondition(const Json& status, const std::string& type);
bool ConditionIs(const Json& status, const std::string& type, bool value);

// Why the job is in its phase, as one of its conditions says it: the reason
// and message `kubectl get tj` shows beside the phase (status.reason and
// status.message, as a Pod has). A Pending job's placement or invalid spec, a
// Running one's stall or failing link, a Succeeded one's target or budget, a
// Failed one's cause; empty when no condition says more than the phase.
struct PhaseReason {
  std::string reason;
  std::string message;
};
PhaseReason PhaseReasonOf(const Json& status);
// Sets status.reason and status.message from PhaseReasonOf, or removes them.
void SetPhaseReason(Json& status);

// status.progress from the coordinator's /progress (docs/launch-contract.md).
Json ProgressStatusOf(const Json& progress);

// status.workers: the coordinator and each worker, their nodes from the pods,
// batch, bandwidth and stall from /progress (when there is one). A worker
// silent for `silent_after` or more as of `read_at` has `silentSince`: when it
// went silent, which a loss that follows counts its recovery from.
// A worker /progress counts whose pod is gone and not replaced is listed
// too, by its name and node in `gone` (by rank), with what it trained:
// left out, the workers' samples no longer added up to the job's (a new
// user's trial).
struct GoneWorker {
  std::string name, node;
};
Json WorkersStatusOf(const std::vector<Json>& pods, const Json& progress,
                     std::optional<kube::WallTime> read_at = std::nullopt,
                     Duration silent_after = std::chrono::seconds(10), const std::map<int, GoneWorker>& gone = {});
// Each of `workers` (WorkersStatusOf's) keeps, of its entry by name in the
// status before (`stored`, an array), whatever it has no figure for now.
// `with_states`: what it was in then too (silentSince, quarantined); not from
// a job's result, which says how it ended: a worker silent at the last read
// before the end stayed silent in a Succeeded job's status (found in review).
void KeepWhatWasRead(Json& workers, const Json& stored, bool with_states = true);

// A link measured below this share of what placement planned for it is degraded.
inline constexpr double kDegradedShare = 0.5;

struct LinkHealth {
  bool stalled = false;
  std::string stall_message;
  bool degraded = false;
  const char* degraded_reason = "";  // LinkBelowPlan or LinkDown
  std::string degraded_message;
};
struct LinkRules {
  // A worker out of the team and silent this long has its link down: a
  // deadline's blips are a fraction of a second.
  Duration link_down_after = std::chrono::seconds(10);
  // A team whose iteration has not moved this long is stalled: slow links
  // make a slow team, not a stalled one.
  Duration stalled_after = std::chrono::seconds(30);
};
// `planned_mbps[rank]` is what placement expected of each worker's link (0:
// unknown). A worker's link is degraded when it is measured below
// kDegradedShare of that (LinkBelowPlan), or down (LinkDown); the team is
// Stalled when it has not stepped for `stalled_after`, and the message names
// the workers it waits on: those holding it, and those out of it and silent.
// `pod_age_s[rank]`, where known, is how long its worker's pod has existed: no
// worker has been silent longer. Until a replacement joins, its coordinator
// reports the silence of the worker it replaced (LinkDown, "silent for 36 s",
// came right after a recovery: new users' trials).
LinkHealth LinkHealthOf(const Json& progress, const std::vector<double>& planned_mbps, const LinkRules& rules,
                        const std::map<int, double>& pod_age_s = {});

// "1m05s" from seconds, for status.progress.eta.
std::string EtaText(double seconds);

}  // namespace edgetrain::operator_

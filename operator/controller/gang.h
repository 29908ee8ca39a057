#pragma once
// A job's pods seen as one gang: either every agent runs, or the job is not
// running. Read from the pods alone (their phase, containers and termination
// messages), so the reconciler's decisions are a function of what the cluster
// shows, and table-tested here.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "operator/kube/kube_time.h"

namespace edgetrain::operator_ {

using Json = nlohmann::json;

enum class GangState {
  kAbsent,     // no pod of the plan's generation
  kStarting,   // some pods exist, not all are running
  kRunning,    // every pod of the gang runs
  kSucceeded,  // the coordinator ended well (exit 0): the job is done
  kFailed,     // the coordinator cannot go on: bad input, out of restarts, or nothing to restart for
};

struct Gang {
  GangState state = GangState::kAbsent;
  int expected = 0;  // pods the plan has: the coordinator and one per worker
  int present = 0;   // of the plan's generation, not being deleted
  int running = 0;
  // Of those running, agents the kubelet's probe of /healthz has not found
  // ready yet (a team of 53 agents on 2 cores read "every agent runs" with
  // every pod 0/1 ready: a new user's trial).
  int not_ready = 0;
  std::vector<std::string> missing;  // pods of the plan with no object
  std::vector<std::string> stale;    // the job's pods the plan does not name: to delete
  // Why pods of the gang that are not running wait, where the kubelet says
  // (an image that cannot be pulled, a crash loop, a config error): "NAME:
  // REASON (message)", for the Running condition, which otherwise only counted.
  std::vector<std::string> held;
  // Pods counted running whose agent is not: its process ended and the
  // kubelet restarts it in place (CrashLoopBackOff between tries). Not a
  // loss, and not "every agent runs" either: "NAME: REASON (message)".
  std::vector<std::string> restarting;
  // Why the gang failed, for the Failed condition's message.
  std::string failure;
  std::string failure_reason;  // api::reason::kCoordinatorFailed
  // The failure is the coordinator's pod failed by the kubelet (evicted,
  // refused at admission), not its agent's own end: a gang that has not run
  // is placed again rather than failed (the reconciler's AwaitGang).
  bool coordinator_pod_failed = false;
  // The coordinator's result (its termination message), once it ended.
  std::optional<Json> result;
  std::string coordinator_ip;  // where its /progress is, while it runs
  // Times the kubelet restarted the coordinator's agent in place: one
  // restarted takes up the checkpoint it wrote itself.
  int coordinator_restarts = 0;
  // When the coordinator's agent ended, as its container says: the job's
  // completionTime, not when an operator (down a while, say) saw it.
  std::string ended_at;
};

struct GangRules {
  // A coordinator restarted more than this many times has failed
  // (spec.faultTolerance.maxRecoveries).
  int max_restarts = 5;
  // Set when restarting the coordinator cannot mend its failing: a pipeline
  // whose head failed after losing devices that are not replaced (their
  // pods gone) would wait for them again at every restart, the job shown
  // running meanwhile. Its first failure is then the job's.
  std::string restart_cannot_mend;  // why not, for the message; empty: restarts may mend it
};

// Whether `pod` is of the gang: a pod the plan names (`expected_pods`), not
// being deleted. A replaced worker's old pod, Terminating on a silent node,
// is not.
bool InGang(const Json& pod, const std::vector<std::string>& expected_pods);
// Of `pods`, those InGang: not a replaced member's old pod, still Terminating.
std::vector<Json> GangPods(const std::vector<Json>& pods, const std::vector<std::string>& expected_pods);

// `expected_pods` are the names the plan makes, the coordinator first (a
// worker's name carries its slot's generation, so a pod of a replaced slot is
// not among them).
Gang ObserveGang(const std::vector<Json>& pods, const std::vector<std::string>& expected_pods, const GangRules& rules);

// Whether a gang placed at `placed_at` that still is not running has had its
// time: then it is torn down, holding nothing, and the job waits.
bool GangTimedOut(const Gang& gang, TimePoint placed_at, TimePoint now, Duration timeout);

// "2/3 pods running", and why the others wait where the kubelet says: an
// image that cannot be pulled was seen only on the pods.
std::string StartingMessage(const Gang& gang);

// How long a job whose gang timed out `timeouts` times in a row waits,
// Pending and holding nothing, before it is placed again: one gangTimeout,
// doubling with each, up to eight. A gang that cannot start (an image that
// cannot be pulled) was placed again at once, every gangTimeout, forever (a
// new user's trial); a cluster short of room a while gets it back in time.
Duration GangBackOff(Duration timeout, int64_t timeouts);

// When the back-off of a job (`spec`, `status`, at `generation`) whose gang
// timed out ends: its Placed condition's transition to GangTimeout, plus
// GangBackOff of spec.placement.gangTimeout and status.gangTimeouts. None
// where it did not time out, where its spec changed since (placed again at
// once), or where the transition's time cannot be read. The reconciler waits
// it out, and the waiting line gives such a job no turn until it ends: a
// turn it cannot take had held its room from younger jobs.
std::optional<kube::WallTime> GangBackOffEnds(const Json& spec, const Json& status, int64_t generation);

}  // namespace edgetrain::operator_

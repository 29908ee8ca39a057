// A placed job followed, one reconcile at a time: what its team lost is
// mended first (reconciler_recovery.cc), then its gang's state is said (ended,
// starting, training), with the coordinator's /progress read into the status
// and the links judged from it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/bandwidth_trace.h"
#include "core/duration_text.h"
#include "core/number_text.h"
#include "operator/controller/gang.h"
#include "operator/controller/job_status.h"
#include "operator/controller/reconciler_pass.h"

namespace edgetrain::operator_ {

namespace phase = api::phase;
namespace condition = api::condition;
namespace reason = api::reason;
namespace {

// Readings of a node's link (one a status read) averaged before the first is
// published: one alone can be a fading link's peak or trough.
constexpr int kLinkReadingsToPublish = 3;

// Nodes, each with its pods: "node robot-2 (team-worker-1), node gateway
// (team-coordinator, team-worker-0)".
using PodsByNode = std::map<std::string, std::vector<std::string>>;
std::string NodesWithTheirPods(const PodsByNode& nodes) {
  std::string said;
  for (const auto& [node, names] : nodes) {
    std::string of;
    for (const std::string& name : names) of += (of.empty() ? "" : ", ") + name;
    said += (said.empty() ? "node " : ", node ") + node + " (" + of + ")";
  }
  return said;
}

// The nodes of `pods` that are not ready, with their pods there.
PodsByNode NodesNotReady(const std::map<std::string, NodeView>& nodes, const std::vector<Json>& pods) {
  PodsByNode unready;
  for (const Json& pod : pods) {
    const std::string node = pod.value("/spec/nodeName"_json_pointer, std::string());
    const auto view = nodes.find(node);
    if (view != nodes.end() && !view->second.ready) {
      unready[node].push_back(pod["metadata"]["name"].get<std::string>());
    }
  }
  return unready;
}

// A link's reading in Mbit/s from a job's /progress, or 0 where it is none.
// The job's image may be the user's own: a reading past what a trace may
// hold (1e13, say) was published as bits a second rounded past int64, a
// negative annotation that made the node unreadable, left out of placement
// for every job while that one ran (found in review).
double Reading(const Json& worker, const char* key) {
  const auto it = worker.find(key);
  if (it == worker.end() || !it->is_number()) return 0;
  const double mbps = it->get<double>();
  return mbps > 0 && mbps <= BandwidthTrace::kMostMbps ? mbps : 0;
}

// When the job ended: the coordinator container's finishedAt, written by the
// kubelet on its node's clock, if that lies between the last time the job
// was seen running and now, on the operator's clock. An edge node without a
// clock battery or NTP may be hours off; ttlSecondsAfterFinished counted
// from its time deleted a job of a one-hour TTL the moment it succeeded, its
// status and result with it, where the node ran an hour behind (found in
// review). Out of that span, now. `job` and its `status`; `now`, the pass's.
std::string CompletionTime(const Json& job, const Json& status, const std::string& now,
                           const std::string& finished_at) {
  const std::optional<kube::WallTime> finished = kube::ParseKubeTime(finished_at);
  const std::optional<kube::WallTime> now_then = kube::ParseKubeTime(now);
  if (!finished || !now_then || *finished > *now_then) return now;
  // Not before the last the operator's clock saw it run: its /progress last
  // read, or its start, or, where it ended before it was seen to run, its
  // making. Its start alone let a job of three hours on a node an hour behind
  // end an hour early (found in review).
  for (const Json& seen : {status.value("/progress/readTime"_json_pointer, Json()), status.value("startTime", Json()),
                           job.value("/metadata/creationTimestamp"_json_pointer, Json())}) {
    if (!seen.is_string()) continue;
    const std::optional<kube::WallTime> running = kube::ParseKubeTime(seen.get<std::string>());
    // A second's slack: finishedAt is in whole seconds, a read's time is not.
    if (running && *finished + std::chrono::seconds(1) < *running) return now;
  }
  return finished_at;
}

}  // namespace

Status Reconciler::Follow(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator) {
  // A job deleted mid-run: the garbage collector deletes its pods and Secrets
  // once it is gone, and the pods' watch can bring that before the jobs'
  // watch brings the deletion, the cache still holding the job. Followed
  // then, its credentials were issued again and a worker whose pod was going
  // replaced (a WorkerLost event, a recovery counted: a new user's trial, 1
  // delete in 10). A pod going is rare: the server is asked whether the job
  // is.
  const bool pod_going = std::any_of(pass.pods.begin(), pass.pods.end(), [](const Json& pod) {
    return pod.at("metadata").contains("deletionTimestamp");
  });
  if (pod_going && DeletedAtTheServer(pass)) return Status::Ok();
  // Its agents' certificate renewed under them once due.
  EDGETRAIN_RETURN_IF_ERROR(KeepTeamCredentials(pass, plan, /*making_pods=*/false));
  Team team(plan, coordinator);
  EDGETRAIN_RETURN_IF_ERROR(SeeTeam(pass, team));

  // What a team that has run lost is mended first (each step says when it
  // applies: a loss of a team that ended is nobody's to mend).
  if (std::optional<Status> mended = FollowCoordinatorLoss(pass, team)) return *mended;
  if (std::optional<Status> mended = FollowStageDeviceLoss(pass, team)) return *mended;
  if (std::optional<Status> mended = FollowWorkerLoss(pass, team)) return *mended;

  switch (team.gang.state) {
    case GangState::kSucceeded:
      return Succeed(pass, team);
    case GangState::kFailed:
      // The kubelet failed its pod before it ran: placed again, not ended.
      if (team.gang.coordinator_pod_failed && (!team.has_run || team.resuming)) return AwaitGang(pass, team);
      // Its pods go in the next pass (Finished), once the end is stored.
      EndFailed(pass, team.gang.failure_reason.c_str(), team.gang.failure);
      return Status::Ok();
    case GangState::kAbsent:
    case GangState::kStarting:
      return AwaitGang(pass, team);
    case GangState::kRunning:
      return FollowTraining(pass, team);
  }
  return Status::Ok();
}

Status Reconciler::SeeTeam(Pass& pass, Team& team) {
  const JobPlan& plan = team.plan;
  // The team's nodes as declared (the waiting line keeps them parsed, once a
  // change): whether one is leaving, ready, and the link placement planned on.
  {
    std::vector<std::string> wanted;
    for (const WorkerSlot& slot : plan.workers) wanted.push_back(slot.node);
    for (const Json& pod : pass.pods) wanted.push_back(pod.value("/spec/nodeName"_json_pointer, std::string()));
    for (NodeView& view : line_.Views(wanted, MeasuredLinks{})) team.nodes.emplace(view.name, std::move(view));
  }
  // A pipeline's devices lost so far whose pods failed or went are out of
  // the gang: what is left of their pods goes as stale. One the head let go
  // of while its pod runs on (its agent restarted in place, its link cut)
  // keeps its pod: it rejoins its stage if it comes back. So does one lost
  // with its node (not ready when its pod went), once the node is back
  // (ready, not cordoned, not leaving): its pod is made again there, once,
  // and the device rejoins.
  if (plan.pipeline) {
    team.lost_stages = LostRanksOf(pass.status);
    team.awaiting = RanksAt(pass.status, "/pipeline/awaitingNodes");
  }
  std::vector<std::string> returning;
  for (int rank : team.lost_stages) {
    if (rank < 0 || rank >= static_cast<int>(plan.workers.size())) continue;
    const int64_t since = SlotSince(plan, rank);
    const Json* pod = PodNamed(pass.pods, WorkerPodName(pass.job.name, rank, since));
    if (pod && LossOf(pod, since, plan.generation).empty()) continue;
    const NodeView* node = team.Node(plan.workers[rank].node);
    if (pod && (!node || !node->ready) && !team.awaiting.count(rank)) {  // going with its node
      team.awaiting.insert(rank);
      pass.status["pipeline"]["awaitingNodes"] = Json(std::vector<int>(team.awaiting.begin(), team.awaiting.end()));
    }
    if (!pod && team.awaiting.count(rank) && node && node->ready && !node->cordoned && node->leaving.empty()) {
      returning.push_back("stage device " + std::to_string(rank) + " on " + node->name);
      team.awaiting.erase(rank);
      pass.status["pipeline"]["awaitingNodes"] = Json(std::vector<int>(team.awaiting.begin(), team.awaiting.end()));
      continue;
    }
    team.gone.insert(rank);
  }
  team.names = PodNamesOf(pass.job, plan, team.coordinator, team.gone);
  GangRules rules;
  rules.max_restarts = pass.job.manifest.spec.fault_tolerance.max_recoveries;
  rules.restart_cannot_mend = plan.pipeline ? StageLeftWithoutDevices(*plan.pipeline, team.gone) : "";
  team.gang = ObserveGang(pass.pods, team.names, rules);
  team.has_run = pass.status.contains("startTime");
  // A loss while a resumed gang starts is none of a team that ran: a pod
  // evicted then had counted as a recovery, the job read Recovering, and its
  // gang never timed out (found in review).
  const Json* running = FindCondition(pass.status, condition::kRunning);
  const std::string was = running ? running->value("reason", "") : "";
  team.resuming = team.has_run && (was == reason::kSuspended || was == reason::kResuming || was == reason::kStarting ||
                                   was == reason::kGangTimeout || was == reason::kNodeLost);
  EDGETRAIN_RETURN_IF_ERROR(DeletePods(pass, team.gang.stale));
  if (team.gang.state == GangState::kStarting) {
    EDGETRAIN_RETURN_IF_ERROR(SayWhatThePodsLack(pass, team.coordinator, team.gang));
  }
  for (const std::string& device : returning) {
    const std::string message = device + ": its node is back, and its pod is made again there to rejoin a stage";
    events_.Record(pass.object, "Normal", reason::kStageDeviceReturning, message);
    log_.Job(pass.key, reason::kStageDeviceReturning, message);
  }
  return Status::Ok();
}

std::optional<Status> Reconciler::FollowCoordinatorLoss(Pass& pass, Team& team) {
  const CoordinatorSeat& coordinator = team.coordinator;
  // A team that has run loses its coordinator's node, or is warned it will:
  // the coordinator is placed anew, the workers stay (docs/operator.md,
  // "Recovery"). Its pod failing is its node's doing (an eviction, a node
  // that refused it): the agent's own failures restart it in place. A
  // pipeline's head likewise: the new head trains on from the state its
  // stages hold (docs/pipeline.md, "A head that starts behind").
  if (!team.has_run || team.resuming || team.gang.state == GangState::kSucceeded || team.plan.workers.empty()) {
    return std::nullopt;
  }
  const Json* pod = team.CoordinatorPod(pass);
  const NodeView* node = team.Node(coordinator.node);
  // Failed by its node, or going; a pod merely gone (deleted by someone) is
  // made again on its node while that node is ready.
  std::string loss = pod ? LossOf(pod, coordinator.since_generation, team.plan.generation) : "";
  if (!pod && (!node || !node->ready)) loss = "its pod is gone, and its node " + coordinator.node + " with it";
  const bool leaving = node && !node->leaving.empty();
  if (loss.empty() && !leaving) return std::nullopt;
  // Its output on a claim bound to a node stays with that node: a claim on a
  // node does not follow it. A shared claim (ReadWriteMany), or one on no
  // node, goes where it goes: a pipeline's head on one had been taken for
  // pinned, and its job failed (a new user's trial).
  StatusOr<std::optional<TeamRequest::Pin>> pinned =
      HasOutputVolume(pass.job) ? OutputVolumeNode(pass) : std::optional<TeamRequest::Pin>();
  if (!pinned.ok()) return pinned.status();
  if (*pinned) {
    // A data-parallel team waits for its coordinator's node; a pipeline's
    // head lost with it fails the job, saying so, rather than wait for a
    // node that may not come back.
    if (!team.plan.pipeline || loss.empty() || !team.Live()) return std::nullopt;
    EndFailed(pass, reason::kCoordinatorLost,
              "the pipeline's head: " + loss + "; its output is on a claim (spec.output.volume) bound to its node, "
              "which does not follow it to another node, so the job ends here");
    return Status::Ok();  // its pods go once the end is stored (Finished)
  }
  // The cause said first, as of a worker ("its pod is being deleted" of a
  // killed node read as if someone had deleted it: a new user's trial).
  if (!loss.empty() && pod && node && !node->ready) loss = "its node " + coordinator.node + " is lost; " + loss;
  if (!loss.empty() && LeavingsOwnDoing(pod, node)) {
    return MoveCoordinator(pass, team.plan, coordinator,
                           loss + "; its node " + coordinator.node + " is leaving (" + node->leaving + ")",
                           /*moving=*/true);
  }
  if (!loss.empty()) return MoveCoordinator(pass, team.plan, coordinator, loss, /*moving=*/false);
  return MoveCoordinator(pass, team.plan, coordinator,
                         "its node " + coordinator.node + " is leaving (" + node->leaving + ")", /*moving=*/true);
}

std::optional<Status> Reconciler::FollowStageDeviceLoss(Pass& pass, Team& team) {
  // A pipeline that has run loses a device: its head replays the step
  // without it, or rebuilds its stage from a replica; it is not replaced
  // (docs/pipeline.md, "Replay").
  const JobPlan& plan = team.plan;
  if (!plan.pipeline || !team.Live()) return std::nullopt;
  std::map<int, std::string> lost;
  // The pods the status last saw running.
  const Json seen = pass.stored_status.value("workers", Json::array());
  for (const WorkerSlot& slot : plan.workers) {
    if (!HasPod(plan, slot.rank, team.lost_stages)) continue;
    const int64_t since = SlotSince(plan, slot.rank);
    const std::string name = WorkerPodName(pass.job.name, slot.rank, since);
    const Json* pod = PodNamed(pass.pods, name);
    // One gone that the status saw running was deleted; one it never saw
    // (just made: after a suspension the job has run before) is not yet in
    // the cache.
    const bool ran = seen.is_array() && std::any_of(seen.begin(), seen.end(), [&](const Json& w) {
                       return w.is_object() && w.value("name", "") == name;
                     });
    const std::string loss = pod ? LossOf(pod, since, plan.generation) : ran ? "its pod is gone" : "";
    if (loss.empty()) continue;
    lost[slot.rank] = loss;
    // Its node gone silent with it: its pod is made again when it is back.
    const NodeView* node = team.Node(slot.node);
    if (!node || !node->ready) team.awaiting.insert(slot.rank);
  }
  if (lost.empty()) return std::nullopt;
  pass.status["pipeline"]["awaitingNodes"] = Json(std::vector<int>(team.awaiting.begin(), team.awaiting.end()));
  return LoseStageDevices(pass, plan, lost, /*pods_gone=*/true);
}

std::optional<Status> Reconciler::FollowWorkerLoss(Pass& pass, Team& team) {
  // A team that has run loses a worker: only that worker is replaced, and the
  // running coordinator adopts the new plan (docs/operator.md, "Recovery").
  const JobPlan& plan = team.plan;
  if (plan.pipeline || !team.Live()) return std::nullopt;
  std::map<int, std::string> lost;
  std::set<int> moves;
  for (const WorkerSlot& slot : plan.workers) {
    const int64_t since = SlotSince(plan, slot.rank);
    const Json* pod = PodNamed(pass.pods, WorkerPodName(pass.job.name, slot.rank, since));
    std::string loss = LossOf(pod, since, plan.generation);
    const NodeView* node = team.Node(slot.node);
    // Its pod gone with its Node object (deleted, the pod garbage-collected
    // after it): made again, it was bound to a node that no longer exists,
    // collected again, and so on every second (a new user's trial).
    if (loss.empty() && !pod && !node) loss = "its pod is gone, and its node " + slot.node + " with it";
    if (!loss.empty()) {
      // Said first when it is the cause: "its pod is being deleted" of a
      // killed node read as if someone had deleted it (a new user's trial).
      lost[slot.rank] = (node && !node->ready ? "its node " + slot.node + " is lost; " : std::string()) + loss;
      if (LeavingsOwnDoing(pod, node)) {
        lost[slot.rank] += "; its node " + slot.node + " is leaving (" + node->leaving + ")";
        moves.insert(slot.rank);
      }
      continue;
    }
    // Warned: the worker moves before its node goes, which costs a rejoin
    // instead of the work since its last push and nodeLossGrace of waiting.
    if (node && !node->leaving.empty()) {
      lost[slot.rank] = "its node " + slot.node + " is leaving (" + node->leaving + ")";
      moves.insert(slot.rank);
    }
  }
  if (lost.empty()) return std::nullopt;
  // Training has stopped (the coordinator said why) and the coordinator is
  // finishing: a worker lost now has nothing left to train. It was replaced,
  // a recovery counted, for a team that was ending (a soak trial). Not after
  // a "cancelled", a moved coordinator's or a suspended one's, whose team
  // trains again.
  const std::string stopped = pass.stored_status.value("/progress/stopReason"_json_pointer, std::string());
  if (!stopped.empty() && stopped != "cancelled") {
    std::string what;
    for (const auto& [rank, why] : lost) {
      what += (what.empty() ? "worker " : "; worker ") + std::to_string(rank) + ": " + why;
    }
    const std::string message = "training has stopped (" + stopped + ") and the coordinator is finishing; " + what +
                                ": not replaced, with nothing left to train";
    const Json* said = FindCondition(pass.stored_status, condition::kRunning);
    if (!said || said->value("message", "") != message) {
      events_.Record(pass.object, "Warning", reason::kWorkerLost, message);
      log_.Job(pass.key, reason::kWorkerLost, message);
    }
    pass.Set(condition::kRunning, true, reason::kTraining, message);
    (void)ReadProgress(pass, team.gang);
    pass.Requeue(options_.status_interval);
    return Status::Ok();
  }
  std::optional<Status> recovered = Recover(pass, plan, team.coordinator, lost, moves);
  // The coordinator trains on with the workers left while a replacement
  // waits for room: its figures are read as they move, and the room looked
  // for as often (status.progress stood at iteration 1,061 for a minute while
  // the team trained to 3,222: a new user's trial).
  if (recovered && recovered->ok() && pass.Phase() == phase::kRecovering) {
    (void)ReadProgress(pass, team.gang);
    pass.Requeue(options_.status_interval);
  }
  return recovered;
}

Status Reconciler::Succeed(Pass& pass, Team& team) {
  const Json result = team.gang.result.value_or(Json::object());
  const std::string stop = result.value("stopReason", "");
  const bool target = result.value("reachedTarget", false);
  const char* why = target ? reason::kTargetReached : stop.empty() ? reason::kEnded : reason::kBudgetSpent;
  std::string message = target         ? "reached its target accuracy"
                        : stop.empty() ? "the coordinator ended well (exit 0) but reported no result"
                                       : "ended at its budget (" + stop + ")";
  if (result.contains("accuracy") && result["accuracy"].is_number()) {
    char text[64];
    std::snprintf(text, sizeof text, ": test accuracy %.4f", result["accuracy"].get<double>());
    message += text;
  }
  pass.status["phase"] = phase::kSucceeded;
  pass.status["completionTime"] = CompletionTime(pass.object, pass.status, pass.now, team.gang.ended_at);
  pass.Set(condition::kComplete, true, why, message);
  pass.Set(condition::kRunning, false, reason::kStopped, "the job has ended");
  SettleLinkConditions(pass, reason::kStopped, "the job has ended");
  if (!result.empty()) {
    pass.status["progress"] = ProgressStatusOf(result);
    // Each worker's figures as the result gives them, which the job's
    // totals are of: the last /progress read left them seconds behind
    // (a team's samples summed to 1,307,392 under a total of 1,353,600;
    // a job of 3 s had none; a new user's trial). A result too long
    // for a termination message leaves its workers out: then as read.
    if (result.contains("workers") && result["workers"].is_array() && !result["workers"].empty()) {
      Json workers = WorkersStatusOf(GangPods(pass.pods, team.names), result, std::nullopt, std::chrono::seconds(10),
                                     GoneWorkersOf(pass.job.name, team.plan));
      KeepWhatWasRead(workers, pass.stored_status.value("workers", Json::array()), /*with_states=*/false);
      pass.status["workers"] = std::move(workers);
    }
    Json model = Json::object();
    if (result.contains("modelPath") && !result["modelPath"].get<std::string>().empty()) {
      model["path"] = result["modelPath"];
    }
    if (result.contains("iteration")) model["iteration"] = result["iteration"];
    if (result.contains("accuracy") && result["accuracy"].is_number()) model["accuracy"] = result["accuracy"];
    pass.status["model"] = model;
  }
  events_.Record(pass.object, "Normal", why, message);
  log_.Job(pass.key, why, message);
  // Its pods go in the next pass (Finished), once this end is stored:
  // deleted in this one, a status write that then failed left the retry a
  // Running job whose coordinator was going, which it took for lost and
  // placed anew, training a job that had succeeded (found in review).
  return Status::Ok();
}

Status Reconciler::AwaitGang(Pass& pass, Team& team) {
  const JobPlan& plan = team.plan;
  const Gang& gang = team.gang;
  // Back from a suspension, placed anew, its pods start again: no member
  // was lost, and the time it was suspended is no recovery's. (A team
  // that has run is placed anew only then, or after such a placement's
  // gang timed out: a loss keeps its plan.) Its gang times out as a new
  // job's does; a resumed job whose pods could not start (its claim
  // gone) had held its nodes for good (a new user's trial).
  const Json* running = FindCondition(pass.status, condition::kRunning);
  const std::string was = running ? running->value("reason", "") : "";
  const bool resuming = team.resuming;
  // A node of a gang that has not run lost: its pod there evicted (or
  // failed, or gone) with the node not ready. Made again there, it was
  // refused while its predecessor could not end on the dead node
  // (AlreadyExists, retried to the gang's timeout, the node named nowhere:
  // a soak trial). Torn down and placed again at once, on ready nodes: no
  // member has trained, so nothing is lost and no recovery is counted.
  if (!team.has_run || resuming) {
    PodsByNode lost;
    auto consider = [&](const std::string& name, const std::string& node) {
      const NodeView* view = team.Node(node);
      if (view && view->ready) return;
      const Json* pod = PodNamed(pass.pods, name);
      const bool gone = !pod || pod->at("metadata").contains("deletionTimestamp") ||
                        pod->value("/status/phase"_json_pointer, std::string()) == "Failed";
      if (gone) lost[node].push_back(name);
    };
    consider(CoordinatorPodName(pass.job.name, team.coordinator.since_generation), team.coordinator.node);
    for (const WorkerSlot& slot : plan.workers) {
      if (HasPod(plan, slot.rank, team.lost_stages)) {
        consider(WorkerPodName(pass.job.name, slot.rank, SlotSince(plan, slot.rank)), slot.node);
      }
    }
    if (!lost.empty()) {
      return TearDownGang(pass, reason::kNodeLost,
                          NodesWithTheirPods(lost) + (lost.size() == 1 ? " was" : " were") +
                              " lost before the gang ran: torn down, holding nothing, to be placed again on ready "
                              "nodes");
    }
    // A pod failed by the kubelet of a ready node (evicted under pressure,
    // refused at admission) never runs, so neither does the gang as placed:
    // torn down at once, and placed again after the back-off of a gang
    // timed out, which keeps a node that refuses it again and again from
    // being asked at every pass. The coordinator's had failed the job for
    // good, and a worker's waited out the whole gangTimeout (found in review).
    std::string failed;
    for (const std::string& name : team.names) {
      const Json* pod = PodNamed(pass.pods, name);
      if (!pod || pod->at("metadata").contains("deletionTimestamp") ||
          pod->value("/status/phase"_json_pointer, std::string()) != "Failed") {
        continue;
      }
      const std::string why = pod->value("/status/reason"_json_pointer, std::string("Failed"));
      const std::string said = pod->value("/status/message"_json_pointer, std::string());
      failed += (failed.empty() ? "" : ", ") + name + " failed on " +
                pod->value("/spec/nodeName"_json_pointer, std::string("?")) + " (" + why +
                (said.empty() ? "" : ": " + said) + ")";
    }
    if (!failed.empty()) {
      const int64_t timeouts = pass.status.value("gangTimeouts", int64_t{0}) + 1;
      pass.status["gangTimeouts"] = timeouts;
      return TearDownGang(pass, reason::kGangTimeout,
                          failed + " before the gang ran: torn down, holding nothing, to be placed again in " +
                              FormatDuration(GangBackOff(GangTimeoutOf(pass.job), timeouts)) +
                              (timeouts == 1 ? "" : " (" + std::to_string(timeouts) + " starts failed in a row)"));
    }
  }
  // A pipeline's stage device whose node came back starts its pod again
  // while the pipeline trains on (its head replayed the loss long before):
  // none of it is lost, and nothing recovers. Counted as a recovery, from
  // the pod's making, the histogram read 0.2-1.2 s for devices out 37-70 s
  // (a new user's trial). Its head's `rejoined` and StageDeviceRejoined say
  // when it is back in a stage.
  const Json* head = team.CoordinatorPod(pass);
  const bool head_runs = head && head->value("/status/phase"_json_pointer, std::string()) == "Running";
  if (team.has_run && !resuming && plan.pipeline && head_runs && pass.Phase() == phase::kRunning) {
    EDGETRAIN_ASSIGN_OR_RETURN(const std::string not_made, CreateMissingOrSay(pass, plan, team.coordinator, gang));
    pass.Set(condition::kRunning, true, reason::kTraining,
             "the pipeline trains on while a stage device's pod starts again on its node, back: " +
                 StartingMessage(gang) + (not_made.empty() ? "" : "; " + not_made));
    (void)ReadProgress(pass, gang);
    pass.Requeue(options_.status_interval);
    return Status::Ok();
  }
  if (team.has_run && !resuming) {  // a replacement is starting; the team trains on without it
    EDGETRAIN_ASSIGN_OR_RETURN(const std::string not_made, CreateMissingOrSay(pass, plan, team.coordinator, gang));
    pass.status["phase"] = phase::kRecovering;
    // What was lost stays said, with how far its replacement is: it
    // became "2/3 pods running" a moment after the loss (a new user's trial).
    std::string message = StartingMessage(gang) + (not_made.empty() ? "" : "; " + not_made);
    // A move ahead of a warning stays said as one while its pods start:
    // "Recovering" of a cordoned node's worker read as a loss (a new
    // user's trial), though no recovery is counted.
    const char* why = was == reason::kWorkerMoved      ? reason::kWorkerMoved
                      : was == reason::kCoordinatorMoved ? reason::kCoordinatorMoved
                                                         : reason::kRecovering;
    if (running && (was == reason::kRecovering || why != reason::kRecovering)) {
      const std::string before = running->value("message", "");
      const std::string lost = before.substr(0, before.find("; now "));
      // Only what a loss said (Replanned's, AwaitRoom's), never a count of pods.
      if (!lost.empty() && lost.find(" pods running") == std::string::npos) {
        message = FirstWordsAndNow(before, "; now ", message);
      }
    }
    pass.Set(condition::kRunning, false, why, message);
    // The team trains on meanwhile: its figures stood still for the 22 s
    // a replacement took to start (a new user's trial).
    (void)ReadProgress(pass, gang);
    pass.Requeue(options_.status_interval);
    return Status::Ok();
  }
  const Duration timeout = GangTimeoutOf(pass.job);
  const Duration waited = SinceTransition(pass.status, condition::kPlaced).value_or(Duration::zero());
  if (waited >= timeout) {
    const int64_t timeouts = pass.status.value("gangTimeouts", int64_t{0}) + 1;
    pass.status["gangTimeouts"] = timeouts;
    // A spec changed since the gang was placed is placed again at once (the
    // pass after the teardown): the event said "in 40s" of a gang placed
    // again 15 ms later (a new user's trial, the image mended mid-placement).
    const Json* placed = FindCondition(pass.stored_status, condition::kPlaced);
    const bool changed = placed && placed->value("observedGeneration", pass.generation) != pass.generation;
    const std::string again =
        changed ? "now, its spec having changed since it was placed"
                : "in " + FormatDuration(GangBackOff(timeout, timeouts)) + " (timed out " + std::to_string(timeouts) +
                      (timeouts == 1 ? " time" : " times in a row") + ")";
    // Why the others waited, in the kubelet's words: the event said only
    // "0/4 pods running" of an image that could not be pulled.
    return TearDownGang(pass, reason::kGangTimeout,
                        StartingMessage(gang) + " after spec.placement.gangTimeout (" + FormatDuration(timeout) +
                            "): torn down, holding nothing, to be placed again " + again);
  }
  // A pod of the plan deleted by someone is made again, on its node. One the
  // API server refuses (a quota filled part-way) is said, and the gang's
  // timeout runs on: returned as the pass's error, the status never said
  // Placed, the timeout never came, and the pods made held their nodes
  // (found in review). The refusal is a Warning Event too, once.
  EDGETRAIN_ASSIGN_OR_RETURN(const std::string not_made, CreateMissingOrSay(pass, plan, team.coordinator, gang));
  const std::string starting = StartingMessage(gang) + (not_made.empty() ? "" : "; " + not_made);
  pass.status["phase"] = phase::kPlacing;
  pass.Set(condition::kRunning, false, resuming ? reason::kResuming : reason::kStarting, starting);
  // Any change of its pods wakes it, so it need not poll: looking at 1,000
  // placed jobs every status interval kept a 5,000-node site's operator
  // busy enough to slow the placing of the rest several times over. A pod
  // refused is tried again soon: no change of a pod would wake it (a
  // conflict, a server busy, passes in moments).
  pass.Requeue(not_made.empty() ? timeout - waited : std::min(timeout - waited, options_.recheck_after));
  return Status::Ok();
}

Status Reconciler::TearDownGang(Pass& pass, const char* why, const std::string& message) {
  EDGETRAIN_RETURN_IF_ERROR(DeleteAllPods(pass));
  pass.status["phase"] = phase::kPending;
  // A gang timed out is of the spec it was placed under, whose generation
  // its back-off is judged by: a spec mended while the gang started (the
  // image it could not pull) had been stamped as if the timeout were its
  // own, and waited out the back-off (found in review).
  const Json* was = FindCondition(pass.status, condition::kPlaced);
  const int64_t placed_under = was && was->value("status", "") == "True" && was->contains("observedGeneration") &&
                                       (*was)["observedGeneration"].is_number_integer()
                                   ? (*was)["observedGeneration"].get<int64_t>()
                                   : pass.generation;
  pass.Set(condition::kPlaced, false, why, message);
  if (std::string_view(why) == reason::kGangTimeout) {
    for (Json& c : pass.status["conditions"]) {
      if (c.value("type", "") == condition::kPlaced) c["observedGeneration"] = placed_under;
    }
  }
  pass.Set(condition::kRunning, false, why, message);
  events_.Record(pass.object, "Warning", why, message);
  log_.Job(pass.key, why, message);
  pass.Requeue(options_.recheck_after);
  return Status::Ok();
}

Status Reconciler::FollowTraining(Pass& pass, Team& team) {
  const JobPlan& plan = team.plan;
  const Gang& gang = team.gang;
  // A team recovering is whole again once every pod of it runs on a ready
  // node. Two nodes killed together: the first's worker replaced while the
  // second was not ready yet (within nodeLossGrace) read as the team whole
  // again, and the second's recovery was timed from then, 1-4 s of outages
  // of 20 (a soak trial).
  const PodsByNode unready =
      pass.Phase() == phase::kRecovering ? NodesNotReady(team.nodes, GangPods(pass.pods, team.names)) : PodsByNode{};
  if (pass.Phase() != phase::kRunning && unready.empty()) {
    std::string message = gang.expected == 1   ? std::string("its pod runs")
                          : gang.expected == 2 ? std::string("both pods of the gang run")
                                               : "all " + std::to_string(gang.expected) + " pods of the gang run";
    // Since the Running condition turned False: the loss, or the move, was
    // seen. Without that time (a status written by hand) nothing is said.
    if (pass.Phase() == phase::kRecovering) {
      if (auto took = SinceTransition(pass.stored_status, condition::kRunning)) {
        pass.outcome.recovered_after = took;
        message += " again, " + FormatDuration(*took) + " after the team stopped being whole";
      }
    }
    events_.Record(pass.object, "Normal", reason::kTraining, message);
    log_.Job(pass.key, reason::kTraining, message);
  }
  pass.status["phase"] = unready.empty() ? phase::kRunning : phase::kRecovering;
  pass.status.erase("gangTimeouts");  // its back-off starts over
  if (!pass.status.contains("startTime")) pass.status["startTime"] = pass.now;
  if (gang.restarting.empty()) {
    // A pipeline's devices lost and not back: "every agent runs" was said
    // all the while one was out (a new user's trial).
    std::string out;
    if (plan.pipeline) {
      for (int rank : team.lost_stages) {
        out += (out.empty() ? "" : ", ") + std::to_string(rank) +
               (team.awaiting.count(rank) ? " (its node awaited)" : "");
      }
    }
    pass.Set(condition::kRunning, true, reason::kTraining,
             out.empty() ? "every agent runs"
                         : "the pipeline trains on without its lost stage device" +
                               std::string(team.lost_stages.size() > 1 ? "s " : " ") + out);
  } else {
    // Its pod runs, its agent does not: shown as training while the
    // coordinator was in CrashLoopBackOff (a new user's trial).
    std::string message = "restarting in place: " + gang.restarting.front();
    for (size_t i = 1; i < gang.restarting.size(); ++i) message += "; " + gang.restarting[i];
    pass.Set(condition::kRunning, false, reason::kRestarting, message);
  }
  std::string unread;  // why /progress did not answer
  // Asked even on a node not ready: at the edge a node whose kubelet has
  // lost the API server may still train and answer (found in review).
  const Json progress = ReadProgress(pass, gang, &unread);
  // Every pod runs, but the coordinator has not started the team: its
  // workers are not all in (nodeLossGrace after the first). Shown as
  // Training, a team whose workers could not reach the coordinator
  // trained nothing for 52 s unsaid (a security review).
  const bool team_waiting = progress.value("state", "") == "starting";
  // Nothing read yet of a job that never said how it goes (the
  // coordinator not serving yet): not Training either, which it read
  // for a moment before WaitingForTeam, then Training (a new user's
  // trial).
  const bool never_read = progress.empty() && !pass.stored_status.contains("progress");
  if (gang.restarting.empty() && (team_waiting || never_read) && !plan.workers.empty()) {
    const std::string runs =
        gang.not_ready == 0 ? "every agent runs"
                            : "every agent runs, " + std::to_string(gang.not_ready) + " of them not ready yet (" +
                                  (gang.not_ready == 1 ? "its" : "their") +
                                  " /healthz not answering the kubelet's probe)";
    pass.Set(condition::kRunning, true, reason::kWaitingForTeam,
             team_waiting ? runs + "; the coordinator waits for its workers to connect before the team "
                                   "starts (up to spec.faultTolerance.nodeLossGrace after the first; a worker that "
                                   "cannot reach it says why in its log)"
                          : runs + "; the coordinator has not said yet that its team has started");
  }
  // The gang's pods: not a replaced worker's old pod, still Terminating on
  // a node gone silent, which would be listed with its replacement's
  // figures and keep BandwidthDegraded on for a node the team has left.
  const std::vector<Json> gang_pods = GangPods(pass.pods, team.names);
  // A worker's silence is kept (silentSince) from --link-down-after, or from
  // the job's nodeLossGrace if shorter: a loss acted on within that grace of
  // its node's NotReady came before the silence reached --link-down-after at
  // a read, and its recovery was counted from the NotReady, 5.8 s of an
  // outage of 10.7 (a new user's trial, nodeLossGrace 5s).
  const Duration grace = pass.job.manifest.spec.fault_tolerance.node_loss_grace;
  const Duration silent_after =
      grace > Duration::zero() ? std::min(grace, options_.links.link_down_after) : options_.links.link_down_after;
  Json workers = WorkersStatusOf(gang_pods, progress, pass.wall_now, silent_after, GoneWorkersOf(pass.job.name, plan));
  // No progress read (the coordinator ending, a slow answer): each pod
  // keeps what was last read of it. The job's last status lost every
  // worker's batch, samples and stall as it ended (a new user's trial).
  if (progress.empty()) KeepWhatWasRead(workers, pass.stored_status.value("workers", Json::array()));
  pass.status["workers"] = std::move(workers);
  ReportQuarantines(pass);
  if (plan.pipeline) {
    if (std::optional<Status> mended = FollowStageMembership(pass, team, progress)) return *mended;
    ReportReplays(pass, progress);
  }
  PublishMeasuredLinks(pass, plan, team.coordinator.node, progress);
  const bool unanswered = SayProgressUnanswered(pass, team, progress, unread);
  // Before the team starts its workers' links are not known either: they
  // read LinksHealthy for 2.5 minutes while no worker could reach the
  // coordinator (a security review). Said once the team trains.
  JudgeLinks(pass, team, progress, gang_pods, /*judged=*/!unanswered && !team_waiting);
  // A member on a leaving node that has nowhere to move to yet trains on
  // there (Reconciler::MoveWaits): said beside how the team runs, and once
  // as an Event. Last, after every word on how it runs: said before
  // SayProgressUnanswered, the note was written over, and its Event made
  // again every --unschedulable-retry (found in review).
  if (!pass.move_waits.empty() && gang.restarting.empty()) {
    const Json& now_said = *FindCondition(pass.status, condition::kRunning);
    const bool team_starts = now_said.value("reason", "") == reason::kWaitingForTeam;
    const std::string message = now_said.value("message", "") + "; " + pass.move_waits;
    pass.Set(condition::kRunning, true, team_starts ? reason::kWaitingForTeam : reason::kTraining, message);
    // Once: not again when only the words before it change.
    const Json* said = FindCondition(pass.stored_status, condition::kRunning);
    if (!said || said->value("message", "").find(pass.move_waits) == std::string::npos) {
      events_.Record(pass.object, "Warning", pass.move_waits_reason, pass.move_waits);
      log_.Job(pass.key, pass.move_waits_reason, pass.move_waits);
    }
  }
  if (!unready.empty()) {
    // Said after what was lost, where how far its replacement was had been.
    const Json* before = FindCondition(pass.stored_status, condition::kRunning);
    const std::string now = "every pod runs, but " + NodesWithTheirPods(unready) +
                            (unready.size() == 1 ? " is not ready: the team is whole again once it is back"
                                                 : " are not ready: the team is whole again once they are back") +
                            ", or recovers again past nodeLossGrace";
    pass.Set(condition::kRunning, false, reason::kRecovering,
             before ? FirstWordsAndNow(before->value("message", ""), "; now ", now) : now);
  }
  pass.Requeue(options_.status_interval);
  return Status::Ok();
}

std::optional<Status> Reconciler::FollowStageMembership(Pass& pass, Team& team, const Json& progress) {
  if (!progress.contains("workers") || !progress["workers"].is_array() || progress["workers"].empty()) {
    return std::nullopt;
  }
  const JobPlan& plan = team.plan;
  // The head lists the devices it trains with, with their layers, and
  // the others of its plan as not active with none: one it let go of
  // (silent past its deadline, its stream broken) while its pod runs on
  // is lost. (One not connected with layers is still in its stage,
  // until the head's next step lets it go.)
  std::set<int> in_stages, active;
  for (const Json& w : progress["workers"]) {
    const bool on = w.value("active", true);
    if (on || w.contains("layers")) in_stages.insert(w.value("rank", -1));
    if (on) active.insert(w.value("rank", -1));
  }
  std::map<int, std::string> let_go;
  for (const WorkerSlot& slot : plan.workers) {
    if (HasPod(plan, slot.rank, team.lost_stages) && !in_stages.count(slot.rank)) {
      let_go[slot.rank] = "the head let it go (silent past its deadline, or its stream broke)";
    }
  }
  if (!let_go.empty()) return LoseStageDevices(pass, plan, let_go, /*pods_gone=*/false);
  // And one it lists again, connected, whose pod runs, is back: it
  // rejoined a stage between steps. (A device lost between steps is
  // listed, not connected, until the head's next step lets it go.)
  std::set<int> still = team.lost_stages;
  for (int rank : team.lost_stages) {
    if (!active.count(rank) || team.gone.count(rank)) continue;
    still.erase(rank);
    const std::string message = "stage device " + std::to_string(rank) + " on " + plan.workers[rank].node +
                                " is back: it rejoined a stage between steps";
    events_.Record(pass.object, "Normal", reason::kStageDeviceRejoined, message);
    log_.Job(pass.key, reason::kStageDeviceRejoined, message);
  }
  if (still.size() != team.lost_stages.size()) {
    pass.status["pipeline"]["lostRanks"] = Json(std::vector<int>(still.begin(), still.end()));
  }
  return std::nullopt;
}

bool Reconciler::SayProgressUnanswered(Pass& pass, const Team& team, const Json& progress,
                                       const std::string& unread) {
  // Unanswered, /progress says nothing of the team: the conditions stay
  // as last read, and past --stalled-after the team is not known to
  // step. They said every link was healthy while the coordinator's node
  // was dead, its figures 47 s old (a new user's trial).
  if (!progress.empty()) return false;
  const std::string read_time = pass.stored_status.value("/progress/readTime"_json_pointer, std::string());
  const std::optional<kube::WallTime> read_at = kube::ParseKubeTime(read_time);
  if (!read_at) return false;  // it never answered: nothing is as read
  // The first read it did not answer: a coordinator lost since is lost
  // from its last answer (LossEvidence), not from its node's NotReady.
  if (!pass.stored_status.contains("/progress/unreadSince"_json_pointer)) {
    pass.status["progress"]["unreadSince"] = pass.now;
  }
  const std::string why = unread.empty() ? "no address" : unread;
  const Json* pod = team.CoordinatorPod(pass);
  const std::optional<kube::WallTime> made =
      pod ? kube::ParseKubeTime(pod->value("/metadata/creationTimestamp"_json_pointer, std::string()))
          : std::nullopt;
  const bool placed_anew = made && *made > *read_at;
  // Its last word was that training had stopped: its silence is its
  // finishing, as it ends before its pod reads as ended. The status said for
  // a read that /progress had not answered, just before Succeeded (a new
  // user's trial). Not of a coordinator placed since that word: the word was
  // its predecessor's (a moved coordinator's "cancelled").
  const std::string stopped = pass.stored_status.value("/progress/stopReason"_json_pointer, std::string());
  if (!stopped.empty() && !placed_anew && team.gang.restarting.empty()) {
    pass.Set(condition::kRunning, true, reason::kTraining,
             "training has stopped (" + stopped + ") and the coordinator is finishing: its /progress no longer "
             "answers (" + why + "); status.progress is as read at " + read_time);
    return true;
  }
  if (team.gang.restarting.empty()) {
    // Its pods run, but its coordinator said nothing this time: not
    // "every agent runs", which the status said for the seconds between
    // its node's death and the node's NotReady (a user's trial). A
    // coordinator placed since the last read has not answered yet.
    if (placed_anew && !team.plan.workers.empty()) {
      pass.Set(condition::kRunning, true, reason::kWaitingForTeam,
               "every pod runs; the coordinator, placed anew, has not answered yet (" + why + ")");
    } else {
      pass.Set(condition::kRunning, true, reason::kTraining,
               "every pod runs; the coordinator's /progress has not answered since " + read_time + " (" + why +
                   "): status.progress is as read then");
    }
  }
  // Silent since the last read, or since its pod was made if later: a
  // coordinator of a job resumed after a minute suspended, or placed
  // anew, was called stalled for that minute before it could answer
  // (a new user's trial: "has not answered for 53 s").
  const kube::WallTime since = placed_anew ? *made : *read_at;
  const std::optional<kube::WallTime> now = kube::ParseKubeTime(pass.now);
  if (now && *now - since >= options_.links.stalled_after) {
    const auto silent = std::chrono::duration_cast<std::chrono::seconds>(*now - since);
    pass.Set(condition::kStalled, true, reason::kProgressUnreadable,
             "the coordinator's /progress has not answered for " + std::to_string(silent.count()) + " s (" + why +
                 "); status.progress is as read at " + read_time);
  }
  return true;
}

void Reconciler::JudgeLinks(Pass& pass, const Team& team, const Json& progress, const std::vector<Json>& gang_pods,
                            bool judged) {
  const JobPlan& plan = team.plan;
  // What placement expected of each link, to tell a fade from a weak link.
  std::vector<double> planned(plan.workers.size(), 0);
  for (const WorkerSlot& slot : plan.workers) {
    const NodeView* node = team.Node(slot.node);
    if (node && node->link_mbps && slot.rank >= 0 && slot.rank < static_cast<int>(planned.size())) {
      planned[slot.rank] = *node->link_mbps;
    }
  }
  std::map<int, double> pod_age_s;
  if (const std::optional<kube::WallTime> now = kube::ParseKubeTime(pass.now)) {
    for (const Json& pod : gang_pods) {
      const std::string rank = pod.value("/metadata/labels"_json_pointer, Json::object()).value(kRankLabel, "");
      const std::optional<kube::WallTime> made =
          kube::ParseKubeTime(pod.value("/metadata/creationTimestamp"_json_pointer, std::string()));
      if (rank.empty() || !made) continue;
      pod_age_s[std::atoi(rank.c_str())] = std::max(0.0, ToSeconds(*now - *made));
    }
  }
  const LinkHealth health = LinkHealthOf(progress, planned, options_.links, pod_age_s);
  if (judged) {
    pass.Set(condition::kStalled, health.stalled, health.stalled ? reason::kWaitingOnLinks : reason::kLinksHealthy,
             health.stall_message);
  }
  // A node gone silent is first a fading link: its pods tolerate it for
  // nodeLossGrace, and the team's deadline leaves its worker out meanwhile.
  // Each node named once, with its pods (it was named again for each).
  std::map<std::string, std::vector<std::string>> waited_out;
  for (const Json& pod : gang_pods) {
    const std::string node = pod.value("/spec/nodeName"_json_pointer, std::string());
    const NodeView* view = team.Node(node);
    if (view && !view->ready) waited_out[node].push_back(pod["metadata"]["name"].get<std::string>());
  }
  std::string silent;
  for (const auto& [node, pods] : waited_out) {
    std::string names;
    for (size_t i = 0; i < pods.size(); ++i) {
      names += (i == 0 ? "" : i + 1 == pods.size() ? " and " : ", ") + pods[i];
    }
    silent += (silent.empty() ? "" : "; ") + std::string("node ") + node + " is not ready: " + names +
              (pods.size() == 1 ? " is" : " are") + " waited out for nodeLossGrace (" +
              FormatDuration(pass.job.manifest.spec.fault_tolerance.node_loss_grace) + ")";
  }
  const Json* degraded = FindCondition(pass.stored_status, condition::kBandwidthDegraded);
  if (!silent.empty()) {
    pass.Set(condition::kBandwidthDegraded, true, reason::kNodeNotReady, silent);
  } else if (judged) {
    pass.Set(condition::kBandwidthDegraded, health.degraded,
             health.degraded ? health.degraded_reason : reason::kLinksHealthy, health.degraded_message);
  } else if (degraded && degraded->value("reason", "") == reason::kNodeNotReady) {
    // Its pods on the silent node replaced (the coordinator placed anew,
    // its team not started yet): the job said for seconds that it waited
    // out pods it no longer had (a user's trial).
    pass.Set(condition::kBandwidthDegraded, false, reason::kNodesReady,
             "every node of the team is ready; its links are judged once it trains");
  }
}

Json Reconciler::ReadProgress(Pass& pass, const Gang& gang, std::string* unread) {
  if (gang.coordinator_ip.empty()) return Json::object();
  StatusOr<Json> read = progress_.Progress(gang.coordinator_ip, kHttpPort);
  if (!read.ok()) {
    if (unread) *unread = read.status().message();
    return Json::object();
  }
  // Gone back: a coordinator placed anew took up its workers' copy of the
  // model only if they still held one. Theirs had gone with their restarts
  // (130 s without it), and a job read as training on had started over from
  // iteration 0, its status silent on it (a new user's trial). Judged once
  // it trains: placed anew, it answers iteration 0 while it gathers its
  // workers, before it takes up their copy, and the figures as last read
  // stay until then.
  const int64_t was = pass.stored_status.value("/progress/iteration"_json_pointer, int64_t{0});
  const int64_t now = read->value("iteration", int64_t{0});
  const std::string state = read->value("state", "");
  if (now < was && state == "starting") return std::move(*read);
  pass.status["progress"] = ProgressStatusOf(*read);
  // Its figures are as of then, should it stop answering.
  pass.status["progress"]["readTime"] = kube::FormatKubeTimePrecise(pass.wall_now);
  // A checkpoint taken up where the status had shown nothing: a job deleted
  // and applied again on the same volume and path went on from the deleted
  // one's, its status and Events silent on it (a new user's trial). Said
  // once: later reads are past it. Not where the status had shown the job's
  // own progress: a coordinator restarted in place took up the checkpoint it
  // wrote after the last read, and was told another spec.output.path starts
  // afresh (a soak trial). Nor of one restarted in place, or placed anew
  // after its loss, before any read had shown progress: its checkpoint is
  // its own too (a soak trial killed it in place seconds after it started).
  const bool first_coordinator = gang.coordinator_restarts == 0 && pass.stored_status.value("recoveries", 0) == 0;
  if (const Json from = read->value("resumedFromIteration", Json());
      state == "training" && from.is_number_integer() && was == 0 && first_coordinator && from.get<int64_t>() > 0) {
    const std::string message =
        "the coordinator took up the checkpoint in its output folder, at iteration " +
        std::to_string(from.get<int64_t>()) + ": it goes on from the run that wrote it (spec.output: another path "
        "starts afresh)";
    events_.Record(pass.object, "Normal", reason::kResumedFromCheckpoint, message);
    log_.Job(pass.key, reason::kResumedFromCheckpoint, message);
  }
  if (now < was && state == "training") {
    const std::string message =
        "the coordinator's /progress says iteration " + std::to_string(now) + ", where it said " +
        std::to_string(was) + " at " + pass.stored_status.value("/progress/readTime"_json_pointer, std::string("?")) +
        ": the team goes on from an earlier state (its last checkpoint, or none: from the start), and what it had "
        "trained since is lost";
    events_.Record(pass.object, "Warning", reason::kProgressLost, message);
    log_.Job(pass.key, reason::kProgressLost, message);
  }
  return std::move(*read);
}

void Reconciler::ReportReplays(Pass& pass, const Json& progress) {
  const Json replays = progress.value("replays", Json());
  if (!replays.is_object()) return;
  auto count = [](const Json& r, const char* key) { return r.is_object() ? r.value(key, int64_t{0}) : int64_t{0}; };
  const Json before = pass.stored_status.value("/pipeline/replays"_json_pointer, Json());
  const int64_t steps = count(replays, "count"), restored = count(replays, "restoredStages");
  const bool fresh = steps > count(before, "count") || restored > count(before, "restoredStages") ||
                     count(replays, "covered") > count(before, "covered");
  Json kept = Json::object();
  for (const char* key :
       {"count", "microBatches", "restoredStages", "stepsLost", "repartitions", "rejoined", "covered", "coveredShares",
        "rerunShares"}) {
    kept[key] = count(replays, key);
  }
  kept["recoverySeconds"] = replays.value("recoverySeconds", 0.0);
  pass.status["pipeline"]["replays"] = kept;
  if (steps == 0 && restored == 0 && kept["covered"].get<int64_t>() == 0) {
    pass.Set(condition::kReplaying, false, reason::kNothingLost, "no device lost");
    return;
  }
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.2f", kept["recoverySeconds"].get<double>());
  auto counted = [&](const char* key, const char* one, const char* many) {
    return CountOf(kept[key].get<int64_t>(), one, many);
  };
  // A device of a group lost mid-step has its shares computed again by its
  // group, nothing else run again; other losses run the step again on every stage.
  std::string message = "the head recovered from " + counted("count", "loss", "losses") + " mid-step (" +
                        counted("microBatches", "micro-batch", "micro-batches") + " run again on every stage, ";
  if (kept["covered"].get<int64_t>() > 0) {
    message += counted("coveredShares", "share", "shares") + " of " + counted("covered", "lost device", "lost devices") +
               " computed by their groups (" + std::to_string(kept["rerunShares"].get<int64_t>()) +
               " of them again), ";
  }
  message += std::string(seconds) + " s of recovery)";
  if (restored > 0) {
    message += " and rebuilt " + std::to_string(restored) + " stage" + (restored == 1 ? "" : "s") +
               " from a replica, losing " + std::to_string(kept["stepsLost"].get<int64_t>()) +
               (kept["stepsLost"].get<int64_t>() == 1 ? " step" : " steps") + " of those layers' updates";
  }
  // A pass that read nothing new of the head (its progress as the last
  // read left it) keeps what that read said: a replay's True was written
  // over by the next write, milliseconds later, and no one saw it (a new
  // user's trial). It turns False at the next read that shows none new.
  const std::string read_now = pass.status.value("/progress/readTime"_json_pointer, std::string());
  const Json* said = FindCondition(pass.stored_status, condition::kReplaying);
  const bool same_read =
      !read_now.empty() && read_now == pass.stored_status.value("/progress/readTime"_json_pointer, std::string());
  if (!fresh && same_read && said && said->value("status", "") == "True") {
    pass.Set(condition::kReplaying, true, reason::kReplayed, message);
    return;
  }
  pass.Set(condition::kReplaying, fresh, fresh ? reason::kReplayed : reason::kTrainingOn, message);
  if (fresh) {
    events_.Record(pass.object, "Warning", reason::kReplayed, message);
    log_.Job(pass.key, reason::kReplayed, message);
  }
}

void Reconciler::PublishMeasuredLinks(Pass& pass, const JobPlan& plan, const std::string& coordinator_node,
                                      const Json& progress) {
  if (!progress.contains("workers")) return;
  const kube::WallTime now = wall_now_();
  for (const Json& w : progress["workers"]) {
    const int rank = w.value("rank", -1);
    if (rank < 0 || rank >= static_cast<int>(plan.workers.size()) || !w.value("active", true)) continue;
    const std::string node = plan.workers[rank].node;
    // A worker beside the coordinator crosses no link worth telling of.
    if (node == coordinator_node) continue;
    const double up = Reading(w, "bandwidthMbps"), down = Reading(w, "downlinkMbps");
    if (!(up > 0) && !(down > 0)) continue;
    double up_mean = 0, down_mean = 0;
    {
      std::lock_guard<std::mutex> lock(published_mu_);
      LinkReadings& r = published_[node];
      if (up > 0) {
        r.up_sum += up;
        ++r.up_n;
      }
      if (down > 0) {
        r.down_sum += down;
        ++r.down_n;
      }
      // A few readings first, then at most once a measurement interval.
      if (std::max(r.up_n, r.down_n) < kLinkReadingsToPublish || now - r.published < options_.measurement_interval) {
        continue;
      }
      up_mean = r.up_n ? r.up_sum / r.up_n : 0;
      down_mean = r.down_n ? r.down_sum / r.down_n : 0;
      r = LinkReadings{now};
    }
    Json annotations = {{kMeasuredAt, kube::FormatKubeTime(now)}};
    if (up_mean > 0) annotations[kMeasuredUplink] = std::to_string(std::llround(up_mean * 1e6));
    if (down_mean > 0) annotations[kMeasuredDownlink] = std::to_string(std::llround(down_mean * 1e6));
    StatusOr<Json> patched = client_.MergePatch(kube::kNodes, "", node, {{"metadata", {{"annotations", annotations}}}});
    if (!patched.ok()) log_.Job(pass.key, "LinkNotPublished", node + ": " + patched.status().message());
  }
}

}  // namespace edgetrain::operator_

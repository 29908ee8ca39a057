// A lost member of a placed team mended: a worker replaced on another node
// while the others train on, a coordinator placed anew, a pipeline's devices
// let go of and their stages replayed or restored by the head; each counted
// against spec.faultTolerance.maxRecoveries, and told as an event.
#include <algorithm>
#include <map>
#include <set>

#include "core/cluster_placement.h"
#include "core/duration_text.h"
#include "operator/controller/gang.h"
#include "operator/controller/job_status.h"
#include "operator/controller/reconciler_pass.h"

namespace edgetrain::operator_ {

namespace phase = api::phase;
namespace condition = api::condition;
namespace reason = api::reason;

Status Reconciler::LoseStageDevices(Pass& pass, const JobPlan& plan, const std::map<int, std::string>& lost,
                                    bool pods_gone) {
  std::set<int> all = LostRanksOf(pass.status);
  for (const auto& [rank, why] : lost) all.insert(rank);
  // Whether any device of the plan is left for the head to train on.
  bool any_left = false;
  for (const PipelineStagePlan& stage : plan.pipeline->stages) {
    for (int r : stage.ranks) any_left = any_left || !all.count(r);
  }
  std::vector<std::string> doomed;
  for (const auto& [rank, why] : lost) {
    const std::string node = rank < static_cast<int>(plan.workers.size()) ? plan.workers[rank].node : "?";
    // Lost with its node, its pod is made again there once the node is
    // back, evicted or not: "its pod stays" and "it is not replaced" were
    // both said of a device whose node was killed (a new user's trial).
    const std::vector<NodeView> views = line_.Views({node}, MeasuredLinks{});
    const bool node_lost = views.empty() || !views.front().ready;
    // With none left, the head trains on only if one comes back in time:
    // "the head cannot train on" beside "it rejoins a stage" read as at odds
    // (a new user's trial, the planner's one-device plan losing its node).
    const std::string message =
        "stage device " + std::to_string(rank) + " on " + node + ": " + why +
        (any_left ? "; the head trains on without it (its step replayed, or its stage rebuilt from a replica)"
                  : "; no device of the pipeline is left: the head trains on only if one is back within "
                    "spec.faultTolerance.nodeLossGrace, from its checkpoint if it has one, and the job fails if "
                    "none is") +
        (node_lost   ? "; its node is not ready: its pod is made again there once it is back, and it rejoins a stage"
         : pods_gone ? ", and it is not replaced"
                     : "; its pod stays, and it rejoins a stage if it comes back");
    events_.Record(pass.object, "Warning", reason::kStageDeviceLost, message);
    log_.Job(pass.key, reason::kStageDeviceLost, message);
    // A failed pod holds its node for nothing.
    const Json* pod = PodNamed(pass.pods, WorkerPodName(pass.job.name, rank, SlotSince(plan, rank)));
    if (pods_gone && pod && !pod->at("metadata").contains("deletionTimestamp")) {
      doomed.push_back((*pod)["metadata"]["name"]);
    }
  }
  EDGETRAIN_RETURN_IF_ERROR(DeletePods(pass, doomed));
  pass.status["pipeline"]["lostRanks"] = Json(std::vector<int>(all.begin(), all.end()));
  // Looked at again soon: the gang without them, and the head's replays.
  pass.Requeue(options_.recheck_after);
  return Status::Ok();
}

Status Reconciler::CreateMissing(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator,
                                 const Gang& gang) {
  if (gang.missing.empty() || coordinator.node.empty()) return Status::Ok();
  // The pods mount the team's credentials: their Secret must be there, whatever
  // the status says (deleted by hand, or left by an earlier job of the name).
  EDGETRAIN_RETURN_IF_ERROR(KeepTeamCredentials(pass, plan, /*making_pods=*/true));
  // The image its teammates run, not the operator's default now: one changed
  // since they were made (a helm upgrade of agent.image.tag) put a
  // replacement on 0.2.0 into a team on 0.1.0 (a new user's trial).
  std::string teammates_image;
  for (const Json& pod : pass.pods) {
    if (pod.at("metadata").contains("deletionTimestamp") || !OwnedByJob(pod, pass.job) ||
        pod.value("/status/phase"_json_pointer, std::string()) != "Running") {
      continue;
    }
    teammates_image = pod.value("/spec/containers/0/image"_json_pointer, std::string());
    if (!teammates_image.empty()) break;
  }
  std::vector<Json> missing;
  for (Json& pod : PodsFor(AsPlaced(pass.job, plan), plan, coordinator, options_.pods)) {
    const std::string name = pod["metadata"]["name"];
    if (std::find(gang.missing.begin(), gang.missing.end(), name) == gang.missing.end()) continue;
    if (!teammates_image.empty()) {
      for (Json& container : pod["spec"]["containers"]) container["image"] = teammates_image;
    }
    missing.push_back(pod);
  }
  // Counted on their nodes before they are made, so that a waiting job's turn
  // is not given the room they take.
  line_.Placed(pass.key, missing, wall_now_());
  for (const Json& pod : missing) EDGETRAIN_RETURN_IF_ERROR(CreateOwn(pass, kube::kPods, pod));
  return Status::Ok();
}

StatusOr<std::string> Reconciler::CreateMissingOrSay(Pass& pass, const JobPlan& plan,
                                                     const CoordinatorSeat& coordinator, const Gang& gang) {
  const Status made = CreateMissing(pass, plan, coordinator, gang);
  if (made.ok()) return std::string();
  if (!pass.name_taken.empty()) return made;
  return SayPodNotMade(pass, made);
}

Status Reconciler::AwaitRoom(Pass& pass, const char* event_reason, const std::string& message) {
  pass.Set(condition::kRunning, false, reason::kRecovering, message);
  // Said once: the message changes when what is missing does.
  if (FindCondition(pass.stored_status, condition::kRunning) == nullptr ||
      FindCondition(pass.stored_status, condition::kRunning)->value("message", "") != message) {
    events_.Record(pass.object, "Warning", event_reason, message);
    log_.Job(pass.key, event_reason, message);
  }
  pass.Requeue(options_.unschedulable_retry);
  return Status::Ok();
}

bool Reconciler::RecoveriesExhausted(Pass& pass, const std::string& what, int recoveries) {
  const int allowed = pass.job.manifest.spec.fault_tolerance.max_recoveries;
  if (recoveries <= allowed) return false;
  const std::string message = what + "; that would be recovery " + std::to_string(recoveries) +
                              ", more than spec.faultTolerance.maxRecoveries (" + std::to_string(allowed) + ")";
  EndFailed(pass, reason::kRecoveriesExhausted, message);
  return true;
}

void Reconciler::MoveWaits(Pass& pass, const char* event_reason, const std::string& message) {
  // The coordinator's and its workers' nodes may all be cordoned at once.
  if (!pass.move_waits_reason) pass.move_waits_reason = event_reason;
  pass.move_waits += (pass.move_waits.empty() ? "" : "; ") + message + "; it trains on there meanwhile";
  pass.Requeue(options_.unschedulable_retry);
}

std::optional<Status> Reconciler::MoveCoordinator(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator,
                                                  const std::string& why, bool moving) {
  const std::string what = "the coordinator: " + why;
  // A move ahead of a warning is no failure: only losses count against maxRecoveries.
  const char* event_reason = moving ? reason::kCoordinatorMoved : reason::kCoordinatorLost;
  const int recoveries = pass.status.value("recoveries", 0) + (moving ? 0 : 1);
  // Its pods go once the end is stored (Finished).
  if (!moving && RecoveriesExhausted(pass, what, recoveries)) return Status::Ok();

  // Workers lost with it, on its node: placed anew in the same plan, one
  // loss and one recovery. The node's loss counted twice against
  // maxRecoveries, a plan generation each (a new user's trial).
  // A pipeline's stage devices lost with it are not: its head replays
  // without them, or rebuilds their stages, as for any device lost.
  // Its node lost (not ready past the grace, or gone) takes them all, their
  // pods' own losses seen or not yet: the cluster marks a dead node's pods
  // one at a time, and a worker whose pod was not yet marked was lost a
  // moment later as a second recovery, in a plan generation of its own
  // (a new user's trial).
  const std::vector<NodeView> nodes = line_.Cluster(Measured());
  const auto its_node = std::find_if(nodes.begin(), nodes.end(),
                                     [&](const NodeView& n) { return n.name == coordinator.node; });
  const bool node_lost = its_node == nodes.end() || !its_node->ready;
  std::set<int> fellows;
  if (!moving && !plan.pipeline) {
    for (const WorkerSlot& slot : plan.workers) {
      if (slot.node != coordinator.node) continue;
      const int64_t since = SlotSince(plan, slot.rank);
      const Json* pod = PodNamed(pass.pods, WorkerPodName(pass.job.name, slot.rank, since));
      if (node_lost || !pod || !LossOf(pod, since, plan.generation).empty()) fellows.insert(slot.rank);
    }
  }

  // Anywhere the placement policy would put a coordinator (not the node it
  // leaves: not ready, or leaving), on what every pod now holds; the workers
  // stay where they are, but those lost with it.
  StatusOr<TeamRequest> request =
      api::TeamRequestOf(AsPlaced(pass.job, plan).manifest, options_.pods.defaults, MeasuredSizeOf(pass));
  if (!request.ok()) return request.status();
  request->solo = false;
  request->workers = static_cast<int>(fellows.size());
  for (const WorkerSlot& slot : plan.workers) {
    if (!fellows.count(slot.rank)) ++request->workers_on[slot.node];
  }
  const TeamPlacement seat = PlaceTeam(nodes, *request);
  // Warned, its pod still running: it trains on where it is. Its pod
  // evicted (a drain), it is gone, and the team recovers once there is room.
  const Json* its_pod = PodNamed(pass.pods, CoordinatorPodName(pass.job.name, coordinator.since_generation));
  const bool runs_on = its_pod && LossOf(its_pod, coordinator.since_generation, plan.generation).empty();
  if (!seat.placed && moving && runs_on) {
    MoveWaits(pass, event_reason, what + "; no node for it yet: " + seat.unschedulable);
    return std::nullopt;
  }
  pass.status["phase"] = phase::kRecovering;
  if (!seat.placed) return AwaitRoom(pass, event_reason, what + "; no node for it yet: " + seat.unschedulable);

  // The next generation: every worker keeps its slot (and its stream: its
  // hello is of a generation the new coordinator admits), the coordinator's
  // seat is new, and so is its pod's name, while the old one may still be
  // Terminating on a node that cannot confirm its end.
  std::string with_it;
  const JobPlan next = NextGeneration(plan, fellows, seat.worker_nodes, nodes, with_it);
  const CoordinatorSeat moved{seat.coordinator_node, next.generation};
  EDGETRAIN_RETURN_IF_ERROR(WritePlanConfigMap(pass, PlanConfigMapFor(pass.job, next, moved)));
  std::vector<std::string> doomed;
  std::vector<const Json*> lost_pods;
  const std::string old_name = CoordinatorPodName(pass.job.name, coordinator.since_generation);
  std::vector<std::string> lost_names = {old_name};
  for (int rank : fellows) lost_names.push_back(WorkerPodName(pass.job.name, rank, SlotSince(plan, rank)));
  for (const std::string& name : lost_names) lost_pods.push_back(PodNamed(pass.pods, name));
  for (const Json* pod : lost_pods) {
    if (pod && !pod->at("metadata").contains("deletionTimestamp")) doomed.push_back((*pod)["metadata"]["name"]);
  }
  EDGETRAIN_RETURN_IF_ERROR(DeletePods(pass, doomed));
  Gang fresh;
  fresh.missing.push_back(CoordinatorPodName(pass.job.name, moved.since_generation));
  for (int rank : fellows) fresh.missing.push_back(WorkerPodName(pass.job.name, rank, next.generation));
  // Refused, the recovery is counted and said all the same: its plan is
  // written and its lost pods gone, and a later look makes the pods, every
  // --status-interval while the team trains on without them (not every
  // --recheck-after: a quota full for long was asked a create a second).
  EDGETRAIN_ASSIGN_OR_RETURN(const std::string not_made, CreateMissingOrSay(pass, next, moved, fresh));

  return Replanned(pass, event_reason, moving ? std::nullopt : std::optional<int>(recoveries),
                   what + "; placed anew on " + moved.node +
                       (plan.pipeline ? ", to train on from the state its stages hold"
                                      : ", to train on from its workers' copy of the model") +
                       (with_it.empty() ? "" : "; lost with it and replaced: " + with_it) +
                       (not_made.empty() ? "" : "; " + not_made),
                   next, moved,
                   LossEvidence(pass.stored_status, lost_names, lost_pods, line_.Views({coordinator.node}, MeasuredLinks{}),
                                /*coordinator_lost=*/true));
}

std::optional<Status> Reconciler::Recover(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator,
                                          const std::map<int, std::string>& lost, const std::set<int>& moves) {
  std::string what;
  for (const auto& [rank, why] : lost) what += (what.empty() ? "worker " : "; worker ") + std::to_string(rank) + ": " + why;
  // A move ahead of a warning is no failure: only losses count against maxRecoveries.
  const bool only_moves = moves.size() == lost.size();
  const char* event_reason = only_moves ? reason::kWorkerMoved : reason::kWorkerLost;
  const int recoveries = pass.status.value("recoveries", 0) + (only_moves ? 0 : 1);
  // Its pods go once the end is stored (Finished).
  if (!only_moves && RecoveriesExhausted(pass, what, recoveries)) return Status::Ok();

  // Re-place the lost ranks only: around the survivors, beside the coordinator
  // where it is, on what every pod now holds (the lost ones included, which
  // still hold a silent node until they are gone).
  StatusOr<TeamRequest> request =
      api::TeamRequestOf(AsPlaced(pass.job, plan).manifest, options_.pods.defaults, MeasuredSizeOf(pass));
  if (!request.ok()) return request.status();
  request->solo = false;
  request->workers = static_cast<int>(lost.size());
  request->coordinator_on = coordinator.node;
  for (const WorkerSlot& slot : plan.workers) {
    if (!lost.count(slot.rank)) ++request->workers_on[slot.node];
  }
  const std::vector<NodeView> nodes = line_.Cluster(Measured());
  const TeamPlacement replacement = PlaceTeam(nodes, *request);
  // Each of them warned, its pod still running: they train on where they
  // are. A pod evicted (a drain) is gone, and the team recovers once there is room.
  const bool run_on = std::all_of(lost.begin(), lost.end(), [&](const auto& loss) {
    const int64_t since = SlotSince(plan, loss.first);
    const Json* pod = PodNamed(pass.pods, WorkerPodName(pass.job.name, loss.first, since));
    return pod && LossOf(pod, since, plan.generation).empty();
  });
  if (!replacement.placed && only_moves && run_on) {
    MoveWaits(pass, event_reason, what + "; no node to move it to yet: " + replacement.unschedulable);
    return std::nullopt;
  }
  pass.status["phase"] = phase::kRecovering;
  if (!replacement.placed) {
    return AwaitRoom(pass, event_reason, what + "; no node for a replacement yet: " + replacement.unschedulable);
  }

  std::set<int> replaced;
  for (const auto& [rank, why] : lost) replaced.insert(rank);
  std::string moved;
  const JobPlan next = NextGeneration(plan, replaced, replacement.worker_nodes, nodes, moved);
  // The coordinator reads the new plan from its mounted ConfigMap and fences
  // out only the replaced ranks; the survivors train on.
  EDGETRAIN_RETURN_IF_ERROR(WritePlanConfigMap(pass, PlanConfigMapFor(pass.job, next, coordinator)));
  // The lost pods that are not already going, go (an evicted pod stays Failed).
  std::vector<std::string> doomed;
  for (const auto& [rank, why] : lost) {
    const Json* pod = PodNamed(pass.pods, WorkerPodName(pass.job.name, rank, SlotSince(plan, rank)));
    if (pod && !pod->at("metadata").contains("deletionTimestamp")) doomed.push_back((*pod)["metadata"]["name"]);
  }
  EDGETRAIN_RETURN_IF_ERROR(DeletePods(pass, doomed));
  Gang fresh;
  for (const auto& [rank, why] : lost) fresh.missing.push_back(WorkerPodName(pass.job.name, rank, next.generation));
  EDGETRAIN_ASSIGN_OR_RETURN(const std::string not_made, CreateMissingOrSay(pass, next, coordinator, fresh));

  std::vector<const Json*> lost_pods;
  std::vector<std::string> lost_names, lost_nodes;
  for (const auto& [rank, why] : lost) {
    lost_names.push_back(WorkerPodName(pass.job.name, rank, SlotSince(plan, rank)));
    lost_pods.push_back(PodNamed(pass.pods, lost_names.back()));
    lost_nodes.push_back(plan.workers[static_cast<size_t>(rank)].node);
  }
  return Replanned(pass, event_reason, only_moves ? std::nullopt : std::optional<int>(recoveries),
                   what + "; replaced: " + moved + (not_made.empty() ? "" : "; " + not_made), next, coordinator,
                   LossEvidence(pass.stored_status, lost_names, lost_pods, line_.Views(lost_nodes, MeasuredLinks{}),
                                /*coordinator_lost=*/false));
}

Status Reconciler::Replanned(Pass& pass, const char* event_reason, std::optional<int> recovery,
                             const std::string& what, const JobPlan& next, const CoordinatorSeat& coordinator,
                             std::optional<kube::WallTime> lost_since) {
  const int allowed = pass.job.manifest.spec.fault_tolerance.max_recoveries;
  const int64_t generation = next.generation;
  // Where the team is now: Placed said where the first plan put it, and
  // stayed so through every move and replacement (a new user's trial).
  pass.Set(condition::kPlaced, true, reason::kPlaced,
           DescribePlacement(PlacementOf(next, coordinator)) + " (plan generation " + std::to_string(generation) + ")");
  const std::string message =
      what + " (plan generation " + std::to_string(generation) +
      (recovery ? ", recovery " + std::to_string(*recovery) + " of " + std::to_string(allowed) + ")"
                : ", moved ahead of the loss)");
  if (recovery) pass.status["recoveries"] = *recovery;
  const bool was_running = ConditionIs(pass.stored_status, condition::kRunning, true);
  // A move is said as one (WorkerMoved, CoordinatorMoved), a loss as Recovering.
  pass.Set(condition::kRunning, false, recovery ? reason::kRecovering : event_reason, message);
  // The team stopped being whole when the cluster says it did, not when this
  // reconcile saw it: the recovery's time (its Event, its histogram) counts
  // from there. Never before the team last ran whole.
  const Json* running = FindCondition(pass.stored_status, condition::kRunning);
  const std::optional<kube::WallTime> ran_since =
      running ? kube::ParseKubeTime(running->value("lastTransitionTime", "")) : std::nullopt;
  if (was_running && lost_since && *lost_since < wall_now_() && (!ran_since || *lost_since >= *ran_since)) {
    for (Json& c : pass.status["conditions"]) {
      if (c.value("type", "") == condition::kRunning) c["lastTransitionTime"] = kube::FormatKubeTime(*lost_since);
    }
  }
  events_.Record(pass.object, recovery ? "Warning" : "Normal", event_reason, message);
  log_.Job(pass.key, event_reason, message);
  pass.outcome.placement = "placed";
  pass.outcome.replan = event_reason;
  pass.Requeue(options_.status_interval);
  return Status::Ok();
}

}  // namespace edgetrain::operator_

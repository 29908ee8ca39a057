#include "operator/controller/team_members.h"

#include <algorithm>
#include <chrono>

#include "api/job_conditions.h"
#include "operator/controller/job_labels.h"
#include "operator/controller/job_status.h"

namespace edgetrain::operator_ {

namespace condition = api::condition;
namespace reason = api::reason;

bool HasPod(const JobPlan& plan, int rank, const std::set<int>& lost) {
  return !plan.pipeline || (StageOfRank(*plan.pipeline, rank).ok() && !lost.count(rank));
}

std::vector<std::string> PodNamesOf(const JobObject& job, const JobPlan& plan, const CoordinatorSeat& coordinator,
                                    const std::set<int>& lost) {
  std::vector<std::string> names = {CoordinatorPodName(job.name, coordinator.since_generation)};
  for (const WorkerSlot& slot : plan.workers) {
    if (HasPod(plan, slot.rank, lost)) names.push_back(WorkerPodName(job.name, slot.rank, SlotSince(plan, slot.rank)));
  }
  return names;
}

std::set<int> RanksAt(const Json& status, const char* pointer) {
  std::set<int> ranks;
  const Json list = status.value(Json::json_pointer(pointer), Json::array());
  if (!list.is_array()) return ranks;
  for (const Json& r : list) {
    if (r.is_number_integer()) ranks.insert(r.get<int>());
  }
  return ranks;
}

std::string StageLeftWithoutDevices(const PipelineLayout& pipeline, const std::set<int>& gone) {
  for (size_t s = 0; s < pipeline.stages.size(); ++s) {
    const std::vector<int>& ranks = pipeline.stages[s].ranks;
    if (ranks.empty() || !std::all_of(ranks.begin(), ranks.end(), [&](int r) { return gone.count(r) > 0; })) continue;
    std::string names;
    for (int r : ranks) names += (names.empty() ? "" : ", ") + std::to_string(r);
    return "stage " + std::to_string(s + 1) + " of the plan has no device left (" +
           (ranks.size() == 1 ? "rank " + names + " lost for good, its pod gone"
                              : "ranks " + names + " lost for good, their pods gone") +
           "), and a pipeline's lost devices are not replaced; delete the job and apply it again to start over";
  }
  return "";
}

std::set<int> LostRanksOf(const Json& status) { return RanksAt(status, "/pipeline/lostRanks"); }

const Json* PodNamed(const std::vector<Json>& pods, const std::string& name) {
  for (const Json& pod : pods) {
    if (pod.value("/metadata/name"_json_pointer, std::string()) == name) return &pod;
  }
  return nullptr;
}

std::string LossOf(const Json* pod, int64_t slot_since, int64_t generation) {
  if (!pod) return slot_since < generation ? "its pod is gone" : "";
  const std::string node = pod->value("/spec/nodeName"_json_pointer, std::string());
  if (pod->at("metadata").contains("deletionTimestamp")) return "its pod on " + node + " is being deleted";
  if (pod->value("/status/phase"_json_pointer, std::string()) == "Failed") {
    const std::string why = pod->value("/status/reason"_json_pointer, std::string("Failed"));
    return "its pod on " + node + " failed (" + why + ")";
  }
  return "";
}

std::map<int, GoneWorker> GoneWorkersOf(const std::string& job, const JobPlan& plan) {
  std::map<int, GoneWorker> gone;
  if (plan.pipeline) return gone;
  for (const WorkerSlot& slot : plan.workers) {
    gone[slot.rank] = {WorkerPodName(job, slot.rank, SlotSince(plan, slot.rank)), slot.node};
  }
  return gone;
}

JobPlan NextGeneration(const JobPlan& plan, const std::set<int>& replaced, const std::vector<std::string>& to,
                       const std::vector<NodeView>& nodes, std::string& said) {
  JobPlan next = plan;
  next.generation = plan.generation + 1;
  size_t placed = 0;
  for (WorkerSlot& slot : next.workers) {
    if (!replaced.count(slot.rank)) {
      slot.since_generation = SlotSince(plan, slot.rank);
      continue;
    }
    PutSlotOn(slot, to[placed++], nodes);
    slot.since_generation = next.generation;
    said += (said.empty() ? "" : ", ") + std::string("worker ") + std::to_string(slot.rank) + " to " + slot.node;
  }
  return next;
}

std::optional<kube::WallTime> LossEvidence(const Json& stored_status, const std::vector<std::string>& lost_names,
                                           const std::vector<const Json*>& lost_pods,
                                           const std::vector<NodeView>& lost_nodes, bool coordinator_lost) {
  std::optional<kube::WallTime> earliest;
  auto consider = [&](const std::string& text, std::chrono::seconds less = std::chrono::seconds(0)) {
    if (std::optional<kube::WallTime> t = kube::ParseKubeTime(text)) {
      const kube::WallTime at = *t - less;
      if (!earliest || at < *earliest) earliest = at;
    }
  };
  for (const Json* pod : lost_pods) {
    if (!pod) continue;
    const Json& meta = pod->at("metadata");
    if (meta.contains("deletionTimestamp")) {
      consider(meta.value("deletionTimestamp", ""), std::chrono::seconds(meta.value("deletionGracePeriodSeconds", 0)));
    }
    for (const Json& c : pod->value("/status/containerStatuses"_json_pointer, Json::array())) {
      consider(c.value("/state/terminated/finishedAt"_json_pointer, std::string()));
    }
  }
  if (const Json* degraded = FindCondition(stored_status, condition::kBandwidthDegraded);
      degraded && degraded->value("status", "") == "True" && degraded->value("reason", "") == reason::kNodeNotReady) {
    consider(degraded->value("lastTransitionTime", ""));
  }
  // A lost worker silent since (status.workers' silentSince, its last read):
  // by name, for a pod already gone from the cache has no labels to read.
  for (const std::string& name : lost_names) {
    for (const Json& w : stored_status.value("workers", Json::array())) {
      if (w.value("name", "") == name) consider(w.value("silentSince", ""));
    }
  }
  // The node's own word: a condition that was already True for a link down
  // kept its time, and an eviction after nodeLossGrace was taken for the
  // start of a loss whose node had gone silent 15 s before (a new user's trial).
  for (const NodeView& node : lost_nodes) {
    if (!node.ready) consider(node.not_ready_since);
  }
  // A coordinator whose node died: its /progress went unanswered from its
  // last read, 40 s before its node was called NotReady. Its recovery was
  // counted 12 s where the team had stood 50 s (a new user's trial), and,
  // lost before --stalled-after, from its node's NotReady: 5.2 s where it had
  // stood 10 (another). Unanswered since a read, it is lost from that read.
  // Not a read of an earlier coordinator's (one replaced, or before a
  // suspension), older than the lost one's pod (first of `lost_pods`): taken
  // for its loss, it was older than the team's last start, and the recovery
  // was counted from when the operator saw it (found in review).
  const bool unread = stored_status.contains("/progress/unreadSince"_json_pointer) ||
                      (ConditionIs(stored_status, condition::kStalled, true) &&
                       FindCondition(stored_status, condition::kStalled)->value("reason", "") ==
                           reason::kProgressUnreadable);
  const std::string read_time = stored_status.value("/progress/readTime"_json_pointer, std::string());
  const std::optional<kube::WallTime> read_at = kube::ParseKubeTime(read_time);
  const std::optional<kube::WallTime> made =
      !lost_pods.empty() && lost_pods.front()
          ? kube::ParseKubeTime(lost_pods.front()->value("/metadata/creationTimestamp"_json_pointer, std::string()))
          : std::nullopt;
  if (coordinator_lost && unread && read_at && (!made || *read_at >= *made)) consider(read_time);
  return earliest;
}

bool LeavingsOwnDoing(const Json* pod, const NodeView* node) {
  const bool failed = pod && pod->value("/status/phase"_json_pointer, std::string()) == "Failed";
  return !failed && node && node->ready && !node->leaving.empty();
}

TeamPlacement PlacementOf(const JobPlan& plan, const CoordinatorSeat& coordinator) {
  TeamPlacement placement;
  placement.coordinator_node = coordinator.node;
  placement.worker_nodes.resize(plan.workers.size());
  for (const WorkerSlot& slot : plan.workers) placement.worker_nodes.at(static_cast<size_t>(slot.rank)) = slot.node;
  return placement;
}

std::string DescribePlacement(const TeamPlacement& placement) {
  std::string text = "coordinator on " + placement.coordinator_node;
  if (!placement.worker_nodes.empty()) {
    text += "; workers on";
    for (size_t rank = 0; rank < placement.worker_nodes.size(); ++rank) {
      text += (rank ? ", " : " ") + placement.worker_nodes[rank] + " (" + std::to_string(rank) + ")";
    }
  }
  return text;
}

}  // namespace edgetrain::operator_

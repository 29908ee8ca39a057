#pragma once
// A placed team's members: the pods its plan has, which of them are lost and
// why, since when by the cluster's own word, and the plan that replaces them.
// Pure functions of the cached objects, so the reconciler's rules about
// losses are read, and tested, apart from its passes.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster_placement.h"
#include "core/job_plan.h"
#include "core/node_view.h"
#include "operator/controller/job_objects.h"
#include "operator/controller/job_status.h"
#include "operator/kube/kube_time.h"

namespace edgetrain::operator_ {

using Json = nlohmann::json;

// Whether rank `rank` of `plan` has a pod: a pipeline's devices that the plan
// leaves out, or that were lost (`lost`), have none.
bool HasPod(const JobPlan& plan, int rank, const std::set<int>& lost);

// The names of the pods `plan` has, the coordinator's first; a pipeline's
// devices `lost` have none.
std::vector<std::string> PodNamesOf(const JobObject& job, const JobPlan& plan, const CoordinatorSeat& coordinator,
                                    const std::set<int>& lost);

// The ranks listed at `pointer` of `status`.
std::set<int> RanksAt(const Json& status, const char* pointer);

// Why a pipeline cannot train on, restarted, without the devices `gone`
// (lost for good: pipeline devices are not replaced): a stage of its plan has
// none of its devices left, and a restarted head starts from the plan, with
// no replica of that stage to rebuild it from. Empty when every stage has one.
std::string StageLeftWithoutDevices(const PipelineLayout& pipeline, const std::set<int>& gone);

// status.pipeline.lostRanks: a pipeline's devices lost so far.
std::set<int> LostRanksOf(const Json& status);

// The pod of `pods` named `name`, or null.
const Json* PodNamed(const std::vector<Json>& pods, const std::string& name);

// Why a worker's pod of a team that has run is lost, or empty if it is not: it
// failed (evicted, or its node rejected it), it is being deleted (an eviction
// after nodeLossGrace, a pre-emption, a drain, a person), or it is gone though
// it was placed by an earlier plan (so not merely not yet in the cache).
std::string LossOf(const Json* pod, int64_t slot_since, int64_t generation);

// Each worker's pod name and node in `plan`, by rank, for one whose pod is
// gone (WorkersStatusOf); none of a pipeline's, whose lost devices the head
// lists itself.
std::map<int, GoneWorker> GoneWorkersOf(const std::string& job, const JobPlan& plan);

// The next plan generation: the ranks `replaced` placed on `to` (in rank
// order), every other worker keeping its slot and stream. `said`: where each
// went, "worker 1 to robot-2, worker 3 to spot-1".
JobPlan NextGeneration(const JobPlan& plan, const std::set<int>& replaced, const std::vector<std::string>& to,
                       const std::vector<NodeView>& nodes, std::string& said);

// When the team stopped being whole, by the cluster's own word: a lost pod's
// delete asked for (its deletionTimestamp less its grace), its agent's end
// (a failed pod's finishedAt), a node of the team gone silent (the
// NodeNotReady the status has said since), a lost worker gone silent
// (its silentSince in the status), a lost coordinator's /progress unanswered
// since its last read (status.progress.unreadSince, or Stalled,
// ProgressUnreadable). None: nothing earlier than now.
// A recovery timed from when this operator saw it was shown as 0.65 s when
// the team had been short a worker for 17 s (a new user's trial: the loss
// came while no replica led).
std::optional<kube::WallTime> LossEvidence(const Json& stored_status, const std::vector<std::string>& lost_names,
                                           const std::vector<const Json*>& lost_pods,
                                           const std::vector<NodeView>& lost_nodes, bool coordinator_lost);

// A loss that is the leaving node's own doing: a pod deleted or gone, not
// failed, on a node still ready that said it is leaving. `kubectl drain`
// cordons the node and evicts its pods a moment later; both often reach the
// same reconcile, and the eviction was counted a loss against maxRecoveries
// where the cordon alone was a move (a new user's trial).
bool LeavingsOwnDoing(const Json* pod, const NodeView* node);

// Where a plan's pods go, as placement said it.
TeamPlacement PlacementOf(const JobPlan& plan, const CoordinatorSeat& coordinator);

// "coordinator on N; workers on A (0), B (1)", for events and logs.
std::string DescribePlacement(const TeamPlacement& placement);

}  // namespace edgetrain::operator_

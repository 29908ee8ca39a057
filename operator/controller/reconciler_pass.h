#pragma once
// Inside the reconciler: the state one reconcile carries (Pass), and the team
// of a placed job as it sees it (Team), shared by the files its passes are
// told in (reconciler.cc: validation, placement and the job's objects;
// reconciler_follow.cc: a placed job followed; reconciler_recovery.cc: a lost
// member mended). Not for other code.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/job_conditions.h"
#include "operator/controller/job_labels.h"
#include "operator/controller/reconciler.h"
#include "operator/controller/team_members.h"

namespace edgetrain::operator_ {

// One reconcile's state: the job as cached, the status being computed, and
// what the reconcile asks of the controller.
struct Reconciler::Pass {
  std::string key;
  Json object;        // the TrainingJob as cached
  JobObject job;      // once valid
  Json status;        // what is being computed
  Json stored_status; // what the API has
  int64_t generation = 0;
  std::string now;
  kube::WallTime wall_now{};  // `now`, to its fraction of a second
  std::vector<Json> pods;            // the team's, not the model check's
  std::optional<Json> model_check;   // the pod checking a TorchScript module
  ReconcileOutcome outcome;
  // An object under a name of the job's is another's (JobMayWrite): what
  // was being made stops, and the job fails NameTaken.
  std::string name_taken;
  // A move that waits for a node with room (Reconciler::MoveWaits): its
  // Event's reason and what the Running condition adds.
  const char* move_waits_reason = nullptr;
  std::string move_waits;

  // This pass wrote the job's plan (placed it, or mended a loss), or goes on
  // from a status an earlier pass that did could not store
  // (Reconciler::unstored_).
  bool wrote_plan = false;

  std::string Phase() const { return status.value("phase", ""); }
  // The generation the status this pass goes on from observed: the stored
  // one's, or, carried over a failed write (Reconciler::unstored_), its own;
  // until the pass sets it at its end. What is said once a generation is
  // judged by it.
  int64_t ObservedGeneration() const { return status.value("observedGeneration", int64_t{0}); }
  void Requeue(Duration d) {
    if (!outcome.requeue_after || d < *outcome.requeue_after) outcome.requeue_after = d;
  }
  void Set(const char* type, bool value, const char* why, const std::string& message) {
    SetCondition(status, {type, value, why, message}, now, generation);
  }
};

// A placed job's team as one reconcile sees it: its plan, its nodes, its
// pods as a gang, and, of a pipeline, which devices are lost and how.
struct Reconciler::Team {
  Team(const JobPlan& p, const CoordinatorSeat& c) : plan(p), coordinator(c) {}
  const JobPlan& plan;
  const CoordinatorSeat& coordinator;
  std::map<std::string, NodeView> nodes;  // the team's nodes as declared
  // A pipeline's devices lost so far (status.pipeline.lostRanks); those
  // whose pods wait for their node to come back (status.pipeline.awaitingNodes,
  // to which a device lost in this pass with its node is added); and, of
  // the lost, those out of the gang.
  std::set<int> lost_stages, awaiting, gone;
  std::vector<std::string> names;  // the gang's pods
  Gang gang;
  bool has_run = false;  // it has trained (status.startTime)
  // It has trained, and was placed anew since (resumed, or placed again
  // after its gang timed out or a node was lost before it ran): its new
  // gang has not run yet, so no member of it can be lost.
  bool resuming = false;

  const NodeView* Node(const std::string& name) const {
    auto it = nodes.find(name);
    return it == nodes.end() ? nullptr : &it->second;
  }
  // Its coordinator's pod, if the cache has it.
  const Json* CoordinatorPod(const Pass& pass) const {
    return PodNamed(pass.pods, CoordinatorPodName(pass.job.name, coordinator.since_generation));
  }
  // Its gang has trained, and has neither succeeded nor failed: a loss of a
  // member is still to be mended.
  bool Live() const {
    return has_run && !resuming && gang.state != GangState::kSucceeded && gang.state != GangState::kFailed;
  }
};

}  // namespace edgetrain::operator_

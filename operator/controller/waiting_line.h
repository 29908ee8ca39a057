#pragma once
// The jobs waiting to be placed, in line - by their priority class's value,
// then by age, then by key - and one reservation pass over them: each job,
// first in line first, placed on the room its elders left, taking its share
// if it fits (one that does not fit takes nothing, so a smaller job behind it
// may start). A reconcile of a waiting job reads its turn from the pass.
//
// Why a pass, kept: working out the line again for every reconcile, as each
// job did once, placed every job ahead of it anew - O(waiting^2 x nodes) for a
// queue of waiting jobs, minutes of CPU for 1,000 jobs on 5,000 nodes. The
// pass is computed once and reused until something placement depends on
// changes: a Node as placement reads it, what a pod holds, the line itself.
// A job placed as the pass said changes none of that - its pods hold what its
// turn reserved, and it leaves the line from where it stood - so the pass
// lives on through a queue of placements. Jobs that join the line behind
// everyone in it (the young ones) are added to the pass, not recomputed.
//
// Placement's view of the cluster is kept here too, from the informers'
// stores as they change: each Node parsed once per change (not 5,000 per
// reconcile), each pod's holding summed once. Pods just created are counted
// on their nodes until the informer sees them (kube-scheduler's "assumed"
// pods), so a second worker never places on room already given.

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/team_request.h"
#include "core/cluster_placement.h"
#include "operator/controller/cluster_view.h"
#include "operator/kube/informer.h"

namespace edgetrain::operator_ {

using Json = nlohmann::json;

class WaitingLine {
 public:
  // A priority class's value (0 for none or unknown); asked once a pass.
  using Priority = std::function<int(const std::string& priority_class)>;

  // Listens to the three stores from now on, and reads what they hold.
  WaitingLine(kube::Store& jobs, kube::Store& pods, kube::Store& nodes, api::PodDefaults defaults,
              Duration max_pass_age);

  // Where the job `key` (asking `request`, of `priority_class`, created at
  // `created`) goes: its turn in the pass, or - when it is not in the line -
  // the room left once every job ahead of it that fits has taken its share.
  TeamPlacement PlacementOf(const std::string& key, const TeamRequest& request, const std::string& priority_class,
                            const std::string& created, const Priority& priority, const MeasuredLinks& measured);
  // The job `key` was placed with these pods: they count on their nodes until
  // the pod informer has them (or a minute has passed).
  void Placed(const std::string& key, const std::vector<Json>& pods, kube::WallTime now);
  // Making them failed: what was assumed of the job `key`'s pods is dropped.
  void Forget(const std::string& key);

  // The views of the named nodes, those known (a plan's slowdowns and power),
  // with what pods hold and what is assumed of pods just made.
  std::vector<NodeView> Views(const std::vector<std::string>& names, const MeasuredLinks& measured);
  // Every readable node's view, likewise: the cluster a running team's
  // replacement is placed on.
  std::vector<NodeView> Cluster(const MeasuredLinks& measured);
  bool AnyNodeMatches(const std::map<std::string, std::string>& selector);
  size_t NodeCount();
  // Nodes that cannot be read: "NAME: why".
  std::vector<std::string> Unreadable();
  // Reservation passes computed from scratch so far, and jobs added to one.
  uint64_t passes();
  uint64_t extensions();

 private:
  struct CachedNode {
    NodeView declared;                 // with the link the site declares
    std::optional<NodeView> measured;  // with the link a team measured, while fresh
    kube::WallTime measured_at{};
    std::string unreadable;            // why it cannot be read; empty if it can
  };
  struct Holding {
    std::string node;
    ResourceAmounts requests;
  };
  struct PodSeen {
    bool exists = false;
    std::optional<Holding> holding;  // none: it holds no node
  };
  static CachedNode Parse(const Json& node);
  static PodSeen See(const Json* pod);

  struct Assumed {
    Holding holding;
    kube::WallTime until;
    std::string job;
  };
  struct Waiting {  // a job in line
    std::string priority_class, created;
    std::string spec;  // as text: a change of spec is parsed again
    std::optional<TeamRequest> request;  // none: its spec does not parse; it takes no turn
    // Its gang timed out: it takes no turn until its back-off ends, holding
    // nothing meanwhile (docs/operator.md).
    std::optional<kube::WallTime> backs_off_until;
  };
  struct Turn {
    std::string key;
    int priority = 0;
    std::string created;
    TeamPlacement placement;  // without verdicts: 5,000 a job would not fit in memory
    TeamRequest request;
    bool taken = false;  // placed as the pass said
  };
  struct Pass {
    kube::WallTime made{};
    kube::WallTime fresh_until{};  // a measured link it trusted turns stale then
    std::map<std::string, int> priorities;
    std::vector<NodeView> base;   // the cluster as it was, with what pods held
    std::vector<NodeView> state;  // and every turn's reservation
    std::map<std::string, size_t> node_index;
    std::vector<Turn> turns;  // in line
    std::map<std::string, size_t> turn_of;
  };

  void Apply(kube::WallTime now);  // folds in the changes the listeners recorded
  void ApplyNode(const std::string& name, const CachedNode* node);
  void ApplyPod(const std::string& key, const PodSeen& pod);
  void ApplyJob(const std::string& key, const Json* job);
  void Hold(const Holding& h, int sign);
  int PriorityIn(Pass& pass, const std::string& priority_class, const Priority& priority);
  void Compute(const Priority& priority, const MeasuredLinks& measured);
  // Adds the jobs that joined the line since the pass: placed behind it, or,
  // for one that belongs earlier, with the turns after it placed again.
  void Extend(const Priority& priority, kube::WallTime now);
  // Whether a job in line takes a turn in a pass made at `now`; one that
  // does not yet makes the pass fresh only until it would.
  static bool TakesTurn(const Waiting& w, kube::WallTime now, Pass& pass);
  void Insert(Turn turn);
  NodeView ViewOf(const CachedNode& node, const MeasuredLinks& measured) const;

  kube::Store& jobs_store_;
  const api::PodDefaults defaults_;
  const Duration max_pass_age_;

  // What the stores told, not yet folded in: listeners run under a store's
  // lock, so they only record - what placement reads of a Node or a pod, not
  // a copy of it (5,000 Node objects twice over were 100 MB). Guarded by
  // changes_mu_.
  std::mutex changes_mu_;
  std::map<std::string, std::optional<CachedNode>> node_changes_;
  std::map<std::string, PodSeen> pod_changes_;
  std::map<std::string, std::optional<Json>> job_changes_;

  std::mutex mu_;  // guards the rest
  std::map<std::string, CachedNode> nodes_;
  std::map<std::string, Holding> holdings_;  // pod key -> what it holds, for pods that hold a node
  std::map<std::string, Assumed> assumed_;   // pod key -> what a pod just created will hold
  std::map<std::string, ResourceAmounts> bound_;  // node -> holdings and assumptions summed
  std::map<std::string, Waiting> line_;      // the waiting jobs, by key
  std::vector<std::string> joined_;          // joined the line since the pass
  bool stale_ = true;                        // the pass no longer says what a new one would
  std::optional<Pass> pass_;
  uint64_t passes_ = 0, extensions_ = 0;
};

// Whether placement would see the two views of a node alike.
bool SameForPlacement(const NodeView& a, const NodeView& b);

}  // namespace edgetrain::operator_

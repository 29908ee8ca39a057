#pragma once
// Where a data-parallel team runs on a cluster: the coordinator on a stable node
// with the best link, each worker on the node where it is predicted to turn the
// most samples a second (or, under an energy budget, to spend the fewest joules
// a sample), one worker a node while nodes last. Every node gets a verdict, so
// that "why did my worker land there?" has an answer (`edgetrain plan`, and the
// operator's events). Pure: the operator and `edgetrain plan` feed it NodeViews.
// docs/placement.md is the rule book.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/node_view.h"
#include "core/step_cost.h"

namespace edgetrain {

struct TeamRequest {
  int workers = 1;
  // A job of one: a single agent (the coordinator) trains it all, so it goes
  // where compute is best; no link is crossed. `workers` is then 0.
  bool solo = false;
  ResourceAmounts coordinator_requests;
  ResourceAmounts worker_requests;
  std::map<std::string, std::string> node_selector;  // spec.placement.nodeSelector
  std::vector<Toleration> tolerations;               // spec.template.tolerations
  bool allow_transient = true;                       // spec.placement.allowTransient
  bool minimise_energy = false;                      // spec.budget.energyJoules is set
  std::vector<std::string> architectures;            // the image's (kubernetes.io/arch); empty: any
  // spec.data.stream names neither rates nor a folder: each worker's samples
  // come from its node's own stream, so workers go only where there is one.
  bool workers_need_stream = false;
  StepCost step;                                     // what a worker's step costs
  // The share of the workers a round waits for, which sets the team's pace:
  // 1 under bsp, and under ssp and rog, whose staleness bound holds the
  // fastest worker to the slowest's pace over a run; spec.sync.quorum under
  // deadline, whose rounds close without the rest.
  double round_quorum = 1;
  // Re-placing lost workers of a running team: its coordinator stays on this
  // node (its requests already counted there), and survivors stay where they
  // are, counted per node so the newcomers spread around them.
  std::string coordinator_on;
  std::map<std::string, int> workers_on;
  // A team placed anew whose output is on a volume on one node (a local-path
  // claim): its coordinator goes there or nowhere, its requests to be met
  // there like any node's. `why` says so in what placement says.
  struct Pin {
    std::string node;
    std::string why;
  };
  std::optional<Pin> coordinator_only_on;
};

// One node, as placement judged it.
struct NodeVerdict {
  std::string node;
  std::string excluded;      // why no pod of the job may run there; empty if eligible
  std::string transient;     // the label that makes it transient; empty if stable
  bool coordinator = false;  // the coordinator runs here
  // A team that does not fit: why no further worker fits on this eligible
  // node ("insufficient cpu"), once the workers that did fit were given
  // theirs; those it would have held; and whether the coordinator was to go
  // here (the scheduler-style reason names its node). Empty when placed.
  std::string misfit;
  // A team whose coordinator fits on no node: why not on this eligible one
  // ("insufficient memory"). Empty otherwise.
  std::string coordinator_misfit;
  std::vector<int> would_hold_ranks;
  bool would_hold_coordinator = false;
  std::vector<int> ranks;    // the workers that run here
  // For an eligible node: one worker's predicted step there (alone on the node).
  PredictedStep step;
  double joules_per_sample = 0;
};

struct TeamPlacement {
  bool placed = false;
  std::string coordinator_node;
  std::vector<std::string> worker_nodes;  // by rank
  std::vector<NodeVerdict> verdicts;      // one per node, in the order given
  // When not placed: why, as the scheduler says it ("0/7 nodes fit the
  // coordinator: 2 not ready, 1 transient ...").
  std::string unschedulable;
  // The team's: each worker's batch once a round, a round as long as the
  // step of the worker it waits for last (round_quorum), workers on one node
  // sharing it. The sum of each worker's rate alone was 20-28 times what
  // teams on fading links trained (a new user's trial).
  double predicted_samples_per_second = 0;
};

TeamPlacement PlaceTeam(const std::vector<NodeView>& nodes, const TeamRequest& request);

}  // namespace edgetrain

#pragma once
// The pipeline planner's problem (core/pipeline_cost.h) for one job on the
// nodes placement chose: the job's batch and optimizer, each node as a
// device, and the model's layers as measured. Pure: `edgetrain plan` hands it
// what it read and what the agent measured.

#include <span>
#include <vector>

#include "core/job_spec.h"
#include "core/layer_cost.h"
#include "core/node_view.h"
#include "core/pipeline_cost.h"
#include "core/status.h"

namespace edgetrain {

// Bytes a device holds per parameter byte of its stage: the weights and their
// gradient, and the optimizer's state — Adam's two moments (4), SGD's momentum
// buffer when it has momentum (3), nothing more for plain SGD (2).
double StateFactorOf(const OptimizerSpec& optimizer);

// InvalidArgument, naming spec.model.torchscript and the way out, for a
// pipeline or hybrid of a model with a layer no plan may cut
// (LayerCost::cannot_cut): a module taken whole. OK for auto, which may run it
// whole on a device or a group, and for any model cut between its layers.
Status CheckSplitAllowed(const JobSpec& spec, std::span<const LayerCost> layers);

// One device per node, in the order given (the even split deals layers out in
// it). A node given k times, k workers placed on it, is k devices, each with a
// k-th of its compute, memory and link, which its pods share. `layers` were
// measured on this machine at speed 1 (`edgetrain-agent profile-layers`, which
// does not emulate a slowdown), and `transport`, the agent's messages, and
// `stage`, a stage's own cost of a pass, timed beside them. InvalidArgument,
// naming the node, for a node placement would never choose: no compute, or a
// link measured at nothing; for a job without a batch, no nodes, or no layers;
// or as CheckSplitAllowed.
StatusOr<PipelineProblem> PipelineProblemOf(const JobSpec& spec, std::span<const NodeView> nodes,
                                            std::vector<LayerCost> layers, const TransportCost& transport = {},
                                            const StagePassCost& stage = {});

}  // namespace edgetrain

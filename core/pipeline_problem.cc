#include "core/pipeline_problem.h"

#include <algorithm>
#include <map>
#include <string>

namespace edgetrain {
namespace {

constexpr double kBytesPerSecondPerMbps = 1e6 / 8;

}  // namespace

double StateFactorOf(const OptimizerSpec& optimizer) {
  switch (optimizer.kind) {
    case OptimizerKind::kAdam: return 4;
    case OptimizerKind::kSgd: return optimizer.momentum.value_or(0) > 0 ? 3 : 2;
  }
  return 4;
}

Status CheckSplitAllowed(const JobSpec& spec, std::span<const LayerCost> layers) {
  // A module taken whole may run on a device or a group, which auto
  // considers, but a pipeline or hybrid asked of it would train another model.
  if (spec.parallelism.mode != ParallelismMode::kPipeline && spec.parallelism.mode != ParallelismMode::kHybrid) {
    return Status::Ok();
  }
  for (const LayerCost& layer : layers) {
    if (layer.cannot_cut.empty()) continue;
    return InvalidArgumentError("spec.model.torchscript: a pipeline cuts a model between the children of an "
                                "nn.Sequential, and " + layer.cannot_cut +
                                // Said for both ways a module is not cut: a
                                // tie too (a new user's trial).
                                ": script an nn.Sequential whose children each take the one before's output and "
                                "share no weight, or train it with parallelism.mode auto (which runs it whole) or "
                                "dataParallel");
  }
  return Status::Ok();
}

StatusOr<PipelineProblem> PipelineProblemOf(const JobSpec& spec, std::span<const NodeView> nodes,
                                            std::vector<LayerCost> layers, const TransportCost& transport,
                                            const StagePassCost& stage) {
  if (spec.data.batch_size < 1) return InvalidArgumentError("spec.data.batchSize must be at least 1");
  if (nodes.empty()) return InvalidArgumentError("there are no nodes to plan on");
  if (layers.empty()) return InvalidArgumentError("the model has no layers to plan");
  EDGETRAIN_RETURN_IF_ERROR(CheckSplitAllowed(spec, layers));
  PipelineProblem problem;
  problem.layers = std::move(layers);
  problem.batch_size = spec.data.batch_size;
  problem.state_factor = StateFactorOf(spec.optimizer);
  problem.transport = transport;
  problem.stage_pass = stage;
  problem.gradient_each_micro_batch = spec.fault_tolerance.gradient_each_micro_batch;
  // Pods on one node share it: two workers placed on a node of 557 samples/s
  // had been planned as two devices of 557 each, an ideal of 2,245 for three
  // such nodes (a reader's check).
  std::map<std::string, int> placed_on;
  for (const NodeView& node : nodes) ++placed_on[node.name];
  for (const NodeView& node : nodes) {
    const int sharing = placed_on[node.name];
    PipelineDevice device;
    device.name = node.name;
    // Speed against the machine the layers were measured on. compute_score is
    // against this project's reference machine (1), and the layers are measured
    // by the agent on the machine that plans, at one thread, as the reference
    // was scored (core/step_cost.h): that machine is taken as the reference. On
    // an emulated site it is so by construction — its nodes run here and slow
    // themselves down, and their score is already 1 / emulated_slowdown
    // (docs/cluster-profiles.md) — so the slowdown is not divided out again,
    // which would count it twice. A real node's score is its own, and its
    // emulated_slowdown 1.
    if (!(node.compute_score > 0)) {
      return InvalidArgumentError("node " + node.name + " has no compute (edgetrain.dev/compute-score is not above 0)");
    }
    device.speed = node.compute_score / sharing;
    device.emulated_slowdown = std::max(1.0, node.emulated_slowdown);
    device.transient = !TransientLabel(node.labels).empty();
    // What training may use: what the node offers, less what pods already
    // bound there asked for. At least a byte, since 0 would read as "not
    // limited"; a node that says nothing of its memory is not limited.
    if (node.allocatable.memory_bytes > 0) {
      device.memory_bytes = std::max<int64_t>(1, (node.allocatable.memory_bytes - node.bound.memory_bytes) / sharing);
    }
    // Its link to the site's access point, the same both ways, as placement
    // reads it. A node with none measured is wired and not limited (the
    // planner's 0); one measured at nothing reaches no one, and placement never
    // chooses it (0 here would read as unlimited).
    if (node.link_mbps) {
      if (!(*node.link_mbps > 0)) {
        return InvalidArgumentError("node " + node.name + "'s link is cut (edgetrain.dev/link-mbps is 0)");
      }
      device.up_bytes_per_s = device.down_bytes_per_s = *node.link_mbps * kBytesPerSecondPerMbps / sharing;
    }
    problem.devices.push_back(std::move(device));
  }
  return problem;
}

}  // namespace edgetrain

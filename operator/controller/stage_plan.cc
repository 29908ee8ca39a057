#include "operator/controller/stage_plan.h"

#include <algorithm>
#include <cmath>

#include "core/number_text.h"
#include "core/parallelism_choice.h"
#include "core/pipeline_problem.h"
#include "core/step_cost.h"

namespace edgetrain::operator_ {
namespace {

// Seconds timed on a node of this speed, as a device of speed 1 takes them:
// a real node's score is its own (a node twice the reference's halves its
// times), and an emulated node's processes run at the machine's own speed,
// its score being 1 / its slowdown (docs/cluster-profiles.md).
double ReferenceFactorOf(const NodeView* node) {
  if (!node || !(node->compute_score > 0) || !(node->emulated_slowdown > 0)) return 1;
  return node->compute_score * node->emulated_slowdown;
}

void Scale(std::vector<LayerPass>& passes, double factor) {
  for (LayerPass& p : passes) {
    p.forward_s *= factor;
    p.backward_s *= factor;
  }
}

// The optimizer's step too: it was timed on the node as the passes were
// (its seconds had been taken as they were, found in review).
void Scale(std::vector<LayerCost>& layers, double factor) {
  for (LayerCost& l : layers) {
    l.forward_s *= factor;
    l.backward_s *= factor;
    l.optimizer_s *= factor;
    Scale(l.passes, factor);
  }
}

std::string Rounded(double per_s) { return WithThousands(std::llround(per_s)); }

}  // namespace

ModelSize SizeOfLayers(const std::vector<LayerCost>& layers, int batch, const NodeView* timed_on) {
  ModelSize size;
  double seconds = 0;  // a sample's forward and backward, on the reference machine
  for (const LayerCost& l : layers) {
    size.parameters += l.parameter_bytes / static_cast<int64_t>(sizeof(float));
    seconds += (l.forward_s + l.backward_s) * ReferenceFactorOf(timed_on);
  }
  // As PredictStep counts a step's flops.
  size.multiply_adds = MultiplyAddsOf(seconds * kReferenceFlopsPerSecond, size.parameters, batch);
  return size;
}

Status CheckStagesFitTheLayers(const JobSpec& spec, size_t layers) {
  const std::string& stages = spec.parallelism.stages;
  if (NamesAPlan(stages)) return Status::Ok();
  Status fits = ParseStageLayout(stages, static_cast<int>(layers), spec.parallelism.workers).status();
  return fits.ok() ? fits : InvalidArgumentError("spec.parallelism.stages: " + fits.message());
}

StatusOr<StagePlan> PlanStagesOn(const JobSpec& spec, const std::vector<NodeView>& devices,
                                 std::vector<LayerCost> layers, const NodeView* timed_on,
                                 const TransportCost& transport, StagePassCost stage_pass) {
  Scale(layers, ReferenceFactorOf(timed_on));
  Scale(stage_pass.passes, ReferenceFactorOf(timed_on));
  Scale(stage_pass.back_to_back, ReferenceFactorOf(timed_on));
  EDGETRAIN_ASSIGN_OR_RETURN(PipelineProblem problem,
                             PipelineProblemOf(spec, devices, std::move(layers), transport, stage_pass));
  const std::string& stages = spec.parallelism.stages;
  const bool given = StagesFixed(stages);
  StatusOr<ParallelismChoice> chosen = ChooseParallelism(problem, spec.parallelism.mode);
  EDGETRAIN_ASSIGN_OR_RETURN(PipelinePlan plan, PlanOfStages(problem, chosen, stages, "spec.parallelism.stages"));
  if (!plan.cost.fits) {
    return FailedPreconditionError((given ? "the stages spec.parallelism.stages gives do not fit: "
                                          : "no plan fits the devices' memory: ") +
                                   plan.cost.misfit);
  }
  StagePlan out;
  out.layout = LayoutOf(plan, problem);
  out.layout.stages_given = given;
  out.predicted_samples_per_s = plan.cost.samples_per_s;
  EDGETRAIN_RETURN_IF_ERROR(CheckPipelineLayout(out.layout, devices.size()));

  // Where no plan of the mode fits, stages by hand may still: said why the
  // planner's are not beside them.
  out.reason = !given        ? HowChosen(*chosen)
               : chosen.ok() ? "spec.parallelism.stages " + stages + " instead of the planner's"
                             : "spec.parallelism.stages " + stages + " (" + chosen.status().message() + ")";
  out.reason += ": layers";
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PipelineStage& stage = plan.stages[s];
    out.reason += (s ? ", " : " ") + std::to_string(stage.first_layer) + "-" + std::to_string(stage.end_layer - 1) +
                  " on";
    for (size_t d = 0; d < stage.devices.size(); ++d) {
      out.reason += (d ? "+" : " ") + devices.at(static_cast<size_t>(stage.devices[d])).name;
    }
  }
  out.reason += "; " + std::to_string(plan.micro_batches) + " micro-batch" + (plan.micro_batches == 1 ? "" : "es") +
                " of " + std::to_string(plan.micro_batch_size) + "; predicted " + Rounded(plan.cost.samples_per_s) +
                " samples/s";
  if (chosen.ok()) out.reason += AgainstDataParallelism(problem, plan, *chosen);
  if (!WholeModelNote(problem).empty()) out.reason += "; " + WholeModelNote(problem);
  // Why the plan is not the fastest the planner found (a transient device
  // kept company in its stage), as edgetrain run and plan say it; the
  // operator's reason had left it out.
  if (!given && !chosen->planned.transient_note.empty()) out.reason += "; " + chosen->planned.transient_note;
  // The placement named every worker's node: say which the plan leaves out,
  // since they get no pod (a new user counted 4 workers where 2 pods ran).
  std::vector<bool> used(devices.size(), false);
  for (const PipelineStage& stage : plan.stages) {
    for (int d : stage.devices) used.at(static_cast<size_t>(d)) = true;
  }
  std::string left_out;
  int unused = 0;
  for (size_t d = 0; d < devices.size(); ++d) {
    if (used[d]) continue;
    left_out += (left_out.empty() ? "" : ", ") + devices[d].name + " (" + std::to_string(d) + ")";
    ++unused;
  }
  if (unused > 0) {
    out.reason += "; the plan leaves out " + left_out + ": " + (unused == 1 ? "it gets" : "they get") +
                  " no pod, the plan predicted faster without " + (unused == 1 ? "it" : "them");
  }
  return out;
}

}  // namespace edgetrain::operator_

#include "cli/stage_planning.h"

#include <cmath>

#include "cli/layer_profiling.h"
#include "cli/progress_display.h"
#include "core/model_shape.h"
#include "core/node_view.h"
#include "core/parallelism_choice.h"
#include "core/pipeline_problem.h"

namespace edgetrain::cli {

StagesAsked StagesOf(const std::string& flag, const JobSpec& spec) {
  return flag.empty() ? StagesAsked{spec.parallelism.stages, false} : StagesAsked{flag, true};
}

std::optional<std::string> StageFlagsNotTaken(const api::TrainingJobManifest& job, const std::string& stages_flag,
                                              int micro_batches) {
  if (job.spec.parallelism.mode != ParallelismMode::kDataParallel) return std::nullopt;
  // Both named when both were given: --stages went unsaid beside
  // --micro-batches (a user's trial).
  std::string given;
  if (!stages_flag.empty()) given = "--stages " + stages_flag;
  if (micro_batches > 0) given += (given.empty() ? "" : " and ") + std::string("--micro-batches");
  if (given.empty()) return std::nullopt;
  // auto or hybrid of one worker is a job of one, whatever its mode says
  // (a new user's auto job was said to be "data-parallel (spec.parallelism.mode)").
  return given + (!stages_flag.empty() && micro_batches > 0 ? " apply" : " applies") +
         " to a pipeline, hybrid or auto job of 2 or more workers; " + job.name +
         (job.spec.parallelism.workers == 1 ? " has one worker (spec.parallelism.workers)"
                                            : " is data-parallel (spec.parallelism.mode)");
}

std::optional<std::string> StagesOverridden(const JobSpec& spec, const std::string& stages_flag) {
  // The flag wins, and says what it overrode (--stages planned over a
  // layout in the spec left no trace: a new user's trial); over the spec's
  // default, what is said of the stages says they are not the planner's.
  if (stages_flag.empty() || stages_flag == spec.parallelism.stages || !StagesFixed(spec.parallelism.stages)) {
    return std::nullopt;
  }
  return "--stages " + stages_flag + " in place of the job's spec.parallelism.stages " + spec.parallelism.stages;
}

void RecutAtMicroBatches(const PipelineProblem& problem, int micro_batches, int batch_size, PipelinePlan& plan) {
  if (micro_batches <= 0) return;
  plan.micro_batches = micro_batches;
  plan.micro_batch_size = batch_size / micro_batches;
  plan.cost = *PipelineCostModel(problem).Plan(plan.stages, micro_batches);
}

Status CheckStagesAsked(const api::TrainingJobManifest& job, const StagesAsked& asked, int micro_batches,
                        size_t devices) {
  // The cost model, and so the prediction said, takes micro-batches of one
  // size.
  if (micro_batches > 0 && job.spec.data.batch_size % micro_batches != 0) {
    return InvalidArgumentError("--micro-batches " + std::to_string(micro_batches) + " must divide the batch of " +
                                std::to_string(job.spec.data.batch_size) + " samples (spec.data.batchSize)");
  }
  if (NamesAPlan(asked.stages)) return Status::Ok();
  // A user's typo in a layout waited 5-22 s of measuring to be told; a
  // built-in model's layers are known from its spec.
  Status judged =
      ParseStageLayout(asked.stages, BuiltInLayerCount(job.spec.model), static_cast<int>(devices)).status();
  return judged.ok() ? judged : InvalidArgumentError(asked.said() + ": " + judged.message());
}

StatusOr<std::vector<NodeView>> DevicesAsPlaced(const std::vector<WorkerSlot>& slots,
                                                const std::optional<ClusterProfile>& profile) {
  // A profile's nodes, or this machine's emulated ones without one.
  std::vector<NodeView> devices;
  for (const WorkerSlot& slot : slots) {
    NodeProfile node;
    if (profile) {
      for (const NodeProfile& n : profile->nodes) {
        if (n.name == slot.node) node = n;
      }
    }
    node.name = slot.node;
    node.slowdown = slot.slowdown;
    node.slowdown_changes = slot.slowdown_changes;
    node.link = slot.link;
    EDGETRAIN_ASSIGN_OR_RETURN(NodeView view, NodeViewOf(node));
    devices.push_back(std::move(view));
  }
  return devices;
}

StatusOr<std::string> PlanStages(const api::TrainingJobManifest& job, const std::optional<ClusterProfile>& profile,
                                 const std::string& agent_binary, const StagesAsked& asked, int micro_batches,
                                 LocalRunPlan& run, const std::atomic<bool>* interrupted) {
  EDGETRAIN_RETURN_IF_ERROR(CheckStagesAsked(job, asked, micro_batches, run.job.workers.size()));
  const std::string& stages = asked.stages;
  EDGETRAIN_ASSIGN_OR_RETURN(std::vector<NodeView> devices, DevicesAsPlaced(run.job.workers, profile));
  EDGETRAIN_ASSIGN_OR_RETURN(ProfiledModel measured,
                             ProfileJobLayers(job, agent_binary, run.job.intra_op_threads, interrupted));
  EDGETRAIN_ASSIGN_OR_RETURN(PipelineProblem problem,
                             PipelineProblemOf(job.spec, devices, std::move(measured.layers), measured.transport,
                                               measured.stage_pass));
  // A layout by hand is judged on its own memory: that no plan of the mode
  // fits says nothing of it (a user's layout was refused naming the even
  // split). auto may keep plain data parallelism: one stage on every device,
  // which the pipeline runs as synchronous data parallelism through its head.
  const StatusOr<ParallelismChoice> chosen = ChooseParallelism(problem, job.spec.parallelism.mode);
  EDGETRAIN_ASSIGN_OR_RETURN(PipelinePlan plan, PlanOfStages(problem, chosen, stages, asked.said()));
  const ParallelismChoice* choice = chosen.ok() ? &*chosen : nullptr;
  RecutAtMicroBatches(problem, micro_batches, job.spec.data.batch_size, plan);
  if (!plan.cost.fits) return FailedPreconditionError(asked.named() + " does not fit: " + plan.cost.misfit);
  PipelineLayout layout = LayoutOf(plan, problem);
  layout.stages_given = asked.given();
  int agents = 1;
  for (const PipelineStage& stage : plan.stages) agents += static_cast<int>(stage.devices.size());
  EDGETRAIN_RETURN_IF_ERROR(CheckPipelineLayout(layout, run.job.workers.size()));
  run.job.pipeline = std::move(layout);
  run.predicted_samples_per_s = plan.cost.samples_per_s;
  run.agents = agents;
  run.memory_mb = EstimatedMemoryMb(job.spec.data, agents);
  // One prediction each, both from the same cost model: what runs, and data
  // parallelism on the same devices and links.
  auto per_s = [](const PipelinePlan& p) { return WithThousands(std::llround(p.cost.samples_per_s)); };
  std::string out;
  if (asked.given()) {
    // With the planner's prediction: an even split given in the spec trained
    // at a sixth of what the planner's was predicted, and only edgetrain
    // plan said so (a new user's trial).
    out = asked.named() + " instead of the planner's" +
          (choice ? " (predicted " + per_s(PlanToRun(*choice)) + " samples/s)" : "");
    if (!choice) out += " (" + chosen.status().message() + ")";
    if (micro_batches > 0) out += ", --micro-batches " + std::to_string(micro_batches);
  } else if (micro_batches > 0) {
    out = "the planner's stages at --micro-batches " + std::to_string(micro_batches);
  } else {
    out = HowChosen(*choice);
  }
  out += ", predicted " + per_s(plan) + " samples/s";
  // What the plan is, not which object holds it: the planner's best may itself
  // be one stage on every device.
  if (choice && ModeOf(problem, plan) != ParallelismMode::kDataParallel) {
    out += AgainstDataParallelism(problem, plan, *choice);
  } else if (!asked.given()) {
    out += WholeModelNote(problem).empty() ? ": no split is predicted faster on the same devices and links" : "";
  }
  // A module taken whole (auto): why no split was even weighed.
  if (!WholeModelNote(problem).empty()) out += "; " + WholeModelNote(problem);
  // Why the plan is not the fastest the planner found (a transient device
  // kept company in its stage), as edgetrain plan says it (a new user's trial
  // found it said there and not here).
  if (!asked.given() && !choice->planned.transient_note.empty()) out += "; " + choice->planned.transient_note;
  return out + "\n  " + DescribePlan(problem, plan);
}

}  // namespace edgetrain::cli

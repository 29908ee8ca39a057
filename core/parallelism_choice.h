#pragma once
// What a pipeline, hybrid or auto job would run as on its devices: the
// planner's plan within what the mode allows, the two plans it is compared
// with, and, for auto, the pick between the plan and plain data parallelism by
// predicted samples/s on the same devices and links. Pure: `edgetrain plan`
// shows it, and the run's summary will.
//
// What the modes allow:
//   pipeline  every stage on one device (PlannerOptions::one_device_per_stage):
//             the model split, no data parallelism inside a stage;
//   hybrid    stages on groups of devices, data parallel inside each: any plan
//             the planner can score, one stage on every device included;
//   auto      as hybrid; then the plan if it is predicted faster than data
//             parallelism on every device, else data parallelism.

#include <optional>
#include <string>
#include <string_view>

#include "core/job_plan.h"
#include "core/job_spec.h"
#include "core/pipeline_planner.h"

namespace edgetrain {

struct ParallelismChoice {
  ParallelismMode asked = ParallelismMode::kAuto;
  PlannerVerdict planned;
  // What the planned plan is (ModeOf): one stage on every device is data
  // parallelism, whatever the mode asked.
  ParallelismMode plan_mode = ParallelismMode::kHybrid;
  PipelinePlan even_split;     // one device a stage, the layers dealt out evenly
  PipelinePlan data_parallel;  // one stage on every device
  PipelinePlan fastest_alone;  // the whole model on the fastest device
  // Every device computing all the time and nothing else: the sum of their
  // capacities, what no plan can beat (issue 15's benchmark measures against it).
  double ideal_samples_per_s = 0;
  // pipeline and hybrid: as asked. auto: plan_mode, or dataParallel.
  ParallelismMode chosen = ParallelismMode::kDataParallel;
  // The choice against data parallelism, in a sentence: "predicted 2.4x data
  // parallelism's samples/s on the same devices and links".
  std::string reason;
};

// dataParallel: one stage on every device; pipeline: every stage on one
// device (the fastest device alone included); hybrid: the rest, groups.
ParallelismMode ModeOf(const PipelineProblem& problem, const PipelinePlan& plan);

// "net.pt is a TwoPaths, whose forward may use its children in any order, so
// it runs whole" for a model taken as one layer no plan may cut
// (LayerCost::cannot_cut); empty for a model cut between its layers.
std::string WholeModelNote(const PipelineProblem& problem);

// InvalidArgument for a mode the pipeline planner has no part in
// (dataParallel) or a problem it refuses; FailedPrecondition, saying why, when
// no plan the mode allows fits the devices' memory.
StatusOr<ParallelismChoice> ChooseParallelism(const PipelineProblem& problem, ParallelismMode mode);

// The plan a job runs of `choice`: with `stages` "planned", the planner's,
// or data parallelism where auto picked it; "even" or "data-parallel", the
// plan of that name it is compared with (`edgetrain run --stages`).
const PipelinePlan& PlanToRun(const ParallelismChoice& choice, std::string_view stages = kPlannedStages);

// How the planned plan came of the mode asked: "auto picks pipeline",
// "hybrid as asked", or, where the plan's shape is not the mode asked,
// "hybrid as asked (planned as pipeline)": a plan is named by its shape (a
// new user read "hybrid as asked" of one with one device a stage).
std::string HowChosen(const ParallelismChoice& choice);

// What `plan`, of `choice`'s problem, is against data parallelism on the
// same devices and links, as `edgetrain run`, `plan` and the operator's
// status all say it: " against data parallelism's 3,218 as a pipeline runs
// it, on the same devices and links", and where data parallelism's faster
// prediction cannot run, why ("which does not fit: ..."); empty where the
// plan is data parallelism.
std::string AgainstDataParallelism(const PipelineProblem& problem, const PipelinePlan& plan,
                                   const ParallelismChoice& choice);

// Whether `stages` names a plan (planned, even, data-parallel) rather than
// giving a layout.
bool NamesAPlan(std::string_view stages);

// A layout given by hand (`edgetrain run --stages`, spec.parallelism.stages):
// stages separated by '/', each its layers, FIRST-LAST or one, and the ranks
// it runs on after a ':', separated by ','. "0-1:0,1/2:2" holds layers 0 and 1 on ranks 0 and
// 1, layer 2 on rank 2. InvalidArgument, saying what is wrong, for layers
// that do not follow on from 0 to the model's last, a rank that is not a
// device of `problem` or is given twice, or text that is not a layout; the
// message names no source, which the caller puts before it.
StatusOr<std::vector<PipelineStage>> ParseStageLayout(std::string_view text, const PipelineProblem& problem);
// The same on `devices` ranks, against the model's `layers` where they are
// known (a built-in model's, from its spec: core/model_shape.h's
// BuiltInLayerCount); without them (a user's module's, counted as they are
// measured, seconds later) everything but the layers' range is judged.
StatusOr<std::vector<PipelineStage>> ParseStageLayout(std::string_view text, std::optional<int> layers, int devices);

// The plan of the stages asked for (`edgetrain run --stages`,
// spec.parallelism.stages): the one `stages` names, of `chosen`, or the
// layout it gives over `problem` at the cost model's best micro-batches. A
// layout is judged on its own memory, `chosen` failing for want of a plan
// of the mode that fits (FailedPrecondition) or not; its InvalidArgument
// (ParseStageLayout) says `said: ` first, where the layout was given.
// Otherwise `chosen`'s error.
StatusOr<PipelinePlan> PlanOfStages(const PipelineProblem& problem, const StatusOr<ParallelismChoice>& chosen,
                                    std::string_view stages, std::string_view said);

// `plan` as the plan file holds it: each stage's layers and its devices'
// ranks, the micro-batches of a step, and the `problem` it was planned from
// (its devices in rank order).
PipelineLayout LayoutOf(const PipelinePlan& plan, const PipelineProblem& problem);

}  // namespace edgetrain

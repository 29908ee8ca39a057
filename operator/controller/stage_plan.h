#pragma once
// A pipeline job's stages over the nodes its team was placed on: the pipeline
// planner (core/parallelism_choice.h) cuts the layers its model check timed
// into stages, as the job's mode allows, and the plan file gets them, as
// `edgetrain run` does on one machine (cli/stage_planning.h). Pure.

#include <string>
#include <vector>

#include "core/job_plan.h"
#include "core/layer_cost.h"
#include "core/node_view.h"
#include "core/step_cost.h"
#include "core/status.h"

namespace edgetrain::operator_ {

struct StagePlan {
  PipelineLayout layout;
  double predicted_samples_per_s = 0;
  // What was chosen, for the Placed condition and its Event: "auto picks
  // pipeline: layers 0-5 on gateway, 6-8 on robot-1; 8 micro-batches of 8;
  // predicted 715 samples/s against data parallelism's 217 on the same
  // devices and links".
  std::string reason;
};

// `devices` are the workers' nodes in rank order. `layers` were timed on
// `timed_on` (the check pod's node; null when unknown): they are brought to
// speed 1 by its compute score and emulated slowdown, as the planner counts
// a device's speed (core/pipeline_problem.h), and so is `stage_pass`, a
// stage's own cost of a pass; `transport`, the agent's messages, timed
// there too, is taken as it is. The stages are the planner's, or as
// spec.parallelism.stages gives them (its layout's layers judged first by
// CheckStagesFitTheLayers). FailedPrecondition, saying why, when no plan the
// mode allows fits the devices' memory, or the stages given do not.
// A layout by hand in spec.parallelism.stages against the `layers` the
// model's check timed: InvalidArgument, naming the field, when it names
// layers the model has not or leaves some out. The manifest's own check
// (api/trainingjob.cc) judged all but that; it is the spec's mistake, which
// no node changes.
Status CheckStagesFitTheLayers(const JobSpec& spec, size_t layers);

StatusOr<StagePlan> PlanStagesOn(const JobSpec& spec, const std::vector<NodeView>& devices,
                                 std::vector<LayerCost> layers, const NodeView* timed_on,
                                 const TransportCost& transport = {}, StagePassCost stage_pass = {});

// A user's module's size as placement ranks nodes by (core/step_cost.h), from
// its layers as timed on `timed_on` for `batch`: the parameters they hold, and
// the multiply-adds a sample that a dense layer taking the same time on the
// reference machine would do. A pipeline's check times the layers rather than
// load the module as a data-parallel team's does; this is its size from them.
ModelSize SizeOfLayers(const std::vector<LayerCost>& layers, int batch, const NodeView* timed_on);

}  // namespace edgetrain::operator_

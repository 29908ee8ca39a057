#pragma once
// Where a running pipeline's layers should be cut, from what its stages
// measured (issue 16's dynamic re-partitioning; FTPipeHD re-partitions the
// same way as devices drift).
//
// Each stage keeps its devices; only the cuts between stages move. Where the
// plan says what its layers cost, RecutStages judges cuts by the planner's
// cost model, links counted; a layout given by hand knows only its layers'
// parameters, and RebalanceStages judges by compute alone: a stage's
// measured compute a step, over the weight of the layers it holds (their
// parameters), is its group's pace: the seconds it takes a unit of weight. A new
// cut gives each stage the weight of its new layers at its own pace, and the
// slowest stage sets the step. The cut that makes the slowest stage fastest
// (of those, the one that moves the fewest cuts: each stage whose layers
// change is rebuilt and sent their state) is proposed only when it beats the
// measured slowest stage by more than `min_gain`: a move costs a round trip
// of state and a rebuild, and the measurements are noisy, so a gain inside the noise must not move layers
// back and forth.

#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/pipeline_cost.h"

namespace edgetrain {

struct StageMeasure {
  int first_layer = 0;  // its layers [first_layer, end_layer)
  int end_layer = 0;
  double seconds = 0;   // a step's compute, its slowest device's
};

struct StageCuts {
  std::vector<std::pair<int, int>> layers;  // each stage's [first, end), in order
  // What the cuts were chosen by, so cut and as the stages are now:
  // RebalanceStages', the slowest stage's compute a step (now: as measured);
  // RecutStages', the whole step the cost model predicts (now: predicted
  // too, each device at its measured pace).
  double predicted_s = 0;
  double now_s = 0;
};

// The better cuts for `stages` (contiguous, in order, covering every layer of
// `layer_weights`, each weight > 0), or none when no cut beats the measured
// slowest stage by more than `min_gain` (0.1: 10% faster), or a stage has
// measured nothing yet.
std::optional<StageCuts> RebalanceStages(std::span<const StageMeasure> stages, std::span<const double> layer_weights,
                                         double min_gain);

// The same search where the layers' costs are known (the plan's profile):
// the cuts between `stages`' groups, in the same order, each stage's part of
// a step scored by the planner's cost model (`model`, whose devices' speeds
// the caller sets to what the stages measured) — its micro-batches at the
// busier of its compute and its link, where a new cut sends that layer's
// activations, then its exchange and optimizer step — the slowest stage's
// least. They are proposed when the model predicts the whole step, filling
// and draining included, more than `min_gain` shorter than for the cuts as
// they are: a cut that moves compute off a slowed device onto a link too
// thin for the activations it would send is not. None, too, for stages that
// do not cover the model's layers in order, or a micro-batch count that does
// not divide the batch.
std::optional<StageCuts> RecutStages(const PipelineCostModel& model, std::span<const PipelineStage> stages,
                                     int micro_batches, double min_gain);

}  // namespace edgetrain

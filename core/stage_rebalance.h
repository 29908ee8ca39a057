#pragma once
// Where a running pipeline's layers should be cut, from what its stages
// measured (issue 16's dynamic re-partitioning; FTPipeHD re-partitions the
// same way as devices drift).
//
// Each stage keeps its devices; only the cuts between stages move. A stage's
// measured compute a step, over the prior weight of the layers it holds (each
// layer's parameters, as the planner's cost falls with them on this site's
// models), is its group's pace: the seconds it takes a unit of weight. A new
// cut gives each stage the weight of its new layers at its own pace, and the
// slowest stage sets the step. The cut that makes the slowest stage fastest
// (of those, the one that moves the fewest cuts: each stage whose layers
// change is rebuilt and sent their state) is proposed only when it beats the
// measured slowest stage by more than `min_gain`: a move costs a round trip of state and a rebuild, and the
// measurements are noisy, so a gain inside the noise must not move layers
// back and forth.

#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace edgetrain {

struct StageMeasure {
  int first_layer = 0;  // its layers [first_layer, end_layer)
  int end_layer = 0;
  double seconds = 0;   // a step's compute, its slowest device's
};

struct StageCuts {
  std::vector<std::pair<int, int>> layers;  // each stage's [first, end), in order
  double predicted_s = 0;                   // the slowest stage's a step, so cut
  double measured_s = 0;                    // the slowest stage's a step, as measured
};

// The better cuts for `stages` (contiguous, in order, covering every layer of
// `layer_weights`, each weight > 0), or none when no cut beats the measured
// slowest stage by more than `min_gain` (0.1: 10% faster), or a stage has
// measured nothing yet.
std::optional<StageCuts> RebalanceStages(std::span<const StageMeasure> stages, std::span<const double> layer_weights,
                                         double min_gain);

}  // namespace edgetrain

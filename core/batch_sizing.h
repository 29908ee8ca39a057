#pragma once
// Compute-weighted batches (DLion; spec.data.computeWeighted): a team's
// samples each step are dealt to its workers so that each one's step takes
// about as long, so that a fast device is not idle while a slow one holds the
// team. The team's aggregate batch stays what fixed batches give it, unless a
// batch is held at one of its bounds: a device so slow that one sample
// outlasts the others' steps sets the round, and the others fill it.

#include <cstdint>
#include <span>
#include <vector>

#include "core/step_time_model.h"

namespace edgetrain {

// The most a compute-weighted batch grows to, in batches: what a worker's
// buffers are sized for.
inline constexpr int64_t kMostWeightedBatches = 4;

// Each worker's batch, from its measured step cost (sample_seconds 0: not
// measured yet). The workers measured share their count times `batch` so that
// fixed + n x sample_seconds is the same for each, every batch between 1 and
// `most`; one not measured keeps `batch`. Without fixed costs that is a share
// in proportion to speed. Where the longest step is still longer than the
// others' (a batch held at 1), each other batch grows to what fits in it,
// up to `most`.
std::vector<int64_t> ComputeWeightedBatches(std::span<const StepTime> costs, int64_t batch, int64_t most);

}  // namespace edgetrain

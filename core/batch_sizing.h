#pragma once
// Compute-weighted batches (DLion; spec.data.computeWeighted): a team's
// samples each step are dealt to its workers in proportion to their measured
// speed, so that a fast device is not idle while a slow one holds the team.
// The team's aggregate batch stays what fixed batches give it, unless a
// batch is held at one of its bounds.

#include <cstdint>
#include <span>
#include <vector>

namespace edgetrain {

// The most a compute-weighted batch grows to, in batches: what a worker's
// buffers are sized for.
inline constexpr int64_t kMostWeightedBatches = 4;

// Each worker's batch, from its measured compute seconds per sample (0: not
// measured yet). The workers measured share their count times `batch` in
// proportion to 1 / seconds per sample, each between 1 and `most`; one not
// measured keeps `batch`.
std::vector<int64_t> ComputeWeightedBatches(std::span<const double> seconds_per_sample, int64_t batch, int64_t most);

}  // namespace edgetrain

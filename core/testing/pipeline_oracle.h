#pragma once
// The pipeline planner's oracle (issue 15): random instances, and the best
// plan found by trying every one. Shared by the planner's tests and
// bench/pipeline-planner, which measures what the relaxed program gives up.

#include <optional>
#include <random>

#include "core/pipeline_cost.h"

namespace edgetrain::testing {

// Layers whose work and sizes spread over 100x, devices whose speeds spread
// 10x, links from 1 Mbit/s to unlimited, memory that sometimes binds.
PipelineProblem RandomPipelineProblem(std::mt19937_64& random, int layers, int devices);

// The fastest step time of any plan that fits: every split of the layers
// into contiguous stages, times every assignment of each device to one of
// them or to none, at every micro-batch count, scored by the same cost
// model. None when nothing fits. Exponential: up to 8 layers and 6 devices.
// `one_device_per_stage`: only assignments that give each stage one device.
// `transient_company`: only plans in which no stage is a transient device alone.
std::optional<double> BruteForcePipelineStep(const PipelineProblem& problem, bool one_device_per_stage = false,
                                             bool transient_company = false);

}  // namespace edgetrain::testing

#pragma once
// What the pipeline's head says of its stages and devices in its log, worded
// once: counts, ranks, paces, seconds and layouts, as a person reads them.

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/number_text.h"
#include "core/pipeline_cost.h"
#include "core/stage_rebalance.h"
#include "core/transport_cost.h"

namespace edgetrain {

// What a re-plan counted for the head's word and the stages' answers, when it
// learned them from the run's steps: for the log beside its prediction.
std::string OrdersNote(const TransportCost& transport, size_t steps);

// "rank 3", "ranks 1 and 2": the devices of a stage lost together (only
// the first was named: a user's trial).
std::string SayRanks(const std::vector<int>& ranks);

// "rank 0 1.93x, rank 2 1.10x".
std::string SayPaces(const std::map<int, double>& paces);

// " (ended as rank 1's compute changed: its steps since count)", or nothing.
std::string DriftNote(std::optional<int> drifted);

// "1.39": seconds to three figures, as a measurement of them is good for.
std::string Seconds3(double seconds);

// ", leaving rank 1, rank 3 out", or nothing for no ranks.
std::string LeavingOut(const std::vector<int>& ranks);

// "layers 0-1 on ranks 0,1 | layers 2-3 on rank 2".
std::string DescribeStagesOf(std::span<const PipelineStage> stages);

// "stage 1 0.0121 s, stage 2 0.0483 s": each stage's measured compute a step.
std::string SayStageSeconds(std::span<const StageMeasure> stages);

}  // namespace edgetrain

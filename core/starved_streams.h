#pragma once
// A team's worker whose stream brings a batch's minimum of samples only long
// after the run starts (a rate of 0.0001 a second, a trace that opens with a
// pause) holds every round that waits for its gradient: the team trains on
// nothing meanwhile, and ends its budget where it began. Found before the
// run, so that it is said then rather than read from a summary of 35
// samples in 20 s (a user's trial).

#include <optional>
#include <string>
#include <vector>

#include "core/job_spec.h"
#include "core/stream_rate.h"

namespace edgetrain {

// Without a wall clock, a wait of an hour is said all the same.
inline constexpr double kStarvedWithoutWallClockSeconds = 3600;

// One warning for each worker of `rates` (by rank; none: no stream of its
// own) whose stream has a batch's minimum (StreamMinBatch) only after the
// run's `wall_clock_s` (none: kStarvedWithoutWallClockSeconds), where the
// team waits for it under spec.sync: bsp always, rog and ssp past the
// staleness bound, deadline when its quorum of the team is every worker.
// Empty for a job of one, whose wait is its own, and a deadline whose quorum
// leaves a worker out.
std::vector<std::string> StarvedStreamWarnings(const JobSpec& spec, const std::vector<std::optional<StreamRate>>& rates,
                                               std::optional<double> wall_clock_s);

}  // namespace edgetrain

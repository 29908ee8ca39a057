#pragma once
// Which emulated device each rank of a team runs on under `edgetrain run`
// and `netns-run`: the cluster profile's order, rank r on the r-th node, so
// that a profile reads as the team it describes; without a profile, every
// rank gets an unshaped slot of this machine. Not the operator's placement,
// which chooses nodes by what it knows of them (core/cluster_placement.h;
// a user had taken this for it).

#include <optional>
#include <vector>

#include "core/cluster_profile.h"
#include "core/job_plan.h"
#include "core/status.h"

namespace edgetrain {

// One slot per rank, 0..workers-1; InvalidArgument when the profile has fewer
// nodes than workers.
StatusOr<std::vector<WorkerSlot>> SlotsInProfileOrder(int workers, const std::optional<ClusterProfile>& profile);

}  // namespace edgetrain

#pragma once
// Worker placement: which device each rank of a data-parallel team runs on.
// The local runner emulates the devices it picks; the operator will bind pods
// to them. Today's policy is the cluster profile's order: rank r on the r-th
// node, so a profile reads as the team it describes; without a profile, every
// rank gets an unshaped slot of this machine.

#include <optional>
#include <vector>

#include "core/cluster_profile.h"
#include "core/job_plan.h"
#include "core/status.h"

namespace edgetrain {

// One slot per rank, 0..workers-1; InvalidArgument when the profile has fewer
// nodes than workers.
StatusOr<std::vector<WorkerSlot>> PlaceWorkers(int workers, const std::optional<ClusterProfile>& profile);

}  // namespace edgetrain

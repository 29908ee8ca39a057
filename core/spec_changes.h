#pragma once
// What changed in a job's manifest between the run that wrote a checkpoint
// and the run that resumes from it, and in the devices it trains on.
// Resuming under another learning rate or budget, or on another cluster
// profile, is allowed (training on for longer is the common case), but not
// silently: the resumed run says what it now trains under.

#include <string>
#include <string_view>
#include <vector>

#include "core/job_plan.h"

namespace edgetrain {

// Each field whose value differs between two specs as JSON (JobPlan's
// spec_json), by its manifest path, sorted by path:
// "spec.optimizer.learningRate: 0.001 -> 0.002",
// "spec.budget.epochs: 3 -> (none)". A list differs as a whole value. Empty
// when either is empty or not JSON (a checkpoint written before specs were
// kept in it says nothing of its spec).
std::vector<std::string> SpecChanges(std::string_view before, std::string_view after);

// Each rank's device as a cluster profile gave it to a run (its node, its
// slowdown and compute changes, its link's and stream's traces, its power),
// as JSON, for the run that resumes to compare its own with. Taken before a
// resumed run goes on along the traces (GoneOnFor), so that going on is no
// change.
std::string DevicesRecord(const std::vector<WorkerSlot>& devices);

// As SpecChanges, of two DevicesRecords, sorted by path ("rank 10" before
// "rank 2"): "devices.rank 1.slowdown: 5 -> 10",
// "devices.rank 1.node: robot-1 -> robot-2".
std::vector<std::string> DeviceChanges(std::string_view before, std::string_view after);

}  // namespace edgetrain

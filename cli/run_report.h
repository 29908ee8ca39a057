#pragma once
// What a local run tells a person when it ends: the summary (and with --json,
// one JSON line), or why it failed with the last lines of the agent's log.

#include <ostream>
#include <string>

#include "api/trainingjob.h"
#include "core/job_plan.h"
#include "core/job_progress.h"

namespace edgetrain::cli {

// "robot-team: test accuracy 0.8512 (target 0.85 reached), stopped by target",
// the counts, the modelled energy, a table of the workers, the model's path.
void PrintSummary(const api::TrainingJobManifest& job, const JobPlan& plan, const JobProgress& p, double wall_s,
                  std::ostream& out);
// The summary as one line of JSON, for scripts and benchmarks.
std::string JsonLine(const api::TrainingJobManifest& job, const JobProgress& p, double wall_s);
// The last `lines` lines of a log, indented with "  | ".
std::string LogTail(const std::string& path, size_t lines);

}  // namespace edgetrain::cli

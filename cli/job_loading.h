#pragma once
// What every `edgetrain` command does first: read a manifest the way the API
// server would and check this runner can do it, and read a cluster profile.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "api/trainingjob.h"
#include "api/capabilities.h"
#include "core/cluster_profile.h"
#include "core/exit_codes.h"
#include "core/job_plan.h"
#include "core/status.h"

namespace edgetrain::cli {

// A file named on the command line; InvalidArgument when it cannot be read,
// or holds more than any manifest or cluster profile does (16 MiB).
StatusOr<std::string> ReadText(const std::string& path);
// The same, for a trace of readings (a stream's rates), which may be larger.
StatusOr<std::string> ReadTraceText(const std::string& path);
// The metadata.name a manifest's text gives, valid or not; "" when it
// cannot be read or gives none: what a run's failure line names.
// `training_jobs_only`: "" too for another kind (a cluster profile's name).
std::string JobNameIn(const std::string& path, bool training_jobs_only = false);
// Prints each line of `text`, indented.
void PrintLines(std::ostream& err, const std::string& text);

// The files of a job a command reads: all, or those that measure a model
// (`edgetrain evaluate --job`: a training file, or the module the model
// trained from, missing is no reason not to).
enum class JobFiles { kAll, kTest };

// Reads, validates and checks a manifest can run where `runner` says; prints
// what is wrong and returns the exit code, or kExitOk with `job` filled in.
int LoadJob(const std::string& path, std::ostream& err, api::TrainingJobManifest& job, api::SupportCheck& support,
            api::Runner runner = api::Runner::kLocal, JobFiles needed = JobFiles::kAll);

// A cluster profile, or nullopt (its errors printed) when it cannot be read.
std::optional<ClusterProfile> LoadProfile(const std::string& path, std::ostream& err);

// "robot-team: mlp on fashion-mnist, 4 worker(s) (rog), until ..."
std::string DescribeJob(const api::TrainingJobManifest& job);

}  // namespace edgetrain::cli

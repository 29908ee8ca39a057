#pragma once
// The first step of `edgetrain run`, pure: from a valid manifest, the cluster
// profile, the command line and the size of this machine, what will run — the
// plan file the agents read, whether a team runs and how its links are
// emulated, the memory it needs, and what a person should hear before it starts.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "api/trainingjob.h"
#include "cli/run_options.h"
#include "core/cluster_profile.h"
#include "core/job_plan.h"
#include "core/status.h"

namespace edgetrain::cli {

struct MachineSize {
  int cores = 1;
  int64_t memory_mb = 0;  // physical memory
};

struct LocalRunPlan {
  JobPlan job;                // the plan file the agents are started with
  // Each rank's device with its link. Under --links netns the plan file's
  // links are marked kernel-shaped: the agents do not shape them (the kernel's
  // shaping replaces theirs, never adds to it) and read their traces only to
  // know the most they carry.
  std::vector<WorkerSlot> devices;
  bool team = false;          // a coordinator and a worker per rank; else one agent
  bool kernel_links = false;  // --links netns: links shaped by the kernel, not the agents
  int agents = 1;             // processes that will run
  int64_t memory_mb = 0;      // about what they need together
  double predicted_samples_per_s = 0;  // a planned pipeline's, from the cost model; 0: none
  std::vector<std::string> warnings;  // printed before anything starts
  // A data-parallel team resuming a checkpoint: each worker's joules it
  // holds, by rank, which the workers' own counts of this run go on from.
  std::map<int, double> carried_energy;
};

// `cwd` anchors a relative output folder. InvalidArgument for a command line
// this job cannot run with (--links netns for a job of one, too few nodes).
StatusOr<LocalRunPlan> PlanLocalRun(const api::TrainingJobManifest& job, const std::optional<ClusterProfile>& profile,
                                    const RunOptions& options, const std::filesystem::path& cwd,
                                    const MachineSize& machine);

// Where `job`'s run puts its model, checkpoint and logs: `output_flag`
// (--output) or the manifest's spec.output.path, else edgetrain-output/NAME;
// absolute, from `cwd`.
std::filesystem::path OutputFolder(const api::TrainingJobManifest& job, const std::string& manifest_path,
                                   const std::string& output_flag, const std::filesystem::path& cwd);

// The devices that train: a pipeline's plan may leave some of the job's
// workers out (a model planned onto one device of four).
int TrainingDevices(const LocalRunPlan& plan);

// "robot-team, 4 node(s): ranks on robot-1, robot-2, robot-3 (robot-4 spare)"
std::string DescribePlacement(const LocalRunPlan& plan, const ClusterProfile& profile);

// About how much memory `agents` agents training on `dataset` need together.
int64_t EstimatedMemoryMb(const DataSpec& data, int agents);

}  // namespace edgetrain::cli

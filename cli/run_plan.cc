#include "cli/run_plan.h"

#include <set>

#include "core/dataset_info.h"
#include "core/partition.h"
#include "core/placement.h"
#include "core/utf8.h"

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;

// Agents of a job of one each have a core to themselves at best; past this many
// per core, every step waits its turn so long that the run says little about
// the team it emulates.
constexpr int kAgentsPerCoreBeforeWarning = 4;

}  // namespace

// Measured as the peak proportional set size (Pss, shared pages split between
// the processes sharing them) of every agent of teams of 2 and 6 workers,
// summed: digits 372 MB for 3 agents, 638 MB for 7; Fashion-MNIST 567 MB for 3,
// 1,150 MB for 7. LibTorch's libraries are loaded once whatever the team's size;
// each agent adds its data and its model. A lone agent's resident set peaks at
// 174 MB (digits) and 247 MB (Fashion-MNIST). Data from files is taken at
// Fashion-MNIST's figures, not measured: its size is unknown until it is read.
int64_t EstimatedMemoryMb(const DataSpec& data, int agents) {
  const bool digits = !data.files && data.dataset == DatasetName::kDigits;
  const int64_t shared = digits ? 172 : 130;
  const int64_t per_agent = digits ? 67 : 146;
  return shared + per_agent * agents;
}

int TrainingDevices(const LocalRunPlan& plan) {
  if (!plan.job.pipeline) return plan.job.spec.parallelism.workers;
  std::set<int> ranks;
  for (const PipelineStagePlan& stage : plan.job.pipeline->stages) ranks.insert(stage.ranks.begin(), stage.ranks.end());
  return static_cast<int>(ranks.size());
}

std::string DescribePlacement(const LocalRunPlan& plan, const ClusterProfile& profile) {
  std::string out = profile.name + ", " + std::to_string(profile.nodes.size()) + " node(s): ranks on ";
  for (const auto& slot : plan.job.workers) out += (slot.rank > 0 ? ", " : "") + slot.node;
  std::string spare;
  for (size_t i = plan.job.workers.size(); i < profile.nodes.size(); ++i) spare += (spare.empty() ? "" : ", ") + profile.nodes[i].name;
  if (!spare.empty()) out += " (" + spare + " spare)";
  // Not the operator's placement, which a new user took it for: edgetrain
  // plan put a worker on jetson-1 where this said robot-1.
  return out + ", in the profile's order, as edgetrain run runs them (where the operator would place them: "
               "edgetrain plan)";
}

fs::path OutputFolder(const api::TrainingJobManifest& job, const std::string& manifest_path,
                      const std::string& output_flag, const fs::path& cwd) {
  // A path on the command line, or the default, is the working folder's; one
  // written in the manifest is the manifest's folder's, as its data's and
  // model's are (run from elsewhere, the job went to a new folder and started
  // afresh rather than resume).
  const fs::path manifest_folder = (cwd / manifest_path).parent_path();
  const fs::path output = !output_flag.empty()    ? fs::path(output_flag)
                          : job.spec.output.path ? manifest_folder / *job.spec.output.path
                                                 : fs::path("edgetrain-output") / job.name;
  return (cwd / output).lexically_normal();
}

StatusOr<LocalRunPlan> PlanLocalRun(const api::TrainingJobManifest& job, const std::optional<ClusterProfile>& profile,
                                    const RunOptions& options, const fs::path& cwd, const MachineSize& machine) {
  const JobSpec& spec = job.spec;
  const int workers = spec.parallelism.workers;
  LocalRunPlan run;
  run.team = workers > 1 || profile.has_value();
  if (options.links != "process" && options.links != "netns") {
    return InvalidArgumentError("--links: expected process or netns, got \"" + options.links + "\"");
  }
  run.kernel_links = options.links == "netns";
  if (run.kernel_links && !run.team) {
    return InvalidArgumentError("--links netns emulates a team's links: give more than 1 worker or --nodes");
  }
  run.agents = run.team ? workers + 1 : 1;
  if (options.http_port > 0 && options.http_port + run.agents - 1 > 65535) {
    return InvalidArgumentError("--http-port " + std::to_string(options.http_port) + ": the " +
                                std::to_string(run.agents) + " agents need ports up to " +
                                std::to_string(options.http_port + run.agents - 1) + ", past 65535");
  }

  JobPlan& plan = run.job;
  plan.job = job.name;
  plan.spec_json = job.SpecJson();
  plan.spec = spec;
  plan.output_dir = OutputFolder(job, options.manifest_path, options.output_dir, cwd).string();
  // Handed to the agents in the plan, which is JSON.
  const std::string output_field = !options.output_dir.empty() ? "--output"
                                   : spec.output.path          ? "spec.output.path"
                                                               : "the default output folder (--output names another)";
  EDGETRAIN_RETURN_IF_ERROR(CheckUtf8Path(plan.output_dir, output_field));
  // A file where the folder, or one above it, would be: said so by validate
  // too, where run said only the system's "Not a directory" (a user's trial).
  for (fs::path at = plan.output_dir; at.has_relative_path(); at = at.parent_path()) {
    std::error_code ec;
    if (fs::exists(at, ec) && !fs::is_directory(at, ec)) {
      return InvalidArgumentError(output_field + ": " + at.string() + " is a file, not a folder; the job's model, " +
                                  "checkpoint and logs go in a folder: give another path");
    }
  }
  // One LibTorch thread per agent unless asked: measured on the example MLP, two
  // threads on two cores ran at half the samples/s of one (13.8k vs 25.7k).
  plan.intra_op_threads = options.threads > 0 ? options.threads : 1;
  plan.fresh = options.fresh;
  if (run.team) {
    // Named by its file, as its other errors are: its name alone was (a user's trial).
    StatusOr<std::vector<WorkerSlot>> placed = SlotsInProfileOrder(workers, profile);
    if (!placed.ok() && !options.nodes_path.empty()) return placed.status().WithContext(options.nodes_path);
    EDGETRAIN_ASSIGN_OR_RETURN(run.devices, std::move(placed));
    plan.workers = run.devices;
    if (run.kernel_links) {
      for (auto& slot : plan.workers) {
        if (slot.link) slot.link->kernel_shaped = true;
      }
    }
    // A stream's rates come from the job, or else from every worker's node.
    if (spec.data.stream && !spec.data.stream->directory && spec.data.stream->rates_per_second.empty()) {
      for (const WorkerSlot& slot : plan.workers) {
        if (slot.stream) continue;
        return InvalidArgumentError(
            "spec.data.stream gives no ratesPerSecond, and " +
            (profile ? "node " + slot.node + " of the cluster profile " + profile->name + " gives no stream"
                     : std::string("there is no cluster profile (--nodes) to give each worker's")) +
            (profile ? ": give the rates in the job, or a stream (ratePerSecond or rateTrace) to each of the "
                       "profile's first " +
                           std::to_string(workers) + " nodes, where edgetrain run puts workers 0 to " +
                           std::to_string(workers - 1)
                     : ": give the rates in the job, or --nodes with a profile whose first " +
                           std::to_string(workers) + " nodes each give a stream (ratePerSecond or rateTrace)"));
      }
    }
  }

  run.memory_mb = EstimatedMemoryMb(spec.data, run.agents);
  if (machine.memory_mb > 0 && run.memory_mb > machine.memory_mb) {
    run.warnings.push_back(std::to_string(run.agents) + " agents need about " + std::to_string(run.memory_mb) +
                           " MB of memory; this machine has " + std::to_string(machine.memory_mb) + " MB");
  }
  const int agent_threads = run.agents * plan.intra_op_threads;
  if (agent_threads > kAgentsPerCoreBeforeWarning * machine.cores) {
    run.warnings.push_back(std::to_string(run.agents) + " agents (" + std::to_string(agent_threads) +
                           " training threads) share " + std::to_string(machine.cores) +
                           " core(s): each step waits its turn, and the run will be far slower than the devices it "
                           "emulates");
  }
  // Unknown (0) for data from files until an agent reads them: its
  // coordinator says it then, in /progress. A pipeline's batch is drawn from
  // the whole set and dealt among its devices, as its head counts it.
  const int holders = spec.parallelism.mode == ParallelismMode::kDataParallel ? workers : 1;
  if (std::string warning = BatchOverShareWarning(InfoOf(spec.data).train_size, holders, spec.data.batch_size);
      !warning.empty()) {
    run.warnings.push_back(warning);
  }
  // A team's parts only: a pipeline draws its batches from the whole set.
  if (std::string warning = UnseenLabelsWarning(spec.data, InfoOf(spec.data).classes, workers);
      spec.parallelism.mode == ParallelismMode::kDataParallel && !warning.empty()) {
    run.warnings.push_back(warning);
  }
  return run;
}

}  // namespace edgetrain::cli

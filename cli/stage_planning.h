#pragma once
// The step of `edgetrain run` that turns a pipeline, hybrid or auto job into
// stages: the agent measures the model's layers on this machine, the planner
// splits them over the devices placement gave the workers, as the mode allows
// (core/parallelism_choice.h), and the plan file gets the stages. A device the
// plan leaves out runs no agent.

#include <optional>
#include <string>

#include "api/trainingjob.h"
#include "cli/run_plan.h"
#include "core/cluster_profile.h"
#include "core/node_view.h"

namespace edgetrain::cli {

// The stages a run trains (StagesOf): --stages when given, else the job's
// spec.parallelism.stages.
struct StagesAsked {
  std::string stages;
  bool by_flag = false;
  // Where they were asked for, before what is said of them: "--stages
  // 0-9:0" or "spec.parallelism.stages" (an error); named, with the value
  // ("spec.parallelism.stages even instead of the planner's").
  std::string said() const { return by_flag ? "--stages " + stages : "spec.parallelism.stages"; }
  std::string named() const { return by_flag ? said() : said() + " " + stages; }
  bool given() const { return StagesFixed(stages); }
};
StagesAsked StagesOf(const std::string& flag, const JobSpec& spec);

// Sets `run.job.pipeline` and the agents that will run; returns what was
// chosen, to be said before training: "auto picks hybrid, predicted 643
// samples/s against data parallelism's 182 on the same devices and links",
// then the plan (DescribePlan).
// FailedPrecondition when no plan fits the devices' memory.
// `asked` (StagesOf) may train one of the plans the planner's is compared
// with instead, or a layout given by hand (InvalidArgument if it is not one
// of this model and these devices), kept as given (the layout's
// `stages_given`); `micro_batches`, above 0, cuts its steps so rather than
// at the cost model's best. Judges them by CheckStagesAsked first.
StatusOr<std::string> PlanStages(const api::TrainingJobManifest& job, const std::optional<ClusterProfile>& profile,
                                 const std::string& agent_binary, const StagesAsked& asked, int micro_batches,
                                 LocalRunPlan& run);

// What of `asked` and `micro_batches` can be judged before the layers are
// measured (seconds on a model worth splitting): micro-batches that do not
// divide the batch, and a layout by hand that is not one on `devices` ranks,
// all but its layers' range, which the measure counts. InvalidArgument.
Status CheckStagesAsked(const api::TrainingJobManifest& job, const StagesAsked& asked, int micro_batches,
                        size_t devices);

// The devices the planner splits over, in rank order: the workers' slots
// as placement gave them, with what else a profile's node says of them
// (memory, power, transience). Their compute is the slots', which a resumed
// run has moved along their traces (GoneOnFor): the profile's slowdown was
// of the run's start, and a resumed run planned a stage on a device slowed
// 20x mid-run before it, then trained at a ninth of its speed (a user's
// trial). Their links plan by their trace's mean, wherever the run is in it.
StatusOr<std::vector<NodeView>> DevicesAsPlaced(const std::vector<WorkerSlot>& slots,
                                                const std::optional<ClusterProfile>& profile);

}  // namespace edgetrain::cli

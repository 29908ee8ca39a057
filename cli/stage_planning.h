#pragma once
// The step of `edgetrain run` that turns a pipeline, hybrid or auto job into
// stages: the agent measures the model's layers on this machine, the planner
// splits them over the devices placement gave the workers, as the mode allows
// (core/parallelism_choice.h), and the plan file gets the stages. A device the
// plan leaves out runs no agent.

#include <atomic>
#include <optional>
#include <string>

#include "api/trainingjob.h"
#include "cli/run_plan.h"
#include "cli/stages_asked.h"
#include "core/cluster_profile.h"
#include "core/node_view.h"
#include "core/pipeline_cost.h"

namespace edgetrain::cli {

StagesAsked StagesOf(const std::string& flag, const JobSpec& spec);

// What of --stages and --micro-batches a job does not take, said as a note
// (a data-parallel job, or one of one worker, has no stages); and what
// --stages overrode of the job's spec.parallelism.stages. None: nothing to say.
std::optional<std::string> StageFlagsNotTaken(const api::TrainingJobManifest& job, const std::string& stages_flag,
                                              int micro_batches);
std::optional<std::string> StagesOverridden(const JobSpec& spec, const std::string& stages_flag);

// `plan` cut into `micro_batches` a step (above 0) rather than the cost
// model's best for its stages, and costed so.
void RecutAtMicroBatches(const PipelineProblem& problem, int micro_batches, int batch_size, PipelinePlan& plan);

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
                                 LocalRunPlan& run, const std::atomic<bool>* interrupted = nullptr);

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

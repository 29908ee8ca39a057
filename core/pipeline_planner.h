#pragma once
// Where to cut a model and which devices run each piece: Asteroid's hybrid
// planner, a dynamic program over layer suffixes and device groups scored by
// core/pipeline_cost.h. Pure: the same inputs give the same plan.
//
// Exact over every subset of devices up to `exact_devices` of them (every
// plan the cost model can score is considered; tests hold it to brute
// force). Past that the subsets are too many for the time a plan may take,
// and groups are runs of consecutive devices in an order — by speed, fastest
// first and slowest first, and by link — any of them left out
// (docs/pipeline.md measures what that gives up).

#include <string>
#include <vector>

#include "core/pipeline_cost.h"
#include "core/status.h"

namespace edgetrain {

struct PlannerOptions {
  int exact_devices = 8;
  // A plain pipeline (spec.parallelism.mode: pipeline): every stage on one
  // device, no data parallelism inside a stage, so no gradient exchange.
  // Devices may still be left out.
  bool one_device_per_stage = false;
  // A transient device alone in its stage, lost, takes the stage's layers
  // with it: they come back from a replica, less the updates since (and
  // with one device a stage, that is every stage's case). Another device in
  // the stage holds them whole, and its loss costs a step replayed. So a
  // plan in which no stage is a transient device alone is taken over the
  // fastest plan if it is predicted at least 1 - transient_slack as fast.
  // 0: the fastest, whatever it risks.
  double transient_slack = 0.1;
};

struct PlannerVerdict {
  PipelinePlan plan;
  bool exact = false;          // every subset of devices was considered
  int64_t candidates = 0;      // partial plans the program kept, for the benchmarks
  // Why the plan is not the fastest, when transient devices were kept company:
  // "no transient device alone in a stage: 6% slower than the fastest plan,
  // which had spot-1 alone"; empty otherwise.
  std::string transient_note;
};

// Whether no stage of `plan` is a transient device alone.
bool KeepsTransientCompany(const PipelineProblem& problem, const PipelinePlan& plan);

// The fastest plan that fits, or one as safe for transient devices within
// options.transient_slack of it. InvalidArgument for a problem without layers,
// devices or a positive batch; FailedPrecondition, saying why, when no plan
// fits the devices' memory.
StatusOr<PlannerVerdict> PlanPipeline(const PipelineProblem& problem, const PlannerOptions& options = {});

// What the planner is compared against, each at its best micro-batch count:
// one device a stage in the problem's order, the layers dealt out evenly
// (the first stages take one more when they do not divide); and one stage
// on every device (plain synchronous data parallelism). Either may not fit.
PipelinePlan EvenSplitPlan(const PipelineProblem& problem);
PipelinePlan DataParallelPlan(const PipelineProblem& problem);

// "2 stages, 32 micro-batches of 2: conv1-conv4 on a, b and c; conv5-classifier
// on d. The slowest stage, conv1-conv4, takes 2.7 ms a micro-batch computing;
// filling and draining the pipeline is 9% and the exchange inside groups 15%
// of a 107.8 ms step".
std::string DescribePlan(const PipelineProblem& problem, const PipelinePlan& plan);

// `stages` at each micro-batch count the problem allows, the fastest that
// fits (or, when none does, the fastest).
PipelinePlan AtBestMicroBatches(const PipelineProblem& problem, const std::vector<PipelineStage>& stages);

// "conv1-conv4": a stage's first and last layer, or its one layer.
std::string StageLayerNames(const PipelineProblem& problem, const PipelineStage& stage);

}  // namespace edgetrain

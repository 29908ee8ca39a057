#pragma once
// The plan file: everything an agent needs to take its part in a job, written by
// whoever launches agents (the local runner, the operator, the node emulator) and
// passed as --plan=FILE in the launch contract (docs/launch-contract.md).

#include <cstdint>
#include <functional>
#include <string>
#include <optional>
#include <string_view>
#include <vector>

#include "core/cluster_profile.h"
#include "core/job_spec.h"
#include "core/pipeline_cost.h"
#include "core/status.h"
#include "core/stream_rate.h"

namespace edgetrain {

// Where a worker runs and what its device is like.
struct WorkerSlot {
  int rank = 0;
  std::string node;          // the device's name
  double slowdown = 1;       // compute time multiplier: 10 = ten times slower than this machine
  std::optional<LinkSpec> link;  // none: an unshaped link
  PowerProfile power;        // for the energy model
  // The plan generation this slot was given its node at; 0: the plan's own.
  // A re-plan that replaces only lost workers keeps the survivors' slots as
  // they were, so their streams (opened under that generation) stay in the
  // team, while a worker of a replaced slot is fenced out.
  int64_t since_generation = 0;
  std::optional<StreamSource> stream = {};  // its node's stream, when the job's spec names no rates
  std::vector<SlowdownChange> slowdown_changes = {};  // its node's compute.changes: the slowdown from a time on

  DeviceSlowdown Slowdown() const { return {slowdown, slowdown_changes}; }
};

// One part of the training set, as one worker of a team of `parts` would hold
// it: a job of one trained on it is the "alone" baseline of benchmarks.
struct DataShard {
  int parts = 1;
  int part = 0;
};

// A pipeline job's stages (docs/pipeline.md): layers [first_layer, end_layer)
// of the model on the workers of `ranks`, in the order data flows, and the
// micro-batches a step is cut into. Rank r of the plan's workers is an agent
// with --role=stage.
struct PipelineStagePlan {
  int first_layer = 0;
  int end_layer = 0;
  std::vector<int> ranks;
};
// What a layout was planned from (a PipelineProblem less the batch, which
// the spec has): the layers as timed and each device by rank, so that the head
// can plan the micro-batches again for the devices left when some are lost.
struct PlannedFrom {
  std::vector<LayerCost> layers;
  std::vector<PipelineDevice> devices;  // devices[r] is rank r's
  double state_factor = 4;
  int max_micro_batches = 32;
  TransportCost transport;  // the agent's messages, as timed beside the layers
  StagePassCost stage_pass;  // a stage's own cost of a pass, the same
};

struct PipelineLayout {
  std::vector<PipelineStagePlan> stages;
  int micro_batches = 1;
  std::optional<PlannedFrom> planned_from = {};  // none: a layout given by hand
  // The stages were given (edgetrain run --stages, spec.parallelism.stages),
  // not the planner's: the head moves no layers between them. Here, where
  // both edgetrain run and the operator write it, rather than read from the
  // spec, which --stages overrides.
  bool stages_given = false;
};

// The planner's problem a layout was planned from, for `spec`'s batch.
PipelineProblem ProblemOf(const PlannedFrom& from, const JobSpec& spec);

struct JobPlan {
  std::string job;          // the TrainingJob's name
  int64_t generation = 1;   // bumped on every re-plan; peers on another generation are refused
  std::string spec_json;    // the validated, defaulted spec, as JSON
  JobSpec spec;             // decoded from spec_json
  std::string output_dir;   // where checkpoints and the final model go
  int intra_op_threads = 1; // LibTorch threads per agent; agents share the node's cores
  std::vector<WorkerSlot> workers;  // one per rank; empty for a job of one agent
  // The devices as the cluster profile gave them to `edgetrain run`, before a
  // resumed run went on along their traces (DevicesRecord, core/spec_changes.h),
  // as JSON: carried into every checkpoint, for the run that resumes from it
  // to say which of its own differ. Empty on a cluster.
  std::string devices_record;
  // A job of one only: train on this shard, on an emulated slower device,
  // charged at that device's power profile (its node's, on a cluster: a job
  // placed on a node of 5 W had been charged the defaults' 15, its energy
  // budget spent three times too soon: a new user's trial).
  std::optional<DataShard> shard;
  double slowdown = 1;
  PowerProfile power;
  std::optional<PipelineLayout> pipeline;  // a pipeline job's stages; none: data parallel or a job of one
  // Start afresh even if the output folder holds a checkpoint of this job
  // that did not complete (which the job otherwise resumes from).
  bool fresh = false;

  // What the job keeps in output_dir, as the agents write them and the
  // runner looks for them (docs/using-the-model.md).
  std::string CheckpointPath() const { return output_dir + "/checkpoint.bin"; }
  std::string ModelPath() const { return output_dir + "/model.pt"; }
};

// The oldest plan generation whose worker may hold rank `rank`'s slot.
int64_t SlotSince(const JobPlan& plan, int rank);

// `slot` for a run that resumes a job `elapsed_s` seconds of training in: its
// link's trace, its stream's rate trace and its compute changes go on from
// there, as the device's own would, rather than from their start. A resumed robot team put robot-4 back
// into the dip its link has from the 5th to the 30th second, run after run:
// 28 batches where an uninterrupted run trained 764 (a user's trial).
WorkerSlot GoneOnFor(WorkerSlot slot, double elapsed_s);

// Worker `rank`'s stream rate (spec.data.stream): the job's, or else its
// node's in the plan slot, a constant or a rate trace read by `read` (the
// agent's files or the runner's) and gone on to the slot's offset; none for
// a job without a stream, or one from a folder. FailedPrecondition for a
// worker with neither, or a trace `read` cannot give.
using TextReader = std::function<StatusOr<std::string>(const std::string& path)>;
StatusOr<std::optional<StreamRate>> StreamRateOf(const JobSpec& spec, const std::vector<WorkerSlot>& slots, int rank,
                                                 const TextReader& read);

// Which stage of `layout` holds `rank`; NotFound when none does (a device the
// plan leaves out).
StatusOr<int> StageOfRank(const PipelineLayout& layout, int rank);

// Stages in order over contiguous layers, each on workers of the plan that
// hold no other stage.
Status CheckPipelineLayout(const PipelineLayout& layout, size_t workers);

std::string EncodeJobPlan(const JobPlan& plan);
StatusOr<JobPlan> DecodeJobPlan(std::string_view json);

}  // namespace edgetrain

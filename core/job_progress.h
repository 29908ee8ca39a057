#pragma once
// A job's progress as the coordinator serves it at GET /progress and reports it in
// its final `result` line; the local runner and the operator read it. JSON keys are
// documented in docs/launch-contract.md.

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace edgetrain {

// Interrupted: stopped by a signal (Ctrl-C, a pod deleted) with its model
// and checkpoint saved, to be resumed; not finished, and not failed.
enum class JobState { kStarting, kTraining, kSucceeded, kInterrupted, kFailed };
std::string_view NameOf(JobState s);

// Why training ended: a budget limit (core/budget.h), an interruption, or a
// failure (whose message is JobProgress::error).
enum class StopReason { kTarget, kEpochs, kWallClock, kEnergy, kCancelled, kFailed };
std::string_view NameOf(StopReason r);
std::optional<StopReason> StopReasonNamed(std::string_view name);

// A worker whose samples arrive as a stream (spec.data.stream): totals over
// its life. What it trained on is its `samples`.
struct StreamProgress {
  int64_t arrived = 0;
  int64_t dropped = 0;  // pushed out of its full buffer, never trained on
  int64_t backlog = 0;  // in its buffer now
  double wait_s = 0;    // its compute waited for a batch's minimum to arrive
  // A stream from a folder: files left out for good (a row of the wrong
  // length, a label of no class), and why the last one was.
  int64_t refused_files = 0;
  std::string last_refused = {};
  // The last file all of whose samples it has taken from its buffer: a
  // resumed run does not read it, or those before it, again.
  std::string read_through = {};
  // Of `arrived`, those a resumed run will not see arrive again (all of an
  // emulated stream's, a folder's in the files read through): the arrivals
  // a checkpoint carries.
  int64_t arrived_for_good = 0;
};

// A worker of a job with adaptive compression (spec.sync.compression adaptive).
struct CompressionProgress {
  std::string encoding;       // what its pushes use now: "topk" or "int8"
  double topk_kept_norm = 0;  // the share of its gradient's norm top-k kept, last measured
  int64_t topk_pushes = 0;    // over its life
  int64_t pushes = 0;
};

struct WorkerProgress {
  int rank = 0;
  int batch_size = 0;
  int64_t samples = 0;
  double bandwidth_mbps = 0;  // current estimate of its link; 0 when unknown or down
  double stall_fraction = 0;  // time its compute waited on synchronisation / wall time
  int64_t iteration = 0;
  int64_t rows_sent = 0;
  int64_t bytes_sent = 0;       // its pushes (uplink)
  int64_t bytes_received = 0;   // what the coordinator sent it (downlink)
  bool active = true;         // false while counted out (link down, gone)
  double energy_joules = 0;   // modelled (docs/energy.md)
  double stall_s = 0;         // the stall fraction's parts, for finer accounting
  double wall_s = 0;
  // How long teammates waited on rows only this worker could give (not yet
  // computed, or not yet through its link), and whether they wait on it now.
  double held_team_s = 0;
  bool holding_team = false;
  double downlink_mbps = 0;   // the coordinator's estimate of its downlink; 0 when unknown
  double compute_s = 0;       // time it spent computing batches (not waiting, not reconnecting)
  // Why the coordinator turned it away for good (pushes it kept refusing);
  // empty: it is not quarantined.
  std::string quarantined{};
  // How long since it was last heard from: a team's workers always (its
  // figures are as of then: seconds while its link is out, before it is
  // counted out), a pipeline's devices once out of the stages; 0 otherwise.
  double silent_s = 0;
  // How long since its last report (a push's figures) reached the
  // coordinator: its energy here is as of then. A link in a dip may bring a
  // push's later parts, which carry none, for seconds, silent_s staying
  // small; 0 before any report.
  double unreported_s = 0;
  std::optional<StreamProgress> stream = {};
  int64_t injected = 0;  // data injection: samples of labels its part lacks it trained on
  // Its pushes the coordinator refused, none of them applied (a value no
  // gradient of a model that trains holds, a message larger than any of its
  // model's), and the last one's code and words; 0 and empty: none.
  int64_t refused_pushes = 0;
  std::string last_refusal = {};
  std::optional<CompressionProgress> compression = {};
  // A pipeline stage device's: the layers it holds now, [first, end) (layers
  // move between stages as devices drift, or to a lost stage's neighbour).
  std::optional<std::pair<int, int>> layers = {};
  // A pipeline stage device's own work a step, as the run's last steps
  // measured it, over what the cost model predicts from the profile (1.2: a
  // fifth slower): what the head's re-plan after a loss plans it at
  // (core/device_pace.h). None until learned.
  std::optional<double> pace = {};
  // The samples it computed a second of compute, by its own count to its end
  // (batches late for their round included, which `samples` leaves out);
  // 0: not known. edgetrain run reads it from each worker's result.
  double computed_samples_per_s = 0;
};

// The training loss a job shows is smoothed over about its last 50 batches:
// each batch moves it by this share of the way to its own loss.
constexpr double kLossSmoothing = 0.02;

struct JobProgress {
  JobState state = JobState::kStarting;
  int64_t iteration = 0;
  int64_t samples = 0;
  int epoch = 0;
  double loss = 0;                 // mean training loss since the last report
  std::optional<double> accuracy;  // last test-set evaluation
  std::optional<int64_t> evaluated_iteration;  // the iteration that evaluation was of
  double samples_per_second = 0;
  double elapsed_s = 0;
  // Of elapsed_s, the test-set evaluations': the team waits through them, so
  // a rate against a prediction of training leaves them out.
  double evaluation_s = 0;
  // The test set is being evaluated now: a pipeline's stages and a job of one
  // wait through it, and a reader saw its steps stop for seconds with no
  // word why (evaluation_s then counts this one as it goes).
  bool evaluating = false;
  std::optional<double> eta_s;     // until the budget ends (the target may come sooner)
  double fraction = 0;             // of the budget used, 0..1, for progress bars
  // Since the job's iteration last moved (a team: its slowest counted
  // worker's): what tells a stalled team from a slow one.
  double since_step_s = 0;
  std::optional<double> energy_joules;  // modelled, not measured; null until an energy model runs
  std::vector<WorkerProgress> workers;
  // What the devices or workers of the runs before that this resumed run has
  // not (another profile, fewer workers, other stages) sent and received, as
  // its checkpoint kept them: the job's byte totals go on over every run, as
  // its energy does (they had gone back at a resume: a user's trial).
  int64_t departed_bytes_sent = 0, departed_bytes_received = 0;
  // A pipeline's replays (docs/pipeline.md): null for a team. Each is a step
  // run again on the survivors of a device lost mid-step.
  struct Replays {
    int64_t count = 0;
    int64_t micro_batches = 0;    // run again, over all replays
    double last_recovery_s = 0;   // the last one's: from the loss seen to its step done
    double recovery_s = 0;        // over all replays
    // Stages whose only device was lost, rebuilt on a neighbour from the
    // head's replica, and the steps of their layers' updates that lost: those
    // since the replica.
    int64_t restored_stages = 0;
    int64_t steps_lost = 0;
    // Times the stages were laid out anew: layers moved as their devices
    // drifted, devices left out, a device back taken in.
    int64_t repartitions = 0;
    // Devices lost and back: each rejoined a stage between steps.
    int64_t rejoined = 0;
    // The last re-plan over the devices left (a plan the job came with has
    // what it was planned from): the micro-batches a step is now cut into,
    // and the samples a second the cost model predicts the pipeline as it now
    // is to train. 0: none yet.
    int replanned_micro_batches = 0;
    double replanned_samples_per_s = 0;
    // What that prediction counted for the head's word to the stages and
    // their answers a step: as the run's steps took them, once learned.
    double replanned_orders_s = 0;
    // And the pace it planned each device left at (WorkerProgress::pace, as
    // learned then), by rank: its devices' pace moves on after it.
    std::map<int, double> replanned_paces = {};
    // The micro-batches in flight in the pipeline when each loss came (past
    // the first stage's forward, short of its backward), over all replays.
    // micro_batches is what replays of the whole step ran again on every
    // stage: every one of the step's.
    int64_t in_flight_micro_batches = 0;
    // Devices taken for lost because a pass ran past its deadline while
    // their heartbeats still came: hung (core/pass_deadline.h).
    int64_t hung = 0;
    // Devices of a group let go of for running their share far slower
    // than its fastest (PipelineHead::Stragglers).
    int64_t stragglers = 0;
    // Devices a measurement's layout by the planner left out: at the pace
    // they measured, the pipeline was predicted faster without them. They
    // may rejoin as stragglers do.
    int64_t left_out = 0;
    // Times a group's micro-batches were dealt anew by what its devices
    // computed a second, once that drifted from their speeds as planned.
    int64_t redealt = 0;
    // Devices of a group lost mid-step whose shares of the step another of
    // their group computed again, the rest of the pipeline going on (each
    // counted in `count` too, with no micro-batch run again on every
    // stage), or whose shares were all in already (not counted in `count`);
    // and the shares computed again: a share of each micro-batch they were
    // dealt.
    int64_t covered = 0;
    int64_t covered_shares = 0;
    // Of those, the shares the lost device had computed before, its output
    // of them sent on: the work lost with it (the rest it had not begun).
    int64_t rerun_shares = 0;
    // Of `count`, the steps run again on every stage's survivors.
    int64_t replayed_steps = 0;
  };
  std::optional<Replays> replays;
  // Set when the job resumed from a checkpoint: the iteration it resumed at.
  std::optional<int64_t> resumed_from_iteration;
  // And what of its manifest's spec changed since that checkpoint was
  // written, each "path: before -> after" (core/spec_changes.h).
  std::vector<std::string> resumed_with_changes;
  // What the job's agents found worth a word once its data was read (a batch
  // larger than a worker's share of data from files), each said once by
  // edgetrain run as it appears.
  std::vector<std::string> warnings;
  // Set when the job has ended.
  bool reached_target = false;
  // Set once training has stopped: while the job finishes (its last
  // evaluation, its model saved, a team's workers told to stop) its state is
  // still kTraining.
  std::optional<StopReason> stop_reason;
  std::string error;               // what failed, when stop_reason is kFailed
  std::string model_path;
};

std::string EncodeJobProgress(const JobProgress& p);  // one line of JSON
StatusOr<JobProgress> DecodeJobProgress(std::string_view json);

}  // namespace edgetrain

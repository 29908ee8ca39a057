#pragma once
// What a data-parallel team has done, worker by worker, as its coordinator
// hears it: samples and loss, rows and bytes each way, and the time and
// modelled energy each worker reports of itself. It makes the job's progress
// (GET /progress) and survives a worker's restarts: a new stream starts the
// worker's own counters again, and what its earlier streams reported is kept.

#include <cstdint>
#include <optional>
#include <vector>

#include "core/job_progress.h"
#include "core/time.h"

namespace edgetrain {

// What a worker says of itself with each push (edgetrain.v1.WorkerStats).
struct WorkerReport {
  int batch_size = 0;
  int64_t samples = 0;       // since its previous report
  double loss_sum = 0;       // since its previous report
  int64_t loss_count = 0;
  double uplink_mbps = 0;    // its estimate of its link; 0: none yet
  double downlink_mbps = 0;  // measured where updates arrive; 0: none yet
  // Totals since its stream opened.
  double compute_s = 0, stall_s = 0, wall_s = 0, energy_j = 0;
  double step_s = 0;  // a step's compute time, smoothed
  // A worker on a stream: its counts since its stream opened (its backlog,
  // last refused file and file read through as they are now).
  std::optional<StreamProgress> stream = {};
  int64_t injected = 0;  // injected samples it trained on, since its stream opened
  std::optional<CompressionProgress> compression = {};  // adaptive compression: its choices
};

// What a worker has done over every stream and run so far: what a checkpoint
// keeps, so that a resumed job's table counts from where it stood.
struct WorkerTotals {
  int64_t iteration = 0, samples = 0, rows_sent = 0, bytes_sent = 0, bytes_received = 0;
  double compute_s = 0, stall_s = 0, wall_s = 0, energy_j = 0, held_team_s = 0;
  std::string stream_read_through = {};  // a stream from a folder: the last file it had taken all of
  // A stream's: samples that arrived, that its buffer dropped, and its
  // compute's wait for them, over every run so far.
  int64_t stream_arrived = 0, stream_dropped = 0;
  double stream_wait_s = 0;
  // A stream from a folder: the files it left out, and the last, over every
  // run so far (a resumed run said 0 of a file its first run had refused).
  int64_t stream_refused_files = 0;
  std::string stream_last_refused = {};
  // The node the rank ran on, where known (a pipeline's devices); empty:
  // not said, and its figures go on with the rank's.
  std::string node = {};
  // Injected samples it trained on, over every run so far: a resumed run's
  // had counted its own alone, and the stream table read the runs before's
  // as samples that had arrived (a user's trial).
  int64_t injected = 0;
};

class TeamAccounts {
 public:
  TeamAccounts(int workers, int batch_size, int64_t train_size);

  // A new stream of `w`, resuming after `iteration`: its counters restart.
  void StreamOpened(int w, int64_t iteration);
  // `w` was taken back after being counted out and resumes after `iteration`.
  void Resumed(int w, int64_t iteration) { workers_[w].iteration = iteration; }
  // The team trains on from a worker's copy of the model whose rows are at
  // round `copy_clock`, where this coordinator's own were at `own_clock`
  // (core/model_takeover.h): the rounds between were trained while it was
  // away. A copy does not say how many samples made them; so many whole
  // batches of every worker are counted, on top of what the coordinator
  // counted itself (its checkpoint's), and each worker is counted its own. Rounds are not the team's iteration
  // (whole batches): a round closed without a worker, or an epoch's short
  // last batch, trained fewer. Counting the copy's round as the iteration
  // made a resumed coordinator's count jump by half, 57,800 to 87,171, its
  // samples with it (a new user's trial).
  void TrainedOnFromCopy(int64_t own_clock, int64_t copy_clock);
  // Part of a push of `w` after `iteration` was applied.
  void Pushed(int w, int64_t iteration, int rows, int64_t bytes);
  // The report on a push's first part: counted even when its rows were not
  // applied, but its samples only when they were (`trained`): a push late for
  // its round trained nothing the team kept.
  void Reported(int w, const WorkerReport& report, bool trained = true);
  // A message to `w` went through in `took`.
  void Delivered(int w, int64_t bytes, Duration took);
  // Downlink time not yet told to `w`: its radio was receiving, which its energy model charges.
  double TakeTransferSeconds(int w);
  // Whether teammates now wait on `w` (StalenessLedger::HoldsTeam), for
  // `for_` since the last look: what makes a team slow, named in its progress.
  void Holding(int w, bool holding, Duration for_);

  const WorkerReport& report(int w) const { return workers_[w].report; }
  int64_t samples() const { return samples_; }
  // Iterations of the whole team, in steps of one batch per worker. Each
  // worker's own count differs: a fast one makes more than a slow one. A
  // resumed job counts on from its checkpoint's, at this run's batch size.
  int64_t team_iteration() const {
    const int64_t team_batch = int64_t{batch_size_} * static_cast<int64_t>(workers_.size());
    // The part of an iteration the checkpoint's whole ones left over counts
    // on, where this run's batch leaves one: each run rounding its own down,
    // a job resumed once ended an iteration short of one never stopped
    // (6,249 of 600,000 samples in 96s; a new user's trial).
    const int64_t left = resumed_samples_ - resumed_iteration_ * team_batch;
    const int64_t part = left > 0 && left < team_batch ? left : 0;
    return resumed_iteration_ + (samples_ - resumed_samples_ + part) / team_batch;
  }
  // The training loss of the batches reported, smoothed as a job of one's is
  // (kLossSmoothing, about the last 50 batches): the mean of the reports
  // since the last look swung with how few came between two looks, and the
  // run's result gave another loss than its last progress line (a new
  // user's trial). 0 before any.
  double loss() const { return std::max(0.0, smoothed_loss_); }

  // The job's progress at `elapsed_s` of training; `active[w]`: w is in the team's waits.
  JobProgress Progress(double elapsed_s, const std::vector<bool>& active) const;
  // The job's modelled energy, as Progress counts it: every worker's, what
  // was carried on (CarryEnergy) and the departed ranks'.
  double EnergyJoules() const;

  // What a checkpoint keeps, and puts back: every rank's, those of a
  // larger team this one was resumed from after its own.
  std::vector<WorkerTotals> Totals() const;
  // `iteration`: the team's then, which it counts on from; `loss`: the loss
  // as smoothed then, which the one shown goes on from. Ranks past this
  // team's (a team resumed with fewer workers) are departed: their energy
  // stays in the job's, so that an energy budget counts what they spent
  // (it left the totals with them: a new user's trial), and a team as
  // large again takes their figures back.
  // `job_energy_j`: the job's energy as the checkpoint kept it, of which
  // what no rank's totals hold is carried on (CarryEnergy).
  void Restore(int64_t iteration, int64_t samples, const std::vector<WorkerTotals>& workers,
               std::optional<double> loss = std::nullopt, double job_energy_j = 0);
  // Joules of the job that no worker's figures hold: counted by a
  // coordinator before this one, whose figures went with its node (a
  // coordinator placed anew goes on from what its workers last heard).
  void CarryEnergy(double joules) { carried_energy_j_ += joules; }
  // A stream from a folder: the last file `w` had taken all the samples of,
  // as it last reported, or as the checkpoint resumed from kept it.
  std::string StreamReadThrough(int w) const;

 private:
  struct Worker {
    WorkerReport report;  // the last, on its current stream
    int64_t iteration = 0;
    int64_t samples = 0;
    int64_t rows_sent = 0;
    int64_t bytes_sent = 0;      // its pushes
    int64_t bytes_received = 0;  // our messages to it
    double untold_transfer_s = 0;
    double held_team_s = 0;
    bool holding_team = false;
    // Totals of its earlier streams.
    double compute_s = 0, stall_s = 0, wall_s = 0, energy_j = 0;
    std::string stream_read_through;  // as the checkpoint resumed from kept it, or its last stream counted
    // Of a stream from a folder: the stream part of its last report whose
    // push's batches a round counted. A report of a push the round did not
    // count (late for it) says files read through whose samples the team
    // did not keep, and a resumed run read past them (a new user's trial).
    std::optional<StreamProgress> counted_stream;
    // Of its earlier streams, in this run and those before.
    int64_t stream_arrived = 0, stream_dropped = 0;
    double stream_wait_s = 0;
    int64_t stream_refused_files = 0;
    std::string stream_last_refused;
    int64_t injected = 0;  // on its earlier streams
  };

  // What of a worker's stream a checkpoint carries: of a stream from a
  // folder, its last counted report's (none before one); else its last.
  static const StreamProgress* KeptStream(const Worker& k);

  std::vector<Worker> workers_;
  std::vector<WorkerTotals> departed_;  // ranks past this team's, as the checkpoint kept them
  double carried_energy_j_ = 0;         // CarryEnergy
  const int batch_size_;
  const int64_t train_size_;
  int64_t samples_ = 0;
  // The team's iteration and samples at the checkpoint resumed from: its
  // samples were counted in batches of its own run's size, and a run that
  // changed the batch divided them anew (1,182 iterations for 591 resumed
  // from at half the batch; a new user's trial).
  int64_t resumed_iteration_ = 0, resumed_samples_ = 0;
  double smoothed_loss_ = -1;  // none yet
};

}  // namespace edgetrain

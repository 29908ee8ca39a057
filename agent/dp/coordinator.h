#pragma once
// The coordinator of row-granular data parallelism: ROG's parameter server.
//
// It holds the global model and the optimizer (core/row_optimizer.h says why
// there), applies gradient rows as workers push them, keeps the staleness ledger,
// and sends each worker the rows it needs and then the rows it misses most,
// within what that worker's downlink carries in one of its iterations. It counts
// out workers whose pushes stop coming past their learned deadline and takes them
// back, with a full copy of the model, when they return. It evaluates the model,
// checkpoints it, ends the job at its budget, and serves the job's progress.
//
// Threads: one per worker stream reading pushes (Serve), one per worker sending
// updates, and the caller's, running Run(). All state is guarded by one mutex.

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/data/dataset.h"
#include "agent/dp/checkpoint.h"
#include "agent/progress_board.h"
#include "agent/telemetry/metrics.h"
#include "agent/torch/trainer.h"
#include "agent/transport/transport.h"
#include "core/arrival_deadline.h"
#include "core/bandwidth_estimator.h"
#include "core/clock.h"
#include "core/job_plan.h"
#include "core/job_progress.h"
#include "core/replica_record.h"
#include "core/row_codec.h"
#include "core/row_layout.h"
#include "core/row_optimizer.h"
#include "core/staleness_ledger.h"
#include "core/trace_shaper.h"

namespace edgetrain::agent {

class Coordinator final : public WorkerSessions {
 public:
  // `model` holds the initial weights (seeded), evaluates and saves the global
  // model; `test` is the test set; `log` receives one line per notable event.
  Coordinator(const JobPlan& plan, Trainer& model, const Dataset& test, int64_t train_size, Clock& clock,
              ProgressBoard& board, std::ostream& log, MetricsRegistry& metrics);
  ~Coordinator() override;

  // Resumes from the output folder's checkpoint when there is one of this job.
  Status Restore();

  Status Admit(const v1::Hello& hello) override;
  Status Serve(const v1::Hello& hello, WorkerStream& stream) override;

  // Runs the job until its budget ends or `cancel` is set; then tells every
  // worker to stop, saves the model and returns the final progress.
  StatusOr<JobProgress> Run(const std::atomic<bool>& cancel);

 private:
  struct Session;

  // Waits for every worker, or for nodeLossGrace after the first; then starts
  // the job's clock and lets the Welcomes go.
  Status GatherTeam(const std::atomic<bool>& cancel);

  // All of these run with mu_ held.
  // The whole model for a (re)started worker; only what it lacks for one whose
  // link came back.
  v1::CoordinatorMessage MakeWelcome(int rank, int64_t resume_after, bool whole_model);
  v1::CoordinatorMessage MakeUpdate(int rank);
  // A row as the parameters themselves, or as the compressed difference from
  // what the worker holds; both record what it will hold.
  void SetRowWhole(Session& s, size_t r, v1::Row& row) const;
  void SetRowDifference(Session& s, size_t r, v1::Row& row) const;
  bool HasWork(int rank) const;
  double DownlinkMbps(int rank) const;
  // Parts of about `part_bytes` (PartBytes), back to back, so the worker can
  // time its downlink from their arrivals.
  static std::vector<v1::CoordinatorMessage> SplitUpdate(v1::CoordinatorMessage whole, int64_t part_bytes);
  // Gathers a push's rows and steps those whose clock moved; true when a sender
  // may have something new to send (a row stepped, or a new iteration began).
  StatusOr<bool> ApplyPush(int rank, const v1::Push& push);
  void CountOutOverdue(TimePoint now);
  JobProgress Progress(TimePoint now) const;
  int64_t TeamIteration() const;
  CoordinatorCheckpoint Snapshot(TimePoint now) const;

  void SendLoop(int rank, uint64_t epoch, WorkerStream& stream, const std::atomic<bool>& gone);
  Status EvaluateModel(JobProgress& progress);

  const JobPlan plan_;
  Trainer& model_;
  const Dataset& test_;
  const int64_t train_size_;
  Clock& clock_;
  ProgressBoard& board_;
  std::ostream& log_;
  CoordinatorMetrics metrics_;  // thread-safe; bound once
  const int world_;
  const RowLayout layout_;
  const RowEncoding downlink_encoding_;  // the job's compression, both ways

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<float> params_;          // the global model; guarded by mu_
  RowOptimizer optimizer_;             // guarded by mu_
  StalenessLedger ledger_;             // guarded by mu_
  std::vector<int64_t> versions_;      // per row: updates applied; guarded by mu_
  std::vector<float> accumulated_;     // gradients awaiting their row's clock; guarded by mu_
  std::vector<int64_t> applied_clock_; // per row: the clock its last step reached; guarded by mu_
  std::vector<std::unique_ptr<Session>> sessions_;  // per rank; guarded by mu_
  int64_t samples_ = 0;                // guarded by mu_
  double loss_sum_ = 0;                // since the last progress report; guarded by mu_
  int64_t loss_count_ = 0;
  double last_loss_ = 0;
  double elapsed_before_ = 0;          // training time before a restart
  bool started_ = false;  // the team has gathered (or stopped waiting); guarded by mu_
  bool stopping_ = false;
  // Set once the job is over and Stop had its chance: sends waiting on a dead
  // link give up, so shutdown never waits for a link to come back.
  std::atomic<bool> abandon_sends_{false};
  TimePoint start_{};  // the job's clock: when the team started; Run()'s only
};

}  // namespace edgetrain::agent

#pragma once
// A data-parallel team as threads of one process, on a DeterministicClock and
// the in-memory transport, training FakeTrainers: the engine whole — job
// driver, coordinator and its service, workers — with nothing real but the
// code under test. A run of minutes of simulated time takes milliseconds and
// runs the same way every time (gloo's spawn(), with deterministic scheduling).
//
// A test describes the team (TeamSetup), then runs it with a script: the
// script runs as one of the clock's threads, at simulated times of its
// choosing starts and kills workers, cuts links, restarts the coordinator, and
// waits for what the job's progress shows.

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "agent/dp/coordinator.h"
#include "agent/dp/worker.h"
#include "agent/progress_board.h"
#include "agent/telemetry/metrics.h"
#include "agent/testing/fake_trainer.h"
#include "agent/transport/in_memory_transport.h"
#include "agent/transport/link_gate.h"
#include "core/deterministic_clock.h"
#include "core/job_plan.h"

namespace edgetrain::agent::testing {

// A real model for the team instead of the fake one (benchmarks on the
// simulated clock, bench/dp-sim): each agent gets its own Trainer from
// `make`, trained on `data`. A step then costs no simulated time of its own,
// so each worker's compute is charged as TeamSetup::step_times says.
struct RealModel {
  std::function<StatusOr<std::unique_ptr<Trainer>>()> make;
  const TrainTestSplit* data = nullptr;
  DatasetName dataset = DatasetName::kFashionMnist;
  ModelSpec spec;
  uint64_t seed = 1;  // the job's: the partition and each worker's batches
};

struct TeamSetup {
  int workers = 3;
  SyncPolicy policy = SyncPolicy::kRog;
  int staleness_bound = 4;
  Compression compression = Compression::kNone;
  // The whole of spec.sync, when set: policy, staleness_bound and compression above are then ignored.
  std::optional<SyncSpec> sync;
  PartitionSpec partition;
  std::optional<StreamSpec> stream;  // samples arrive as streams (rates on the simulated clock)
  std::optional<InjectionSpec> injection;
  bool compute_weighted = false;
  OptimizerSpec optimizer{OptimizerKind::kSgd, 0.1, std::nullopt, 0};
  int batch_size = 16;
  int64_t train_samples = 640;
  BudgetSpec budget;  // set one limit
  int evaluate_every = 20;
  int checkpoint_every = 0;
  Duration node_loss_grace = std::chrono::seconds(20);
  std::vector<double> slowdowns;               // per worker; none: 1
  std::vector<std::optional<BandwidthTrace>> links;  // per worker, both directions; none: unshaped
  FakeModel model;
  std::optional<RealModel> real;  // trains this instead of `model` when set
  // Simulated compute time of one step, per worker (a real model's only; a
  // fake model takes FakeModel::step). None: the slowdown times nothing.
  std::vector<Duration> step_times;
  // And per sample of its batch (a real model's only): a batch of n samples
  // costs step_times + n * sample_times, as a batch that follows a stream does.
  std::vector<Duration> sample_times;
  std::optional<double> evaluate_every_seconds;  // instead of evaluate_every iterations
  // A worker whose every gradient is NaN under a finite loss, as a hostile
  // one's: its pushes are poison.
  std::optional<int> poisoned_worker;
  // A worker whose loss and gradients are NaN, as a diverged model's.
  std::optional<int> diverged_worker;
  std::string output_dir;  // a fresh folder per test when empty
};

// Another trainer in all but its gradients: what the decorators below share.
class TrainerDecorator : public Trainer {
 public:
  explicit TrainerDecorator(std::unique_ptr<Trainer> inner) : inner_(std::move(inner)) {}
  std::span<float> Parameters() override { return inner_->Parameters(); }
  std::vector<std::vector<int64_t>> ParameterShapes() const override { return inner_->ParameterShapes(); }
  StatusOr<Evaluation> Evaluate(const Dataset& data) override { return inner_->Evaluate(data); }
  Status SaveModel(const std::string& path) override { return inner_->SaveModel(path); }
  int64_t ParameterCount() const override { return inner_->ParameterCount(); }

 protected:
  std::unique_ptr<Trainer> inner_;
};

// A real model's step charged on a simulated clock: the inner trainer's
// gradient (which takes no simulated time), then `step` of simulated time, as
// a device that slow would take.
class TimedTrainer final : public TrainerDecorator {
 public:
  TimedTrainer(std::unique_ptr<Trainer> inner, Clock& clock, Duration step, Duration per_sample = {})
      : TrainerDecorator(std::move(inner)), clock_(clock), step_(step), per_sample_(per_sample) {}
  StatusOr<double> ComputeGradient(const float* features, const int64_t* labels, int64_t n,
                                   std::span<float> gradient) override {
    auto loss = inner_->ComputeGradient(features, labels, n, gradient);
    clock_.SleepFor(step_ + per_sample_ * n);
    return loss;
  }

 private:
  Clock& clock_;
  Duration step_;
  Duration per_sample_;
};

// A trainer whose gradients are all NaN: a worker pushing poison under a
// finite loss, or (`loss_too`) a model that diverged or computes NaN.
class PoisonedTrainer final : public TrainerDecorator {
 public:
  PoisonedTrainer(std::unique_ptr<Trainer> inner, bool loss_too)
      : TrainerDecorator(std::move(inner)), loss_too_(loss_too) {}
  StatusOr<double> ComputeGradient(const float* features, const int64_t* labels, int64_t n,
                                   std::span<float> gradient) override {
    auto loss = inner_->ComputeGradient(features, labels, n, gradient);
    std::fill(gradient.begin(), gradient.end(), std::numeric_limits<float>::quiet_NaN());
    if (loss.ok() && loss_too_) return std::numeric_limits<double>::quiet_NaN();
    return loss;
  }

 private:
  const bool loss_too_;
};

class SimulatedTeam {
 public:
  explicit SimulatedTeam(TeamSetup setup);
  ~SimulatedTeam();

  // Runs the job to its end. Every worker starts with the coordinator unless
  // `start_workers` is false; `script` (optional) runs beside them.
  void Run(const std::function<void(SimulatedTeam&)>& script = {}, bool start_workers = true);

  // For scripts, during Run.
  void StartWorker(int rank);
  // Its thread ends as a killed process's would: its stream closes, nothing is said.
  void KillWorker(int rank);
  LinkGate& gate(int rank) { return *gates_[rank]; }
  // Ends the job, as SIGTERM to the coordinator does.
  void Stop();
  // The coordinator's process dies and another takes its place, resuming
  // from `checkpoint` (the file's bytes when it died); none: placed anew, its
  // output folder left behind with its node.
  void RestartCoordinator(const std::optional<std::string>& checkpoint);
  // The running coordinator is handed `next` (a new plan generation);
  // workers started from now on are of it.
  Status AdoptPlan(const JobPlan& next);
  // Waits, in simulated time, until the job's progress satisfies `holds`.
  bool WaitFor(const std::function<bool(const JobProgress&)>& holds, Duration timeout = std::chrono::minutes(10));
  JobProgress progress() const { return board_.Snapshot(); }
  DeterministicClock& clock() { return clock_; }
  const JobPlan& plan() const { return plan_; }

  // After Run.
  const StatusOr<JobProgress>& result() const { return result_; }
  std::string log() const { return log_.str(); }
  const std::vector<StatusOr<WorkerSummary>>& workers() const { return summaries_; }
  // Pushes the coordinator read, by fate (core/team_membership.h), over every coordinator of the run.
  const std::vector<int64_t>& push_fates() const { return push_fates_; }
  // Pushes the workers' streams carried to a coordinator.
  int64_t pushes_delivered() const { return pushes_delivered_; }
  // Prometheus text of every worker's metrics.
  std::string worker_metrics() const { return worker_registry_.Render(); }
  // Prometheus text of the coordinator's metrics (the last coordinator's).
  std::string coordinator_metrics() const { return registry_.Render(); }
  // Whether the job's progress, looked at every 10 ms of its life, ever went
  // back (a coordinator's restart starts a new watch: it resumes from its
  // checkpoint, behind where its predecessor was).
  bool progress_went_back() const { return progress_went_back_; }

 private:
  struct Incarnation;
  void StartCoordinator();
  void EndCoordinator();
  // A worker's or the coordinator's trainer (`rank` -1), fake or real.
  std::unique_ptr<Trainer> MakeTrainer(int rank);  // poisoned for TeamSetup::poisoned_worker
  std::unique_ptr<Trainer> MakeModelTrainer(int rank);
  const TrainTestSplit& data() const { return setup_.real ? *setup_.real->data : data_; }

  TeamSetup setup_;
  JobPlan plan_;  // the current generation; each worker keeps the one it started with
  TrainTestSplit data_;  // the fake model's
  DeterministicClock clock_;
  InMemoryNetwork network_{clock_};
  std::unique_ptr<CoordinatorConnector> connector_;
  ProgressBoard board_;
  MetricsRegistry registry_;
  MetricsRegistry worker_registry_;
  std::ostringstream log_;
  std::atomic<bool> cancel_{false};
  std::unique_ptr<Incarnation> coordinator_;
  std::vector<std::unique_ptr<LinkGate>> gates_;
  std::vector<std::unique_ptr<std::atomic<bool>>> worker_cancel_;
  std::vector<ClockThread> worker_threads_;
  StatusOr<JobProgress> result_ = InternalError("not run");
  std::vector<StatusOr<WorkerSummary>> summaries_;
  std::vector<int64_t> push_fates_;
  int64_t pushes_delivered_ = 0;
  bool progress_went_back_ = false;
  JobProgress watched_;  // the progress last looked at
};

}  // namespace edgetrain::agent::testing

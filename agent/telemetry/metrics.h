#pragma once
// The agent's Prometheus metrics (names in docs/metrics.md, prefix edgetrain_).
// Handles are bound once, when a worker or coordinator is set up, and the
// training loop adds and sets through them; a push's encoding, a refused or
// dropped push's reason and a replica's stage are looked up by label as they
// come. prometheus-cpp stays behind this header.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace edgetrain::agent {

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  // The Prometheus text exposition of everything registered.
  std::string Render() const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

enum class EnergyState { kCompute, kCommunicate, kIdle };

// One worker's metrics, labelled {trainingjob, worker}. Not `job`: Prometheus
// reserves that label for the scrape job (ours would become `exported_job`).
class WorkerMetrics {
 public:
  WorkerMetrics(MetricsRegistry& registry, const std::string& job, int rank);
  ~WorkerMetrics();

  void SetUplinkMbps(double mbps);  // exported in bytes per second
  void AddSent(int64_t bytes, int64_t rows);
  void AddReceived(int64_t bytes, int64_t rows);
  // How stale each row is as `iteration` uses a model whose rows were last
  // applied at `clocks`: counted into the histogram's buckets first, so that
  // the whole iteration is one observation, not one per row.
  void ObserveRowStaleness(int64_t iteration, std::span<const int64_t> clocks);
  void ObserveIteration(double seconds);
  void AddStall(double seconds);
  // The modelled joules so far in `state` (the meter keeps the running total);
  // the counter grows by what was added since the last call.
  void SetEnergy(EnergyState state, double joules);
  void SetLoss(double loss);
  void AddSamples(int64_t samples);
  void AddRejoin();
  // A worker on a stream of samples: its running totals and its buffer now,
  // and time its compute waited for a batch's minimum to arrive.
  void SetStream(int64_t arrived, int64_t dropped, int64_t backlog);
  void AddDataWait(double seconds);
  // A file of a stream from a folder left out: unreadable, or written to
  // after it was read (agent/data/sample_directory.h).
  void AddRefusedStreamFile();
  // Samples of labels its part lacks, from the coordinator, it trained on.
  void AddInjected(int64_t samples);
  // Adaptive compression: whether its pushes use top-k now (else int8), and
  // the share of its gradient's norm top-k kept when last measured. The
  // series appear with the first call: a worker of another compression has none.
  void SetPushEncoding(bool topk, double topk_kept_norm);

 private:
  struct Handles;
  std::unique_ptr<Handles> h_;
};

// A pipeline stage's device: its modelled energy by state, under the name
// and labels {trainingjob, worker, state} a data-parallel worker's has, so
// that the dashboards' energy panels draw a pipeline's devices as a team's
// (they drew nothing for a pipeline but its job's total). Fed with what each
// state added since the last call: a stage's meter starts again with each
// session the head takes it into, where a worker's runs for its process.
class DeviceEnergyMetrics {
 public:
  DeviceEnergyMetrics(MetricsRegistry& registry, const std::string& job, int rank);
  ~DeviceEnergyMetrics();
  void Add(EnergyState state, double joules);

 private:
  struct Handles;
  std::unique_ptr<Handles> h_;
};

// The coordinator's metrics, labelled {trainingjob} and, per worker,
// {trainingjob, worker}.
class CoordinatorMetrics {
 public:
  // `workers`: the team's planned size (0 for a job of one, which has no
  // per-worker series); `energy_budget_joules`: the job's
  // spec.budget.energyJoules (0: none). `links`: whether the workers are a
  // data-parallel team's, each with a link to this coordinator; a
  // pipeline's head has devices, and none of the per-worker series (they
  // stayed at 0, and the shipped alerts said every device's link was down).
  CoordinatorMetrics(MetricsRegistry& registry, const std::string& job, int workers,
                     double energy_budget_joules = 0, bool links = true);
  ~CoordinatorMetrics();

  void SetAccuracy(double accuracy);
  void SetLoss(double loss);
  // Cumulative values, exported as counters: each grows by what was added since
  // the last call (a value lower than the last, as after a resume, adds nothing).
  void SetSamples(int64_t samples);
  void SetActiveWorkers(int n);
  void SetEnergy(double joules);                 // the job's, modelled
  void SetDownlinkMbps(int rank, double mbps);   // exported in bytes per second
  void AddReceived(int rank, int64_t bytes, int64_t rows);
  void AddSent(int rank, int64_t bytes, int64_t rows);
  void AddRejoin(int rank);
  // A push refused whole (RowAggregator::refusal() names why): never applied.
  void AddRefusedPush(int rank, const std::string& reason);
  // A push dropped unapplied, as sound but too old to use (a replaced
  // stream's, computed before a Welcome, a counted-out worker's first back,
  // one after the job ended): `reason` says which.
  void AddDroppedPush(int rank, const std::string& reason);
  void AddCheckpoint();

 private:
  struct Handles;
  std::unique_ptr<Handles> h_;
};

// An agent that serves a team (a coordinator, a pipeline head): the
// connections it refused for their TLS identity, labelled {trainingjob,
// reason} (pki::ReasonOf), every reason's series there from the start at 0.
class ConnectionMetrics {
 public:
  ConnectionMetrics(MetricsRegistry& registry, const std::string& job);
  ~ConnectionMetrics();
  void AddRefused(const std::string& reason);

 private:
  struct Handles;
  std::unique_ptr<Handles> h_;
};

// A pipeline head's metrics: per stage device {trainingjob, stage, worker},
// its compute and its bubbles (waiting in a step for a neighbour); and for
// the job, the activations and gradients the head relayed and the
// micro-batches in flight between the first stage's forward and its backward.
// Why a pipeline's stages changed: the stages' measured compute
// (imbalance), the planner's or a measured layout (replan), a group's
// micro-batches dealt anew by its devices' pace (shares), a lost stage's
// layers taken by a neighbour (stage_lost).
enum class RepartitionReason { kImbalance, kReplan, kShares, kStageLost };
inline constexpr RepartitionReason kRepartitionReasons[] = {RepartitionReason::kImbalance, RepartitionReason::kReplan,
                                                            RepartitionReason::kShares, RepartitionReason::kStageLost};

class PipelineMetrics {
 public:
  // `stage_of_rank[r]`: rank r's stage, or -1 for a device the plan leaves out.
  PipelineMetrics(MetricsRegistry& registry, const std::string& job, const std::vector<int>& stage_of_rank);
  ~PipelineMetrics();

  // A device's totals so far, at the stage it is now at; the counters grow
  // by what was added since, in series of that stage.
  void SetStageSeconds(int rank, int stage, double compute_s, double bubble_s);
  // Rank `rank`'s totals as a resumed job's checkpoint holds them: its series
  // count on from them, where the first step's totals had raised them, begun
  // at 0, by every earlier run's seconds in one scrape (found in review).
  void CountOnFrom(int rank, double compute_s, double bubble_s);
  void AddRelayedBytes(int64_t bytes);
  void SetInFlight(int micro_batches);
  // A step replayed without a lost device, and the micro-batches it ran again.
  void AddReplay(int micro_batches);
  // A device of a group lost mid-step, its `shares` of the step computed
  // again by another of its group, the rest of the pipeline going on.
  void AddCover(int shares);
  // A step that lost a device done at last: the seconds since the loss was seen.
  void AddRecovery(double seconds);
  // A replica of `stage` in whole at the head: its bytes, and its parts' time coming in.
  void AddReplica(int stage, int64_t bytes, double seconds);
  // A stage whose only device was lost, rebuilt on a neighbour from its
  // replica, and the steps of its layers' updates lost with the device:
  // those since that replica.
  void AddRestoredStage(int64_t steps_lost);
  // Layers moved between stages, or a group's micro-batches dealt anew, and
  // why (docs/metrics.md); each reason a series from the start, at 0.
  void AddRepartition(RepartitionReason reason);

 private:
  struct Handles;
  std::unique_ptr<Handles> h_;
  // Rank `rank`'s series at `stage`, counting on from the totals given.
  void SeriesAt(int rank, int stage, double compute_s, double bubble_s);
};

}  // namespace edgetrain::agent

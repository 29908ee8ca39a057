#include "agent/telemetry/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

namespace edgetrain::agent {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;

struct MetricsRegistry::Impl {
  prometheus::Registry registry;
};

MetricsRegistry::MetricsRegistry() : impl_(std::make_unique<Impl>()) {}
MetricsRegistry::~MetricsRegistry() = default;

std::string MetricsRegistry::Render() const {
  return prometheus::TextSerializer().Serialize(impl_->registry.Collect());
}

namespace {

// Families are registered once per registry and shared by every handle on it.
template <typename Builder>
auto& Family(Builder builder, const char* name, const char* help, prometheus::Registry& r) {
  return builder.Name(name).Help(help).Register(r);
}

constexpr double kBytesPerSecondPerMbps = 1e6 / 8;

const Histogram::BucketBoundaries& StalenessBounds() {
  static const Histogram::BucketBoundaries bounds = {0, 1, 2, 3, 4, 8, 16, 32, 64};
  return bounds;
}

// A counter fed with running totals: it grows by what each total added to the
// last one (never shrinks, as a counter must not).
class TotalCounter {
 public:
  // `from`: the total it counts on from, for a series that begins after it
  // (a device's series at a stage it moved to).
  explicit TotalCounter(Counter& counter, double from = 0) : counter_(counter), last_(from) {}
  void Set(double total) {
    std::lock_guard lock(mu_);
    if (total > last_) counter_.Increment(total - last_);
    last_ = std::max(last_, total);
  }
  double last() {
    std::lock_guard lock(mu_);
    return last_;
  }

 private:
  Counter& counter_;
  std::mutex mu_;
  double last_;
};

// One family for a worker's and a stage device's energy alike.
prometheus::Family<Counter>& EnergyFamily(prometheus::Registry& r) {
  return Family(BuildCounter(), "edgetrain_energy_joules_total",
                "Modelled energy used, by state (compute, communicate, idle)", r);
}

}  // namespace

struct WorkerMetrics::Handles {
  Gauge& uplink;
  Counter& sent_bytes;
  Counter& sent_rows;
  Counter& received_bytes;
  Counter& received_rows;
  Histogram& staleness;
  Histogram& iteration;
  Counter& stall;
  TotalCounter energy_compute;
  TotalCounter energy_communicate;
  TotalCounter energy_idle;
  Gauge& loss;
  Counter& samples;
  Counter& rejoins;
  TotalCounter stream_arrived;
  TotalCounter stream_dropped;
  Gauge& stream_backlog;
  Counter& stream_refused_files;
  Counter& data_wait;
  Counter& injected;
  prometheus::Family<Gauge>& push_encoding;
  prometheus::Family<Gauge>& topk_kept_norm;
  prometheus::Labels labels;
};

WorkerMetrics::WorkerMetrics(MetricsRegistry& registry, const std::string& job, int rank) {
  prometheus::Registry& r = registry.impl().registry;
  const prometheus::Labels l = {{"trainingjob", job}, {"worker", std::to_string(rank)}};
  auto with = [&](prometheus::Labels extra) {
    extra.insert(l.begin(), l.end());
    return extra;
  };
  auto& energy = EnergyFamily(r);
  h_.reset(new Handles{
      Family(BuildGauge(), "edgetrain_link_bandwidth_bytes_per_second",
             "Estimated link bandwidth (up: the worker's uplink; down: the coordinator's estimate of a worker's "
             "downlink)",
             r)
          .Add(with({{"direction", "up"}})),
      Family(BuildCounter(), "edgetrain_sent_bytes_total", "Bytes sent to the coordinator", r).Add(l),
      Family(BuildCounter(), "edgetrain_sent_rows_total", "Gradient rows sent", r).Add(l),
      Family(BuildCounter(), "edgetrain_received_bytes_total", "Bytes received from the coordinator", r).Add(l),
      Family(BuildCounter(), "edgetrain_received_rows_total", "Parameter rows received", r).Add(l),
      Family(BuildHistogram(), "edgetrain_row_staleness_iterations",
             "How many iterations stale each row was when used", r)
          .Add(l, StalenessBounds()),
      Family(BuildHistogram(), "edgetrain_iteration_seconds", "Wall time of an iteration, waiting included", r)
          // Up to a minute: a worker behind a wall for seconds is what the
          // p90 is watched for, and at 5 s it pegged there (a new user's trial).
          .Add(l, Histogram::BucketBoundaries{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      Family(BuildCounter(), "edgetrain_stall_seconds_total", "Time compute waited for rows the bound requires", r)
          .Add(l),
      TotalCounter(energy.Add(with({{"state", "compute"}}))),
      TotalCounter(energy.Add(with({{"state", "communicate"}}))),
      TotalCounter(energy.Add(with({{"state", "idle"}}))),
      Family(BuildGauge(), "edgetrain_loss", "The last step's training loss", r).Add(l),
      Family(BuildCounter(), "edgetrain_samples_total", "Training samples consumed", r).Add(l),
      Family(BuildCounter(), "edgetrain_rejoins_total", "Times this worker rejoined its team", r).Add(l),
      TotalCounter(Family(BuildCounter(), "edgetrain_stream_arrived_samples_total",
                          "Samples the worker's stream delivered", r)
                       .Add(l)),
      TotalCounter(Family(BuildCounter(), "edgetrain_stream_dropped_samples_total",
                          "Samples pushed out of the worker's full stream buffer, never trained on", r)
                       .Add(l)),
      Family(BuildGauge(), "edgetrain_stream_backlog_samples", "Samples in the worker's stream buffer", r).Add(l),
      Family(BuildCounter(), "edgetrain_stream_refused_files_total",
             "Files of the worker's stream folder left out: unreadable, or written to after they were read", r)
          .Add(l),
      Family(BuildCounter(), "edgetrain_data_wait_seconds_total",
             "Time compute waited for a batch's minimum of samples to arrive on the worker's stream", r)
          .Add(l),
      Family(BuildCounter(), "edgetrain_injected_samples_total",
             "Samples of labels the worker's part lacks, sent by the coordinator, that it trained on", r)
          .Add(l),
      Family(BuildGauge(), "edgetrain_push_encoding",
             "Adaptive compression: 1 for the encoding the worker's pushes use now (topk or int8), 0 for the other",
             r),
      Family(BuildGauge(), "edgetrain_topk_kept_norm_ratio",
             "Adaptive compression: the share of the worker's gradient norm top-k kept, last measured", r),
      l,
  });
}

WorkerMetrics::~WorkerMetrics() = default;
void WorkerMetrics::SetUplinkMbps(double mbps) { h_->uplink.Set(mbps * kBytesPerSecondPerMbps); }
void WorkerMetrics::AddSent(int64_t bytes, int64_t rows) {
  h_->sent_bytes.Increment(static_cast<double>(bytes));
  h_->sent_rows.Increment(static_cast<double>(rows));
}
void WorkerMetrics::AddReceived(int64_t bytes, int64_t rows) {
  h_->received_bytes.Increment(static_cast<double>(bytes));
  h_->received_rows.Increment(static_cast<double>(rows));
}
void WorkerMetrics::ObserveRowStaleness(int64_t iteration, std::span<const int64_t> clocks) {
  if (clocks.empty()) return;
  const auto& bounds = StalenessBounds();
  std::vector<double> buckets(bounds.size() + 1, 0.0);  // non-cumulative, one per bound and +Inf
  double sum = 0;
  for (int64_t c : clocks) {
    // A row the team has stepped past this worker's own iteration (others
    // ahead of it under rog and ssp, a worker just back) is not stale: 0. As
    // iteration - clock it went negative, and the histogram's _sum with it
    // (-424,030 over 69,495 rows after a rejoin, a trial's dashboard).
    const double v = static_cast<double>(std::max<int64_t>(0, iteration - c));
    buckets[std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin()] += 1;
    sum += v;
  }
  h_->staleness.ObserveMultiple(buckets, sum);
}
void WorkerMetrics::ObserveIteration(double seconds) { h_->iteration.Observe(seconds); }
void WorkerMetrics::AddStall(double seconds) { h_->stall.Increment(seconds); }
void WorkerMetrics::SetEnergy(EnergyState state, double joules) {
  switch (state) {
    case EnergyState::kCompute: h_->energy_compute.Set(joules); break;
    case EnergyState::kCommunicate: h_->energy_communicate.Set(joules); break;
    case EnergyState::kIdle: h_->energy_idle.Set(joules); break;
  }
}

struct DeviceEnergyMetrics::Handles {
  Counter& compute;
  Counter& communicate;
  Counter& idle;
};

DeviceEnergyMetrics::DeviceEnergyMetrics(MetricsRegistry& registry, const std::string& job, int rank) {
  auto& energy = EnergyFamily(registry.impl().registry);
  const std::string worker = std::to_string(rank);
  auto in = [&](const char* state) -> Counter& {
    return energy.Add({{"trainingjob", job}, {"worker", worker}, {"state", state}});
  };
  h_.reset(new Handles{in("compute"), in("communicate"), in("idle")});
}
DeviceEnergyMetrics::~DeviceEnergyMetrics() = default;
void DeviceEnergyMetrics::Add(EnergyState state, double joules) {
  if (!(joules > 0)) return;  // a counter only grows
  switch (state) {
    case EnergyState::kCompute: h_->compute.Increment(joules); break;
    case EnergyState::kCommunicate: h_->communicate.Increment(joules); break;
    case EnergyState::kIdle: h_->idle.Increment(joules); break;
  }
}

void WorkerMetrics::SetLoss(double loss) { h_->loss.Set(loss); }
void WorkerMetrics::AddSamples(int64_t samples) { h_->samples.Increment(static_cast<double>(samples)); }
void WorkerMetrics::AddRejoin() { h_->rejoins.Increment(); }
void WorkerMetrics::SetStream(int64_t arrived, int64_t dropped, int64_t backlog) {
  h_->stream_arrived.Set(static_cast<double>(arrived));
  h_->stream_dropped.Set(static_cast<double>(dropped));
  h_->stream_backlog.Set(static_cast<double>(backlog));
}
void WorkerMetrics::AddDataWait(double seconds) { h_->data_wait.Increment(seconds); }
void WorkerMetrics::AddRefusedStreamFile() { h_->stream_refused_files.Increment(); }
void WorkerMetrics::AddInjected(int64_t samples) { h_->injected.Increment(static_cast<double>(samples)); }
void WorkerMetrics::SetPushEncoding(bool topk, double topk_kept_norm) {
  // Set with each push: two label lookups there cost little beside encoding
  // the push itself.
  auto with = [&](const char* encoding) {
    prometheus::Labels labels = h_->labels;
    labels["encoding"] = encoding;
    return labels;
  };
  h_->push_encoding.Add(with("topk")).Set(topk ? 1 : 0);
  h_->push_encoding.Add(with("int8")).Set(topk ? 0 : 1);
  if (topk_kept_norm >= 0) h_->topk_kept_norm.Add(h_->labels).Set(topk_kept_norm);
}

struct ConnectionMetrics::Handles {
  prometheus::Family<Counter>& refused;
  std::string job;
};

ConnectionMetrics::ConnectionMetrics(MetricsRegistry& registry, const std::string& job) {
  h_.reset(new Handles{Family(BuildCounter(), "edgetrain_agent_refused_connections_total",
                              "Connections refused for their TLS identity, by why: no_certificate, other_job, "
                              "expired, not_yet_valid, untrusted",
                              registry.impl().registry),
                       job});
  for (const char* reason : {"no_certificate", "other_job", "expired", "not_yet_valid", "untrusted"}) {
    h_->refused.Add({{"trainingjob", job}, {"reason", reason}});
  }
}

ConnectionMetrics::~ConnectionMetrics() = default;

void ConnectionMetrics::AddRefused(const std::string& reason) {
  h_->refused.Add({{"trainingjob", h_->job}, {"reason", reason}}).Increment();
}

namespace {
// Why a coordinator refuses or drops a push (docs/metrics.md). Every worker's
// series of each is there from the start, at 0, as the refused connections'
// are: a documented counter absent from a healthy coordinator's /metrics read
// as one that is not exported, and `rate()` of a series that appears at its
// first event misses that event (a new user's trial).
constexpr const char* kRefusedPushReasons[] = {"future_iteration", "no_such_row", "row_twice", "undecodable",
                                               "not_finite",       "too_large",   "too_big"};
constexpr const char* kDroppedPushReasons[] = {"stale_stream", "stale_welcome", "counted_out", "job_over"};
}  // namespace

struct CoordinatorMetrics::Handles {
  // Added at the first evaluation: before it there is no accuracy, and a
  // series at 0 read as a model that knows nothing (a new user's trial).
  prometheus::Family<Gauge>& accuracy_family;
  Gauge* accuracy = nullptr;
  // Added at the first step, as accuracy is at the first evaluation: a loss
  // of 0 before it drew every run's loss falling to 0 at its start (a new
  // user's trial).
  prometheus::Family<Gauge>& loss_family;
  Gauge* loss = nullptr;
  // The job's totals over every run of it: added once the job's progress is
  // known, a resumed job's from its checkpoint's, so that a series starts
  // there. Added at 0, they read 0 until the checkpoint was read and then
  // jumped by the earlier runs' totals, which increase() and the Samples/s
  // panel counted as this run's (a new user's trial).
  prometheus::Family<Counter>& samples_family;
  std::unique_ptr<TotalCounter> samples;
  Gauge& active;
  prometheus::Family<Counter>& energy_family;
  std::unique_ptr<TotalCounter> energy;
  Counter& checkpoints;
  prometheus::Family<Counter>& refused;
  prometheus::Family<Counter>& dropped;
  std::string job;
  std::vector<Gauge*> downlink;
  std::vector<Counter*> received_bytes, received_rows, sent_bytes, sent_rows, rejoins;
};

CoordinatorMetrics::CoordinatorMetrics(MetricsRegistry& registry, const std::string& job, int workers,
                                       double energy_budget_joules, bool links) {
  prometheus::Registry& r = registry.impl().registry;
  const prometheus::Labels l = {{"trainingjob", job}};
  h_.reset(new Handles{
      Family(BuildGauge(), "edgetrain_job_accuracy",
             "Test accuracy of the job's model at its last evaluation (none before the first)", r),
      nullptr,
      Family(BuildGauge(), "edgetrain_job_loss", "The team's training loss, smoothed (none before the first step)", r),
      nullptr,
      Family(BuildCounter(), "edgetrain_job_samples_total",
             "Training samples the team has consumed, over every run of the job", r),
      nullptr,
      Family(BuildGauge(), "edgetrain_job_active_workers", "Workers counted in the staleness bound now", r).Add(l),
      Family(BuildCounter(), "edgetrain_job_energy_joules_total",
             "The job's modelled energy, all workers' devices, over every run of the job", r),
      nullptr,
      Family(BuildCounter(), "edgetrain_job_checkpoints_total", "Checkpoints written", r).Add(l),
      Family(BuildCounter(), "edgetrain_coordinator_refused_pushes_total",
             "Pushes refused whole and never applied, by why: future_iteration, no_such_row, row_twice, undecodable, "
             "not_finite, too_large, too_big",
             r),
      Family(BuildCounter(), "edgetrain_coordinator_dropped_pushes_total",
             "Pushes dropped unapplied as too old to use, by why: stale_stream, stale_welcome, counted_out, job_over",
             r),
      job, {}, {}, {}, {}, {}, {}});
  // A job of one (workers 0: no per-worker series) is its own worker.
  Family(BuildGauge(), "edgetrain_job_workers", "Workers the job's plan has", r).Add(l).Set(std::max(workers, 1));
  Family(BuildGauge(), "edgetrain_job_energy_budget_joules",
         "The job's spec.budget.energyJoules (0: no energy budget)", r)
      .Add(l)
      .Set(energy_budget_joules);
  auto& downlink = Family(BuildGauge(), "edgetrain_link_bandwidth_bytes_per_second",
                          "Estimated link bandwidth (up: the worker's uplink; down: the coordinator's estimate of a "
                          "worker's downlink)",
                          r);
  auto& rbytes = Family(BuildCounter(), "edgetrain_coordinator_received_bytes_total", "Bytes received from a worker", r);
  auto& rrows = Family(BuildCounter(), "edgetrain_coordinator_received_rows_total", "Gradient rows received from a worker", r);
  auto& sbytes = Family(BuildCounter(), "edgetrain_coordinator_sent_bytes_total", "Bytes sent to a worker", r);
  auto& srows = Family(BuildCounter(), "edgetrain_coordinator_sent_rows_total", "Parameter rows sent to a worker", r);
  auto& rejoins = Family(BuildCounter(), "edgetrain_job_rejoins_total", "Times a worker rejoined after being counted out or restarting", r);
  for (int w = 0; w < (links ? workers : 0); ++w) {
    prometheus::Labels lw = {{"trainingjob", job}, {"worker", std::to_string(w)}};
    prometheus::Labels down = lw;
    down["direction"] = "down";
    h_->downlink.push_back(&downlink.Add(down));
    h_->received_bytes.push_back(&rbytes.Add(lw));
    h_->received_rows.push_back(&rrows.Add(lw));
    h_->sent_bytes.push_back(&sbytes.Add(lw));
    h_->sent_rows.push_back(&srows.Add(lw));
    h_->rejoins.push_back(&rejoins.Add(lw));
    for (const char* reason : kRefusedPushReasons) {
      prometheus::Labels why = lw;
      why["reason"] = reason;
      h_->refused.Add(why);
    }
    for (const char* reason : kDroppedPushReasons) {
      prometheus::Labels why = lw;
      why["reason"] = reason;
      h_->dropped.Add(why);
    }
  }
}

CoordinatorMetrics::~CoordinatorMetrics() = default;
void CoordinatorMetrics::SetAccuracy(double accuracy) {
  if (!h_->accuracy) h_->accuracy = &h_->accuracy_family.Add({{"trainingjob", h_->job}});
  h_->accuracy->Set(accuracy);
}
void CoordinatorMetrics::SetLoss(double loss) {
  if (!h_->loss && loss <= 0) return;  // no step yet
  if (!h_->loss) h_->loss = &h_->loss_family.Add({{"trainingjob", h_->job}});
  h_->loss->Set(loss);
}
void CoordinatorMetrics::SetSamples(int64_t samples) {
  if (!h_->samples) h_->samples = std::make_unique<TotalCounter>(h_->samples_family.Add({{"trainingjob", h_->job}}));
  h_->samples->Set(static_cast<double>(samples));
}
void CoordinatorMetrics::SetActiveWorkers(int n) { h_->active.Set(n); }
void CoordinatorMetrics::SetEnergy(double joules) {
  if (!h_->energy) h_->energy = std::make_unique<TotalCounter>(h_->energy_family.Add({{"trainingjob", h_->job}}));
  h_->energy->Set(joules);
}
void CoordinatorMetrics::SetDownlinkMbps(int rank, double mbps) {
  h_->downlink[rank]->Set(mbps * kBytesPerSecondPerMbps);
}
void CoordinatorMetrics::AddReceived(int rank, int64_t bytes, int64_t rows) {
  h_->received_bytes[rank]->Increment(static_cast<double>(bytes));
  h_->received_rows[rank]->Increment(static_cast<double>(rows));
}
void CoordinatorMetrics::AddSent(int rank, int64_t bytes, int64_t rows) {
  h_->sent_bytes[rank]->Increment(static_cast<double>(bytes));
  h_->sent_rows[rank]->Increment(static_cast<double>(rows));
}
void CoordinatorMetrics::AddRejoin(int rank) { h_->rejoins[rank]->Increment(); }
void CoordinatorMetrics::AddRefusedPush(int rank, const std::string& reason) {
  h_->refused.Add({{"trainingjob", h_->job}, {"worker", std::to_string(rank)}, {"reason", reason}}).Increment();
}
void CoordinatorMetrics::AddDroppedPush(int rank, const std::string& reason) {
  h_->dropped.Add({{"trainingjob", h_->job}, {"worker", std::to_string(rank)}, {"reason", reason}}).Increment();
}
void CoordinatorMetrics::AddCheckpoint() { h_->checkpoints.Increment(); }

namespace {
// The `reason` label of edgetrain_pipeline_repartitions_total.
const char* ReasonLabel(RepartitionReason reason) {
  switch (reason) {
    case RepartitionReason::kImbalance: return "imbalance";
    case RepartitionReason::kReplan: return "replan";
    case RepartitionReason::kShares: return "shares";
    case RepartitionReason::kStageLost: return "stage_lost";
  }
  return "unknown";
}
}  // namespace

struct PipelineMetrics::Handles {
  std::vector<std::unique_ptr<TotalCounter>> compute, bubbles;  // by rank; null: no stage
  std::vector<int> stage_of;  // by rank: the stage its series are labelled with; -1: none
  Counter& relayed;
  Gauge& in_flight;
  Counter& replays;
  Counter& replayed_micro_batches;
  Counter& covered_shares;
  Counter& recovery;
  // By the stage the replica is of: a stage's replicas are all of one size.
  prometheus::Family<prometheus::Counter>& replicas;
  prometheus::Family<prometheus::Counter>& replica_bytes;
  prometheus::Family<prometheus::Counter>& replica_seconds;
  Counter& restored;
  Counter& steps_lost;
  prometheus::Family<prometheus::Counter>& repartitions;
  std::string job;
  prometheus::Registry* registry = nullptr;
  std::mutex mu;  // a device's series as its stage changes
};

PipelineMetrics::PipelineMetrics(MetricsRegistry& registry, const std::string& job,
                                 const std::vector<int>& stage_of_rank) {
  prometheus::Registry& r = registry.impl().registry;
  const prometheus::Labels l = {{"trainingjob", job}};
  h_.reset(new Handles{{}, {}, {},
                       Family(BuildCounter(), "edgetrain_pipeline_relayed_bytes_total",
                              "Activations and their gradients the pipeline's head passed between stages", r)
                           .Add(l),
                       Family(BuildGauge(), "edgetrain_pipeline_micro_batches_in_flight",
                              "Micro-batches between the first stage's forward and its backward", r)
                           .Add(l),
                       Family(BuildCounter(), "edgetrain_pipeline_replays_total",
                              "Steps run again on the survivors of a device lost mid-step, or a lost device's shares of one "
                              "computed again by another of its group", r)
                           .Add(l),
                       Family(BuildCounter(), "edgetrain_pipeline_replayed_micro_batches_total",
                              "Micro-batches run again by replays", r)
                           .Add(l),
                       Family(BuildCounter(), "edgetrain_pipeline_covered_shares_total",
                              "Shares of micro-batches a device lost mid-step was dealt, computed again by "
                              "another of its group while the rest of the pipeline went on", r)
                           .Add(l),
                       Family(BuildCounter(), "edgetrain_pipeline_recovery_seconds_total",
                              "Seconds from a device's loss seen to the replayed step done", r)
                           .Add(l),
                       Family(BuildCounter(), "edgetrain_pipeline_replicas_total",
                              "Stage replicas (weights and optimizer state) the head received", r),
                       Family(BuildCounter(), "edgetrain_pipeline_replica_bytes_total",
                              "Bytes of the stage replicas the head received", r),
                       Family(BuildCounter(), "edgetrain_pipeline_replica_seconds_total",
                              "Seconds the stage replicas took to come in, from their first part to their last", r),
                       Family(BuildCounter(), "edgetrain_pipeline_restored_stages_total",
                              "Stages whose only device was lost, rebuilt on a neighbour from their replica", r)
                           .Add(l),
                       Family(BuildCounter(), "edgetrain_pipeline_steps_lost_total",
                              "Steps of a rebuilt stage's updates lost with its device: those since its replica", r)
                           .Add(l),
                       Family(BuildCounter(), "edgetrain_pipeline_repartitions_total",
                              "Times the stages changed (layers moved, or a group's micro-batches dealt anew), by reason",
                              r),
                       job, &r, {}});
  // Every reason from the start, at 0: a family with no series until its
  // first repartition left dashboards and alerts with no data (a new user's trial).
  for (RepartitionReason reason : kRepartitionReasons) {
    h_->repartitions.Add({{"trainingjob", job}, {"reason", ReasonLabel(reason)}});
  }
  h_->compute.resize(stage_of_rank.size());
  h_->bubbles.resize(stage_of_rank.size());
  h_->stage_of.assign(stage_of_rank.size(), -1);
  for (size_t rank = 0; rank < stage_of_rank.size(); ++rank) {
    if (stage_of_rank[rank] >= 0) SeriesAt(static_cast<int>(rank), stage_of_rank[rank], 0, 0);
  }
}

void PipelineMetrics::SeriesAt(int rank, int stage, double compute_s, double bubble_s) {
  prometheus::Registry& r = *h_->registry;
  const prometheus::Labels ls = {
      {"trainingjob", h_->job}, {"stage", std::to_string(stage)}, {"worker", std::to_string(rank)}};
  const auto at = static_cast<size_t>(rank);
  h_->compute[at] = std::make_unique<TotalCounter>(
      Family(BuildCounter(), "edgetrain_stage_compute_seconds_total", "A stage device's forward and backward passes", r)
          .Add(ls),
      compute_s);
  h_->bubbles[at] = std::make_unique<TotalCounter>(
      Family(BuildCounter(), "edgetrain_stage_bubble_seconds_total",
             "A stage device's waits in a step for a neighbour's micro-batch, or for its group's summed gradient",
             r)
          .Add(ls),
      bubble_s);
  h_->stage_of[at] = stage;
}

PipelineMetrics::~PipelineMetrics() = default;

void PipelineMetrics::CountOnFrom(int rank, double compute_s, double bubble_s) {
  if (rank < 0 || static_cast<size_t>(rank) >= h_->compute.size()) return;
  std::lock_guard lock(h_->mu);
  const int stage = h_->stage_of[static_cast<size_t>(rank)];
  if (stage >= 0) SeriesAt(rank, stage, compute_s, bubble_s);
}

void PipelineMetrics::SetStageSeconds(int rank, int stage, double compute_s, double bubble_s) {
  if (rank < 0 || static_cast<size_t>(rank) >= h_->compute.size() || stage < 0) return;
  std::lock_guard lock(h_->mu);
  // A device at another stage than its series say (its stage merged into a
  // neighbour's, or layers moved): its seconds from now on are a series of
  // that stage's, and the old one stays where it ended (it had grown on
  // under the stage the device left: a new user's trial).
  if (h_->stage_of[static_cast<size_t>(rank)] != stage) {
    // From where the old series ended: the seconds since are the new stage's.
    SeriesAt(rank, stage, h_->compute[rank] ? h_->compute[rank]->last() : 0,
             h_->bubbles[rank] ? h_->bubbles[rank]->last() : 0);
  }
  h_->compute[rank]->Set(compute_s);
  h_->bubbles[rank]->Set(bubble_s);
}
void PipelineMetrics::AddRelayedBytes(int64_t bytes) { h_->relayed.Increment(static_cast<double>(bytes)); }
void PipelineMetrics::SetInFlight(int micro_batches) { h_->in_flight.Set(micro_batches); }
void PipelineMetrics::AddReplay(int micro_batches) {
  h_->replays.Increment();
  h_->replayed_micro_batches.Increment(micro_batches);
}
void PipelineMetrics::AddCover(int shares) {
  h_->replays.Increment();
  h_->covered_shares.Increment(shares);
}
void PipelineMetrics::AddRecovery(double seconds) { h_->recovery.Increment(seconds); }
void PipelineMetrics::AddReplica(int stage, int64_t bytes, double seconds) {
  const prometheus::Labels ls = {{"trainingjob", h_->job}, {"stage", std::to_string(stage)}};
  h_->replicas.Add(ls).Increment();
  h_->replica_bytes.Add(ls).Increment(static_cast<double>(bytes));
  h_->replica_seconds.Add(ls).Increment(seconds);
}
void PipelineMetrics::AddRestoredStage(int64_t steps_lost) {
  h_->restored.Increment();
  h_->steps_lost.Increment(static_cast<double>(steps_lost));
}
void PipelineMetrics::AddRepartition(RepartitionReason reason) {
  h_->repartitions.Add({{"trainingjob", h_->job}, {"reason", ReasonLabel(reason)}}).Increment();
}

}  // namespace edgetrain::agent

#pragma once
// The agent's Prometheus metrics (names in docs/metrics.md, prefix edgetrain_).
// Handles are bound once, when a worker or coordinator is set up; the training
// loop only adds and sets through them — nothing is looked up by label on the hot
// path. prometheus-cpp stays behind this header.

#include <cstdint>
#include <memory>
#include <string>

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

// One worker's metrics, labelled {job, worker}.
class WorkerMetrics {
 public:
  WorkerMetrics(MetricsRegistry& registry, const std::string& job, int rank);
  ~WorkerMetrics();

  void SetUplinkMbps(double mbps);
  void AddSent(int64_t bytes, int64_t rows);
  void AddReceived(int64_t bytes, int64_t rows);
  void ObserveRowStaleness(int64_t iterations);  // per row, each iteration
  void ObserveIteration(double seconds);
  void AddStall(double seconds);
  // Sets the modelled joules so far in `state` (the meter keeps the running total).
  void SetEnergy(EnergyState state, double joules);
  void SetLoss(double loss);
  void AddSamples(int64_t samples);
  void AddRejoin();

 private:
  struct Handles;
  std::unique_ptr<Handles> h_;
};

// The coordinator's metrics, labelled {job} and, per worker, {job, worker}.
class CoordinatorMetrics {
 public:
  CoordinatorMetrics(MetricsRegistry& registry, const std::string& job, int workers);
  ~CoordinatorMetrics();

  void SetAccuracy(double accuracy);
  void SetLoss(double loss);
  void SetSamples(int64_t samples);
  void SetActiveWorkers(int n);
  void SetEnergy(double joules);                 // the job's, modelled
  void SetDownlinkMbps(int rank, double mbps);
  void AddReceived(int rank, int64_t bytes, int64_t rows);
  void AddSent(int rank, int64_t bytes, int64_t rows);
  void AddRejoin(int rank);
  void AddCheckpoint();

 private:
  struct Handles;
  std::unique_ptr<Handles> h_;
};

}  // namespace edgetrain::agent

#pragma once
// A job of one: the whole job trained in this process, a step per Advance. It
// steps with the same row optimizer a team's coordinator does
// (core/row_optimizer.h), so a job of one and a team of one train alike and
// checkpoint alike.

#include <functional>
#include <random>
#include <vector>

#include "agent/data/dataset.h"
#include "agent/emulated_device.h"
#include "agent/torch/trainer.h"
#include "agent/training_engine.h"
#include "core/clock.h"
#include "core/batch_order.h"
#include "core/cluster_profile.h"
#include "core/energy_model.h"
#include "core/job_spec.h"
#include "core/row_layout.h"
#include "core/row_optimizer.h"

namespace edgetrain::agent {

struct SoloDevice {
  double slowdown = 1;  // an emulated slower device: each step takes this many times as long
  PowerProfile power;   // for the energy model (docs/energy.md)
  // What a step is costed on for the slowdown (agent/emulated_device.h); none: the clock.
  std::function<double()> thread_cpu_seconds;
};

class SoloEngine final : public TrainingEngine {
 public:
  // `samples`: the training samples to use (a shard); empty: all of them.
  SoloEngine(const JobSpec& spec, Trainer& trainer, const TrainTestSplit& data, std::vector<int64_t> samples,
             SoloDevice device, Clock& clock);

  int64_t SamplesPerEpoch() const override { return batches_.SamplesPerEpoch(); }
  Status Restore(const JobCheckpoint& checkpoint) override;
  Status Start(const std::atomic<bool>&) override { return Status::Ok(); }
  Status Advance() override;
  JobProgress Progress() override;
  StatusOr<double> Evaluate() override;
  int64_t TestSamples() const override { return data_.test.size(); }
  void Snapshot(JobCheckpoint& into) override;
  Status Finish(FinalModel) override { return Status::Ok(); }  // nothing trains once the driver stops advancing
  Status SaveModel(const std::string& path) override { return trainer_.SaveModel(path); }

 private:
  const JobSpec& spec_;
  Trainer& trainer_;
  const TrainTestSplit& data_;
  const SoloDevice device_;
  Clock& clock_;
  EmulatedDevice emulated_;
  const RowLayout layout_;
  RowOptimizer optimizer_;
  BatchOrder batches_;
  // Allocated once; each step gathers its samples into these.
  std::vector<float> x_;
  std::vector<int64_t> y_;
  std::vector<float> gradient_;
  EnergyMeter energy_;
  int64_t iteration_ = 0;
  int64_t samples_ = 0;
  double smoothed_loss_ = -1;
  double energy_before_j_ = 0;  // modelled, in the runs it resumed from
};

}  // namespace edgetrain::agent

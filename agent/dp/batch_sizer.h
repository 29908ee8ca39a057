#pragma once
// The coordinator's side of compute-weighted batches (spec.data.computeWeighted,
// DLion; core/batch_sizing.h deals them): it hears from each worker's pushes
// how long a sample takes it, and tells each worker its batch in its updates.

#include <cstdint>
#include <mutex>
#include <vector>

#include "core/job_plan.h"
#include "edgetrain/v1/training.pb.h"

namespace edgetrain::agent {

class BatchSizer {
 public:
  explicit BatchSizer(const JobPlan& plan);

  // Worker `w`'s last push: its compute seconds a sample, smoothed.
  void Heard(int w, double sample_seconds);
  // Worker `w`'s batch, into `update`.
  void Fill(int w, v1::Update& update);

 private:
  const int64_t batch_;
  std::mutex mu_;
  std::vector<double> sample_seconds_;  // guarded by mu_
};

}  // namespace edgetrain::agent

#pragma once
// The coordinator's side of compute-weighted batches (spec.data.computeWeighted,
// DLion; core/batch_sizing.h deals them): it hears from each worker's pushes
// what a step costs it, and tells each worker its batch in its updates.

#include <cstdint>
#include <mutex>
#include <vector>

#include "core/job_plan.h"
#include "core/step_time_model.h"
#include "edgetrain/v1/training.pb.h"

namespace edgetrain::agent {

class BatchSizer {
 public:
  explicit BatchSizer(const JobPlan& plan);

  // Worker `w`'s last push: its step's fixed and per-sample compute seconds.
  void Heard(int w, const StepTime& cost);
  // Worker `w`'s batch, into `update`.
  void Fill(int w, v1::Update& update);

 private:
  const int64_t batch_;
  std::mutex mu_;
  std::vector<StepTime> costs_;  // guarded by mu_
};

}  // namespace edgetrain::agent

#include "agent/dp/batch_sizer.h"

#include "core/batch_sizing.h"

namespace edgetrain::agent {

BatchSizer::BatchSizer(const JobPlan& plan)
    : batch_(plan.spec.data.batch_size),
      sample_seconds_(static_cast<size_t>(plan.spec.parallelism.workers), 0.0) {}

void BatchSizer::Heard(int w, double sample_seconds) {
  std::lock_guard lock(mu_);
  if (w >= 0 && static_cast<size_t>(w) < sample_seconds_.size() && sample_seconds > 0) {
    sample_seconds_[w] = sample_seconds;
  }
}

void BatchSizer::Fill(int w, v1::Update& update) {
  std::lock_guard lock(mu_);
  if (w < 0 || static_cast<size_t>(w) >= sample_seconds_.size()) return;
  const std::vector<int64_t> batches = ComputeWeightedBatches(sample_seconds_, batch_, kMostWeightedBatches * batch_);
  update.set_batch_size(static_cast<int32_t>(batches[w]));
}

}  // namespace edgetrain::agent

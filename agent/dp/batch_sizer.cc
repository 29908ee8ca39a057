#include "agent/dp/batch_sizer.h"

#include "core/batch_sizing.h"

namespace edgetrain::agent {

BatchSizer::BatchSizer(const JobPlan& plan)
    : batch_(plan.spec.data.batch_size), costs_(static_cast<size_t>(plan.spec.parallelism.workers)) {}

void BatchSizer::Heard(int w, const StepTime& cost) {
  std::lock_guard lock(mu_);
  if (w >= 0 && static_cast<size_t>(w) < costs_.size() && cost.sample_seconds > 0) costs_[w] = cost;
}

void BatchSizer::Fill(int w, v1::Update& update) {
  std::lock_guard lock(mu_);
  if (w < 0 || static_cast<size_t>(w) >= costs_.size()) return;
  const std::vector<int64_t> batches = ComputeWeightedBatches(costs_, batch_, kMostWeightedBatches * batch_);
  update.set_batch_size(static_cast<int32_t>(batches[w]));
}

}  // namespace edgetrain::agent

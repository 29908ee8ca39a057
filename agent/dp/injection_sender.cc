#include "agent/dp/injection_sender.h"

#include <algorithm>

#include "core/partition.h"

namespace edgetrain::agent {

InjectionSender::InjectionSender(const JobPlan& plan, const Dataset& train)
    : train_(train),
      pool_(train.labels, train.info.classes,
            PartitionSamples(train.labels, train.info.classes, plan.spec.parallelism.workers, plan.spec.data.partition,
                             plan.spec.seed),
            plan.spec.data.injection.value_or(InjectionSpec{}), plan.spec.seed),
      wanted_(static_cast<size_t>(plan.spec.parallelism.workers), 0) {}

void InjectionSender::Wanted(int w, int64_t samples) {
  std::lock_guard lock(mu_);
  if (w >= 0 && static_cast<size_t>(w) < wanted_.size()) wanted_[w] = std::clamp<int64_t>(samples, 0, kMostPerUpdate);
}

bool InjectionSender::Fill(int w, v1::Update& update) {
  std::vector<int64_t> samples;
  {
    std::lock_guard lock(mu_);
    if (w < 0 || static_cast<size_t>(w) >= wanted_.size() || wanted_[w] == 0) return false;
    samples = pool_.Next(w, std::exchange(wanted_[w], 0));
  }
  if (samples.empty()) return false;
  v1::InjectedSamples* injected = update.mutable_injected();
  const auto size = static_cast<size_t>(train_.SampleSize());
  for (int64_t i : samples) {
    if (!train_.pixels.empty()) {
      injected->mutable_pixels()->append(reinterpret_cast<const char*>(train_.pixels.data() + i * size), size);
    } else {
      injected->mutable_features()->append(reinterpret_cast<const char*>(train_.features.data() + i * size),
                                           size * sizeof(float));
    }
    injected->add_labels(train_.labels[static_cast<size_t>(i)]);
  }
  injected->set_pixel_scale(train_.pixel_scale);
  return true;
}

}  // namespace edgetrain::agent

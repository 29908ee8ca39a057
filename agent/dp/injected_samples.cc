#include "agent/dp/injected_samples.h"

#include <algorithm>
#include <cstring>

namespace edgetrain::agent {

InjectedSamples::InjectedSamples(const InjectionSpec& spec, int64_t sample_size, int classes, int64_t batch)
    : spec_(spec), sample_size_(sample_size), classes_(classes),
      hold_(2 * InjectedPerBatch(batch, spec.batch_share) + 1) {}

Status InjectedSamples::Keep(const v1::InjectedSamples& sent) {
  const auto size = static_cast<size_t>(sample_size_);
  const auto count = static_cast<size_t>(sent.labels_size());
  const bool pixels = !sent.pixels().empty();
  const size_t bytes = pixels ? sent.pixels().size() : sent.features().size();
  if (bytes != count * size * (pixels ? 1 : sizeof(float))) {
    return InvalidArgumentError("injected samples of " + std::to_string(bytes) + " bytes for " + std::to_string(count) +
                                " labels are no samples of this data set");
  }
  for (size_t k = 0; k < count; ++k) {
    const int64_t label = sent.labels(static_cast<int>(k));
    if (label < 0 || label >= classes_) continue;
    Sample& sample = kept_.emplace_back();
    sample.label = label;
    sample.features.resize(size);
    if (pixels) {
      for (size_t f = 0; f < size; ++f) {
        sample.features[f] = static_cast<float>(static_cast<uint8_t>(sent.pixels()[k * size + f])) * sent.pixel_scale();
      }
    } else {
      std::memcpy(sample.features.data(), sent.features().data() + k * size * sizeof(float), size * sizeof(float));
    }
  }
  while (static_cast<int64_t>(kept_.size()) > 2 * hold_) kept_.pop_front();
  return Status::Ok();
}

int64_t InjectedSamples::TopUp(int64_t n, float* features, int64_t* labels) {
  const int64_t m = std::min(InjectedPerBatch(n, spec_.batch_share), static_cast<int64_t>(kept_.size()));
  for (int64_t k = 0; k < m; ++k) {
    const Sample& sample = kept_.front();
    std::copy(sample.features.begin(), sample.features.end(), features + (n + k) * sample_size_);
    labels[n + k] = sample.label;
    kept_.pop_front();
  }
  used_ += m;
  return m;
}

int64_t InjectedSamples::Wanted() const { return std::max<int64_t>(0, hold_ - static_cast<int64_t>(kept_.size())); }

}  // namespace edgetrain::agent

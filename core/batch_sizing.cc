#include "core/batch_sizing.h"

#include <algorithm>

#include "core/batch_order.h"

namespace edgetrain {

std::vector<int64_t> ComputeWeightedBatches(std::span<const double> seconds_per_sample, int64_t batch, int64_t most) {
  std::vector<int64_t> batches(seconds_per_sample.size(), batch);
  std::vector<size_t> measured;
  std::vector<double> speeds;
  for (size_t w = 0; w < seconds_per_sample.size(); ++w) {
    if (seconds_per_sample[w] <= 0) continue;
    measured.push_back(w);
    speeds.push_back(1.0 / seconds_per_sample[w]);
  }
  if (measured.empty()) return batches;
  const std::vector<int64_t> shares = ShareOut(batch * static_cast<int64_t>(measured.size()), speeds);
  for (size_t i = 0; i < measured.size(); ++i) batches[measured[i]] = std::clamp<int64_t>(shares[i], 1, most);
  return batches;
}

}  // namespace edgetrain

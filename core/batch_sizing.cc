#include "core/batch_sizing.h"

#include <algorithm>

#include "core/batch_order.h"

namespace edgetrain {

std::vector<int64_t> ComputeWeightedBatches(std::span<const StepTime> costs, int64_t batch, int64_t most) {
  std::vector<int64_t> batches(costs.size(), batch);
  std::vector<size_t> measured;
  for (size_t w = 0; w < costs.size(); ++w) {
    if (costs[w].sample_seconds > 0) measured.push_back(w);
  }
  if (measured.empty()) return batches;
  const double total = static_cast<double>(batch) * static_cast<double>(measured.size());
  // Equal step times T: n_w = (T - fixed_w) / sample_w, summing to the total,
  // so T = (total + sum fixed_w / sample_w) / sum 1 / sample_w. A batch that
  // would fall below 1 or above `most` is held there and the others share
  // what is left, until none is out of bounds.
  std::vector<double> share(measured.size(), 0);
  std::vector<bool> held(measured.size(), false);
  std::vector<bool> at_one(measured.size(), false);  // held: even one sample outlasts the round
  for (size_t round = 0; round <= measured.size(); ++round) {
    double left = total, inverse = 0, offset = 0;
    for (size_t i = 0; i < measured.size(); ++i) {
      const StepTime& c = costs[measured[i]];
      if (held[i]) {
        left -= share[i];
      } else {
        inverse += 1 / c.sample_seconds;
        offset += c.fixed_seconds / c.sample_seconds;
      }
    }
    if (inverse <= 0) break;
    const double step = (left + offset) / inverse;
    bool moved = false;
    for (size_t i = 0; i < measured.size(); ++i) {
      if (held[i]) continue;
      const StepTime& c = costs[measured[i]];
      share[i] = (step - c.fixed_seconds) / c.sample_seconds;
      const double bounded = std::clamp(share[i], 1.0, static_cast<double>(most));
      if (bounded != share[i]) {
        at_one[i] = share[i] < 1;
        share[i] = bounded;
        held[i] = moved = true;
      }
    }
    if (!moved) break;
  }
  // Whole samples: the total dealt by the largest remainders of the shares.
  double dealt = 0;
  for (double s : share) dealt += s;
  const std::vector<int64_t> whole = ShareOut(static_cast<int64_t>(dealt + 0.5), share);
  for (size_t i = 0; i < measured.size(); ++i) batches[measured[i]] = std::clamp<int64_t>(whole[i], 1, most);
  // A device whose step at one sample outlasts the others' holds every round
  // anyway: the others fill that time rather than idle in it (DLion's aim),
  // each up to `most`. The aggregate batch grows, and with it the step the
  // team takes (each gradient counts by its samples).
  double round = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    if (at_one[i]) round = std::max(round, costs[measured[i]].fixed_seconds + costs[measured[i]].sample_seconds);
  }
  for (size_t i = 0; i < measured.size() && round > 0; ++i) {
    const StepTime& c = costs[measured[i]];
    const double fits = (round - c.fixed_seconds) / c.sample_seconds;
    int64_t& b = batches[measured[i]];
    b = std::clamp<int64_t>(std::max(b, static_cast<int64_t>(fits)), 1, most);
  }
  return batches;
}

}  // namespace edgetrain

#include "core/partition.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace edgetrain {

std::vector<std::vector<int64_t>> PartitionSamples(std::span<const int64_t> labels, int classes, int workers,
                                                   const PartitionSpec& spec, uint64_t seed) {
  std::vector<std::vector<int64_t>> parts(static_cast<size_t>(workers));
  std::mt19937_64 rng(seed);
  if (spec.kind == PartitionKind::kIid || workers == 1) {
    std::vector<int64_t> order(labels.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < order.size(); ++i) parts[i % static_cast<size_t>(workers)].push_back(order[i]);
    return parts;
  }
  std::vector<std::vector<int64_t>> by_class(static_cast<size_t>(classes));
  for (size_t i = 0; i < labels.size(); ++i) by_class[static_cast<size_t>(labels[i])].push_back(static_cast<int64_t>(i));
  std::gamma_distribution<double> gamma(spec.alpha.value_or(1.0), 1.0);
  for (auto& members : by_class) {
    std::shuffle(members.begin(), members.end(), rng);
    // Dirichlet(alpha) shares as normalised Gamma(alpha, 1) draws.
    std::vector<double> share(static_cast<size_t>(workers));
    double total = 0;
    for (double& s : share) total += (s = gamma(rng));
    size_t given = 0;
    double cumulative = 0;
    for (int w = 0; w < workers; ++w) {
      cumulative += total > 0 ? share[w] / total : 1.0 / workers;
      size_t until = w + 1 == workers ? members.size()
                                      : std::min(members.size(), static_cast<size_t>(cumulative * static_cast<double>(members.size()) + 0.5));
      for (; given < until; ++given) parts[w].push_back(members[given]);
    }
  }
  // A worker left empty by the draw takes one sample from the largest part.
  for (auto& part : parts) {
    if (!part.empty()) continue;
    auto largest = std::max_element(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
    part.push_back(largest->back());
    largest->pop_back();
  }
  for (auto& part : parts) std::shuffle(part.begin(), part.end(), rng);
  return parts;
}

}  // namespace edgetrain

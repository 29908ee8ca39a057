#include "core/injection.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/partition.h"

namespace edgetrain {

std::vector<int> InjectedLabels(std::span<const int64_t> histogram, double label_share, uint64_t seed) {
  int64_t total = 0;
  for (int64_t n : histogram) total += n;
  std::vector<int> lacking;
  for (size_t c = 0; c < histogram.size(); ++c) {
    // Below half the even share: 2 * n * labels < total.
    if (2 * histogram[c] * static_cast<int64_t>(histogram.size()) < total) lacking.push_back(static_cast<int>(c));
  }
  if (lacking.empty()) return {};
  const auto k = std::clamp<size_t>(static_cast<size_t>(std::ceil(label_share * static_cast<double>(lacking.size()))), 1,
                                    lacking.size());
  std::mt19937_64 rng(seed);
  std::shuffle(lacking.begin(), lacking.end(), rng);
  lacking.resize(k);
  std::sort(lacking.begin(), lacking.end());
  return lacking;
}

int64_t InjectedPerBatch(int64_t n, double batch_share) {
  return static_cast<int64_t>(std::llround(batch_share * static_cast<double>(n)));
}

InjectionPool::InjectionPool(std::span<const int64_t> labels, int classes,
                             const std::vector<std::vector<int64_t>>& parts, const InjectionSpec& spec, uint64_t seed)
    : rng_(seed) {
  std::vector<std::vector<int64_t>> by_class(static_cast<size_t>(classes));
  for (size_t i = 0; i < labels.size(); ++i) by_class[static_cast<size_t>(labels[i])].push_back(static_cast<int64_t>(i));
  for (size_t w = 0; w < parts.size(); ++w) {
    Worker worker;
    worker.labels = InjectedLabels(LabelHistogram(parts[w], labels, classes), spec.label_share, seed * 131 + w);
    for (int c : worker.labels) worker.pool.insert(worker.pool.end(), by_class[c].begin(), by_class[c].end());
    std::shuffle(worker.pool.begin(), worker.pool.end(), rng_);
    workers_.push_back(std::move(worker));
  }
}

std::vector<int64_t> InjectionPool::Next(int w, int64_t k) {
  Worker& worker = workers_[static_cast<size_t>(w)];
  std::vector<int64_t> out;
  if (worker.pool.empty()) return out;
  for (int64_t i = 0; i < k; ++i) {
    if (worker.cursor == worker.pool.size()) {
      std::shuffle(worker.pool.begin(), worker.pool.end(), rng_);
      worker.cursor = 0;
    }
    out.push_back(worker.pool[worker.cursor++]);
  }
  return out;
}

}  // namespace edgetrain

#pragma once
// Data injection (ScaDLES): a worker on a skewed partition trains, on top of
// each batch, on a share of samples from labels it does not see. The
// coordinator keeps the pool they come from and sends them to the worker
// with its updates, over the worker's downlink like any other bytes
// (agent/dp/coordinator_service.cc); which labels, and which samples, is
// decided here.

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "core/job_spec.h"

namespace edgetrain {

// The labels a worker whose part holds `histogram` (LabelHistogram) is sent
// samples of: a share `label_share` of those its part lacks (at least one
// when it lacks any), chosen by `seed`, in increasing order. A part lacks a
// label it holds less than half its even share of (1 / labels of its
// samples): none of it under a `labels` partition, a few stray samples
// under a skewed Dirichlet one.
std::vector<int> InjectedLabels(std::span<const int64_t> histogram, double label_share, uint64_t seed);

// The samples injected into a batch of n: `batch_share` of it, rounded (so
// that a small batch may get none).
int64_t InjectedPerBatch(int64_t n, double batch_share);

// Every worker's pool: all the training samples of its injected labels,
// dealt out in a seeded order, again and again.
class InjectionPool {
 public:
  InjectionPool(std::span<const int64_t> labels, int classes, const std::vector<std::vector<int64_t>>& parts,
                const InjectionSpec& spec, uint64_t seed);

  // The next `k` samples for worker `w` (indices into the training set);
  // none when it lacks no label.
  std::vector<int64_t> Next(int w, int64_t k);
  const std::vector<int>& labels(int w) const { return workers_[static_cast<size_t>(w)].labels; }
  int workers() const { return static_cast<int>(workers_.size()); }

 private:
  struct Worker {
    std::vector<int> labels;
    std::vector<int64_t> pool;
    size_t cursor = 0;
  };
  std::vector<Worker> workers_;
  std::mt19937_64 rng_;
};

}  // namespace edgetrain

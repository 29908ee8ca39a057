#pragma once
// How the training set is split among workers; each trains only on its own part.
// Deterministic by seed, so every agent computes the same split on its own.

#include <cstdint>
#include <span>
#include <vector>

#include "core/job_spec.h"

namespace edgetrain {

// The sample indices of each of `workers` parts. iid: a seeded shuffle dealt
// round-robin. dirichlet: for each class, shares drawn from Dirichlet(alpha)
// over the workers (smaller alpha, more skewed label mixes), as in the non-IID
// federated-learning literature; every worker gets at least one sample.
std::vector<std::vector<int64_t>> PartitionSamples(std::span<const int64_t> labels, int classes, int workers,
                                                   const PartitionSpec& spec, uint64_t seed);

}  // namespace edgetrain

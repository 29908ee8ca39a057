#pragma once
// How the training set is split among workers; each trains only on its own part.
// Deterministic by seed, so every agent computes the same split on its own.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/job_spec.h"

namespace edgetrain {

// The sample indices of each of `workers` parts. iid: a seeded shuffle dealt
// round-robin. dirichlet: for each class, shares drawn from Dirichlet(alpha)
// over the workers (smaller alpha, more skewed label mixes), as in the non-IID
// federated-learning literature. labels: each worker sees k labels, taken in
// turn from the classes in a seeded order (worker w the k after worker w-1's,
// wrapping), and each label's samples are dealt evenly among the workers that
// see it: ScaDLES's skewed streams, one label per device at k = 1. With fewer
// than `classes` labels dealt in all some label is seen by no worker, and its
// samples are in no part. Every worker gets at least one sample, given as many
// samples as workers (the agent refuses a team with fewer).
std::vector<std::vector<int64_t>> PartitionSamples(std::span<const int64_t> labels, int classes, int workers,
                                                   const PartitionSpec& spec, uint64_t seed);

// When a `labels` partition deals fewer labels in all than there are classes
// (workers x labelsPerWorker < classes) and nothing injects the others: which
// part of the labels the job never trains on, for a warning before it runs;
// else empty. (A new user's team of 2 with 4 labels each never trained on 2
// of 10, and only `edgetrain partition` said so.)
std::string UnseenLabelsWarning(const DataSpec& data, int classes, int workers);

// When a skewed partition (dirichlet, labels) leaves some worker fewer
// samples than a batch of `batch_size`: which workers and how few, for a
// warning; else empty. An even split's parts are warned of before a run
// (BatchOverShareWarning); a skewed one's are known only from the labels (a
// new user's Dirichlet 0.01 gave a worker 1 sample, unsaid, and it trained
// 3,392 batches of it).
std::string SmallPartsWarning(const std::vector<std::vector<int64_t>>& parts, const PartitionSpec& spec,
                              int batch_size);

// When the training set itself holds no sample of some of the `classes`
// labels: which, for a warning (the model never learns them); else empty.
// A user's 3 classes in a file of labels 0 and 1 trained to 0.63 unsaid,
// where a partition's unseen labels were warned of.
std::string LabelsWithoutSamplesWarning(std::span<const int64_t> labels, int classes);

// Why a data-parallel team of `workers` cannot train on `samples` training
// samples, each worker's part holding one at least; empty when it can (or
// for one worker). A pipeline's devices share every batch, and a folder's
// stream has no fixed set: neither is asked. Said by the agent that refuses
// such a team and by `edgetrain partition` alike.
std::string TeamShortOfSamples(int64_t samples, int workers);

// How many samples of each label a part holds: [label] -> count.
std::vector<int64_t> LabelHistogram(std::span<const int64_t> part, std::span<const int64_t> labels, int classes);

}  // namespace edgetrain

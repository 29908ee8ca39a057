#pragma once
// Which samples make each step's batch: every epoch the samples in a fresh
// shuffled order, dealt out a batch at a time (the last of an epoch may be
// short). A job of one draws its batches from one; so do the first and last
// stages of a pipeline, each on its own from the same seed, so that the
// stage that reads the images and the stage that reads the labels agree on
// every sample without sending either.

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace edgetrain {

class BatchOrder {
 public:
  BatchOrder(std::vector<int64_t> samples, int64_t batch_size, uint64_t seed);

  // The next batch's samples (indices into the data set); valid until the next call.
  std::span<const int64_t> Next();
  // Steps that make an epoch.
  int64_t BatchesPerEpoch() const;
  // Starts a new epoch in an order drawn from `seed`: a resumed job does not
  // replay the epoch it was interrupted in.
  void Restart(uint64_t seed);

 private:
  std::vector<int64_t> order_;
  int64_t batch_size_;
  int64_t cursor_ = 0;
  std::mt19937_64 rng_;
};

// Micro-batch `i` of `micro_batches` over a batch of `n` samples: [begin, end)
// into it. Near-equal parts, the first ones a sample longer when they do not
// divide; fewer parts than asked when the batch has fewer samples.
struct MicroBatchSpan {
  int64_t begin = 0;
  int64_t end = 0;
};
std::vector<MicroBatchSpan> SplitBatch(int64_t n, int micro_batches);

}  // namespace edgetrain

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
  // Steps that make an epoch, and the samples.
  int64_t BatchesPerEpoch() const;
  int64_t SamplesPerEpoch() const { return static_cast<int64_t>(order_.size()); }
  // Passes over the next `batches` batches as Next would draw them: a job
  // resumed after that many steps goes on with the batches it would have had
  // uninterrupted (a shuffle an epoch; nothing copied).
  void Skip(int64_t batches);
  // The same over the next `samples` samples, whatever batches drew them: a
  // job resumed at another batch size goes on from the sample it was at.
  void SkipSamples(int64_t samples);

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

// `n` samples dealt to devices in proportion to `weights` (their speeds):
// each gets the whole part of its share, and the samples left over go to the
// largest remainders, the first device first on a tie. Every device of a
// pipeline stage's group, and the head, deal a micro-batch so, and agree.
std::vector<int64_t> ShareOut(int64_t n, std::span<const double> weights);

// A step of `samples` as a pipeline stage's group computes it: cut into
// `micro_batches` (SplitBatch), each dealt among the group's devices by
// `speeds` (ShareOut). [device][micro-batch]: each device's samples of each.
std::vector<std::vector<int64_t>> DealStep(int64_t samples, int micro_batches, std::span<const double> speeds);

}  // namespace edgetrain

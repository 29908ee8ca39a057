#pragma once
// A worker's stream of samples (spec.data.stream; ScaDLES): samples arrive at
// the stream's rate, drawn in turn from the worker's partition (reshuffled at
// every pass, like a stored data set's), into a bounded buffer; the worker's
// batches take from it. What arrives into a full buffer pushes out the oldest
// sample, counted as dropped: in a stream the newest sample is the one most
// like what comes next. truncate bounds the buffer at one batch (the surplus
// over a batch is dropped), persist at its capacity (the surplus is carried
// over to later batches).
//
// Time is the stream's own, seconds since it started: a worker passes what
// its clock says, so the same stream on the simulated clock is the same.

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "core/batch_order.h"
#include "core/stream_rate.h"

namespace edgetrain {

struct StreamCounts {
  int64_t arrived = 0;   // every sample the stream delivered
  int64_t dropped = 0;   // pushed out of a full buffer, never trained on
  int64_t consumed = 0;  // taken into batches
  int64_t backlog = 0;   // in the buffer now
};

class SampleStream {
 public:
  // `capacity`: the buffer's bound (core/job_spec.h StreamBufferCapacity).
  SampleStream(StreamRate rate, std::vector<int64_t> partition, uint64_t seed, int64_t capacity);

  // The samples that arrived by `seconds` join the buffer.
  void CatchUp(double seconds);
  // Samples [first, first + n) arrived from a real source (a stream of rate 0
  // otherwise): they join the buffer as the rate's would.
  void Arrive(int64_t first, int64_t n);
  // Up to `most` samples from the buffer, oldest first (after CatchUp).
  std::vector<int64_t> Take(int64_t most);
  // When the buffer will hold `samples`, if nothing is taken meanwhile: the
  // time to wait for a batch's minimum. Never, beyond the capacity.
  double WhenBuffered(int64_t samples) const;

  // The oldest sample in the buffer, if any: those that arrived before it
  // are not asked for again.
  std::optional<int64_t> Oldest() const;

  StreamCounts counts() const;
  // The counts as CatchUp(seconds) would leave them, without drawing a
  // sample: what a scrape is told while the worker is busy elsewhere (its
  // counters stood still through a wait on the team, then jumped).
  StreamCounts CountsAt(double seconds) const;
  const StreamRate& rate() const { return rate_; }
  int64_t capacity() const { return capacity_; }

 private:
  StreamRate rate_;
  BatchOrder order_;  // the partition, one sample at a time
  int64_t capacity_;
  std::deque<int64_t> buffer_;
  int64_t arrived_ = 0, dropped_ = 0, consumed_ = 0;

  // One sample into the buffer, pushing out the oldest when it is full.
  void Admit(int64_t sample);
};

}  // namespace edgetrain

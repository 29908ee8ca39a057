#pragma once
// A worker's side of data injection (spec.data.injection; core/injection.h):
// the samples of labels its part lacks that the coordinator sent it, kept a
// few batches' worth at a time, and dealt on top of its batches.

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/injection.h"
#include "core/status.h"
#include "edgetrain/v1/training.pb.h"

namespace edgetrain::agent {

class InjectedSamples {
 public:
  // Samples of `sample_size` features, labels below `classes`; `batch` the
  // job's batch size, what the samples kept at hand are reckoned by.
  InjectedSamples(const InjectionSpec& spec, int64_t sample_size, int classes, int64_t batch);

  // The samples of one update kept for later batches (the oldest dropped past
  // a few batches' worth). Ones that are no samples of this data set are
  // refused whole, with the reason; a label out of range is skipped.
  Status Keep(const v1::InjectedSamples& sent);
  // Tops up a batch of `n` samples, written at `features` and `labels`
  // (room for the top-up after them): how many were added.
  int64_t TopUp(int64_t n, float* features, int64_t* labels);

  // How many more it would hold: what a push asks the coordinator for.
  int64_t Wanted() const;
  // Injected samples its batches have trained on.
  int64_t used() const { return used_; }

 private:
  struct Sample {
    std::vector<float> features;
    int64_t label = 0;
  };
  const InjectionSpec spec_;
  const int64_t sample_size_;
  const int classes_;
  const int64_t hold_;  // kept at hand: two batches' worth
  std::deque<Sample> kept_;
  int64_t used_ = 0;
};

}  // namespace edgetrain::agent

#include "core/step_time_model.h"

#include <algorithm>

namespace edgetrain {

namespace {
// Batches vary enough to tell the fixed cost apart when their spread is at
// least this share of their mean: below it, noise in the times would decide.
constexpr double kSpreadToFit = 0.1;
}  // namespace

void StepTimeModel::Observe(int64_t samples, double seconds) {
  if (samples <= 0 || seconds <= 0) return;
  const double n = static_cast<double>(samples);
  w_ = memory_ * w_ + 1;
  n_ = memory_ * n_ + n;
  t_ = memory_ * t_ + seconds;
  nn_ = memory_ * nn_ + n * n;
  nt_ = memory_ * nt_ + n * seconds;
  const double mean_n = n_ / w_, mean_t = t_ / w_;
  const double var_n = std::max(0.0, nn_ / w_ - mean_n * mean_n);
  if (var_n >= (kSpreadToFit * mean_n) * (kSpreadToFit * mean_n)) {
    const double slope = (nt_ / w_ - mean_n * mean_t) / var_n;
    const double intercept = mean_t - slope * mean_n;
    // Noise can fit a negative cost; a fit that says so tells nothing new.
    if (slope > 0 && intercept >= 0) cost_.fixed_seconds = intercept;
  }
  // The fixed cost last told apart cannot be most of a step now (the device
  // sped up, or the fit was noise): then none is assumed until it can be told.
  if (cost_.fixed_seconds >= 0.9 * mean_t) cost_.fixed_seconds = 0;
  cost_.sample_seconds = (mean_t - cost_.fixed_seconds) / mean_n;
}

}  // namespace edgetrain

#include "core/bandwidth_estimator.h"

#include <algorithm>

namespace edgetrain {

namespace {
double ToMbps(int64_t bytes, Duration d) {
  double s = ToSeconds(d);
  return s > 0 ? static_cast<double>(bytes) * 8.0 / 1e6 / s : 0.0;
}
}  // namespace

void BandwidthEstimator::Observe(int64_t bytes, Duration took) {
  if (bytes <= 0 || took <= Duration::zero()) return;
  double rate = ToMbps(bytes, took);
  // The first measurement replaces the prior outright: the prior is only a guess.
  mbps_ = observations_++ == 0 ? rate : mbps_ + weight_ * (rate - mbps_);
}

int64_t BandwidthEstimator::BytesIn(Duration window, int64_t floor_bytes) const {
  double bytes = mbps_ * 1e6 / 8.0 * ToSeconds(window);
  return std::max(floor_bytes, static_cast<int64_t>(bytes));
}

}  // namespace edgetrain

#pragma once
// What a link can carry now, learned from transfers measured on it.
//
// An exponentially weighted moving average of observed rates (bytes over the
// time a send took to go through). A send that hung on a dead link measures as a
// rate near zero, so what is budgeted after it shrinks to what must go anyway.

#include <cstdint>

#include "core/time.h"

namespace edgetrain {

// Messages smaller than this say more about latency and a shaper's burst
// (tbf's, TraceShaper's: 16 KiB) than about bandwidth: they are not timed.
constexpr int64_t kLeastTimedBytes = 32 * 1024;

class BandwidthEstimator {
 public:
  // `prior_mbps` is believed before any measurement; `weight` is the share of
  // each new measurement in the average.
  explicit BandwidthEstimator(double prior_mbps = 10.0, double weight = 0.3)
      : mbps_(prior_mbps), weight_(weight) {}

  void Observe(int64_t bytes, Duration took);
  double Mbps() const { return mbps_; }
  // Bytes the link carries in `window` at the estimate (at least `floor_bytes`).
  int64_t BytesIn(Duration window, int64_t floor_bytes = 0) const;
  int64_t observations() const { return observations_; }

 private:
  double mbps_;
  double weight_;
  int64_t observations_ = 0;
};

}  // namespace edgetrain

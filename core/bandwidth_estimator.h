#pragma once
// What a link can carry now, learned from transfers measured on it.
//
// An exponentially weighted moving average of observed rates (bytes over the time
// from starting a send to its acknowledgement). A transfer still in flight also
// informs it: after `elapsed` with `bytes` unacknowledged the link cannot be
// faster than bytes/elapsed, so a link that drops to zero is seen to do so while
// the transfer hangs, not only after it ends.

#include <cstdint>

#include "core/clock.h"

namespace edgetrain {

class BandwidthEstimator {
 public:
  // `prior_mbps` is believed before any measurement; `weight` is the share of
  // each new measurement in the average.
  explicit BandwidthEstimator(double prior_mbps = 10.0, double weight = 0.3)
      : mbps_(prior_mbps), weight_(weight) {}

  void Observe(int64_t bytes, Duration took);
  // The estimate, capped by a transfer of `bytes` still unacknowledged after `elapsed`.
  double Mbps(int64_t outstanding_bytes = 0, Duration elapsed = Duration::zero()) const;
  // Bytes the link carries in `window` at the estimate (at least `floor_bytes`).
  int64_t BytesIn(Duration window, int64_t floor_bytes = 0) const;
  int64_t observations() const { return observations_; }

 private:
  double mbps_;
  double weight_;
  int64_t observations_ = 0;
};

}  // namespace edgetrain

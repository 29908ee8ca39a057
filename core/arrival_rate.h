#pragma once
// A link's rate measured where the bytes arrive. A sender cannot time its own
// sends when the kernel shapes the link: a write returns once the bytes are in
// the socket buffer, long before they are through the qdisc. The receiver can:
// a burst of messages sent back to back arrives at the link's rate, so the bytes
// after the first message over the time since it arrived is what the link
// carried. The first message's bytes are left out: its start is not seen.

#include <cstdint>

#include "core/bandwidth_estimator.h"
#include "core/clock.h"

namespace edgetrain {

class ArrivalRateMeter {
 public:
  // Bursts carrying fewer bytes than this after their first message are too
  // short to tell bandwidth from latency, and are not measured.
  explicit ArrivalRateMeter(int64_t min_bytes = 32 * 1024) : min_bytes_(min_bytes) {}

  // The first message of a burst arrived (closing the previous burst).
  void Begin(TimePoint at);
  // A later message of the current burst arrived.
  void Continue(TimePoint at, int64_t bytes);

  // The measured rate, or 0 before any burst was long enough.
  double Mbps() const { return estimate_.observations() > 0 ? estimate_.Mbps() : 0.0; }

 private:
  void Close();

  int64_t min_bytes_;
  BandwidthEstimator estimate_;
  bool open_ = false;
  TimePoint first_{};
  TimePoint last_{};
  int64_t bytes_ = 0;
};

}  // namespace edgetrain

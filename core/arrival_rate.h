#pragma once
// A link's rate measured where the bytes arrive. A sender cannot time its own
// sends when the kernel shapes the link: a write returns once the bytes are in
// the socket buffer, long before they are through the qdisc. The receiver can:
// a burst of messages sent back to back arrives at the link's rate, so the bytes
// after the first message over the time since it arrived is what the link
// carried. The first message's bytes are left out: its start is not seen.
//
// Unless the receiver was late to read them: messages that waited in its
// socket while its thread was not scheduled are read back to back, as if the
// link had carried them at memory speed (a late-joining robot's downlink
// measured 649.8 Mbit/s on a link of 31.9, and the operator placed by it;
// a new user's trial, on 2 busy cores). The rate reported is the lower
// median of the last few bursts', which one such burst does not move.

#include <array>
#include <cstdint>

#include "core/time.h"

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
  double Mbps() const;

 private:
  static constexpr size_t kBursts = 5;  // the last bursts the rate is the median of
  void Close();

  int64_t min_bytes_;
  std::array<double, kBursts> recent_{};  // Mbit/s, a ring
  size_t measured_ = 0;                   // bursts measured, all told
  bool open_ = false;
  TimePoint first_{};
  TimePoint last_{};
  int64_t bytes_ = 0;
};

}  // namespace edgetrain

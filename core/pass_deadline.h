#pragma once
// How long one pass of a device (a forward, a backward, its optimizer's
// step) may run before the device is taken for hung: `factor` times the
// bound its longest passes so far set (core/smoothed_spread.h, one sample a
// step), and never under `floor`; `initial` until a step is learned.
//
// A pipeline stage's heartbeats go from a thread of their own, so a device
// whose compute hangs while its link lives keeps saying it is there; only the
// pass it reports under way tells. The factor is what tells a hang from a
// drift: a device that slows tenfold at once (a cluster profile's slowdown
// from 4 to 40) is slow, and has layers moved off it; the bound is at least
// twice its mean pass, so the default 8 gives 16 times its pace.

#include <algorithm>

#include "core/smoothed_spread.h"
#include "core/time.h"

namespace edgetrain {

class PassDeadline {
 public:
  PassDeadline() = default;
  PassDeadline(Duration initial, Duration floor, double factor)
      : initial_(std::max(initial, floor)), floor_(floor), factor_(factor) {}

  // A step's longest pass on this device; none (0): nothing learned.
  void Observed(double longest_pass_s) {
    if (longest_pass_s > 0) passes_.Add(longest_pass_s);
  }
  Duration Deadline() const {
    if (!passes_.learned()) return initial_;
    return std::max(floor_, FromSeconds(factor_ * passes_.Bound()));
  }
  bool learned() const { return passes_.learned(); }

 private:
  Duration initial_ = std::chrono::minutes(2);
  Duration floor_ = std::chrono::seconds(10);
  double factor_ = 8;
  SmoothedSpread passes_;  // seconds of a step's longest pass
};

}  // namespace edgetrain

#pragma once
// A quantity's smoothed mean and mean deviation, learned sample by sample
// with TCP's retransmission-timeout gains (RFC 6298), and the bound it sets:
// mean + 4 deviations, never below twice the mean. What the deadlines learned
// from a device's own pace share (core/arrival_deadline.h, core/pass_deadline.h).

#include <algorithm>
#include <cmath>

namespace edgetrain {

class SmoothedSpread {
 public:
  void Add(double sample) {
    if (!learned_) {
      mean_ = sample;
      deviation_ = sample / 2;
      learned_ = true;
      return;
    }
    deviation_ = (1 - kBeta) * deviation_ + kBeta * std::fabs(mean_ - sample);
    mean_ = (1 - kAlpha) * mean_ + kAlpha * sample;
  }
  bool learned() const { return learned_; }
  double mean() const { return mean_; }
  // What a sample may reach and still be of the pace learned; 0 before one.
  double Bound() const { return std::max(mean_ + 4 * deviation_, 2 * mean_); }

 private:
  static constexpr double kAlpha = 1.0 / 8;
  static constexpr double kBeta = 1.0 / 4;
  bool learned_ = false;
  double mean_ = 0;
  double deviation_ = 0;
};

}  // namespace edgetrain

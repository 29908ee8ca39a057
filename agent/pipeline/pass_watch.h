#pragma once
// The pass a pipeline stage is computing, for its heartbeats
// (agent/pipeline/stage_runner.cc).

#include <algorithm>
#include <mutex>
#include <optional>
#include <utility>

#include "core/clock.h"

namespace edgetrain::agent {

// The pass a stage is computing, if any, and the longest since it last
// said: its heartbeats, sent from another thread, tell the head how long the
// pass has run, so that a device whose compute hangs while its link lives is
// told from one that is merely slow (docs/pipeline.md).
class PassWatch {
 public:
  void Began(TimePoint at) {
    std::lock_guard lock(mu_);
    began_ = at;
  }
  void Ended(TimePoint at) {
    std::lock_guard lock(mu_);
    if (began_) longest_s_ = std::max(longest_s_, ToSeconds(at - *began_));
    began_.reset();
  }
  // How long the pass under way at `now` has run; 0: none is.
  double BusySeconds(TimePoint now) {
    std::lock_guard lock(mu_);
    return began_ ? std::max(0.0, ToSeconds(now - *began_)) : 0.0;
  }
  // The longest pass since the last call.
  double TakeLongest() {
    std::lock_guard lock(mu_);
    return std::exchange(longest_s_, 0.0);
  }

 private:
  std::mutex mu_;
  std::optional<TimePoint> began_;
  double longest_s_ = 0;
};

}  // namespace edgetrain::agent

#pragma once
// How long to wait before trying again after a failure: doubling from
// `initial` up to `max`, back to `initial` once nothing has failed for
// `reset_after` (client-go's exponential back-off manager, and its "healthy
// period"). Pure: the caller brings the time and does the waiting.

#include "core/time.h"

namespace edgetrain {

class Backoff {
 public:
  Backoff(Duration initial, Duration max, Duration reset_after)
      : initial_(initial), max_(max), reset_after_(reset_after), next_(initial) {}

  // A failure at `now`: how long to wait before the next try.
  Duration Failed(TimePoint now) {
    if (last_failure_ != TimePoint{} && now - last_failure_ >= reset_after_) next_ = initial_;
    last_failure_ = now;
    const Duration wait = next_;
    next_ = std::min(max_, next_ * 2);
    return wait;
  }

 private:
  const Duration initial_, max_, reset_after_;
  Duration next_;
  TimePoint last_failure_{};
};

}  // namespace edgetrain

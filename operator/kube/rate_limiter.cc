#include "operator/kube/rate_limiter.h"

#include <algorithm>

namespace edgetrain::kube {

RateLimiter::RateLimiter(double qps, int burst, Clock& clock)
    : qps_(qps), burst_(std::max(1, burst)), clock_(clock), tokens_(burst_), last_(clock.Now()) {}

void RateLimiter::Acquire() {
  if (lifted_.load()) return;
  TimePoint ready;
  {
    std::lock_guard lock(mu_);
    const TimePoint now = clock_.Now();
    tokens_ = std::min(burst_, tokens_ + ToSeconds(now - last_) * qps_);
    last_ = now;
    tokens_ -= 1;  // taken now; a debt is paid by waiting
    if (tokens_ >= 0) return;
    ready = now + FromSeconds(-tokens_ / qps_);
  }
  clock_.SleepUntil(ready);
}

bool RateLimiter::Lift() { return !lifted_.exchange(true); }

}  // namespace edgetrain::kube

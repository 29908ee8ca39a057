#pragma once
// Client-side rate limits, as client-go's QPS and burst: a token bucket that
// fills at `qps` up to `burst`, and a request waits for its token on the clock.
// Keeps a busy operator from flooding a small K3s server on a gateway.

#include <mutex>

#include "core/clock.h"

namespace edgetrain::kube {

class RateLimiter {
 public:
  RateLimiter(double qps, int burst, Clock& clock);
  // Blocks until a request may go.
  void Acquire();

 private:
  const double qps_;
  const double burst_;
  Clock& clock_;
  std::mutex mu_;
  double tokens_;    // guarded by mu_
  TimePoint last_;   // guarded by mu_
};

}  // namespace edgetrain::kube

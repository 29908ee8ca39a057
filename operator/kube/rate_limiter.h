#pragma once
// Client-side rate limits, as client-go's QPS and burst: a token bucket that
// fills at `qps` up to `burst`, and a request waits for its token on the clock.
// Keeps a busy operator from flooding a small K3s server on a gateway that
// cannot protect itself; lifted once the server shows it can (rest_kube_client).

#include <atomic>
#include <mutex>

#include "core/clock.h"

namespace edgetrain::kube {

class RateLimiter {
 public:
  RateLimiter(double qps, int burst, Clock& clock);
  // Blocks until a request may go.
  void Acquire();
  // From now on every request goes at once. True for the call that lifted it.
  bool Lift();
  bool lifted() const { return lifted_.load(); }

 private:
  const double qps_;
  const double burst_;
  Clock& clock_;
  std::mutex mu_;
  double tokens_;    // guarded by mu_
  TimePoint last_;   // guarded by mu_
  std::atomic<bool> lifted_{false};
};

}  // namespace edgetrain::kube

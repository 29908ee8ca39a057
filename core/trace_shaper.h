#pragma once
// One direction of an emulated link: a token bucket whose fill rate follows a
// bandwidth trace, as Linux's tbf does when its rate is changed on the fly.
// Senders reserve their bytes in order and are told when the last one is
// through; a link at 0 Mbit/s holds them until the trace brings it back.

#include <cstdint>
#include <mutex>

#include "core/bandwidth_trace.h"
#include "core/time.h"

namespace edgetrain {

class TraceShaper {
 public:
  // The trace's time 0 is `start`. The bucket holds up to `burst_bytes` (tbf's
  // burst), and starts full.
  TraceShaper(BandwidthTrace trace, TimePoint start, int64_t burst_bytes = 16 * 1024);

  // Reserves `bytes` of the link from `now` on and returns when they are through.
  // Thread-safe: concurrent senders queue in the order they reserve.
  TimePoint Reserve(int64_t bytes, TimePoint now);

  // A send that was to be through at `through` (Reserve's answer) was abandoned
  // at `now`: what it had not yet passed leaves the link, as a closed socket's
  // bytes leave a tbf queue. Only when no send reserved after it; those keep
  // their places.
  void Release(TimePoint through, TimePoint now);

  // The link's rate at `t`, in Mbit/s.
  double MbpsAt(TimePoint t) const;
  const BandwidthTrace& trace() const { return trace_; }

 private:
  double Seconds(TimePoint t) const { return ToSeconds(t - start_); }
  // Advances the bucket from last_ to `to` (seconds), adding what the link carried.
  void Fill(double to);

  BandwidthTrace trace_;
  TimePoint start_;
  double burst_bytes_;
  std::mutex mu_;
  double tokens_;    // bytes, guarded by mu_
  double last_ = 0;  // seconds since start_ up to which tokens_ is current; guarded by mu_
};

}  // namespace edgetrain

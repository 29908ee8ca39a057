#include "core/trace_shaper.h"

#include <algorithm>
#include <limits>

namespace edgetrain {
namespace {
constexpr double kBytesPerMbitSecond = 1e6 / 8.0;
// A trace that is zero everywhere would never deliver; cap the wait so a
// misconfigured link shows as a very slow one instead of hanging forever.
constexpr double kLongestWaitSeconds = 24 * 3600.0;
}  // namespace

TraceShaper::TraceShaper(BandwidthTrace trace, TimePoint start, int64_t burst_bytes)
    : trace_(std::move(trace)), start_(start), burst_bytes_(static_cast<double>(burst_bytes)),
      tokens_(static_cast<double>(burst_bytes)) {}

double TraceShaper::MbpsAt(TimePoint t) const { return trace_.MbpsAt(Seconds(t)); }

void TraceShaper::Fill(double to) {
  double t = last_;
  while (t < to && tokens_ < burst_bytes_) {
    auto seg = trace_.SegmentAt(t);
    double end = std::min(seg.until, to);
    tokens_ = std::min(burst_bytes_, tokens_ + seg.mbps * kBytesPerMbitSecond * (end - t));
    t = end;
  }
  last_ = std::max(last_, to);
}

TimePoint TraceShaper::Reserve(int64_t bytes, TimePoint now) {
  std::lock_guard lock(mu_);
  Fill(Seconds(now));
  double need = static_cast<double>(bytes);
  if (tokens_ >= need) {
    tokens_ -= need;
    return std::max(now, start_ + FromSeconds(last_));
  }
  // The bucket is drained; the rest arrives at the trace's rate from last_ on.
  need -= tokens_;
  tokens_ = 0;
  double t = last_;
  const double give_up = t + kLongestWaitSeconds;
  while (need > 0 && t < give_up) {
    auto seg = trace_.SegmentAt(t);
    double rate = seg.mbps * kBytesPerMbitSecond;
    double span = seg.until - t;
    if (rate * span >= need) {
      t += need / rate;
      need = 0;
    } else {
      need -= rate * span;
      t = seg.until;
    }
  }
  last_ = t;
  return start_ + FromSeconds(t);
}

void TraceShaper::Release(TimePoint through, TimePoint now) {
  std::lock_guard lock(mu_);
  if (start_ + FromSeconds(last_) != through || now >= through) return;
  // The bucket was empty while the abandoned bytes drained it; from `now` on it
  // fills again.
  tokens_ = 0;
  last_ = Seconds(now);
}

}  // namespace edgetrain

#include "core/arrival_deadline.h"

#include <algorithm>
#include <cmath>

namespace edgetrain {
namespace {
// RFC 6298's gains.
constexpr double kAlpha = 1.0 / 8;
constexpr double kBeta = 1.0 / 4;
}  // namespace

void ArrivalDeadline::Arrived(TimePoint at) {
  if (seen_any_) {
    double gap = ToSeconds(at - last_);
    if (!learned_) {
      mean_s_ = gap;
      deviation_s_ = gap / 2;
      learned_ = true;
    } else {
      deviation_s_ = (1 - kBeta) * deviation_s_ + kBeta * std::fabs(mean_s_ - gap);
      mean_s_ = (1 - kAlpha) * mean_s_ + kAlpha * gap;
    }
  }
  seen_any_ = true;
  last_ = at;
}

Duration ArrivalDeadline::Deadline() const {
  if (!learned_) return initial_;
  double s = std::max(mean_s_ + 4 * deviation_s_, 2 * mean_s_);
  return std::max(floor_, FromSeconds(s));
}

}  // namespace edgetrain

#include "core/arrival_rate.h"

#include <algorithm>

namespace edgetrain {

void ArrivalRateMeter::Begin(TimePoint at) {
  Close();
  open_ = true;
  first_ = last_ = at;
  bytes_ = 0;
}

void ArrivalRateMeter::Continue(TimePoint at, int64_t bytes) {
  if (!open_) return;
  last_ = at;
  bytes_ += bytes;
}

void ArrivalRateMeter::Close() {
  if (open_ && bytes_ >= min_bytes_ && last_ > first_) {
    recent_[measured_ % kBursts] = static_cast<double>(bytes_) * 8 / 1e6 / ToSeconds(last_ - first_);
    ++measured_;
  }
  open_ = false;
}

double ArrivalRateMeter::Mbps() const {
  const size_t n = std::min(measured_, kBursts);
  if (n == 0) return 0;
  std::array<double, kBursts> sorted = recent_;
  std::sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(n));
  return sorted[(n - 1) / 2];  // the lower median: of two, the slower
}

}  // namespace edgetrain

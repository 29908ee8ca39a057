#include "core/arrival_rate.h"

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
  if (open_ && bytes_ >= min_bytes_ && last_ > first_) estimate_.Observe(bytes_, last_ - first_);
  open_ = false;
}

}  // namespace edgetrain

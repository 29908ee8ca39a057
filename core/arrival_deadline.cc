#include "core/arrival_deadline.h"

#include <algorithm>

namespace edgetrain {

void ArrivalDeadline::Arrived(TimePoint at) {
  if (seen_any_) gaps_.Add(ToSeconds(at - last_));
  seen_any_ = true;
  last_ = at;
}

Duration ArrivalDeadline::Deadline() const {
  if (!gaps_.learned()) return initial_;
  return std::max(floor_, FromSeconds(gaps_.Bound()));
}

}  // namespace edgetrain

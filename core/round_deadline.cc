#include "core/round_deadline.h"

#include <algorithm>
#include <cmath>

namespace edgetrain {

RoundDeadline::RoundDeadline(double quorum, double slack)
    : quorum_(std::clamp(quorum, 0.0, 1.0)), slack_(std::max(0.0, slack)) {}

void RoundDeadline::Opened(int64_t round, TimePoint at) {
  round_ = round;
  opened_ = at;
  deadline_.reset();
}

int RoundDeadline::QuorumOf(int counted) const {
  // A share that is a whole number of workers is that number, not one more
  // for the float's rounding (0.5 of 4 is 2).
  const int q = static_cast<int>(std::ceil(quorum_ * counted - 1e-9));
  return std::clamp(q, 1, std::max(1, counted));
}

void RoundDeadline::Completed(int complete, int counted, TimePoint at) {
  if (deadline_ || complete < QuorumOf(counted)) return;
  const Duration took = std::max(Duration::zero(), at - opened_);
  deadline_ = at + std::chrono::duration_cast<Duration>(took * slack_);
}

}  // namespace edgetrain

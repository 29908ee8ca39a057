#include "core/step_orders.h"

#include <algorithm>

namespace edgetrain {

void StepOrders::Observe(double period_s, double last_held_s) {
  const double orders = std::max(0.0, period_s - last_held_s);
  if (last_.size() < window_) {
    last_.push_back(orders);
  } else {
    last_[seen_ % window_] = orders;
  }
  ++seen_;
}

double StepOrders::Seconds() const {
  if (seen_ < kMinSteps) return 0;
  std::vector<double> sorted = last_;
  const auto middle = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2);
  std::nth_element(sorted.begin(), middle, sorted.end());
  return *middle;
}

}  // namespace edgetrain

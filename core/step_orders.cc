#include "core/step_orders.h"

#include <algorithm>

namespace edgetrain {

void StepOrders::Observe(double period_s, double last_held_s) { last_.Add(std::max(0.0, period_s - last_held_s)); }

double StepOrders::Seconds() const { return last_.seen() < kMinSteps ? 0 : last_.Median(); }

}  // namespace edgetrain

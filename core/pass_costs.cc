#include "core/pass_costs.h"

#include <algorithm>
#include <vector>

namespace edgetrain {

double PassCosts::Uncontended(PassWorkload workload, double measured_s) {
  std::deque<double>& recent = recent_[workload];
  recent.push_back(measured_s);
  if (recent.size() > kRemembered) recent.pop_front();
  if (recent.size() < kLeastKnown) return measured_s;
  std::vector<double> sorted(recent.begin(), recent.end());
  const auto quartile = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 4);
  std::nth_element(sorted.begin(), quartile, sorted.end());
  return std::min(measured_s, *quartile);
}

}  // namespace edgetrain

#include "core/pass_costs.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace edgetrain {

double PassCosts::Uncontended(PassWorkload workload, double measured_s) {
  const double samples = static_cast<double>(std::max<int64_t>(workload.samples, 1));
  const int64_t band = workload.samples > 0 ? std::llround(kSizesAnOctave * std::log2(samples)) : -1;
  std::deque<double>& recent = recent_[{workload.work, band}];
  recent.push_back(measured_s / samples);
  if (recent.size() > kRemembered) recent.pop_front();
  if (recent.size() < kLeastKnown) return measured_s;
  std::vector<double> sorted(recent.begin(), recent.end());
  const auto quartile = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 4);
  std::nth_element(sorted.begin(), quartile, sorted.end());
  return *quartile * samples;
}

}  // namespace edgetrain

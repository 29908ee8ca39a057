#include "core/median.h"

#include <algorithm>
#include <cstddef>

namespace edgetrain {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  const auto upper = values.begin() + static_cast<std::ptrdiff_t>(mid);
  std::nth_element(values.begin(), upper, values.end());
  if (values.size() % 2 == 1) return *upper;
  // nth_element leaves the lower half before `upper`: its largest is the lower middle.
  return (*std::max_element(values.begin(), upper) + *upper) / 2;
}

}  // namespace edgetrain

#include "core/step_window.h"

#include <algorithm>
#include <iterator>

#include "core/median.h"

namespace edgetrain {
namespace {

double MedianOf(std::vector<double>::const_iterator first, std::vector<double>::const_iterator last) {
  return Median(std::vector<double>(first, last));
}

}  // namespace

bool StepWindow::Drifted(double factor) const {
  if (steps_.size() < 2 * kRecent) return false;
  const auto split = steps_.end() - static_cast<std::ptrdiff_t>(kRecent);
  const auto from = split - static_cast<std::ptrdiff_t>(std::min(steps_.size() - kRecent, kBefore));
  const double before = MedianOf(from, split);
  if (before <= 0) return false;
  // All but one of the recent steps past the bound, the same way.
  std::vector<double> recent(split, steps_.end());
  std::sort(recent.begin(), recent.end());
  const double second_least = recent[1], second_most = recent[recent.size() - 2];
  return second_least > factor * before || (second_most > 0 && before > factor * second_most);
}

double StepWindow::Now(double factor) const {
  const size_t counted =
      Drifted(factor) ? kRecent : std::min(steps_.size(), std::max(kRecent, steps_.size() / 2));
  return MedianOf(steps_.end() - static_cast<std::ptrdiff_t>(counted), steps_.end());
}

}  // namespace edgetrain

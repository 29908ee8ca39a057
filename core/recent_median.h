#pragma once
// The median of the last figures a run measured: what the head learns from
// its steps (core/step_orders.h, core/device_pace.h). The median keeps out
// the odd step the machine slowed (a checkpoint written, another process
// scheduled), and the window forgets what no longer holds (a start under
// contention, a device since slowed).

#include <algorithm>
#include <cstddef>
#include <vector>

namespace edgetrain {

class RecentMedian {
 public:
  explicit RecentMedian(size_t window = 64) : window_(window) {}

  void Add(double x) {
    if (last_.size() < window_) {
      last_.push_back(x);
    } else {
      last_[seen_ % window_] = x;
    }
    ++seen_;
  }
  // Of the last figures, the middle one (the upper of the two middle ones);
  // 0 before any.
  double Median() const {
    if (last_.empty()) return 0;
    std::vector<double> sorted = last_;
    const auto middle = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2);
    std::nth_element(sorted.begin(), middle, sorted.end());
    return *middle;
  }
  size_t seen() const { return seen_; }
  // Of those, the last ones the median is of (at most the window).
  size_t counted() const { return last_.size(); }

 private:
  size_t window_;
  std::vector<double> last_;  // a ring of the last window_ figures
  size_t seen_ = 0;
};

}  // namespace edgetrain

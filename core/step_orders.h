#pragma once
// What the head's word to the stages and their answer cost a step, as the
// run pays it. The planner counts them at the transport's α, timed by
// profile-layers as a round trip between two threads that have just run; in
// a run the word and the answer each pass a chain of threads to wake at both
// ends beside the step's own work (docs/pipeline.md, "The cost model"), and
// on this machine cost three times that. The head learns the figure from its
// steps: a step's period, from its word to the next step's, less what the
// stage that answered last spent between taking the word and answering it.
// That stage paced the step, so the rest is the orders' round trip and the
// head's own turn between steps. The head leaves out the steps a loss, a
// device back, or a fetch of the stages' state (an evaluation, a checkpoint)
// lengthened; the median of the last steps keeps out the odd one the machine
// slowed.

#include <cstddef>

#include "core/recent_median.h"

namespace edgetrain {

class StepOrders {
 public:
  // Steps observed before the figure is given: fewer say too little.
  static constexpr size_t kMinSteps = 8;

  explicit StepOrders(size_t window = 64) : last_(window) {}

  // A step run from one word to the next without a replay or a change of the
  // stages: its period, and the held seconds of the stage that answered last.
  void Observe(double period_s, double last_held_s);
  // The median of the last steps' orders (never below 0), or 0 before kMinSteps.
  double Seconds() const;
  size_t steps() const { return last_.seen(); }
  // Of those, the last ones the figure is the median of (at most the window).
  size_t counted() const { return last_.counted(); }

 private:
  RecentMedian last_;  // the last steps' orders
};

}  // namespace edgetrain

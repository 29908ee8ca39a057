#pragma once
// A device's compute step by step over one measurement of a pipeline's
// stages (docs/pipeline.md, "Layers move as devices drift"): what it takes a
// step now, and whether that changed inside the measurement. A device slowed
// tenfold halfway through a window of 20 s averaged to about five times, and
// layers moved for a step the run never reached, 17-27 s after the slowdown
// (a new user's trial); judged by its last steps once they differ from those
// before, the head measures at once and moves layers for the pace it has now.

#include <cstddef>
#include <vector>

namespace edgetrain {

class StepWindow {
 public:
  // Steps a change must have lasted before it is believed: one odd step (a
  // checkpoint written, another process scheduled) is not a drift.
  static constexpr size_t kRecent = 4;

  void Add(double seconds) { steps_.push_back(seconds); }
  void Clear() { steps_.clear(); }
  size_t size() const { return steps_.size(); }

  // The steps before those a drift is judged against, at most: the head asks
  // every step, and a measurement of 20 s of millisecond steps holds
  // thousands.
  static constexpr size_t kBefore = 32;

  // Whether all but one of the last kRecent steps lie more than `factor`
  // times above (or all but one below) the median of the (up to kBefore)
  // steps before them, kRecent of them at least: two slow steps (a
  // checkpoint written) are not a drift.
  bool Drifted(double factor) const;
  // What it takes a step now: the median of its last kRecent steps once it
  // has Drifted(factor), else of its last half, and of kRecent at least (all
  // when fewer); 0 before any step. (Half a window after a drift may hold
  // more steps before it than after.)
  double Now(double factor) const;

 private:
  std::vector<double> steps_;
};

}  // namespace edgetrain

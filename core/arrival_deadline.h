#pragma once
// How long to wait for a worker's next push before counting it out, learned from
// the gaps between its pushes so far (the way TCP learns its retransmission
// timeout from round trips, RFC 6298): mean + 4 deviations, never below twice
// the mean. A slow device gets a long deadline, a fast one a short one, and a
// link that dies is noticed in a few of that worker's own iteration times — no
// fixed timeout to tune per cluster.

#include "core/smoothed_spread.h"
#include "core/time.h"

namespace edgetrain {

class ArrivalDeadline {
 public:
  // Until the first gap is seen, `initial` is the deadline.
  explicit ArrivalDeadline(Duration initial = std::chrono::seconds(10), Duration floor = std::chrono::milliseconds(50))
      : initial_(initial), floor_(floor) {}

  // A push arrived at `at`.
  void Arrived(TimePoint at);
  // Counts from `at` (a (re)join, a welcome sent), keeping what was learned: a
  // worker silent from then on is overdue like any other.
  void Restart(TimePoint at) {
    last_ = at;
    seen_any_ = true;
  }
  Duration Deadline() const;
  // The least deadline, whatever the learned pace.
  void set_floor(Duration floor) { floor_ = floor; }
  // Whether, at `now`, the worker is past its deadline.
  bool Overdue(TimePoint now) const { return seen_any_ && now - last_ > Deadline(); }
  TimePoint last_arrival() const { return last_; }
  // The learned mean gap between pushes, or `fallback` before one is learned.
  Duration MeanGap(Duration fallback) const { return gaps_.learned() ? FromSeconds(gaps_.mean()) : fallback; }

 private:
  Duration initial_;
  Duration floor_;
  bool seen_any_ = false;
  TimePoint last_{};
  SmoothedSpread gaps_;  // seconds between pushes
};

}  // namespace edgetrain

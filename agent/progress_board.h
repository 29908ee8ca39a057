#pragma once
// The job's progress, written by the training loop and read by the HTTP thread
// that serves GET /progress. Copies in and out under one lock; never held long.
//
// The loop publishes between its steps, and a pipeline's head takes a whole
// step (seconds, when a device is slow or lost) in one: a reader then saw the
// job's clock and its seconds since the last step frozen, and the operator's
// Stalled condition, which reads those seconds, could never fire (a new
// user's trial). So a reader ages the figures that count time by the time
// since they were published, while the job trains.

#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>

#include "core/clock.h"
#include "core/job_progress.h"

namespace edgetrain::agent {

class ProgressBoard {
 public:
  void Update(const std::function<void(JobProgress&)>& change) {
    std::lock_guard lock(mu_);
    change(progress_);
    published_at_.reset();
  }
  // The training loop's progress as of `at`, on the clock readers age it by.
  void Publish(const JobProgress& p, TimePoint at) {
    std::lock_guard lock(mu_);
    progress_ = p;
    published_at_ = at;
  }
  JobProgress Snapshot() const {
    std::lock_guard lock(mu_);
    return progress_;
  }
  // The job's wall-clock budget, which a reader's fraction of the budget
  // moves on by as well: a slow step's snapshot read fraction 0.62 beside
  // 22.7 s elapsed of 30 (a new user's trial).
  void SetWallClock(std::optional<Duration> budget) {
    std::lock_guard lock(mu_);
    wall_clock_s_ = budget ? std::optional<double>(ToSeconds(*budget)) : std::nullopt;
  }
  // As of `now`: while the job trains, its elapsed time, its seconds since
  // the last step, its ETA and its fraction of a wall-clock budget move on
  // from what was published.
  JobProgress SnapshotAt(TimePoint now) const {
    std::lock_guard lock(mu_);
    JobProgress p = progress_;
    if (!published_at_ || p.state != JobState::kTraining || p.stop_reason || now <= *published_at_) return p;
    const double since = ToSeconds(now - *published_at_);
    p.elapsed_s += since;
    p.since_step_s += since;
    if (p.evaluating) p.evaluation_s += since;  // the one under way, so far
    if (p.elapsed_s > 0) p.samples_per_second = static_cast<double>(p.samples) / p.elapsed_s;
    if (p.eta_s) p.eta_s = std::max(0.0, *p.eta_s - since);
    if (wall_clock_s_ && *wall_clock_s_ > 0) p.fraction = std::max(p.fraction, std::min(1.0, p.elapsed_s / *wall_clock_s_));
    // Past the wall clock with a step still under way, which the loop looks
    // at the budget after: training stops once that step is done, and is
    // said to be finishing. A pipeline's step held by a device slowed a
    // thousandfold read "training, 100%, ETA 0" for 19 s past its budget (a
    // new user's trial).
    if (wall_clock_s_ && *wall_clock_s_ > 0 && p.elapsed_s >= *wall_clock_s_ && !p.evaluating) {
      p.stop_reason = StopReason::kWallClock;
    }
    return p;
  }

 private:
  mutable std::mutex mu_;
  JobProgress progress_;                   // guarded by mu_
  std::optional<TimePoint> published_at_;  // when progress_ was published, on the loop's clock
  std::optional<double> wall_clock_s_;     // the budget's, if it has one
};

}  // namespace edgetrain::agent

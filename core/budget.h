#pragma once
// When training ends: at whichever of the budget's limits comes first — wall
// clock, epochs, or a test-set evaluation reaching the target accuracy — and how
// far along it is, for progress bars and ETAs.

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/clock.h"
#include "core/job_progress.h"
#include "core/job_spec.h"

namespace edgetrain {


class Budget {
 public:
  // `iterations_per_epoch` is how many steps one pass over the data takes.
  Budget(const BudgetSpec& spec, int64_t iterations_per_epoch, TimePoint start);

  // Checked after every iteration; `iteration` counts completed steps.
  std::optional<StopReason> Exhausted(TimePoint now, int64_t iteration) const;
  bool TargetReached(double accuracy) const;

  // The share of the budget used, 0..1: the larger of the time and epoch shares.
  double Fraction(TimePoint now, int64_t iteration) const;
  // The wall clock's time left (0 once spent); none without a wall clock.
  std::optional<Duration> WallClockLeft(TimePoint now) const;
  // Time left until the nearest limit at the pace so far; nullopt before the
  // first step when only epochs bound the run.
  std::optional<Duration> Eta(TimePoint now, int64_t iteration) const;

 private:
  std::optional<int64_t> MaxIterations() const;

  BudgetSpec spec_;
  int64_t iterations_per_epoch_;
  TimePoint start_;
};

}  // namespace edgetrain

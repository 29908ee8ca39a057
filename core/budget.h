#pragma once
// When training ends: at whichever of the budget's limits comes first — wall
// clock, epochs, modelled energy, or a test-set evaluation reaching the target
// accuracy — and how far along it is, for progress bars and ETAs.

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/job_progress.h"
#include "core/job_spec.h"
#include "core/time.h"

namespace edgetrain {

// How far a job has gone, in the units its budget counts besides time.
struct BudgetUse {
  // Trained on: an epoch is a pass over the training data by samples,
  // whatever batches made it (a batch changed on resume changes the steps
  // an epoch takes, not the passes made).
  int64_t samples = 0;
  // Modelled energy (docs/energy.md) over every run of the job, as its
  // checkpoints carry it: a resumed job's budget is the whole job's.
  double energy_j = 0;
};

// The joules a team's workers have drawn since their last report reached
// the coordinator, as an energy budget counts them: each worker at the watts
// it drew so far (its energy over its own wall clock), for as long as it has
// not reported (unreported_s, or silent_s if longer). A worker whose link is
// out reports nothing until it is back, and a robot team stopped at 318 J of
// a 250 J budget, one robot's last 8.9 s unseen (a new user's trial); one in
// a dip kept bringing a push's later parts, which carry no figures, and was
// counted for the 0.01 s since the last of them, 84 J short (another). A
// pipeline's devices and a job of one report as they go: none.
double UnreportedEnergy(const JobProgress& p);

class Budget {
 public:
  // `samples_per_epoch`: how many samples one pass over the data trains.
  Budget(const BudgetSpec& spec, int64_t samples_per_epoch, TimePoint start);

  // Checked after every iteration.
  std::optional<StopReason> Exhausted(TimePoint now, BudgetUse use) const;
  bool TargetReached(double accuracy) const;

  // The share of the budget used, 0..1: the largest of the time, epoch and
  // energy shares.
  double Fraction(TimePoint now, BudgetUse use) const;
  // The wall clock's time left (0 once spent); none without a wall clock.
  std::optional<Duration> WallClockLeft(TimePoint now) const;
  // Time left until the nearest limit at the pace so far; nullopt before the
  // first sample (or the first joule) when only epochs (or energy) bound the run.
  std::optional<Duration> Eta(TimePoint now, BudgetUse use) const;
  // The samples the epochs budget allows; none without one.
  std::optional<int64_t> MaxSamples() const;

 private:
  bool HasEnergyLimit() const { return spec_.energy_joules > 0; }

  BudgetSpec spec_;
  int64_t samples_per_epoch_;
  TimePoint start_;
};

}  // namespace edgetrain

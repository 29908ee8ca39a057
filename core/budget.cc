#include "core/budget.h"

#include <algorithm>

#include "core/duration_text.h"

namespace edgetrain {

double UnreportedEnergy(const JobProgress& p) {
  double joules = 0;
  for (const WorkerProgress& w : p.workers) {
    // A stage's clock is its busy time, not the job's: its watts would be off.
    const double unheard_s = std::max(w.silent_s, w.unreported_s);
    if (w.layers || w.wall_s <= 0 || unheard_s <= 0) continue;
    joules += unheard_s * w.energy_joules / w.wall_s;
  }
  return joules;
}

Budget::Budget(const BudgetSpec& spec, int64_t samples_per_epoch, TimePoint start)
    : spec_(spec), samples_per_epoch_(std::max<int64_t>(1, samples_per_epoch)), start_(start) {}

std::optional<int64_t> Budget::MaxSamples() const {
  if (!spec_.epochs) return std::nullopt;
  return int64_t{*spec_.epochs} * samples_per_epoch_;
}

std::optional<StopReason> Budget::Exhausted(TimePoint now, BudgetUse use) const {
  if (auto max = MaxSamples(); max && use.samples >= *max) return StopReason::kEpochs;
  if (spec_.wall_clock && now - start_ >= *spec_.wall_clock) return StopReason::kWallClock;
  if (HasEnergyLimit() && use.energy_j >= spec_.energy_joules) return StopReason::kEnergy;
  return std::nullopt;
}

bool Budget::TargetReached(double accuracy) const {
  return spec_.target_accuracy && accuracy >= *spec_.target_accuracy;
}

double Budget::Fraction(TimePoint now, BudgetUse use) const {
  double f = 0;
  if (auto max = MaxSamples()) f = std::max(f, static_cast<double>(use.samples) / static_cast<double>(*max));
  if (spec_.wall_clock && spec_.wall_clock->count() > 0) f = std::max(f, ToSeconds(now - start_) / ToSeconds(*spec_.wall_clock));
  if (HasEnergyLimit()) f = std::max(f, use.energy_j / spec_.energy_joules);
  return std::clamp(f, 0.0, 1.0);
}

std::optional<Duration> Budget::WallClockLeft(TimePoint now) const {
  if (!spec_.wall_clock) return std::nullopt;
  return std::max(Duration::zero(), *spec_.wall_clock - (now - start_));
}

std::optional<Duration> Budget::Eta(TimePoint now, BudgetUse use) const {
  std::optional<Duration> eta = WallClockLeft(now);
  const Duration elapsed = now - start_;
  auto nearest = [&](Duration d) { eta = eta ? std::min(*eta, d) : d; };
  if (auto max = MaxSamples(); max && use.samples > 0) {
    // In seconds, as the energy's below: an epochs budget of 6e9 samples
    // left overflowed the clock's ticks 1.5 s into a run, and its ETA read 0
    // every other second (found in review).
    const double left_s = ToSeconds(elapsed) * static_cast<double>(*max - std::min(use.samples, *max)) /
                          static_cast<double>(use.samples);
    if (left_s < ToSeconds(kLongestDuration)) nearest(FromSeconds(left_s));
  }
  // At the pace the job has drawn energy so far: a team's idle devices draw
  // less than computing ones, so the pace moves with its stall.
  if (HasEnergyLimit() && use.energy_j > 0) {
    // In seconds first: a budget of 1e308 J overflowed the clock's ticks
    // into an ETA of 0 (a new user's trial). Beyond the longest duration a
    // job may have, the energy is no nearer limit than the others.
    const double left_s = ToSeconds(elapsed) * std::max(0.0, spec_.energy_joules - use.energy_j) / use.energy_j;
    if (left_s < ToSeconds(kLongestDuration)) nearest(FromSeconds(left_s));
  }
  return eta;
}

}  // namespace edgetrain

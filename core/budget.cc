#include "core/budget.h"

#include <algorithm>

namespace edgetrain {

Budget::Budget(const BudgetSpec& spec, int64_t iterations_per_epoch, TimePoint start)
    : spec_(spec), iterations_per_epoch_(std::max<int64_t>(1, iterations_per_epoch)), start_(start) {}

std::optional<int64_t> Budget::MaxIterations() const {
  if (!spec_.epochs) return std::nullopt;
  return int64_t{*spec_.epochs} * iterations_per_epoch_;
}

std::optional<StopReason> Budget::Exhausted(TimePoint now, int64_t iteration) const {
  if (auto max = MaxIterations(); max && iteration >= *max) return StopReason::kEpochs;
  if (spec_.wall_clock && now - start_ >= *spec_.wall_clock) return StopReason::kWallClock;
  return std::nullopt;
}

bool Budget::TargetReached(double accuracy) const {
  return spec_.target_accuracy && accuracy >= *spec_.target_accuracy;
}

double Budget::Fraction(TimePoint now, int64_t iteration) const {
  double f = 0;
  if (auto max = MaxIterations()) f = std::max(f, static_cast<double>(iteration) / static_cast<double>(*max));
  if (spec_.wall_clock && spec_.wall_clock->count() > 0) f = std::max(f, ToSeconds(now - start_) / ToSeconds(*spec_.wall_clock));
  return std::clamp(f, 0.0, 1.0);
}

std::optional<Duration> Budget::WallClockLeft(TimePoint now) const {
  if (!spec_.wall_clock) return std::nullopt;
  return std::max(Duration::zero(), *spec_.wall_clock - (now - start_));
}

std::optional<Duration> Budget::Eta(TimePoint now, int64_t iteration) const {
  std::optional<Duration> eta = WallClockLeft(now);
  Duration elapsed = now - start_;
  if (auto max = MaxIterations(); max && iteration > 0) {
    Duration by_epochs = elapsed * (*max - std::min(iteration, *max)) / iteration;
    eta = eta ? std::min(*eta, by_epochs) : by_epochs;
  }
  return eta;
}

}  // namespace edgetrain

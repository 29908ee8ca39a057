#include "core/stream_rate.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace edgetrain {

StreamRate StreamRate::Constant(double per_second) {
  StreamRate rate;
  rate.steps_.push_back({0, per_second});
  rate.period_ = 1;
  rate.per_period_ = per_second;
  return rate;
}

StatusOr<StreamRate> StreamRate::Parse(std::string_view csv, const std::string& source) {
  EDGETRAIN_ASSIGN_OR_RETURN(std::vector<CsvStep> steps, ParseStepCsv(csv, source, "samples_per_s", kMostPerSecond));
  StreamRate rate;
  rate.steps_ = std::move(steps);
  rate.period_ = StepCsvPeriod(rate.steps_);
  for (size_t i = 0; i < rate.steps_.size(); ++i) {
    const double end = i + 1 < rate.steps_.size() ? rate.steps_[i + 1].seconds : rate.period_;
    rate.per_period_ += rate.steps_[i].value * (end - rate.steps_[i].seconds);
  }
  if (rate.per_period_ <= 0) {
    return InvalidArgumentError(source + ": the rate is 0 throughout, so the stream would never deliver a sample");
  }
  return rate;
}

double StreamRate::ArrivedBy(double seconds) const {
  if (seconds <= 0) return 0;
  return TraceArrivedBy(seconds + offset_s_) - before_;
}

double StreamRate::WhenArrived(double samples) const {
  if (samples <= 0) return 0;
  return TraceWhenArrived(samples + before_) - offset_s_;
}

StreamRate StreamRate::From(double offset_s) const {
  StreamRate rate = *this;
  rate.offset_s_ = std::max(0.0, offset_s);
  rate.before_ = TraceArrivedBy(rate.offset_s_);
  return rate;
}

double StreamRate::TraceArrivedBy(double seconds) const {
  if (seconds <= 0) return 0;
  const double cycles = std::floor(seconds / period_);
  const double local = seconds - cycles * period_;
  double arrived = cycles * per_period_;
  for (size_t i = 0; i < steps_.size() && steps_[i].seconds < local; ++i) {
    const double end = i + 1 < steps_.size() ? steps_[i + 1].seconds : period_;
    arrived += steps_[i].value * (std::min(end, local) - steps_[i].seconds);
  }
  return arrived;
}

double StreamRate::TraceWhenArrived(double samples) const {
  if (samples <= 0) return 0;
  if (per_period_ <= 0) return std::numeric_limits<double>::infinity();
  // Whole periods first, then step by step through the one it completes in.
  double cycles = std::floor(samples / per_period_);
  double left = samples - cycles * per_period_;
  if (left <= 0) {
    // Exactly at a period's end: the last moment a sample arrived in it.
    cycles -= 1;
    left = per_period_;
  }
  for (size_t i = 0; i < steps_.size(); ++i) {
    const double end = i + 1 < steps_.size() ? steps_[i + 1].seconds : period_;
    const double here = steps_[i].value * (end - steps_[i].seconds);
    if (here >= left && steps_[i].value > 0) return cycles * period_ + steps_[i].seconds + left / steps_[i].value;
    left -= here;
  }
  return (cycles + 1) * period_;  // rounding left a hair over: the period's end
}

double StreamRate::MeanPerSecond() const { return per_period_ / period_; }

}  // namespace edgetrain

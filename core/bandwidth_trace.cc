#include "core/bandwidth_trace.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/step_csv.h"

namespace edgetrain {

StatusOr<BandwidthTrace> BandwidthTrace::Parse(std::string_view csv, std::string source) {
  EDGETRAIN_ASSIGN_OR_RETURN(std::vector<CsvStep> steps, ParseStepCsv(csv, source, "mbps", kMostMbps));
  BandwidthTrace trace;
  trace.source_ = std::move(source);
  for (const CsvStep& step : steps) trace.points_.push_back({step.seconds, step.value});
  trace.period_ = StepCsvPeriod(steps);
  return trace;
}

BandwidthTrace BandwidthTrace::Constant(double mbps) {
  BandwidthTrace trace;
  trace.source_ = "constant";
  trace.points_.push_back({0, mbps});
  return trace;
}

double BandwidthTrace::MbpsAt(double t) const {
  double local = std::fmod(std::max(0.0, t + offset_), period_);
  // The last sample whose start is <= local.
  return SampleAt(local)->mbps * scale_;
}

std::vector<TracePoint>::const_iterator BandwidthTrace::SampleAt(double local) const {
  auto it = std::upper_bound(points_.begin(), points_.end(), local,
                             [](double v, const TracePoint& p) { return v < p.seconds; });
  // Rounding can leave `local` a hair below 0 (a period of 1e-119 s over t of
  // seconds, found by tests/fuzz): that is the first sample, never the one
  // before it.
  return it == points_.begin() ? it : std::prev(it);
}

BandwidthTrace::Segment BandwidthTrace::SegmentAt(double t) const {
  t = std::max(0.0, t);
  double shifted = t + offset_;
  double cycles = std::floor(shifted / period_);
  double local = shifted - cycles * period_;
  const auto sample = SampleAt(local);
  const auto next = std::next(sample);
  double end_local = next == points_.end() ? period_ : next->seconds;
  double until = cycles * period_ + end_local - offset_;
  // Guard against rounding leaving `until` at or before `t`.
  if (until <= t) until = std::nextafter(t, std::numeric_limits<double>::infinity());
  return {sample->mbps * scale_, until};
}

double BandwidthTrace::MeanMbps() const {
  double area = 0;
  for (size_t i = 0; i < points_.size(); ++i) {
    double end = i + 1 < points_.size() ? points_[i + 1].seconds : period_;
    area += points_[i].mbps * (end - points_[i].seconds);
  }
  return area / period_ * scale_;
}

double BandwidthTrace::PeakMbps() const {
  double peak = 0;
  for (const TracePoint& p : points_) peak = std::max(peak, p.mbps);
  return peak * scale_;
}

BandwidthTrace BandwidthTrace::Shifted(double offset_seconds) const {
  BandwidthTrace t = *this;
  t.offset_ += offset_seconds;
  return t;
}

BandwidthTrace BandwidthTrace::Scaled(double factor) const {
  BandwidthTrace t = *this;
  t.scale_ *= factor;
  return t;
}

}  // namespace edgetrain

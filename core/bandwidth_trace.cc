#include "core/bandwidth_trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace edgetrain {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool ParseNumber(std::string_view s, double& out) {
  s = Trim(s);
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(out);
}

}  // namespace

StatusOr<BandwidthTrace> BandwidthTrace::Parse(std::string_view csv, std::string source) {
  BandwidthTrace trace;
  trace.source_ = std::move(source);
  auto error = [&](int line, const std::string& why) {
    return InvalidArgumentError(trace.source_ + ":" + std::to_string(line) + ": " + why);
  };

  int line_no = 0;
  bool seen_header = false;
  size_t pos = 0;
  while (pos <= csv.size()) {
    size_t nl = csv.find('\n', pos);
    if (nl == std::string_view::npos) nl = csv.size();
    std::string_view line = Trim(csv.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    if (line.empty()) continue;
    if (!seen_header) {
      if (line != "seconds,mbps") {
        return error(line_no, "expected the header \"seconds,mbps\", got \"" + std::string(line) + "\"");
      }
      seen_header = true;
      continue;
    }
    size_t comma = line.find(',');
    if (comma == std::string_view::npos || line.find(',', comma + 1) != std::string_view::npos) {
      return error(line_no, "expected two fields \"seconds,mbps\", got \"" + std::string(line) + "\"");
    }
    TracePoint p;
    if (!ParseNumber(line.substr(0, comma), p.seconds)) {
      return error(line_no, "seconds is not a number: \"" + std::string(line.substr(0, comma)) + "\"");
    }
    if (!ParseNumber(line.substr(comma + 1), p.mbps)) {
      return error(line_no, "mbps is not a number: \"" + std::string(line.substr(comma + 1)) + "\"");
    }
    if (p.mbps < 0) return error(line_no, "mbps must be >= 0 (got " + std::to_string(p.mbps) + ")");
    // Beyond what any link carries or any run lasts, a value is a typo; and
    // samples closer than a millisecond (below) would have a shaper step a
    // hair at a time (tests/fuzz found a trace with a 1e-119 s period).
    if (p.mbps > kMostMbps) return error(line_no, "mbps must be at most " + std::to_string(kMostMbps));
    if (p.seconds > kLongestSeconds) {
      return error(line_no, "seconds must be at most " + std::to_string(kLongestSeconds) + " (a year)");
    }
    if (trace.points_.empty() && p.seconds != 0) {
      return error(line_no, "the first sample must be at 0 seconds (got " + std::to_string(p.seconds) + ")");
    }
    if (!trace.points_.empty() && p.seconds <= trace.points_.back().seconds) {
      return error(line_no, "seconds must increase from row to row (" + std::to_string(p.seconds) +
                                " after " + std::to_string(trace.points_.back().seconds) + ")");
    }
    if (!trace.points_.empty() && p.seconds - trace.points_.back().seconds < kShortestStepSeconds) {
      return error(line_no, "samples must be at least 1 ms apart (" + std::to_string(p.seconds) + " after " +
                                std::to_string(trace.points_.back().seconds) + ")");
    }
    trace.points_.push_back(p);
  }
  if (!seen_header) return InvalidArgumentError(trace.source_ + ": empty trace (expected the header \"seconds,mbps\")");
  if (trace.points_.empty()) return InvalidArgumentError(trace.source_ + ": the trace has a header but no samples");

  const auto& pts = trace.points_;
  double last_step = pts.size() > 1 ? pts.back().seconds - pts[pts.size() - 2].seconds : 1.0;
  trace.period_ = pts.back().seconds + last_step;
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

#pragma once
// A measured link bandwidth over time (shared/traces/README.md): CSV with the
// header `seconds,mbps`, each row holding its bandwidth from its time until the
// next row. Replayed by link shapers; a run longer than the trace repeats it.

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/time.h"

namespace edgetrain {

struct TracePoint {
  double seconds = 0;  // start of this sample, from the trace's start
  double mbps = 0;     // bandwidth until the next sample; 0 means the link is down
};

class BandwidthTrace {
 public:
  // What Parse accepts: rates up to 1 Tbit/s, and steps as ParseStepCsv
  // (core/step_csv.h) takes them.
  static constexpr double kMostMbps = 1e6;

  // `source` names the text in error messages ("wifi-walk-away-1.csv:7: ...").
  static StatusOr<BandwidthTrace> Parse(std::string_view csv, std::string source);
  // A constant link, for unshaped runs and tests.
  static BandwidthTrace Constant(double mbps);

  // Bandwidth at `t` seconds after the trace started (t >= 0), after `Offset()`
  // and `Scale()`. Beyond the end the trace repeats from its start.
  double MbpsAt(double t) const;
  // The bandwidth at `t` and until when it holds (the next sample's time, in
  // the same timeline as `t`), for integrating the trace segment by segment.
  struct Segment {
    double mbps;
    double until;
  };
  Segment SegmentAt(double t) const;
  // Time-weighted mean over one period.
  double MeanMbps() const;
  // The most the link ever carries: no measurement of it can be above.
  double PeakMbps() const;
  // One repetition: the last sample lasts as long as the one before it.
  double PeriodSeconds() const { return period_; }

  // A view of the same trace shifted by `offset` seconds and scaled by `factor`,
  // as cluster profiles and benchmarks use it (worker i starts 20*i s in).
  BandwidthTrace Shifted(double offset_seconds) const;
  BandwidthTrace Scaled(double factor) const;

  const std::vector<TracePoint>& points() const { return points_; }
  const std::string& source() const { return source_; }

 private:
  // The sample holding at `local` seconds into one period.
  std::vector<TracePoint>::const_iterator SampleAt(double local) const;

  std::vector<TracePoint> points_;
  std::string source_;
  double period_ = 1;
  double offset_ = 0;
  double scale_ = 1;
};

}  // namespace edgetrain

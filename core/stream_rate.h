#pragma once
// How fast a worker's stream of samples arrives (spec.data.stream): a
// constant, or a rate trace, CSV with the header `seconds,samples_per_s`, each
// row's rate holding until the next row (core/step_csv.h), repeated past its
// end like a bandwidth trace. Arrivals are the rate's integral: a stream of
// 2.5 samples/s has had 5 samples at 2 s, whatever asks and however often.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/step_csv.h"
#include "core/status.h"

namespace edgetrain {

class StreamRate {
 public:
  // Past this a rate is a typo: a million samples a second is beyond what one
  // edge device trains on.
  static constexpr double kMostPerSecond = 1e6;

  static StreamRate Constant(double per_second);
  // `source` names the text in error messages. A trace whose rate is 0
  // throughout would never deliver a sample, and is refused.
  static StatusOr<StreamRate> Parse(std::string_view csv, const std::string& source);

  // Samples arrived in the first `seconds` of the stream (a real number; the
  // whole samples are its floor).
  double ArrivedBy(double seconds) const;
  // The earliest time by which `samples` have arrived: ArrivedBy(t) >= samples
  // (infinity for a constant rate of 0).
  double WhenArrived(double samples) const;
  // Time-weighted mean over one period.
  double MeanPerSecond() const;

  // The same stream begun `offset_s` seconds in (>= 0): a resumed run's,
  // going on where the run it resumes left it.
  StreamRate From(double offset_s) const;

 private:
  StreamRate() = default;
  // Of the trace from its start, whatever the stream's own.
  double TraceArrivedBy(double seconds) const;
  double TraceWhenArrived(double samples) const;

  std::vector<CsvStep> steps_;  // value: samples a second
  double period_ = 1;
  double per_period_ = 0;       // samples over one period
  double offset_s_ = 0;         // where in the trace the stream begins
  double before_ = 0;           // samples of the trace before it: TraceArrivedBy(offset_s_)
};

}  // namespace edgetrain

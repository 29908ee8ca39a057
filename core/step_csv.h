#pragma once
// A quantity over time as CSV: a header `seconds,NAME`, then one row a step,
// each value holding from its time until the next row's. Bandwidth traces
// (`seconds,mbps`) and stream rate traces (`seconds,samples_per_s`) are both
// written so (shared/traces/README.md, docs/streams.md).

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace edgetrain {

struct CsvStep {
  double seconds = 0;  // from the trace's start
  double value = 0;    // until the next step
};

// What ParseStepCsv accepts: steps up to a year in and at least a millisecond
// apart, the first at 0, values from 0 to `most`.
inline constexpr double kLongestStepCsvSeconds = 365.0 * 24 * 3600;
inline constexpr double kShortestCsvStepSeconds = 1e-3;

// The steps of `csv`, whose header must be `seconds,<value_name>`. `source`
// names the text in error messages ("walk.csv:7: ...").
StatusOr<std::vector<CsvStep>> ParseStepCsv(std::string_view csv, const std::string& source,
                                            std::string_view value_name, double most);

// One repetition of steps: the last lasts as long as the one before it (1 s
// when there is only one).
double StepCsvPeriod(const std::vector<CsvStep>& steps);

}  // namespace edgetrain

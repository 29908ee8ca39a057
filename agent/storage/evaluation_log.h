#pragma once
// The job's evaluations as they happen, one CSV row each, flushed at once:
// `seconds,iteration,samples,accuracy,energy_joules`. What benchmarks read to
// draw accuracy against time and find when a target was reached.

#include <fstream>
#include <optional>
#include <string>

#include "core/status.h"

namespace edgetrain::agent {

class EvaluationLog {
 public:
  // Starts `path` afresh with its header, or appends when `resume` (a resumed job).
  static StatusOr<EvaluationLog> Open(const std::string& path, bool resume);
  void Record(double seconds, int64_t iteration, int64_t samples, double accuracy, std::optional<double> energy_joules);

 private:
  explicit EvaluationLog(std::ofstream out) : out_(std::move(out)) {}
  std::ofstream out_;
};

}  // namespace edgetrain::agent

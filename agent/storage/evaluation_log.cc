#include "agent/storage/evaluation_log.h"

#include <filesystem>

namespace edgetrain::agent {

StatusOr<EvaluationLog> EvaluationLog::Open(const std::string& path, bool resume) {
  const bool fresh = !resume || !std::filesystem::exists(path);
  std::ofstream out(path, fresh ? std::ios::trunc : std::ios::app);
  if (!out) return FailedPreconditionError("cannot write " + path);
  if (fresh) out << "seconds,iteration,samples,accuracy,energy_joules\n" << std::flush;
  return EvaluationLog(std::move(out));
}

void EvaluationLog::Record(double seconds, int64_t iteration, int64_t samples, double accuracy,
                           std::optional<double> energy_joules) {
  out_ << seconds << ',' << iteration << ',' << samples << ',' << accuracy << ',';
  if (energy_joules) out_ << *energy_joules;
  out_ << '\n' << std::flush;
}

}  // namespace edgetrain::agent

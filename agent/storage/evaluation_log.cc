#include "agent/storage/evaluation_log.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <vector>

#include "agent/storage/atomic_file.h"

namespace edgetrain::agent {

namespace {

constexpr const char* kHeader = "seconds,iteration,samples,accuracy,energy_joules\n";

// The file with only its header and the rows of iterations up to `last`;
// the numbers of the lines left out that were no row at all, into `unread`.
Status DropRowsPast(const std::string& path, int64_t last, std::vector<int>& unread) {
  EDGETRAIN_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  std::istringstream lines(text);
  std::string kept, line;
  bool header = true, dropped = false;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (!header) {
      const size_t comma = line.find(',');
      int64_t iteration = 0;
      // A row the crash cut short (the file's last, with no end of line) is
      // dropped too, unsaid: a crash leaves one.
      const bool cut = lines.eof();
      const bool malformed = std::count(line.begin(), line.end(), ',') != 4 || comma == std::string::npos ||
                             !(std::istringstream(line.substr(comma + 1)) >> iteration);
      if (cut || malformed || iteration > last) {
        if (malformed && !cut) unread.push_back(number);
        dropped = true;
        continue;
      }
    }
    header = false;
    kept += line + "\n";
  }
  return dropped ? WriteFileAtomically(path, kept) : Status::Ok();
}

}  // namespace

StatusOr<EvaluationLog> EvaluationLog::Open(const std::string& path, std::optional<int64_t> resumed_at,
                                            std::vector<int>* unread) {
  if (resumed_at && std::filesystem::exists(path)) {
    std::vector<int> lines;
    EDGETRAIN_RETURN_IF_ERROR(DropRowsPast(path, *resumed_at, lines));
    if (unread) *unread = std::move(lines);
    std::ofstream out(path, std::ios::app);
    if (!out) return FailedPreconditionError("cannot write " + path);
    return EvaluationLog(path, std::move(out));
  }
  // Whether it could be written is known now, not at the first evaluation
  // (its folder or the file itself read-only), without touching it.
  const std::filesystem::path at(path);
  const std::string writable = std::filesystem::exists(at) ? path : at.parent_path().string();
  if (::access(writable.empty() ? "." : writable.c_str(), W_OK) != 0) {
    return FailedPreconditionError("cannot write " + path);
  }
  return EvaluationLog(path, std::ofstream());
}

void EvaluationLog::Begin() {
  if (out_.is_open()) return;
  out_.open(path_, std::ios::trunc);
  out_ << kHeader << std::flush;
}

void EvaluationLog::Record(double seconds, int64_t iteration, int64_t samples, double accuracy,
                           std::optional<double> energy_joules) {
  Begin();
  out_ << seconds << ',' << iteration << ',' << samples << ',' << accuracy << ',';
  if (energy_joules) out_ << *energy_joules;
  out_ << '\n' << std::flush;
}

}  // namespace edgetrain::agent

#include "agent/storage/evaluation_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "agent/storage/atomic_file.h"

namespace edgetrain::agent {

namespace {

constexpr const char* kHeader = "seconds,iteration,samples,accuracy,energy_joules\n";

// The file with its header and only the rows of iterations up to `last`;
// the numbers of the lines left out that were no row at all, into `unread`.
// A file without the header has it written first: one a power cut left
// empty had its rows appended headerless, and every later resume took the
// first row for the header (found in review).
Status DropRowsPast(const std::string& path, int64_t last, std::vector<int>& unread) {
  EDGETRAIN_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  std::istringstream lines(text);
  std::string kept = kHeader, line;
  bool rewrite = text.rfind(kHeader, 0) != 0;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (number == 1 && !rewrite) continue;  // the header, kept
    const size_t comma = line.find(',');
    int64_t iteration = 0;
    // A row the crash cut short (the file's last, with no end of line) is
    // dropped too, unsaid: a crash leaves one.
    const bool cut = lines.eof();
    const bool malformed = std::count(line.begin(), line.end(), ',') != 4 || comma == std::string::npos ||
                           !(std::istringstream(line.substr(comma + 1)) >> iteration);
    if (cut || malformed || iteration > last) {
      if (malformed && !cut) unread.push_back(number);
      rewrite = true;
      continue;
    }
    kept += line + "\n";
  }
  return rewrite ? WriteFileAtomically(path, kept) : Status::Ok();
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

Status EvaluationLog::Sync() {
  if (!out_.is_open()) return Status::Ok();
  out_.flush();
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  const bool synced = fd >= 0 && ::fsync(fd) == 0;
  const std::string why = synced ? "" : std::strerror(errno);
  if (fd >= 0) ::close(fd);
  if (!synced) return InternalError("cannot flush " + path_ + ": " + why);
  return Status::Ok();
}

void EvaluationLog::Record(double seconds, int64_t iteration, int64_t samples, double accuracy,
                           std::optional<double> energy_joules) {
  Begin();
  out_ << seconds << ',' << iteration << ',' << samples << ',' << accuracy << ',';
  if (energy_joules) out_ << *energy_joules;
  out_ << '\n' << std::flush;
}

}  // namespace edgetrain::agent

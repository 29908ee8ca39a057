#include "cli/run_curves.h"

#include <csignal>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agent/storage/atomic_file.h"
#include "cli/child_process.h"
#include "core/job_progress.h"

namespace edgetrain::cli {

namespace fs = std::filesystem;

namespace {

// Kept at most this often, and at most kSnapshotsPerLength times in a run as
// long as the one so far: about 600 snapshots a doubling of the run.
constexpr double kLeastInterval_s = 1.0;
constexpr double kSnapshotsPerLength = 600;

}  // namespace

RunCurves::RunCurves(fs::path output_dir) : output_dir_(std::move(output_dir)) {}

bool RunCurves::Due(double elapsed_s) const {
  return elapsed_s - last_elapsed_s_ >= std::max(kLeastInterval_s, elapsed_s / kSnapshotsPerLength);
}

std::string SnapshotLine(double t, const std::string& body) {
  std::ostringstream line;
  line << "{\"t\": " << t << ", \"progress\": " << body.substr(0, body.find('\n')) << "}\n";
  return line.str();
}

Status RunCurves::Record(double t, const JobProgress& progress, const std::string& body) {
  // Before the job trains, the coordinator does not yet say whether it resumed
  // (nor has it anything to draw): the history is started, or gone on with, from
  // its first snapshot of training.
  if (progress.state == JobState::kStarting) return Status::Ok();
  const bool first = pending_.empty() && !history_.is_open();
  if (!first && progress.state == last_state_ && !Due(progress.elapsed_s)) return Status::Ok();
  last_elapsed_s_ = progress.elapsed_s;
  last_state_ = progress.state;
  const bool resumed = progress.resumed_from_iteration.has_value();
  // A fresh run's history replaces the earlier one's only once it has
  // trained: one that took no step (a stream that brought nothing) leaves
  // the earlier history, as it leaves the model and picture drawn from it.
  if (!history_.is_open() && !resumed && progress.samples == 0) {
    pending_ += SnapshotLine(t, body);
    return Status::Ok();
  }
  if (!history_.is_open()) {
    std::error_code ec;
    fs::create_directories(output_dir_, ec);
    // A line the last run was cut short in (killed as it wrote) is ended
    // first, so that this run's first snapshot is a line of its own (it
    // was written on after it, and spoilt: a user's trial).
    bool torn = false;
    if (resumed) {
      EDGETRAIN_RETURN_IF_ERROR(DropSnapshotsPast(*progress.resumed_from_iteration));
      std::ifstream before(history_path(), std::ios::binary | std::ios::ate);
      if (before && before.tellg() > 0) {
        before.seekg(-1, std::ios::end);
        torn = before.get() != '\n';
      }
    }
    history_.open(history_path(), resumed ? std::ios::app : std::ios::trunc);
    if (!history_) return UnavailableError("cannot write " + history_path().string());
    if (torn) history_ << "\n";
    history_ << pending_;
    pending_.clear();
  }
  history_ << SnapshotLine(t, body) << std::flush;
  if (!history_) return UnavailableError("cannot write " + history_path().string());
  return Status::Ok();
}

Status RunCurves::DropSnapshotsPast(int64_t iteration) const {
  StatusOr<std::string> history = agent::ReadWholeFile(history_path().string());
  if (!history.ok()) return Status::Ok();  // none yet
  std::string kept;
  bool dropped = false;
  std::istringstream lines(*history);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json snapshot = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!snapshot.is_discarded() && snapshot.is_object() && snapshot.contains("progress") &&
        snapshot["progress"].is_object() && snapshot["progress"].value("iteration", int64_t{0}) > iteration) {
      dropped = true;
      continue;
    }
    kept += line + "\n";
  }
  if (!dropped) return Status::Ok();
  return agent::WriteFileAtomically(history_path().string(), kept);
}

Status DrawRunCurves(const RunCurves& curves, const std::string& plotter, const std::string& title,
                     const std::vector<std::string>& workers, Duration timeout, std::string* drew_saying) {
  if (curves.empty()) return FailedPreconditionError("no progress was recorded");
  std::error_code ec;
  if (!fs::exists(plotter, ec)) return NotFoundError(plotter + " is missing");
  std::vector<std::string> argv = {plotter, curves.history_path().string(), curves.picture_path().string(),
                                   "--title", title};
  for (const auto& w : workers) {
    argv.push_back("--worker");
    argv.push_back(w);
  }
  const fs::path log = curves.history_path().parent_path() / ".plot-run.log";
  auto child = ChildProcess::Spawn(argv, log.string());  // the plotter picks Agg itself
  if (!child.ok()) return child.status();
  child->CloseStdout();
  if (!child->ExitsWithin(timeout)) {
    child->Signal(SIGKILL);
    child->Wait(timeout);
    // What it was drawing beside the picture (plot_run.py), left half
    // written: the picture in place is the earlier one, whole.
    const fs::path picture = curves.picture_path();
    for (const auto& entry : fs::directory_iterator(picture.parent_path(), ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(picture.stem().string() + ".drawing-", 0) == 0) fs::remove(entry.path(), ec);
    }
    return DeadlineExceededError("drawing took longer than " + std::to_string(static_cast<int>(ToSeconds(timeout))) + " s");
  }
  const int code = child->Wait(timeout);
  StatusOr<std::string> logged = agent::ReadWholeFile(log.string());
  std::string said = logged.ok() ? *logged : "";
  fs::remove(log, ec);
  while (!said.empty() && said.back() == '\n') said.pop_back();
  if (said.rfind("edgetrain-plot-run: ", 0) == 0) said.erase(0, 20);
  if (code == 3) return FailedPreconditionError(said + " (apt-get install python3-matplotlib)");
  if (code == 2) return InvalidArgumentError(said);
  if (code != 0) return InternalError("edgetrain-plot-run exited " + std::to_string(code) + (said.empty() ? "" : ": " + said));
  // Its own words only, not a library's warnings on the way.
  if (drew_saying) {
    std::istringstream lines(logged.ok() ? *logged : std::string());
    drew_saying->clear();
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("edgetrain-plot-run: ", 0) != 0) continue;
      *drew_saying += (drew_saying->empty() ? "" : "; ") + line.substr(20);
    }
  }
  return Status::Ok();
}

}  // namespace edgetrain::cli

#pragma once
// A run's curves, for people who would rather look than read: the progress
// snapshots of a local run kept in its output folder (progress.jsonl), and
// drawn at its end as report.png (accuracy and loss, samples/s, each link,
// stall, energy, bytes) by edgetrain-plot-run, beside the binaries.
//
// The folder keeps them, not the run folder, so that a run interrupted or
// failed still leaves its history, and a resumed one draws its curves on from
// where the earlier run left them. A snapshot is kept at most once a second,
// and less often as the run grows long (at most about 600 per doubling of its
// length), so that a run of days keeps a file of megabytes, not gigabytes.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/job_progress.h"
#include "core/status.h"

namespace edgetrain::cli {

class RunCurves {
 public:
  explicit RunCurves(std::filesystem::path output_dir);

  std::filesystem::path history_path() const { return output_dir_ / "progress.jsonl"; }
  std::filesystem::path picture_path() const { return output_dir_ / "report.png"; }

  // A /progress body read `t` seconds into the run. The history goes on when
  // the job resumed from a checkpoint; otherwise it starts over once the job
  // has trained on a sample, the snapshots before then kept until it has.
  // Fails only when the history cannot be written.
  Status Record(double t, const JobProgress& progress, const std::string& body);
  // Whether anything was written to the history.
  bool empty() const { return !history_.is_open(); }

 private:
  bool Due(double elapsed_s) const;
  // A resumed run's history keeps no snapshot of an iteration past its
  // checkpoint: a run killed (its coordinator's SIGKILL) after its last
  // checkpoint had written them, and the curves drawn on from the resumed
  // run's doubled back (a user's trial), where evaluations.csv was cut back.
  Status DropSnapshotsPast(int64_t iteration) const;

  std::filesystem::path output_dir_;
  std::ofstream history_;
  std::string pending_;  // snapshots of a fresh run before its first sample
  double last_elapsed_s_ = 0;
  JobState last_state_ = JobState::kStarting;
};

// One line of a history: {"t": seconds into the run, "progress": the body}
// (--progress-log keeps every snapshot so, the curves the ones they keep).
std::string SnapshotLine(double t, const std::string& body);

// Draws `curves`' history as its picture with `plotter` (edgetrain-plot-run),
// naming the workers; waits at most `timeout`. What went wrong, for a note;
// drawn, what it said as it drew (lines of the history it left out) goes to
// `said`, if given.
Status DrawRunCurves(const RunCurves& curves, const std::string& plotter, const std::string& title,
                     const std::vector<std::string>& workers, Duration timeout, std::string* said = nullptr);

}  // namespace edgetrain::cli

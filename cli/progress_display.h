#pragma once
// How a running job looks to a person: on a terminal, one bar redrawn in place;
// in a log or CI, a plain line now and then.

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/job_progress.h"
#include "core/number_text.h"

namespace edgetrain::cli {

// "[########------------]  40% it 1,200 loss 0.412 acc 0.853 (it 1,000) 5,820 samples/s
//  waiting on robot-2 00:12 ETA 00:18": the accuracy of the last evaluation and
// the iteration it was of; the workers the team waits on now, by `names` (the
// nodes of the plan; by rank when none).
std::string FormatProgressBar(const JobProgress& p, int bar_width, const std::vector<std::string>& names = {});
// "it 1,200 (40%) loss 0.412 acc 0.853 (it 1,000) 5,820 samples/s elapsed 00:12 eta 00:18"
std::string FormatProgressLine(const JobProgress& p, const std::vector<std::string>& names = {});
// The bar line within `columns` (0 or less: unknown, whole), a column to
// spare: its bar narrower or none on a narrower terminal, and its measures
// cut (ending "~") before the time and what the job is doing.
std::string FormatProgressBarWithin(const JobProgress& p, int columns, const std::vector<std::string>& names = {});
// `line` cut to its first `columns` code points; whole when `columns` <= 0.
std::string FitToColumns(const std::string& line, int columns);
// The columns of the terminal standard error is, or 0 when it is none.
int StderrColumns();
// The node worker `rank` runs on, or "worker N".
std::string WorkerName(int rank, const std::vector<std::string>& names);
// (0.87254, 3) -> "0.873"
std::string Fixed(double v, int digits);

class ProgressDisplay {
 public:
  // `terminal`: redraw one line in place, within `columns` (asked at each
  // redraw: a terminal may be resized; 0 or none: unknown, not cut);
  // otherwise print a line every `every`. `worker_names`: the node each rank runs on.
  ProgressDisplay(std::ostream& out, bool terminal, Clock& clock, Duration every = std::chrono::seconds(5),
                  std::vector<std::string> worker_names = {}, std::function<int()> columns = StderrColumns);
  void Show(const JobProgress& p);
  // Ends the bar's line so what follows starts on its own.
  void Finish();

 private:
  std::ostream& out_;
  bool terminal_;
  Clock& clock_;
  Duration every_;
  std::vector<std::string> names_;
  std::function<int()> columns_;
  TimePoint last_line_{};
  std::string last_text_;  // the last line printed
  bool drawn_ = false;
};

}  // namespace edgetrain::cli

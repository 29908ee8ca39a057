#include "cli/progress_display.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string_view>

#include "core/duration_text.h"

namespace edgetrain::cli {
namespace {

// The bar's width, and its width on a terminal of fewer than 120 columns.
constexpr int kBarWidth = 24;
constexpr int kNarrowBarWidth = 10;
// Training time a rate is shown after.
constexpr double kLeastSecondsForARate = 1;
// A team worker's silence worth a word: a live link's pushes come every 20 ms.
constexpr double kSilentWorthSaying = 2;

// What a figure from the coordinator's /progress is shown as: a fraction
// within [0, 1] (one above 1 threw from the bar's std::string and ended the
// run: found in review), and a time or rate only where it is finite and
// within what a job may last (1e300 samples/s read "-0 samples/s").
double ShownFraction(double f) { return std::isfinite(f) ? std::clamp(f, 0.0, 1.0) : 0.0; }
std::optional<std::string> ShownClock(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > ToSeconds(kLongestDuration)) return std::nullopt;
  return FormatClock(FromSeconds(seconds));
}

// Training has stopped and the job is finishing; empty while it trains.
// Finishing is said as evaluating the final model while it is: a vgg's test
// set through a pipeline's head took 20 s, said as "finishing" alone (a new
// user's trial).
std::string Stopping(const JobProgress& p) {
  if (!p.stop_reason || p.state != JobState::kTraining) return "";
  const std::string finishing = p.evaluating ? "evaluating the final model" : "finishing";
  switch (*p.stop_reason) {
    case StopReason::kTarget: return "- target reached: " + finishing;
    case StopReason::kEpochs:
    case StopReason::kWallClock:
    case StopReason::kEnergy: return "- budget spent: " + finishing;
    case StopReason::kCancelled: return "- stopping";
    case StopReason::kFailed: return "";
  }
  return "";
}

// The parts both formats share, after the iteration count. The accuracy is
// the last evaluation's, of the model as it was at the iteration named; the
// result's is the final model's, which training may have moved since.
std::string Measures(const JobProgress& p, const std::vector<std::string>& names) {
  // Before its first step there is no loss or rate to show. (A team of
  // streams counts iterations in full batches' worth of samples: it has
  // stepped once it trained on any.)
  const bool stepped = p.iteration > 0 || p.samples > 0;
  // A resumed run's first moments carry its checkpoint's iteration but no
  // loss of this run yet (0): "loss -" rather than a loss of nothing.
  std::string s = !stepped ? "no step yet" : p.loss > 0 ? "loss " + Fixed(p.loss, 3) : "loss -";
  if (p.accuracy) {
    s += " acc " + Fixed(*p.accuracy, 3);
    if (p.evaluated_iteration && *p.evaluated_iteration != p.iteration) {
      s += " (it " + WithThousands(*p.evaluated_iteration) + ")";
    }
  }
  // A rate over less than a second of training is a few batches over a
  // sliver of time: a new user's first line said 13,236 samples/s of a run
  // that trained at 200.
  if (stepped && p.elapsed_s >= kLeastSecondsForARate && std::isfinite(p.samples_per_second) &&
      p.samples_per_second >= 0 && p.samples_per_second < 1e15) {
    s += " " + WithThousands(static_cast<int64_t>(std::lround(p.samples_per_second))) + " samples/s";
  }
  // A team on streams: what has arrived, so that a user feeding a folder
  // sees the files taken in as they go (a user's trial: the line said
  // nothing of streams).
  int64_t arrived = 0, buffered = 0, dropped = 0;
  bool streams = false;
  for (const WorkerProgress& w : p.workers) {
    if (!w.stream) continue;
    streams = true;
    arrived += w.stream->arrived;
    buffered += w.stream->backlog;
    dropped += w.stream->dropped;
  }
  if (streams) {
    s += " arrived " + WithThousands(arrived);
    std::string held;
    if (buffered > 0) held = WithThousands(buffered) + " buffered";
    if (dropped > 0) held += (held.empty() ? "" : ", ") + WithThousands(dropped) + " dropped";
    if (!held.empty()) s += " (" + held + ")";
  }
  std::string waiting, silent;
  for (const WorkerProgress& w : p.workers) {
    // Still in the team and not heard from for seconds: its link is likely
    // out, and the figures it last sent are as old as that. Not once
    // training has stopped, when every worker falls silent.
    const std::string quiet = !p.stop_reason && w.active && w.silent_s >= kSilentWorthSaying
                                  ? "silent " + std::to_string(static_cast<int>(w.silent_s)) + " s"
                                  : "";
    if (w.holding_team) {
      waiting += (waiting.empty() ? " waiting on " : ", ") + WorkerName(w.rank, names) +
                 (quiet.empty() ? "" : " (" + quiet + ")");
    } else if (!quiet.empty()) {
      silent += (silent.empty() ? "" : ", ") + WorkerName(w.rank, names) + " " + quiet;
    }
  }
  return s + waiting + (silent.empty() ? "" : (waiting.empty() ? " " : "; ") + silent);
}

}  // namespace

std::string WorkerName(int rank, const std::vector<std::string>& names) {
  return static_cast<size_t>(rank) < names.size() ? names[rank] : "worker " + std::to_string(rank);
}

std::string Fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

namespace {

// The bar line in three: what comes first (the bar, the share, the
// iteration), the measures, and the time with what the job is doing.
struct BarParts {
  std::string head, measures, tail;
};

BarParts BarPartsOf(const JobProgress& p, int bar_width, const std::vector<std::string>& names) {
  const double fraction = ShownFraction(p.fraction);
  const int filled = static_cast<int>(std::lround(fraction * bar_width));
  std::string bar =
      bar_width > 0 ? "[" + std::string(filled, '#') + std::string(bar_width - filled, '-') + "] " : std::string();
  char percent[8];
  std::snprintf(percent, sizeof percent, "%3d%%", static_cast<int>(std::lround(fraction * 100)));
  BarParts parts{bar + percent + " it " + WithThousands(p.iteration) + " ", Measures(p, names),
                 " " + ShownClock(p.elapsed_s).value_or("-")};
  if (const std::string stopping = Stopping(p); !stopping.empty()) {
    parts.tail += " " + stopping;
  } else if (p.evaluating) {
    parts.tail += " - evaluating on the test set";
  } else if (const std::optional<std::string> eta = p.eta_s ? ShownClock(*p.eta_s) : std::nullopt) {
    parts.tail += " ETA " + *eta;
  }
  return parts;
}

// Code points, as FitToColumns counts them.
int CodePoints(const std::string& text) {
  return static_cast<int>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace

std::string FormatProgressBar(const JobProgress& p, int bar_width, const std::vector<std::string>& names) {
  const BarParts parts = BarPartsOf(p, bar_width, names);
  return parts.head + parts.measures + parts.tail;
}

std::string FormatProgressBarWithin(const JobProgress& p, int columns, const std::vector<std::string>& names) {
  if (columns <= 0) return FormatProgressBar(p, kBarWidth, names);
  // The bar's width by the terminal's, not by the line's length, which
  // changes from one redraw to the next: the bar had jumped between widths.
  const int bar_width = columns >= 120 ? kBarWidth : columns >= 80 ? kNarrowBarWidth : 0;
  BarParts parts = BarPartsOf(p, bar_width, names);
  // What is cut is the measures' end, so that the time and what the job is
  // doing stay: cut at the line's end, they went first, and a job finishing
  // read as a bar standing still (a new user's trial at 50 columns).
  const int room = columns - 1 - CodePoints(parts.head) - CodePoints(parts.tail);
  if (CodePoints(parts.measures) > room) {
    // Between words, so that no figure is cut short ("(it 1,0~" read as
    // another iteration), and not after a name whose figure it cut off
    // ("acc~"), nor a rate whose unit it cut off ("72,548~"): the last word
    // goes too, then.
    const std::string& whole = parts.measures;
    // No room for a figure and its "~": none (FitToColumns takes a width
    // under 1 as none asked, and left every measure, and the tail was cut
    // instead: found in review).
    std::string cut = room > 1 ? FitToColumns(whole, room - 1) : std::string();
    if (cut.size() < whole.size() && whole[cut.size()] != ' ') {
      const size_t space = cut.rfind(' ');
      cut.resize(space == std::string::npos ? 0 : space);
    }
    auto has_digit = [](std::string_view word) {
      return std::any_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    for (;;) {
      while (!cut.empty() && cut.back() == ' ') cut.pop_back();
      const size_t space = cut.rfind(' ');
      const size_t last_at = space == std::string::npos ? 0 : space + 1;
      const size_t next_at = whole.find_first_not_of(' ', cut.size());
      const bool before_a_figure = next_at != std::string::npos &&
                                   (std::isdigit(static_cast<unsigned char>(whole[next_at])) || whole[next_at] == '(');
      const bool before_its_unit = next_at != std::string::npos && whole.compare(next_at, 9, "samples/s") == 0;
      const bool figure = has_digit(std::string_view(cut).substr(last_at));
      if (cut.empty() || (figure && !before_its_unit) || (!figure && !before_a_figure)) break;
      cut.resize(last_at);
    }
    parts.measures = cut.empty() ? std::string() : cut + "~";
    if (parts.measures.empty()) parts.head.pop_back();  // its space, the tail has its own
  }
  // A terminal of one column takes nothing; FitToColumns of 0 would be all.
  return columns > 1 ? FitToColumns(parts.head + parts.measures + parts.tail, columns - 1) : std::string();
}

std::string FitToColumns(const std::string& line, int columns) {
  if (columns <= 0) return line;
  // Columns as code points: a node's name may be UTF-8 (one that is two
  // columns wide, a CJK name's, still overflows by its extra).
  int shown = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) continue;  // a code point's later byte
    if (++shown > columns) return line.substr(0, i);
  }
  return line;
}

std::string FormatProgressLine(const JobProgress& p, const std::vector<std::string>& names) {
  std::string s = "it " + WithThousands(p.iteration) + " (" +
                  std::to_string(std::lround(ShownFraction(p.fraction) * 100)) + "%) " + Measures(p, names) +
                  " elapsed " + ShownClock(p.elapsed_s).value_or("-");
  if (const std::string stopping = Stopping(p); !stopping.empty()) {
    s += " " + stopping;
  } else if (p.evaluating) {
    s += " - evaluating on the test set";
  } else if (const std::optional<std::string> eta = p.eta_s ? ShownClock(*p.eta_s) : std::nullopt) {
    s += " eta " + *eta;
  }
  return s;
}

int StderrColumns() {
  struct winsize size {};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) != 0) return 0;
  return size.ws_col;
}

ProgressDisplay::ProgressDisplay(std::ostream& out, bool terminal, Clock& clock, Duration every,
                                 std::vector<std::string> worker_names, std::function<int()> columns)
    : out_(out), terminal_(terminal), clock_(clock), every_(every), names_(std::move(worker_names)),
      columns_(std::move(columns)) {}

void ProgressDisplay::Show(const JobProgress& p) {
  if (p.state == JobState::kStarting) return;
  if (terminal_) {
    // \r back to the line's start, \033[K clears what a longer line left
    // behind. Within the terminal's width, a column to spare: a line that
    // wrapped was redrawn from its last row, and each redraw left a row
    // behind (found in review).
    out_ << "\r" << FormatProgressBarWithin(p, columns_ ? columns_() : 0, names_) << "\033[K" << std::flush;
    drawn_ = true;
    return;
  }
  TimePoint now = clock_.Now();
  if (last_line_ != TimePoint{} && now - last_line_ < every_) return;
  // Once training has stopped its line stands still while the job finishes
  // (the final evaluation, the model saved): said once, not every period
  // (a new user's trial saw "budget spent: finishing" five times).
  std::string line = FormatProgressLine(p, names_);
  if (line == last_text_) return;
  last_line_ = now;
  out_ << line << "\n" << std::flush;
  last_text_ = std::move(line);
}

void ProgressDisplay::Finish() {
  if (terminal_ && drawn_) out_ << "\n" << std::flush;
  drawn_ = false;
}

}  // namespace edgetrain::cli

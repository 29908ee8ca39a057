#include "core/step_csv.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace edgetrain {
namespace {

// A figure as written, not to six places: "3", "0.25", "1e+06".
std::string Shown(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A line as quoted in an error, its invisible bytes shown: a tab-separated
// header was quoted with a raw tab, which reads as spaces (a user's trial).
std::string Visible(std::string_view line) {
  std::string out;
  for (unsigned char c : line) {
    if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

bool ParseNumber(std::string_view s, double& out) {
  s = Trim(s);
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(out);
}

}  // namespace

StatusOr<std::vector<CsvStep>> ParseStepCsv(std::string_view csv, const std::string& source,
                                            std::string_view value_name, double most) {
  const std::string header = "seconds," + std::string(value_name);
  const std::string name(value_name);
  auto error = [&](int line, const std::string& why) {
    return InvalidArgumentError(source + ":" + std::to_string(line) + ": " + why);
  };
  // A spreadsheet's "CSV UTF-8" starts with a byte-order mark, which the
  // header was refused for, unseen in the message (a user's trial).
  if (csv.substr(0, 3) == "\xEF\xBB\xBF") csv.remove_prefix(3);
  std::vector<CsvStep> steps;
  int line_no = 0;
  bool seen_header = false;
  size_t pos = 0;
  while (pos <= csv.size()) {
    size_t nl = csv.find('\n', pos);
    if (nl == std::string_view::npos) nl = csv.size();
    std::string_view line = Trim(csv.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    if (line.empty()) continue;
    if (!seen_header) {
      if (line != header) {
        const bool tabbed = line.find('\t') != std::string_view::npos;
        return error(line_no, "expected the header \"" + header + "\", got \"" + Visible(line) + "\"" +
                                  (tabbed ? " (fields are separated by a comma)" : ""));
      }
      seen_header = true;
      continue;
    }
    size_t comma = line.find(',');
    if (comma == std::string_view::npos || line.find(',', comma + 1) != std::string_view::npos) {
      return error(line_no, "expected two fields \"" + header + "\", got \"" + Visible(line) + "\"");
    }
    CsvStep p;
    if (!ParseNumber(line.substr(0, comma), p.seconds)) {
      return error(line_no, "seconds is not a number: \"" + Visible(line.substr(0, comma)) + "\"");
    }
    if (!ParseNumber(line.substr(comma + 1), p.value)) {
      return error(line_no, name + " is not a number: \"" + Visible(line.substr(comma + 1)) + "\"");
    }
    if (p.value < 0) return error(line_no, name + " must be >= 0 (got " + Shown(p.value) + ")");
    // Beyond what any link carries or any run lasts, a value is a typo; and
    // steps closer than a millisecond (below) would have a shaper step a hair
    // at a time (tests/fuzz found a trace with a 1e-119 s period).
    if (p.value > most) return error(line_no, name + " must be at most " + Shown(most));
    if (p.seconds > kLongestStepCsvSeconds) {
      return error(line_no, "seconds must be at most " + Shown(kLongestStepCsvSeconds) + " (a year)");
    }
    if (steps.empty() && p.seconds != 0) {
      return error(line_no, "the first sample must be at 0 seconds (got " + Shown(p.seconds) + ")");
    }
    if (!steps.empty() && p.seconds <= steps.back().seconds) {
      return error(line_no, "seconds must increase from row to row (" + Shown(p.seconds) + " after " +
                                Shown(steps.back().seconds) + ")");
    }
    if (!steps.empty() && p.seconds - steps.back().seconds < kShortestCsvStepSeconds) {
      return error(line_no, "samples must be at least 1 ms apart (" + Shown(p.seconds) + " after " +
                                Shown(steps.back().seconds) + ")");
    }
    steps.push_back(p);
  }
  if (!seen_header) return InvalidArgumentError(source + ": empty trace (expected the header \"" + header + "\")");
  if (steps.empty()) return InvalidArgumentError(source + ": the trace has a header but no samples");
  return steps;
}

double StepCsvPeriod(const std::vector<CsvStep>& steps) {
  const double last_step = steps.size() > 1 ? steps.back().seconds - steps[steps.size() - 2].seconds : 1.0;
  return steps.back().seconds + last_step;
}

}  // namespace edgetrain

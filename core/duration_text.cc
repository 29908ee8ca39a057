#include "core/duration_text.h"

#include <cctype>
#include <charconv>
#include <cstdio>

#include "core/quoted_text.h"

namespace edgetrain {

StatusOr<Duration> ParseDuration(std::string_view text) {
  auto bad = [&](const char* why) {
    return InvalidArgumentError("invalid duration " + QuotedExcerpt(text) + ": " + why +
                                " (examples: 90s, 10m, 1h30m, 250ms)");
  };
  if (text == "0") return Duration::zero();
  if (text.empty()) return bad("empty");
  double seconds = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == start) return bad(text[i] == '-' ? "a duration is not negative" : "expected a number");
    double number = 0;
    auto [end, ec] = std::from_chars(text.data() + start, text.data() + i, number);
    if (ec != std::errc() || end != text.data() + i) return bad("malformed number");
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    if (unit == "ms") seconds += number / 1000;
    else if (unit == "s") seconds += number;
    else if (unit == "m") seconds += number * 60;
    else if (unit == "h") seconds += number * 3600;
    else return bad(unit.empty() ? "missing unit" : "unknown unit");
  }
  // Past what a Duration holds (2562047h), it wrapped negative and was
  // refused as "not longer than 0"; and durations are added to the clock and
  // doubled (a worker waits for its coordinator twice the node-loss grace and
  // more), which overflowed from 1,300,000h: a worker then gave up at once,
  // "unreachable for -2147483648 s" (two security reviews). Eleven years is
  // longer than any budget or grace, and leaves that arithmetic room.
  if (seconds > ToSeconds(kLongestDuration)) return bad("longer than edgetrain counts (at most 100000h, 11 years)");
  return FromSeconds(seconds);
}

std::string FormatDuration(Duration d) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  if (ms <= 0) return "0s";
  if (ms < 1000) return std::to_string(ms) + "ms";
  if (ms % 1000 != 0) {  // "2.5s"
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ms) / 1000);
    std::string text = buf;
    text.erase(text.find_last_not_of('0') + 1);
    return text + "s";
  }
  long s = static_cast<long>(ms / 1000);
  std::string out;
  if (s >= 3600) out += std::to_string(s / 3600) + "h";
  if (s % 3600 >= 60) out += std::to_string(s % 3600 / 60) + "m";
  if (s % 60 != 0) out += std::to_string(s % 60) + "s";
  return out;
}

std::string FormatClock(Duration d) {
  long total = static_cast<long>(ToSeconds(d) + 0.5);
  if (total < 0) total = 0;
  char buf[32];
  if (total >= 3600) {
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%02ld:%02ld", total / 60, total % 60);
  }
  return buf;
}

}  // namespace edgetrain

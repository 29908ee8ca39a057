#include "operator/kube/kube_time.h"

#include <cstdio>
#include <ctime>

namespace edgetrain::kube {

std::string FormatKubeTime(WallTime t) { return UtcText(t); }

std::string FormatKubeTimePrecise(WallTime t) {
  const bool whole = std::chrono::floor<std::chrono::seconds>(t) == std::chrono::floor<std::chrono::milliseconds>(t);
  return whole ? UtcText(t) : UtcTextMillis(t);
}

std::optional<WallTime> ParseKubeTime(const std::string& text) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  size_t at = static_cast<size_t>(consumed);
  // The fraction to the microsecond (MicroTime's, and the operator's own
  // precise times: a recovery counted from them to the second was dated
  // before the kill that caused it).
  std::chrono::microseconds fraction{0};
  if (at < text.size() && text[at] == '.') {
    ++at;
    int64_t scale = 100000;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      fraction += std::chrono::microseconds((text[at] - '0') * scale);
      scale /= 10;
      ++at;
    }
  }
  long offset = 0;
  if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    int hours = 0, minutes = 0;
    if (std::sscanf(text.c_str() + at + 1, "%2d:%2d", &hours, &minutes) != 2) return std::nullopt;
    offset = (text[at] == '+' ? 1 : -1) * (hours * 3600L + minutes * 60L);
  } else if (at >= text.size() || (text[at] != 'Z' && text[at] != 'z')) {
    return std::nullopt;
  }
  const std::time_t utc = timegm(&tm) - offset;
  return std::chrono::system_clock::from_time_t(utc) + fraction;
}

}  // namespace edgetrain::kube

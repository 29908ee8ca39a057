#include "core/utc_time_text.h"

#include <cstdio>
#include <ctime>

namespace edgetrain {

std::string UtcText(WallTime t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string UtcTextMillis(WallTime t) {
  std::string text = UtcText(t);  // "...:53Z"
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  char fraction[8];
  std::snprintf(fraction, sizeof fraction, ".%03dZ", static_cast<int>(ms));
  text.pop_back();
  return text + fraction;
}

std::string LogLineStamp(WallTime t) { return "time=" + UtcTextMillis(t) + " "; }

}  // namespace edgetrain

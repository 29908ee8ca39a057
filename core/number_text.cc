#include "core/number_text.h"

#include <cstdio>

namespace edgetrain {

std::string CountOf(int64_t n, const char* one, const char* many) {
  return WithThousands(n) + " " + (n == 1 ? one : many);
}

std::string WithThousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string PlainNumber(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

std::string BinaryBytes(double bytes, int decimals) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  char text[48];
  if (bytes < 1024) {
    std::snprintf(text, sizeof text, "%.0f B", bytes);
    return text;
  }
  int unit = 0;
  bytes /= 1024;
  while (unit < 3 && bytes >= 1024) bytes /= 1024, ++unit;
  std::snprintf(text, sizeof text, "%.*f %s", decimals, bytes, kUnits[unit]);
  return text;
}

}  // namespace edgetrain

#include "core/quantity.h"

#include <array>
#include <cctype>
#include <limits>
#include <optional>
#include <utility>

namespace edgetrain {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

struct Suffix {
  std::string_view text;
  int base;      // 2 or 10
  int exponent;  // of the base
};

// Longest first, so that "Mi" is not read as "M" and a stray "i".
// A suffix is matched whole, so "Mi" is never read as "M".
constexpr std::array<Suffix, 15> kSuffixes{{
    {"Ki", 2, 10}, {"Mi", 2, 20}, {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60},
    {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"k", 10, 3}, {"M", 10, 6}, {"G", 10, 9}, {"T", 10, 12},
    {"P", 10, 15}, {"E", 10, 18},
}};

Status Refuse(std::string_view text, std::string_view why) {
  return InvalidArgumentError("quantity \"" + std::string(text) + "\": " + std::string(why));
}

// value * factor, or nullopt on overflow.
std::optional<int64_t> Times(int64_t value, int64_t factor) {
  if (value != 0 && factor > kMax / value) return std::nullopt;
  return value * factor;
}

}  // namespace

StatusOr<int64_t> ParseQuantityMillis(std::string_view text) {
  if (text.empty()) return Refuse(text, "empty");
  std::string_view rest = text;
  bool negative = false;
  if (rest.front() == '+' || rest.front() == '-') {
    negative = rest.front() == '-';
    rest.remove_prefix(1);
  }
  // Digits, with at most one point: as an exact integer and a count of decimals.
  int64_t digits = 0;
  int decimals = 0;
  bool seen_digit = false, seen_point = false;
  while (!rest.empty() && (std::isdigit(static_cast<unsigned char>(rest.front())) || rest.front() == '.')) {
    if (rest.front() == '.') {
      if (seen_point) return Refuse(text, "two decimal points");
      seen_point = true;
    } else {
      seen_digit = true;
      // Digits past what an int64 holds can only be trailing precision below a
      // milli-unit once scaled; refuse them rather than round silently.
      std::optional<int64_t> shifted = Times(digits, 10);
      if (!shifted || *shifted > kMax - (rest.front() - '0')) return Refuse(text, "too many digits");
      digits = *shifted + (rest.front() - '0');
      if (seen_point) ++decimals;
    }
    rest.remove_prefix(1);
  }
  if (!seen_digit) return Refuse(text, "no number");

  // The suffix: a binary or decimal SI unit, or a decimal exponent (e3, E-2).
  int base = 10, exponent = 0;
  if (!rest.empty()) {
    bool matched = false;
    if ((rest.front() == 'e' || rest.front() == 'E') && rest.size() > 1) {
      std::string_view e = rest.substr(1);
      bool minus = false;
      if (e.front() == '+' || e.front() == '-') {
        minus = e.front() == '-';
        e.remove_prefix(1);
      }
      if (!e.empty() && e.size() <= 3) {
        int value = 0;
        bool all_digits = true;
        for (char c : e) {
          if (!std::isdigit(static_cast<unsigned char>(c))) all_digits = false;
          value = value * 10 + (c - '0');
        }
        if (all_digits) {
          exponent = minus ? -value : value;
          matched = true;
        }
      }
    }
    for (const Suffix& s : kSuffixes) {
      if (!matched && rest == s.text) {
        base = s.base;
        exponent = s.exponent;
        matched = true;
      }
    }
    if (!matched) return Refuse(text, "unknown suffix \"" + std::string(rest) + "\"");
  }

  // value = digits * 10^-decimals * base^exponent, in thousandths.
  int64_t numerator = digits;
  int ten_power = 3 - decimals;  // thousandths
  if (base == 10) {
    ten_power += exponent;
  } else {
    for (int i = 0; i < exponent; ++i) {
      std::optional<int64_t> next = Times(numerator, 2);
      if (!next) return Refuse(text, "too large");
      numerator = *next;
    }
  }
  for (; ten_power > 0; --ten_power) {
    std::optional<int64_t> next = Times(numerator, 10);
    if (!next) return Refuse(text, "too large");
    numerator = *next;
  }
  // Below a thousandth rounds up, as Kubernetes rounds a quantity to milli-precision.
  for (; ten_power < 0; ++ten_power) numerator = numerator / 10 + (numerator % 10 != 0 ? 1 : 0);
  return negative ? -numerator : numerator;
}

StatusOr<int64_t> ParseQuantityUnits(std::string_view text) {
  StatusOr<int64_t> millis = ParseQuantityMillis(text);
  if (!millis.ok()) return millis.status();
  int64_t m = *millis;
  return m / 1000 + (m % 1000 > 0 ? 1 : 0);
}

std::string FormatQuantityMillis(int64_t millis) {
  if (millis % 1000 == 0) return std::to_string(millis / 1000);
  return std::to_string(millis) + "m";
}

std::string FormatCpuMillis(int64_t millis) { return FormatQuantityMillis(millis); }

std::string FormatBytes(int64_t bytes) {
  static constexpr std::array<std::pair<std::string_view, int>, 5> kUnits{
      {{"Pi", 50}, {"Ti", 40}, {"Gi", 30}, {"Mi", 20}, {"Ki", 10}}};
  if (bytes != 0) {
    for (const auto& [unit, shift] : kUnits) {
      int64_t size = int64_t{1} << shift;
      if (bytes % size == 0) return std::to_string(bytes / size) + std::string(unit);
    }
  }
  return std::to_string(bytes);
}

}  // namespace edgetrain

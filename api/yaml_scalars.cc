#include "api/yaml_scalars.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "core/quoted_text.h"

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;

bool IsDigitIn(char c, int base) {
  if (base <= 10) return c >= '0' && c < '0' + base;
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Go's strconv.ParseUint(s, 0, 64) on digits with no sign: 0x, 0o and 0b
// prefixes, a leading 0 for octal, else decimal. nullopt: not such a number,
// or past 64 bits.
std::optional<uint64_t> GoUnsigned(std::string_view s) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16, s.remove_prefix(2);
  } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) {
    base = 8, s.remove_prefix(2);
  } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
    base = 2, s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8, s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  uint64_t value = 0;
  for (char c : s) {
    if (!IsDigitIn(c, base)) return std::nullopt;
    const uint64_t digit = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / base) return std::nullopt;
    value = value * base + digit;
  }
  return value;
}

// go-yaml's yamlStyleFloat: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsYamlStyleFloat(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i > from;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) return false;
  } else {
    if (!digits()) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

// A float as the JSON kubectl sends carries it: encoding/json writes a whole
// number below 1e21 without a point, and the API server reads such a number
// back as an integer where it fits 64 bits.
Json AsSent(double v) {
  if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 9.2e18) return static_cast<int64_t>(v);
  return v;
}

// strtod on a number already known to be one: infinite past a double's range.
double ToDouble(const std::string& s) { return std::strtod(s.c_str(), nullptr); }

}  // namespace

Json ResolvePlainScalar(std::string_view text) {
  static const std::set<std::string_view> kNull{"", "~", "null", "Null", "NULL"};
  static const std::set<std::string_view> kTrue{"y",    "Y",    "yes", "Yes", "YES", "true",
                                                 "True", "TRUE", "on",  "On",  "ON"};
  static const std::set<std::string_view> kFalse{"n",     "N",     "no",  "No",  "NO",  "false",
                                                  "False", "FALSE", "off", "Off", "OFF"};
  if (kNull.count(text)) return nullptr;
  if (kTrue.count(text)) return true;
  if (kFalse.count(text)) return false;
  if (text == ".inf" || text == ".Inf" || text == ".INF" || text == "+.inf" || text == "+.Inf" || text == "+.INF") {
    return std::numeric_limits<double>::infinity();
  }
  if (text == "-.inf" || text == "-.Inf" || text == "-.INF") return -std::numeric_limits<double>::infinity();
  if (text == ".nan" || text == ".NaN" || text == ".NAN") return std::nan("");
  const char first = text.empty() ? '\0' : text[0];
  if (first == '.') {
    // Go's ParseFloat, which takes ".5" and ".5e3" here.
    if (IsYamlStyleFloat(text)) return AsSent(ToDouble(std::string(text)));
    return std::string(text);
  }
  if (!((first >= '0' && first <= '9') || first == '+' || first == '-')) return std::string(text);
  // Digits or a sign: go-yaml takes every '_' out, then tries an integer of
  // any base Go reads, then a float.
  std::string plain;
  for (char c : text) {
    if (c != '_') plain += c;
  }
  const bool negative = !plain.empty() && plain[0] == '-';
  const bool signed_ = !plain.empty() && (plain[0] == '-' || plain[0] == '+');
  const std::string_view digits = std::string_view(plain).substr(signed_ ? 1 : 0);
  if (const std::optional<uint64_t> magnitude = GoUnsigned(digits)) {
    if (!negative && *magnitude <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(*magnitude);
    }
    if (negative && *magnitude <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1) {
      return *magnitude == static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1
                 ? std::numeric_limits<int64_t>::min()
                 : -static_cast<int64_t>(*magnitude);
    }
    // Go's ParseUint reads what ParseInt cannot: past int64, unsigned (no sign).
    if (!signed_) return *magnitude;
  }
  if (IsYamlStyleFloat(plain)) return AsSent(ToDouble(plain));
  return std::string(text);
}

StatusOr<Json> ResolveTaggedScalar(std::string_view tag, std::string_view text) {
  constexpr std::string_view kCore = "tag:yaml.org,2002:";
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return Json(std::string(text));
  if (tag == "?" || tag.empty()) return ResolvePlainScalar(text);
  const std::string_view name = tag.starts_with(kCore) ? tag.substr(kCore.size()) : tag;
  const Json value = ResolvePlainScalar(text);
  auto refused = [&](std::string_view what) {
    return InvalidArgumentError("!!" + std::string(name) + " " + QuotedExcerpt(text) + ": " + std::string(what));
  };
  if (name == "int") {
    if (value.is_number_integer() || value.is_number_unsigned()) return value;
    return refused("not an integer");
  }
  if (name == "float") {
    // go-yaml reads an integer under !!float as that number.
    if (value.is_number()) return value;
    return refused("not a number");
  }
  if (name == "bool") {
    if (value.is_boolean()) return value;
    return refused("not a boolean (true, false, yes, no, on, off)");
  }
  if (name == "null") {
    if (value.is_null()) return value;
    return refused("not null (null, ~ or nothing)");
  }
  return InvalidArgumentError(
      "the tag " + std::string(tag.starts_with(kCore) ? "!!" + std::string(name) : std::string(tag)) + " on " +
      QuotedExcerpt(text) + " is not one a manifest may carry: !!str, !!int, !!float, !!bool and !!null are read, as "
      "kubectl reads them; write the value without a tag");
}

}  // namespace edgetrain::api

#include "core/object_names.h"

namespace edgetrain {
namespace {

bool IsLowerAlphanumeric(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool IsName(std::string_view name, std::string_view inner) {
  if (name.empty() || !IsLowerAlphanumeric(name.front()) || !IsLowerAlphanumeric(name.back())) return false;
  for (char c : name) {
    if (!IsLowerAlphanumeric(c) && inner.find(c) == std::string_view::npos) return false;
  }
  return true;
}

}  // namespace

bool IsDnsLabel(std::string_view name) { return IsName(name, "-"); }

bool IsDnsSubdomain(std::string_view name) {
  // Each of its dot-separated parts a label: "a..b" and "a.-b" had passed
  // on their first and last characters alone (found in review).
  for (size_t start = 0;;) {
    const size_t dot = name.find('.', start);
    if (!IsDnsLabel(name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

}  // namespace edgetrain

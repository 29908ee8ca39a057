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

bool IsDnsSubdomain(std::string_view name) { return IsName(name, "-."); }

}  // namespace edgetrain

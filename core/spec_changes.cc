#include "core/spec_changes.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace edgetrain {
namespace {

using Json = nlohmann::json;

// A value as a person reads it in the manifest: text without its quotes,
// unless the other side is not text ("0.1" -> 0.1 would read as no change).
std::string Shown(const Json* value, const Json* other) {
  if (!value) return "(none)";
  const bool quoted = other && other->type() != value->type();
  return value->is_string() && !quoted ? value->get<std::string>() : value->dump();
}

// An object added or taken away is said field by field, as a changed one is.
void Compare(const Json* before, const Json* after, const std::string& path, std::vector<std::string>& out) {
  const bool objects = (!before || before->is_object()) && (!after || after->is_object());
  if (objects && (before || after)) {
    static const Json kNone = Json::object();
    const Json& b = before ? *before : kNone;
    const Json& a = after ? *after : kNone;
    for (const auto& [key, value] : a.items()) {
      const auto was = b.find(key);
      Compare(was == b.end() ? nullptr : &*was, &value, path + "." + key, out);
    }
    for (const auto& [key, value] : b.items()) {
      if (!a.contains(key)) Compare(&value, nullptr, path + "." + key, out);
    }
    return;
  }
  if (before && after && *before == *after) return;
  out.push_back(path + ": " + Shown(before, after) + " -> " + Shown(after, before));
}

}  // namespace

std::vector<std::string> SpecChanges(std::string_view before, std::string_view after) {
  if (before.empty() || after.empty()) return {};
  const Json b = Json::parse(before, nullptr, /*allow_exceptions=*/false);
  const Json a = Json::parse(after, nullptr, /*allow_exceptions=*/false);
  if (b.is_discarded() || a.is_discarded()) return {};
  std::vector<std::string> out;
  Compare(&b, &a, "spec", out);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace edgetrain

#include "core/spec_changes.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace edgetrain {
namespace {

using Json = nlohmann::json;

// A value as a person reads it in the manifest: text without its quotes.
std::string Shown(const Json* value) {
  if (!value) return "(none)";
  return value->is_string() ? value->get<std::string>() : value->dump();
}

void Compare(const Json* before, const Json* after, const std::string& path, std::vector<std::string>& out) {
  if (before && after && before->is_object() && after->is_object()) {
    for (const auto& [key, value] : after->items()) {
      const auto was = before->find(key);
      Compare(was == before->end() ? nullptr : &*was, &value, path + "." + key, out);
    }
    for (const auto& [key, value] : before->items()) {
      if (!after->contains(key)) Compare(&value, nullptr, path + "." + key, out);
    }
    return;
  }
  if (before && after && *before == *after) return;
  out.push_back(path + ": " + Shown(before) + " -> " + Shown(after));
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

#include "api/cross_field_rules.h"

#include <string>

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;

// CEL's has(self.field): present and not null.
bool Has(const Json& self, const char* field) {
  return self.is_object() && self.contains(field) && !self[field].is_null();
}

// The object at a dotted path, or nullptr when any part is absent.
const Json* At(const Json& root, std::string_view path) {
  const Json* node = &root;
  while (!path.empty()) {
    size_t dot = path.find('.');
    std::string key(path.substr(0, dot));
    if (!node->is_object() || !node->contains(key) || (*node)[key].is_null()) return nullptr;
    node = &(*node)[key];
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return node;
}

}  // namespace

const std::vector<CrossFieldRule>& CrossFieldRules() {
  static const std::vector<CrossFieldRule> rules = {
      {"spec", "pipeline parallelism needs at least 2 workers",
       [](const Json& self) {
         const Json& p = self["parallelism"];
         return p["mode"] != "pipeline" || p["workers"].get<int>() >= 2;
       }},
      {"spec", "data.stream.ratesPerSecond needs one rate per worker",
       [](const Json& self) {
         return !Has(self["data"], "stream") ||
                self["data"]["stream"]["ratesPerSecond"].size() == self["parallelism"]["workers"].get<size_t>();
       }},
      {"spec.model", "hidden applies only to the mlp model",
       [](const Json& self) { return self["name"] == "mlp" || !Has(self, "hidden"); }},
      {"spec.model", "channels applies only to the cnn model",
       [](const Json& self) { return self["name"] == "cnn" || !Has(self, "channels"); }},
      {"spec.model", "widths applies only to the vgg model",
       [](const Json& self) { return self["name"] == "vgg" || !Has(self, "widths"); }},
      {"spec.data.partition", "alpha is required for kind dirichlet and allowed only there",
       [](const Json& self) { return Has(self, "alpha") == (self["kind"] == "dirichlet"); }},
      {"spec.sync", "stalenessBound applies only to the rog and ssp policies",
       [](const Json& self) {
         return (self["policy"] != "bsp" && self["policy"] != "deadline") || !Has(self, "stalenessBound") ||
                self["stalenessBound"] == 0;
       }},
      {"spec.sync", "quorum and deadlineSlack apply only to the deadline policy",
       [](const Json& self) {
         return self["policy"] == "deadline" || (!Has(self, "quorum") && !Has(self, "deadlineSlack"));
       }},
      {"spec.optimizer", "momentum applies only to the sgd optimizer",
       [](const Json& self) { return self["name"] == "sgd" || !Has(self, "momentum"); }},
      {"spec.output", "volume needs path, where it is mounted",
       [](const Json& self) { return !Has(self, "volume") || Has(self, "path"); }},
  };
  return rules;
}

std::vector<FieldError> CheckCrossFieldRules(const Json& manifest) {
  std::vector<FieldError> errors;
  for (const auto& rule : CrossFieldRules()) {
    const Json* self = At(manifest, rule.path);
    if (self && !rule.holds(*self)) errors.push_back({std::string(rule.path), std::string(rule.message)});
  }
  return errors;
}

}  // namespace edgetrain::api

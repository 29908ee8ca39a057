#pragma once
// The C++ twins of the CEL rules (x-kubernetes-validations) in the CRD. A cluster's
// API server evaluates the CEL; `edgetrain run` has no CEL engine (none is packaged
// for C++ in Debian), so it evaluates these. Each twin carries its rule's path and
// message verbatim, and cross_field_rules_test.cc walks every rule in the CRD and
// checks that its twin exists and refuses a manifest that breaks it — so the two
// cannot drift apart silently.

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/field_error.h"

namespace edgetrain::api {

struct CrossFieldRule {
  std::string_view path;     // the object the rule guards, e.g. "spec.data.partition"
  std::string_view message;  // the CRD rule's message, verbatim
  bool (*holds)(const nlohmann::json& self);
};

const std::vector<CrossFieldRule>& CrossFieldRules();

// Evaluates every rule on a structurally valid, defaulted object (the whole
// manifest); a rule whose object is absent does not apply, as in Kubernetes.
std::vector<FieldError> CheckCrossFieldRules(const nlohmann::json& manifest);

}  // namespace edgetrain::api

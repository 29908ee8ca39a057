#pragma once
// Validation and defaulting of a value against a CRD's openAPIV3Schema, as the
// Kubernetes API server does for a create under fieldValidation=Strict: types,
// enums, ranges, lengths, patterns, required fields, unknown fields, list-map keys,
// and `default` values (filled in before the value's own checks, so defaulted
// objects get their nested defaults too). CEL rules are collected here but
// evaluated elsewhere (api/cross_field_rules.h).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/field_error.h"

namespace edgetrain::api {

// Fills in defaults in `value` and returns every violation, each with its path
// under `path` (e.g. "spec").
std::vector<FieldError> ValidateAndDefault(const nlohmann::json& schema, nlohmann::json& value,
                                           const std::string& path);

// A CEL rule from `x-kubernetes-validations`, and the path of the object it guards.
struct SchemaRule {
  std::string path;  // "spec.data.partition"
  std::string rule;
  std::string message;
};
std::vector<SchemaRule> CollectValidationRules(const nlohmann::json& schema, const std::string& path);

}  // namespace edgetrain::api

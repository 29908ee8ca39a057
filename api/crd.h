#pragma once
// The TrainingJob CRD (crds/trainingjob.yaml), compiled into the binary at build
// time so `edgetrain run` validates against exactly what a cluster enforces.

#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace edgetrain::api {

inline constexpr std::string_view kGroup = "edgetrain.dev";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kApiVersion = "edgetrain.dev/v1alpha1";
inline constexpr std::string_view kKind = "TrainingJob";

// The CRD's text, as built in.
std::string_view TrainingJobCrdText();

// The openAPIV3Schema of the v1alpha1 version of the built-in CRD. Parsed once.
StatusOr<nlohmann::json> TrainingJobSchema();

}  // namespace edgetrain::api

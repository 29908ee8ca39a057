#pragma once
// Reading a TrainingJob manifest the way the API server would take it: YAML to
// JSON, the CRD's structural schema with its defaults, then the CRD's cross-field
// rules. What comes out is exactly what a cluster would have stored.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/job_spec.h"
#include "core/status.h"

namespace edgetrain::api {

struct TrainingJobManifest {
  std::string name;
  std::string namespace_;  // empty when the manifest names none
  nlohmann::json raw;      // as written, before defaults
  nlohmann::json object;   // with the CRD's defaults applied
  JobSpec spec;            // decoded from object["spec"]
  std::string SpecJson() const { return object["spec"].dump(); }
};

// Every error found, one per line, in an InvalidArgument status; YAML syntax
// errors name `source`, line and column.
StatusOr<TrainingJobManifest> ParseTrainingJob(std::string_view yaml, const std::string& source);

// Makes the manifest's relative file paths (spec.model.torchscript.path, the
// data's train and test files) relative to `folder` — the manifest's own under
// edgetrain run, so a manifest and the files beside it move together — in
// `object`, from which `spec` is decoded again. Absolute paths stay.
Status ResolveFilePaths(TrainingJobManifest& job, const std::string& folder);

// Where an agent's pod finds what a manifest names by a relative path
// (docs/own-model.md, "On a cluster"): spec.data.volume is mounted at
// kDataMountPath, spec.model.torchscript.configMap at kModelMountPath.
inline constexpr const char* kDataMountPath = "/data";
inline constexpr const char* kModelMountPath = "/model";
// And what the operator mounts in every agent's pod of its own: the plan's
// ConfigMap, and a team's credentials (operator/controller/job_objects.h).
inline constexpr const char* kPlanMountPath = "/etc/edgetrain";
inline constexpr const char* kTlsMountPath = "/var/run/secrets/edgetrain.dev/tls";

// ResolveFilePaths for the operator's pods: the data's relative paths under
// kDataMountPath, the module's under kModelMountPath when a ConfigMap holds it,
// else under kDataMountPath too.
Status ResolveClusterPaths(TrainingJobManifest& job);

}  // namespace edgetrain::api

#pragma once
// Reading a cluster profile (docs/cluster-profiles.md) with the same strictness
// as a TrainingJob: unknown fields, wrong types and ranges are refused with their
// path; every trace is read and checked before anything starts.

#include <string>
#include <string_view>

#include "core/cluster_profile.h"
#include "core/status.h"

namespace edgetrain::api {

// `yaml` is the profile's text; `path` names it in errors and anchors relative
// trace paths to its folder.
StatusOr<ClusterProfile> ParseClusterProfile(std::string_view yaml, const std::string& path);

}  // namespace edgetrain::api

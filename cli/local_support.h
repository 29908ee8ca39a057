#pragma once
// What `edgetrain run` can do today. A manifest may be valid for the API and
// still ask for a capability this runner has not got yet: that is refused with
// "... is not supported yet", never silently ignored. Fields that only mean
// something on Kubernetes are accepted and named in a note.

#include <string>
#include <vector>

#include "api/field_error.h"
#include "api/trainingjob.h"

namespace edgetrain::cli {

struct LocalSupport {
  std::vector<api::FieldError> unsupported;  // refuse the run (exit 2)
  std::vector<std::string> notes;            // print, then run
};

LocalSupport CheckLocalSupport(const api::TrainingJobManifest& job);

}  // namespace edgetrain::cli

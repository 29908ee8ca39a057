#pragma once
// What this version of edgetrain can do, wherever a job runs: one table that
// the local runner (`edgetrain run`) and the operator share. A manifest may be
// valid for the API and still ask for a capability that has not landed: it is
// refused with "... is not supported yet", never silently ignored. A field that
// means nothing where the job runs is accepted and named in a note — only when
// the manifest wrote it, not when the CRD defaulted it.

#include <string>
#include <vector>

#include "api/field_error.h"
#include "api/trainingjob.h"

namespace edgetrain::api {

// Where a job runs: `edgetrain run`, or the operator; or nowhere yet, only
// planned as the operator would place it (`edgetrain plan`), which holds a job
// to what the operator does except for what is planned before it runs
// (pipeline, hybrid and auto parallelism, issue 15).
enum class Runner { kLocal, kKubernetes, kPlanning };

struct SupportCheck {
  std::vector<FieldError> unsupported;  // refuse the job: not supported yet (exit 2; NotSupported)
  std::vector<FieldError> invalid;      // refuse the job: wrong where it runs (exit 2; InvalidSpec)
  std::vector<std::string> notes;       // say, then run
};

SupportCheck CheckSupport(const TrainingJobManifest& job, Runner runner);

}  // namespace edgetrain::api

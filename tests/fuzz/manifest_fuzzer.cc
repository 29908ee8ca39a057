// A TrainingJob manifest as `edgetrain run`, `edgetrain validate` and the
// operator read it (api/trainingjob.h): YAML, the CRD's schema and defaults,
// its cross-field rules, what each runner supports, and the paths a cluster's
// pods see. Any bytes: an error or a job, never a crash; and a job read is one
// that reads again the same from what it decoded to.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "api/capabilities.h"
#include "api/trainingjob.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace edgetrain;
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  StatusOr<api::TrainingJobManifest> job = api::ParseTrainingJob(yaml, "fuzz.yaml");
  if (!job.ok()) return 0;
  for (api::Runner runner : {api::Runner::kLocal, api::Runner::kKubernetes, api::Runner::kPlanning}) {
    (void)api::CheckSupport(*job, runner);
  }
  // What the API would store, read back: the same spec.
  StatusOr<api::TrainingJobManifest> again = api::ParseTrainingJob(job->object.dump(), "again.yaml");
  if (!again.ok() || again->SpecJson() != job->SpecJson()) {
    std::fprintf(stderr, "manifest_fuzzer: a job read back reads otherwise: %s\n",
                 again.ok() ? again->SpecJson().c_str() : again.status().ToString().c_str());
    std::abort();
  }
  (void)api::ResolveClusterPaths(*job);
  (void)api::ResolveFilePaths(*again, "/jobs");
  return 0;
}

// A coordinator's /progress JSON, which the operator reads into the job's
// status and `edgetrain run` into its progress line (core/job_progress.h): any
// bytes, an error or a progress, never a crash; and a progress read encodes to
// JSON that reads back the same.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/job_progress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace edgetrain;
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  StatusOr<JobProgress> progress = DecodeJobProgress(json);
  if (!progress.ok()) return 0;
  const std::string encoded = EncodeJobProgress(*progress);
  StatusOr<JobProgress> again = DecodeJobProgress(encoded);
  if (!again.ok() || EncodeJobProgress(*again) != encoded) {
    std::fprintf(stderr, "progress_fuzzer: %s reads back otherwise\n", encoded.c_str());
    std::abort();
  }
  return 0;
}

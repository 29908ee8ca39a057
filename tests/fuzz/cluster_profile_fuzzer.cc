// A cluster profile (`edgetrain run --nodes`, `edgetrain plan --nodes`;
// api/cluster_profile.h): any bytes, an error naming the field or a profile,
// never a crash.
#include <cstdint>
#include <string_view>

#include "api/cluster_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  (void)edgetrain::api::ParseClusterProfile(yaml, "fuzz.yaml");
  return 0;
}

// A model archive's bytes (model.pt, a user's TorchScript module), checked
// before LibTorch loads them (agent/storage/archive_integrity.h): any bytes,
// Ok or an error, never a crash, a read out of bounds or a hang.
#include <cstdint>
#include <string_view>

#include "agent/storage/archive_integrity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)edgetrain::agent::CheckArchiveBytes(bytes, "fuzz.pt");
  return 0;
}

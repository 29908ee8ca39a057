#include "core/byte_scale.h"

namespace edgetrain {

void ScaleBytes(std::span<const uint8_t> in, float scale, float* out) {
  const uint8_t* __restrict from = in.data();
  float* __restrict to = out;
  for (size_t i = 0; i < in.size(); ++i) to[i] = static_cast<float>(from[i]) * scale;
}

}  // namespace edgetrain

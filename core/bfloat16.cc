#include "core/bfloat16.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace edgetrain {

std::string EncodeBfloat16(std::span<const float> values) {
  std::string out(values.size() * sizeof(uint16_t), '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(values[i]);
    uint16_t half;
    if (std::isnan(values[i])) {
      half = static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet, whatever its mantissa's low bits
    } else {
      // Round to nearest, ties to even: add just under half the dropped unit, plus the kept LSB.
      half = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
    }
    std::memcpy(out.data() + i * sizeof half, &half, sizeof half);
  }
  return out;
}

StatusOr<std::string> Bfloat16ToFloat32Bytes(std::string_view bytes) {
  if (bytes.size() % sizeof(uint16_t) != 0) {
    return InvalidArgumentError("bfloat16 values come in 2 bytes each, not " + std::to_string(bytes.size()) +
                                " bytes");
  }
  const size_t n = bytes.size() / sizeof(uint16_t);
  std::string out(n * sizeof(float), '\0');
  for (size_t i = 0; i < n; ++i) {
    uint16_t half;
    std::memcpy(&half, bytes.data() + i * sizeof half, sizeof half);
    const uint32_t bits = static_cast<uint32_t>(half) << 16;
    std::memcpy(out.data() + i * sizeof bits, &bits, sizeof bits);
  }
  return out;
}

}  // namespace edgetrain

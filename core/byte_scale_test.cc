#include "core/byte_scale.h"

#include <vector>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

// Every byte, at lengths around the vector width, is the value a byte at a
// time gives, bit for bit.
TEST(ByteScale, IsTheValueAByteAtATimeGives) {
  std::vector<uint8_t> bytes(256 + 37);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  const float scale = 1.0f / 255;
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, bytes.size()}) {
    std::vector<float> out(n + 1, -1.0f);
    ScaleBytes(std::span<const uint8_t>(bytes.data(), n), scale, out.data());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], static_cast<float>(bytes[i]) * scale) << n << " " << i;
    EXPECT_EQ(out[n], -1.0f) << "nothing written past the end";
  }
}

}  // namespace
}  // namespace edgetrain

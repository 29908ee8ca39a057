#include "core/bfloat16.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

std::vector<float> RoundTrip(const std::vector<float>& values) {
  StatusOr<std::string> bytes = Bfloat16ToFloat32Bytes(EncodeBfloat16(values));
  EXPECT_TRUE(bytes.ok());
  std::vector<float> out(bytes->size() / sizeof(float));
  std::memcpy(out.data(), bytes->data(), bytes->size());
  return out;
}

TEST(Bfloat16Test, KeepsFloat32sRangeAtAboutThreeDigits) {
  const std::vector<float> values = {0.0f, -0.0f, 1.0f, -2.5f, 3.14159265f, 1e-12f, 1e-38f, 3e38f, -7e-5f, 65504.0f};
  const std::vector<float> back = RoundTrip(values);
  ASSERT_EQ(back.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_LE(std::abs(back[i] - values[i]), std::abs(values[i]) / 256) << values[i] << " read back as " << back[i];
  }
  EXPECT_GT(back[5], 0.0f) << "an Adam second moment of 1e-12 is not 0 (float16's would be)";
  EXPECT_TRUE(std::signbit(back[1]));
  EXPECT_EQ(back[2], 1.0f);
  EXPECT_EQ(back[3], -2.5f);
  EXPECT_EQ(EncodeBfloat16(values).size(), 2 * values.size());
}

TEST(Bfloat16Test, RoundsToNearestTiesToEvenAndKeepsWhatIsNotANumber) {
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to even, 1. 1 + 3 * 2^-8 lies
  // halfway between 1 + 2^-7 and 1 + 2^-6: to even, 1 + 2^-6.
  const std::vector<float> back = RoundTrip({1.0f + 1.0f / 256, 1.0f + 3.0f / 256, 1.0f + 1.0f / 256 + 1e-6f,
                                             std::numeric_limits<float>::quiet_NaN(),
                                             std::numeric_limits<float>::infinity()});
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 1.0f + 1.0f / 64);
  EXPECT_EQ(back[2], 1.0f + 1.0f / 128) << "just above halfway rounds up";
  EXPECT_TRUE(std::isnan(back[3]));
  EXPECT_TRUE(std::isinf(back[4]));
}

TEST(Bfloat16Test, AnOddCountOfBytesIsNotBfloat16) {
  EXPECT_EQ(Bfloat16ToFloat32Bytes("abc").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Bfloat16ToFloat32Bytes("")->size(), 0u);
}

}  // namespace
}  // namespace edgetrain

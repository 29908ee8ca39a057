#include "core/row_codec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

std::vector<float> RandomRow(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0, 0.01f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(RowCodecTest, SizesOnTheWire) {
  EXPECT_EQ(EncodedBytes(RowEncoding::kFloat32, 100), 400);
  EXPECT_EQ(EncodedBytes(RowEncoding::kFloat16, 100), 200);
  EXPECT_EQ(EncodedBytes(RowEncoding::kInt8, 100), 100);
  EXPECT_EQ(EncodedBytes(RowEncoding::kInt4, 100), 50);
  EXPECT_EQ(EncodedBytes(RowEncoding::kInt4, 101), 51);
  EXPECT_EQ(EncodedBytes(RowEncoding::kSign, 100), 13);
  EXPECT_EQ(EncodedBytes(RowEncoding::kTopK, 100), 8 * 4);  // 100 / 32 kept, rounded up
  EXPECT_EQ(EncodedBytes(RowEncoding::kTopK, 784), 8 * 25);
  EXPECT_EQ(EncodedBytes(RowEncoding::kTopK, 5), 8);        // at least one
}

TEST(RowCodecTest, TopKSendsTheLargestMagnitudesExactlyAndTheRestAsZero) {
  std::vector<float> row = RandomRow(64, 3);
  row[7] = 5.0f;
  row[50] = -7.0f;
  const EncodedRow enc = EncodeRow(row, RowEncoding::kTopK);
  ASSERT_EQ(enc.bytes.size(), 16u);  // 2 of 64
  std::vector<float> back(64, 9.0f);
  ASSERT_TRUE(DecodeRow(enc.encoding, enc.scale, enc.bytes, back).ok());
  for (size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i], i == 7 ? 5.0f : i == 50 ? -7.0f : 0.0f) << i;
  }
  // What it keeps of the row's squared norm: nearly all of it here.
  EXPECT_GT(TopKEnergyShare(row), 0.99);
  EXPECT_EQ(TopKEnergyShare(std::vector<float>(10, 0.0f)), 1.0);
  // Evenly spread, 2 of 64 values keep 2/64 of it.
  EXPECT_NEAR(TopKEnergyShare(std::vector<float>(64, 0.5f)), 2.0 / 64, 1e-9);
}

TEST(RowCodecTest, ATopKRowNamingAValueOutsideTheRowIsRefusedAndChangesNothing) {
  std::string bytes(8, '\0');
  const uint32_t index = 12;
  const float value = 1;
  std::memcpy(bytes.data(), &index, 4);
  std::memcpy(bytes.data() + 4, &value, 4);
  std::vector<float> row(10, 2.0f);
  Status s = DecodeRow(RowEncoding::kTopK, 1, bytes, row);
  EXPECT_EQ(s.message(), "top-k row of 10 values names value 12");
  EXPECT_EQ(AddDecodedRow(RowEncoding::kTopK, 1, bytes, row).code(), StatusCode::kInvalidArgument);
  for (float x : row) EXPECT_EQ(x, 2.0f);
}

TEST(RowCodecTest, RoundTripsWithinEachEncodingsError) {
  std::vector<float> row = RandomRow(257, 1);
  row[3] = 0;
  row[4] = 65504.0f;  // fp16's largest finite value
  struct Case {
    RowEncoding e;
    double max_relative_error;  // of the row's max magnitude
  } cases[] = {{RowEncoding::kFloat32, 0}, {RowEncoding::kFloat16, 1e-3}, {RowEncoding::kInt8, 0.5 / 127 + 1e-6},
               {RowEncoding::kInt4, 0.5 / 7 + 1e-6}};
  for (const auto& c : cases) {
    EncodedRow enc = EncodeRow(row, c.e);
    EXPECT_EQ(static_cast<int64_t>(enc.bytes.size()), EncodedBytes(c.e, 257));
    std::vector<float> back(257);
    ASSERT_TRUE(DecodeRow(enc.encoding, enc.scale, enc.bytes, back).ok());
    for (size_t i = 0; i < row.size(); ++i) {
      // int8 and int4 err by half a step of max|x|/127 and max|x|/7; fp16 by
      // 2^-11 relative, or by its subnormal spacing (6e-8) below 6e-5.
      double tolerance = c.e == RowEncoding::kInt8 || c.e == RowEncoding::kInt4 ? c.max_relative_error * 65504.0
                         : c.e == RowEncoding::kFloat16 ? std::max(c.max_relative_error * std::fabs(row[i]), 6e-8)
                                                        : 0.0;
      EXPECT_NEAR(back[i], row[i], tolerance) << "value " << i << " encoding " << static_cast<int>(c.e);
    }
  }
}

TEST(RowCodecTest, SignKeepsSignsAndMeanMagnitude) {
  std::vector<float> row = {0.5f, -1.5f, 1.0f, -1.0f, 0.0f};
  EncodedRow enc = EncodeRow(row, RowEncoding::kSign);
  EXPECT_FLOAT_EQ(enc.scale, 0.8f);
  std::vector<float> back(5);
  ASSERT_TRUE(DecodeRow(enc.encoding, enc.scale, enc.bytes, back).ok());
  EXPECT_EQ(back, (std::vector<float>{0.8f, -0.8f, 0.8f, -0.8f, 0.8f}));
}

TEST(RowCodecTest, Int4PacksTwoValuesAByteFromMinusSevenToSeven) {
  // Scale 0.5: the levels are -3.5 .. 3.5 in steps of 0.5; 0.3 rounds to one
  // step, 0.25 to none (to even), a diverged value is 0.
  const std::vector<float> row = {3.5f, -3.5f, 0.3f, -0.25f, std::nanf(""), -1.0f, 0.75f};
  const EncodedRow enc = EncodeRow(row, RowEncoding::kInt4);
  EXPECT_FLOAT_EQ(enc.scale, 0.5f);
  ASSERT_EQ(enc.bytes.size(), 4u);
  // Value 2i in the low half of byte i, as a 4-bit two's complement number.
  EXPECT_EQ(static_cast<unsigned char>(enc.bytes[0]), 0x97);  // 7, -7
  EXPECT_EQ(static_cast<unsigned char>(enc.bytes[1]), 0x01);  // 1, 0
  EXPECT_EQ(static_cast<unsigned char>(enc.bytes[2]), 0xE0);  // 0, -2
  EXPECT_EQ(static_cast<unsigned char>(enc.bytes[3]), 0x02);  // 2 (0.75 / 0.5 = 1.5, to even), the odd row's last
  std::vector<float> back(row.size()), sum(row.size(), 1.0f);
  ASSERT_TRUE(DecodeRow(enc.encoding, enc.scale, enc.bytes, back).ok());
  EXPECT_EQ(back, (std::vector<float>{3.5f, -3.5f, 0.5f, 0.0f, 0.0f, -1.0f, 1.0f}));
  ASSERT_TRUE(AddDecodedRow(enc.encoding, enc.scale, enc.bytes, sum).ok());
  EXPECT_EQ(sum, (std::vector<float>{4.5f, -2.5f, 1.5f, 1.0f, 1.0f, 0.0f, 2.0f}));
  // The one half byte the encoder never writes, -8, still decodes as a number.
  std::vector<float> eight(1);
  ASSERT_TRUE(DecodeRow(RowEncoding::kInt4, 0.5f, std::string(1, '\x08'), eight).ok());
  EXPECT_EQ(eight[0], -4.0f);
}

TEST(RowCodecTest, ErrorFeedbackLosesNothingOverTime) {
  // Sending a row's residual int8- or int4-encoded and keeping what was lost:
  // after many rounds the receiver's sum equals the sender's sum up to one
  // round's error.
  for (RowEncoding e : {RowEncoding::kInt8, RowEncoding::kInt4}) {
    std::vector<float> residual(64, 0), sent_total(64, 0), true_total(64, 0);
    for (int round = 0; round < 200; ++round) {
      std::vector<float> g = RandomRow(64, 100 + round);
      for (size_t i = 0; i < 64; ++i) {
        residual[i] += g[i];
        true_total[i] += g[i];
      }
      EncodedRow enc = EncodeRow(residual, e);
      std::vector<float> decoded(64);
      ASSERT_TRUE(DecodeRow(enc.encoding, enc.scale, enc.bytes, decoded).ok());
      for (size_t i = 0; i < 64; ++i) {
        sent_total[i] += decoded[i];
        residual[i] -= decoded[i];
      }
    }
    for (size_t i = 0; i < 64; ++i) EXPECT_NEAR(sent_total[i] + residual[i], true_total[i], 1e-4);
    for (size_t i = 0; i < 64; ++i) EXPECT_LT(std::fabs(residual[i]), 0.01) << static_cast<int>(e);
  }
}

TEST(RowCodecTest, NonFiniteValuesDoNotPoisonInt8Rows) {
  std::vector<float> row = {1.0f, std::nanf(""), -std::numeric_limits<float>::infinity(), -0.5f};
  EncodedRow enc = EncodeRow(row, RowEncoding::kInt8);
  EXPECT_FLOAT_EQ(enc.scale, 1.0f / 127);
  std::vector<float> back(4);
  ASSERT_TRUE(DecodeRow(enc.encoding, enc.scale, enc.bytes, back).ok());
  EXPECT_FLOAT_EQ(back[0], 1.0f);
  EXPECT_FLOAT_EQ(back[1], 0.0f);
  EXPECT_FLOAT_EQ(back[2], 0.0f);
  EXPECT_NEAR(back[3], -0.5f, 0.5f / 127);
  EXPECT_EQ(DecodeRow(static_cast<RowEncoding>(9), 1, "", std::span<float>()).code(), StatusCode::kInvalidArgument);
}

TEST(RowCodecTest, RefusesPayloadsOfTheWrongSize) {
  std::vector<float> out(10);
  Status s = DecodeRow(RowEncoding::kFloat32, 1, std::string(39, '\0'), out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "row of 10 values carries 39 bytes; expected 40");
}

TEST(RowCodecTest, AddingDecodesAndAddsInOnePass) {
  const std::vector<float> values = RandomRow(37, 11);  // not a multiple of any vector width
  for (RowEncoding e :
       {RowEncoding::kFloat32, RowEncoding::kFloat16, RowEncoding::kInt8, RowEncoding::kSign, RowEncoding::kTopK}) {
    EncodedRow encoded = EncodeRow(values, e);
    std::vector<float> decoded(values.size());
    ASSERT_TRUE(DecodeRow(e, encoded.scale, encoded.bytes, decoded).ok());
    std::vector<float> sum = RandomRow(values.size(), 12);
    const std::vector<float> before = sum;
    ASSERT_TRUE(AddDecodedRow(e, encoded.scale, encoded.bytes, sum).ok());
    for (size_t i = 0; i < sum.size(); ++i) EXPECT_EQ(sum[i], before[i] + decoded[i]) << static_cast<int>(e) << " " << i;
  }
}

// The int8, int4 and sign codecs as defined, a value at a time: the codec's loops,
// written to be vectorised, must give exactly these bytes and values.
EncodedRow Int8AsDefined(std::span<const float> values) {
  EncodedRow row{RowEncoding::kInt8, 1.0f, std::string(values.size(), '\0')};
  float max_abs = 0;
  for (float v : values) {
    if (std::isfinite(v)) max_abs = std::max(max_abs, std::fabs(v));
  }
  row.scale = max_abs > 0 ? max_abs / 127.0f : 1.0f;
  for (size_t i = 0; i < values.size(); ++i) {
    const float q = std::isfinite(values[i]) ? std::nearbyint(values[i] / row.scale) : 0.0f;
    row.bytes[i] = static_cast<char>(static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f)));
  }
  return row;
}

EncodedRow Int4AsDefined(std::span<const float> values) {
  EncodedRow row{RowEncoding::kInt4, 1.0f, std::string((values.size() + 1) / 2, '\0')};
  float max_abs = 0;
  for (float v : values) {
    if (std::isfinite(v)) max_abs = std::max(max_abs, std::fabs(v));
  }
  row.scale = max_abs > 0 ? max_abs / 7.0f : 1.0f;
  for (size_t i = 0; i < values.size(); ++i) {
    const float q = std::isfinite(values[i]) ? std::nearbyint(std::clamp(values[i] / row.scale, -7.0f, 7.0f)) : 0.0f;
    const unsigned nibble = static_cast<unsigned>(static_cast<int>(q)) & 0xF;
    row.bytes[i / 2] = static_cast<char>(static_cast<unsigned char>(row.bytes[i / 2]) | (nibble << (4 * (i % 2))));
  }
  return row;
}

EncodedRow SignAsDefined(std::span<const float> values) {
  EncodedRow row{RowEncoding::kSign, 0.0f, std::string((values.size() + 7) / 8, '\0')};
  double sum = 0;
  for (float v : values) sum += std::fabs(v);
  row.scale = values.empty() ? 0.0f : static_cast<float>(sum / static_cast<double>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] >= 0) row.bytes[i / 8] = static_cast<char>(row.bytes[i / 8] | (1 << (i % 8)));
  }
  return row;
}

// Rows of every length up to past a vector's width, of ordinary values and of
// the awkward ones: signed zeros, NaN, infinities, subnormals, exact halves.
std::vector<std::vector<float>> AwkwardRows() {
  std::vector<std::vector<float>> rows;
  std::mt19937_64 rng(7);
  const float special[] = {0.0f, -0.0f, std::nanf(""), -std::nanf(""), std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                           -1e-40f, 0.5f, -2.5f, 127.0f};
  for (size_t n = 0; n <= 70; ++n) {
    for (int kind = 0; kind < 3; ++kind) {
      std::vector<float> row = RandomRow(n, 1000 + n * 3 + static_cast<size_t>(kind));
      if (kind == 1) {  // sprinkled with special values
        for (size_t i = 0; i < n; i += 3) row[i] = special[rng() % std::size(special)];
      }
      if (kind == 2) {  // only subnormals: a subnormal int8 scale
        for (float& v : row) v = static_cast<float>(static_cast<int>(rng() % 201) - 100) * 1e-44f;
      }
      rows.push_back(std::move(row));
    }
  }
  // Quotients that land exactly between two steps: ties go to even.
  std::vector<float> ties;
  for (int k = -254; k <= 254; ++k) ties.push_back(static_cast<float>(k) / 2.0f);
  rows.push_back(std::move(ties));
  return rows;
}

// fp16 as defined, a value at a time, with a branch a case.
uint16_t HalfAsDefined(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exponent = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mantissa ? 0x200 : 0));
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exponent <= 0) {
    if (exponent < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exponent);
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(half);
}

float FromHalfAsDefined(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0) {
    float v = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -v : v;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000 | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

TEST(RowCodecTest, Float16GivesExactlyWhatItsDefinitionGives) {
  // Every half decodes to its definition's float, bit for bit.
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    float back = 0;
    ASSERT_TRUE(DecodeRow(RowEncoding::kFloat16, 1, std::string_view(reinterpret_cast<const char*>(&bits), 2),
                          std::span<float>(&back, 1))
                    .ok());
    ASSERT_EQ(std::bit_cast<uint32_t>(back), std::bit_cast<uint32_t>(FromHalfAsDefined(bits))) << std::hex << h;
  }
  // Floats encode as defined: every float whose low bits are those of a
  // stride through all 2^32, and every float near the cases' edges (under
  // 2^-25, 2^-24, 2^-14, 65504, 65520, 2^16, infinity), both signs.
  std::vector<float> floats;
  for (uint64_t x = 0; x <= 0xffffffffull; x += 4093) floats.push_back(std::bit_cast<float>(static_cast<uint32_t>(x)));
  for (float edge : {0.0f, 2.9802322e-08f, 5.9604645e-08f, 6.1035156e-05f, 65504.0f, 65520.0f, 65536.0f,
                     std::numeric_limits<float>::infinity()}) {
    const uint32_t at = std::bit_cast<uint32_t>(edge);
    for (uint32_t d = 0; d < 4096; ++d) {
      for (uint32_t sign : {0u, 0x80000000u}) {
        floats.push_back(std::bit_cast<float>((at + d) | sign));
        if (at >= d) floats.push_back(std::bit_cast<float>((at - d) | sign));
      }
    }
  }
  const EncodedRow encoded = EncodeRow(floats, RowEncoding::kFloat16);
  for (size_t i = 0; i < floats.size(); ++i) {
    uint16_t got;
    std::memcpy(&got, encoded.bytes.data() + 2 * i, 2);
    ASSERT_EQ(got, HalfAsDefined(floats[i])) << std::hex << std::bit_cast<uint32_t>(floats[i]);
  }
}

// Equal, or both NaN (a sign row with a NaN has a NaN scale, refused later by
// the coordinator as not finite).
::testing::AssertionResult Same(float a, float b) {
  if (a == b || (std::isnan(a) && std::isnan(b))) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << a << " against " << b;
}

TEST(RowCodecTest, Int8Int4AndSignGiveExactlyWhatTheirDefinitionsGive) {
  for (const std::vector<float>& row : AwkwardRows()) {
    const EncodedRow int8 = EncodeRow(row, RowEncoding::kInt8), int8_defined = Int8AsDefined(row);
    EXPECT_EQ(int8.scale, int8_defined.scale) << "row of " << row.size();
    EXPECT_EQ(int8.bytes, int8_defined.bytes) << "row of " << row.size();
    const EncodedRow int4 = EncodeRow(row, RowEncoding::kInt4), int4_defined = Int4AsDefined(row);
    EXPECT_EQ(int4.scale, int4_defined.scale) << "row of " << row.size();
    EXPECT_EQ(int4.bytes, int4_defined.bytes) << "row of " << row.size();
    std::vector<float> four(row.size());
    ASSERT_TRUE(DecodeRow(RowEncoding::kInt4, int4.scale, int4.bytes, four).ok());
    for (size_t i = 0; i < row.size(); ++i) {
      const int level = (static_cast<unsigned char>(int4.bytes[i / 2]) >> (4 * (i % 2))) & 0xF;
      EXPECT_TRUE(Same(four[i], static_cast<float>(level > 7 ? level - 16 : level) * int4.scale)) << i;
    }
    const EncodedRow sign = EncodeRow(row, RowEncoding::kSign), sign_defined = SignAsDefined(row);
    EXPECT_EQ(sign.bytes, sign_defined.bytes) << "row of " << row.size();
    // The scale's sum runs in eight lanes: the same up to the double's
    // rounding, which a float seldom shows.
    if (std::isfinite(sign_defined.scale)) {
      EXPECT_FLOAT_EQ(sign.scale, sign_defined.scale) << "row of " << row.size();
    } else {
      EXPECT_TRUE(Same(sign.scale, sign_defined.scale)) << "row of " << row.size();
    }

    std::vector<float> back(row.size(), 3.0f), sum(row.size(), 0.25f);
    ASSERT_TRUE(DecodeRow(RowEncoding::kSign, sign.scale, sign.bytes, back).ok());
    ASSERT_TRUE(AddDecodedRow(RowEncoding::kSign, sign.scale, sign.bytes, sum).ok());
    for (size_t i = 0; i < row.size(); ++i) {
      const float defined = (sign.bytes[i / 8] >> (i % 8)) & 1 ? sign.scale : -sign.scale;
      EXPECT_TRUE(Same(back[i], defined)) << i;
      EXPECT_TRUE(Same(sum[i], 0.25f + defined)) << i;
    }
  }
}

TEST(RowCodecTest, AddingAMalformedRowChangesNothing) {
  std::vector<float> sum(8, 1.0f);
  Status s = AddDecodedRow(RowEncoding::kInt8, 1.0f, "abc", sum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  for (float x : sum) EXPECT_EQ(x, 1.0f);
}

}  // namespace
}  // namespace edgetrain

#include "core/row_codec.h"

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
  } cases[] = {{RowEncoding::kFloat32, 0}, {RowEncoding::kFloat16, 1e-3}, {RowEncoding::kInt8, 0.5 / 127 + 1e-6}};
  for (const auto& c : cases) {
    EncodedRow enc = EncodeRow(row, c.e);
    EXPECT_EQ(static_cast<int64_t>(enc.bytes.size()), EncodedBytes(c.e, 257));
    std::vector<float> back(257);
    ASSERT_TRUE(DecodeRow(enc.encoding, enc.scale, enc.bytes, back).ok());
    for (size_t i = 0; i < row.size(); ++i) {
      // int8 errs by half a step of max|x|/127; fp16 by 2^-11 relative, or by its
      // subnormal spacing (6e-8) below 6e-5.
      double tolerance = c.e == RowEncoding::kInt8 ? c.max_relative_error * 65504.0
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

TEST(RowCodecTest, ErrorFeedbackLosesNothingOverTime) {
  // Sending a row's residual int8-encoded and keeping what was lost: after many
  // rounds the receiver's sum equals the sender's sum up to one round's error.
  std::vector<float> residual(64, 0), sent_total(64, 0), true_total(64, 0);
  for (int round = 0; round < 200; ++round) {
    std::vector<float> g = RandomRow(64, 100 + round);
    for (size_t i = 0; i < 64; ++i) {
      residual[i] += g[i];
      true_total[i] += g[i];
    }
    EncodedRow enc = EncodeRow(residual, RowEncoding::kInt8);
    std::vector<float> decoded(64);
    ASSERT_TRUE(DecodeRow(enc.encoding, enc.scale, enc.bytes, decoded).ok());
    for (size_t i = 0; i < 64; ++i) {
      sent_total[i] += decoded[i];
      residual[i] -= decoded[i];
    }
  }
  for (size_t i = 0; i < 64; ++i) EXPECT_NEAR(sent_total[i] + residual[i], true_total[i], 1e-4);
  for (size_t i = 0; i < 64; ++i) EXPECT_LT(std::fabs(residual[i]), 0.01);
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

TEST(RowCodecTest, AddingAMalformedRowChangesNothing) {
  std::vector<float> sum(8, 1.0f);
  Status s = AddDecodedRow(RowEncoding::kInt8, 1.0f, "abc", sum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  for (float x : sum) EXPECT_EQ(x, 1.0f);
}

}  // namespace
}  // namespace edgetrain

#include "core/replica_record.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

// Parameters that move by small Adam-like steps, sent down as differences; the
// worker's copy is built only from what it receives.
TEST(ReplicaRecordTest, TheWorkersCopyStaysTheRecordAndFollowsTheParameters) {
  const RowLayout layout({{4, 64}, {64}}, SyncGranularity::kRow);
  for (RowEncoding e : {RowEncoding::kFloat16, RowEncoding::kInt8, RowEncoding::kSign}) {
    std::mt19937_64 rng(7);
    std::normal_distribution<float> init(0, 0.1f), step(0, 0.004f);
    std::vector<float> params(static_cast<size_t>(layout.total_floats()));
    for (float& p : params) p = init(rng);
    ReplicaRecord record(layout);
    std::vector<float> copy(params.size(), 0.0f);
    auto row_of = [&](std::vector<float>& v, size_t r) {
      return std::span<float>(v.data() + layout.row(r).offset, static_cast<size_t>(layout.row(r).length));
    };
    for (size_t r = 0; r < layout.size(); ++r) {
      EXPECT_FALSE(record.Known(r));
      record.RecordWhole(r, row_of(params, r));
      std::copy_n(params.begin() + layout.row(r).offset, layout.row(r).length, copy.begin() + layout.row(r).offset);
    }
    for (int t = 0; t < 200; ++t) {
      for (float& p : params) p -= step(rng);
      for (size_t r = 0; r < layout.size(); ++r) {
        ASSERT_TRUE(record.Known(r));
        EncodedRow d = record.Difference(r, row_of(params, r), e);
        ASSERT_TRUE(AddDecodedRow(d.encoding, d.scale, d.bytes, row_of(copy, r)).ok());
      }
    }
    // The record is what the worker holds, bit for bit: a further difference
    // from the record to the copy is exactly zero.
    for (size_t r = 0; r < layout.size(); ++r) {
      EncodedRow d = record.Difference(r, row_of(copy, r), RowEncoding::kFloat32);
      std::vector<float> zero(static_cast<size_t>(layout.row(r).length));
      ASSERT_TRUE(DecodeRow(d.encoding, d.scale, d.bytes, zero).ok());
      for (float z : zero) ASSERT_EQ(z, 0.0f) << static_cast<int>(e);
    }
    // Error feedback: once the parameters stop, the copy closes in on them.
    double before = 0, after = 0;
    for (size_t i = 0; i < params.size(); ++i) before = std::max(before, double{std::fabs(params[i] - copy[i])});
    for (int t = 0; t < 30; ++t) {
      for (size_t r = 0; r < layout.size(); ++r) {
        EncodedRow d = record.Difference(r, row_of(params, r), e);
        ASSERT_TRUE(AddDecodedRow(d.encoding, d.scale, d.bytes, row_of(copy, r)).ok());
      }
    }
    for (size_t i = 0; i < params.size(); ++i) after = std::max(after, double{std::fabs(params[i] - copy[i])});
    EXPECT_LT(after, 0.01) << static_cast<int>(e);
    EXPECT_LE(after, before) << static_cast<int>(e);
    RecordProperty("max_gap_" + std::to_string(static_cast<int>(e)), std::to_string(after));
  }
}

TEST(ReplicaRecordTest, AForgottenRowMustGoWholeAgain) {
  const RowLayout layout({{2, 32}}, SyncGranularity::kRow);
  ReplicaRecord record(layout);
  std::vector<float> row(32, 1.0f);
  record.RecordWhole(1, row);
  EXPECT_TRUE(record.Known(1));
  EXPECT_FALSE(record.Known(0));
  record.Forget(1);
  EXPECT_FALSE(record.Known(1));
}

}  // namespace
}  // namespace edgetrain

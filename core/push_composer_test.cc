#include "core/push_composer.h"

#include <cstring>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

// Three rows of two floats.
const RowLayout kLayout({{3, 2}}, SyncGranularity::kRow, 1);

std::vector<size_t> Ids(const std::vector<OutgoingRow>& rows) {
  std::vector<size_t> ids;
  for (const auto& r : rows) ids.push_back(r.id);
  return ids;
}

TEST(PushComposerTest, AnUnbudgetedPushCarriesEveryRowWithSomethingInIt) {
  PushComposer pushes(kLayout, Compression::kNone, /*budgeted=*/false, RowOrder::kImportance);
  pushes.Accumulate(std::vector<float>{1, 1, 0, 0, 2, 2});
  auto rows = pushes.Compose(1, 0, 0);
  EXPECT_EQ(Ids(rows), (std::vector<size_t>{0, 1, 2})) << "under BSP (S = 0) every row is mandatory";
  EXPECT_TRUE(pushes.Compose(1, 0, 0).empty()) << "nothing new since iteration 1";
}

TEST(PushComposerTest, ResidualsAddUpUntilTheyAreSent) {
  PushComposer pushes(kLayout, Compression::kNone, /*budgeted=*/true, RowOrder::kImportance);
  pushes.Accumulate(std::vector<float>{1, 0, 0, 0, 0, 0});
  pushes.Accumulate(std::vector<float>{2, 0, 3, 0, 0, 0});
  // 8 bytes: one float32 row. Row 1 has 9 of energy, row 0 has 9 too: ties by index.
  auto rows = pushes.Compose(2, 20, 8);
  ASSERT_EQ(Ids(rows), (std::vector<size_t>{0}));
  float sent[2];
  std::memcpy(sent, rows[0].encoded.bytes.data(), sizeof sent);
  EXPECT_FLOAT_EQ(sent[0], 3);
  auto next = pushes.Compose(3, 20, 8);
  ASSERT_EQ(Ids(next), (std::vector<size_t>{1}));
}

TEST(PushComposerTest, ADemandedRowGoesWhateverItsPriority) {
  PushComposer pushes(kLayout, Compression::kNone, /*budgeted=*/true, RowOrder::kImportance);
  pushes.Accumulate(std::vector<float>{5, 5, 0, 0, 0.1f, 0});
  pushes.Demand(2);
  EXPECT_EQ(Ids(pushes.Compose(1, 4, 0)), (std::vector<size_t>{2})) << "a zero budget still carries demands";
}

TEST(PushComposerTest, CompressionLeavesWhatItDroppedForALaterPush) {
  PushComposer pushes(kLayout, Compression::kInt8, /*budgeted=*/false, RowOrder::kImportance);
  pushes.Accumulate(std::vector<float>{1.0f, 0.003f, 0, 0, 0, 0});
  auto first = pushes.Compose(1, 0, 0);
  ASSERT_FALSE(first.empty());
  std::vector<float> decoded(2);
  ASSERT_TRUE(DecodeRow(first[0].encoded.encoding, first[0].encoded.scale, first[0].encoded.bytes, decoded).ok());
  // 0.003 is under half of int8's step (1/127) for this row: it stays in the residual.
  EXPECT_FLOAT_EQ(decoded[1], 0.0f);
  auto second = pushes.Compose(2, 0, 0);
  ASSERT_FALSE(second.empty());
  ASSERT_TRUE(DecodeRow(second[0].encoded.encoding, second[0].encoded.scale, second[0].encoded.bytes, decoded).ok());
  EXPECT_NEAR(decoded[1], 0.003f, 1e-5);
}

// Rounds closed without a worker whose pushes had all gone owe nothing: under
// a deadline's bound of 0 every row had gone again, of nothing but
// compression's residual, late for every round (found in review). The
// residual stays for the next push.
TEST(PushComposerTest, RoundsSkippedOweNoRowAndKeepTheResidual) {
  PushComposer pushes(kLayout, Compression::kInt8, /*budgeted=*/false, RowOrder::kImportance);
  pushes.Accumulate(std::vector<float>{1, 0.3f, 0, 0, 0, 0});
  ASSERT_EQ(pushes.Compose(5, 0, 0).size(), 3u);
  pushes.SkipTo(8);
  EXPECT_TRUE(pushes.Compose(8, 0, 0).empty()) << "nothing owed for rounds 6-8";
  pushes.Accumulate(std::vector<float>{0, 0, 0, 0, 0, 0});
  const auto next = pushes.Compose(9, 0, 0);
  ASSERT_EQ(next.size(), 3u);
  std::vector<float> row0(2);
  ASSERT_TRUE(DecodeRow(next[0].encoded.encoding, next[0].encoded.scale, next[0].encoded.bytes, row0).ok());
  EXPECT_NE(row0[1], 0.0f) << "int8's error on row 0 is sent with the next push";
}

TEST(PushComposerTest, ARestartDropsWhatWasComputedForTheOldModel) {
  PushComposer pushes(kLayout, Compression::kNone, /*budgeted=*/false, RowOrder::kImportance);
  pushes.Accumulate(std::vector<float>{1, 1, 1, 1, 1, 1});
  pushes.Demand(0);
  pushes.Restart(10);
  EXPECT_TRUE(pushes.Compose(10, 4, 1000).empty());
}

}  // namespace
}  // namespace edgetrain

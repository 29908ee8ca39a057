#include "core/row_layout.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

// An MLP 64 -> 32 -> 10: weight [32, 64], bias [32], weight [10, 32], bias [10].
const std::vector<std::vector<int64_t>> kShapes = {{32, 64}, {32}, {10, 32}, {10}};

TEST(RowLayoutTest, CutsMatricesIntoRowsAndKeepsVectorsWhole) {
  RowLayout layout(kShapes, SyncGranularity::kRow);
  ASSERT_EQ(layout.size(), 32u + 1 + 10 + 1);
  EXPECT_EQ(layout.total_floats(), 32 * 64 + 32 + 10 * 32 + 10);
  EXPECT_EQ(layout.row(0).length, 64);
  EXPECT_EQ(layout.row(31).offset, 31 * 64);
  EXPECT_EQ(layout.row(32).tensor, 1u);
  EXPECT_EQ(layout.row(32).length, 32);
  EXPECT_EQ(layout.row(33).offset, 32 * 64 + 32);
  EXPECT_EQ(layout.row(43).length, 10);
  // The rows tile the flat vector exactly.
  int64_t next = 0;
  for (const auto& r : layout.rows()) {
    EXPECT_EQ(r.offset, next);
    next += r.length;
  }
  EXPECT_EQ(next, layout.total_floats());
}

TEST(RowLayoutTest, TinyRowsStayWithTheirTensor) {
  // A conv weight [16, 1, 3, 3] has rows of 9 floats: below 16, one row.
  RowLayout layout({{16, 1, 3, 3}, {16}, {8, 16, 3, 3}}, SyncGranularity::kRow);
  ASSERT_EQ(layout.size(), 1u + 1 + 8);
  EXPECT_EQ(layout.row(0).length, 144);
  EXPECT_EQ(layout.row(2).length, 144);
}

TEST(RowLayoutTest, LayerAndModelGranularity) {
  RowLayout layers(kShapes, SyncGranularity::kLayer);
  ASSERT_EQ(layers.size(), 4u);
  EXPECT_EQ(layers.row(2).length, 320);
  RowLayout model(kShapes, SyncGranularity::kModel);
  ASSERT_EQ(model.size(), 1u);
  EXPECT_EQ(model.row(0).length, model.total_floats());
}

}  // namespace
}  // namespace edgetrain

#include "core/edit_distance.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(EditDistanceTest, CountsTheFewestEdits) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("size", "size"), 0u);
  EXPECT_EQ(EditDistance("sise", "size"), 1u);
  EXPECT_EQ(EditDistance("--node", "--nodes"), 1u);
  EXPECT_EQ(EditDistance("batchsize", "batchSize"), 1u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
}

}  // namespace
}  // namespace edgetrain

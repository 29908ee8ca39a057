#include "core/median.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(MedianTest, TheMiddleValueOrTheMeanOfTheMiddleTwo) {
  EXPECT_EQ(Median({}), 0);
  EXPECT_EQ(Median({4}), 4);
  EXPECT_EQ(Median({9, 1, 5}), 5);
  EXPECT_EQ(Median({9, 1, 5, 3}), 4);
  EXPECT_EQ(Median({2, 2, 100, 2}), 2) << "an outlier moves nothing";
}

}  // namespace
}  // namespace edgetrain

#include "core/number_text.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(NumberTextTest, BytesInTheirLargestBinaryUnit) {
  EXPECT_EQ(BinaryBytes(1000), "1000 B");
  EXPECT_EQ(BinaryBytes(1850368), "1.8 MiB");
  EXPECT_EQ(BinaryBytes(1.04 * 1048576, 2), "1.04 MiB");
  EXPECT_EQ(BinaryBytes(3.0 * 1024 * 1024 * 1024), "3.0 GiB");
  EXPECT_EQ(BinaryBytes(2048), "2.0 KiB");
}

TEST(NumberTextTest, GroupsThousands) {
  EXPECT_EQ(WithThousands(0), "0");
  EXPECT_EQ(WithThousands(999), "999");
  EXPECT_EQ(WithThousands(1000), "1,000");
  EXPECT_EQ(WithThousands(1234567), "1,234,567");
  EXPECT_EQ(WithThousands(-4200), "-4,200");
}

TEST(NumberTextTest, ACountHasItsNounOneOrMany) {
  EXPECT_EQ(CountOf(1, "stage", "stages"), "1 stage");
  EXPECT_EQ(CountOf(2, "stage", "stages"), "2 stages");
  EXPECT_EQ(CountOf(0, "step", "steps"), "0 steps");
  EXPECT_EQ(CountOf(2048, "step", "steps"), "2,048 steps");
}

}  // namespace
}  // namespace edgetrain

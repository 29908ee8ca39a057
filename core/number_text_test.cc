#include "core/number_text.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(NumberTextTest, GroupsThousands) {
  EXPECT_EQ(WithThousands(0), "0");
  EXPECT_EQ(WithThousands(999), "999");
  EXPECT_EQ(WithThousands(1000), "1,000");
  EXPECT_EQ(WithThousands(1234567), "1,234,567");
  EXPECT_EQ(WithThousands(-4200), "-4,200");
}

}  // namespace
}  // namespace edgetrain

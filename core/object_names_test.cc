#include "core/object_names.h"

#include <string>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(ObjectNamesTest, LabelsAreLowerAlphanumericAndDashesWithinLetterOrDigitEnds) {
  for (const char* good : {"a", "0", "robot-team", "a-b-c", "vgg16"}) EXPECT_TRUE(IsDnsLabel(good)) << good;
  for (const char* bad : {"", "-a", "a-", "Robot", "a.b", "a_b", "a b", "ä"}) EXPECT_FALSE(IsDnsLabel(bad)) << bad;
}

TEST(ObjectNamesTest, SubdomainsMayHoldDotsToo) {
  EXPECT_TRUE(IsDnsSubdomain("edgetrain-operator.v1"));
  EXPECT_FALSE(IsDnsSubdomain(".lease"));
  EXPECT_FALSE(IsDnsSubdomain("lease."));
  EXPECT_FALSE(IsDnsSubdomain("Lease"));
  for (const char* bad : {"a..b", "a.-b", "a-.b", "."}) EXPECT_FALSE(IsDnsSubdomain(bad)) << bad;
}

// std::regex recursed once a character and overflowed the stack here.
TEST(ObjectNamesTest, AMillionCharactersAreJudgedWithoutRecursion) {
  const std::string long_name(1000000, 'a');
  EXPECT_TRUE(IsDnsLabel(long_name));
  EXPECT_TRUE(IsDnsSubdomain(long_name));
  EXPECT_FALSE(IsDnsLabel(long_name + "-"));
}

}  // namespace
}  // namespace edgetrain

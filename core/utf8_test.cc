#include "core/utf8.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(Utf8Test, FindsTheFirstByteThatIsNot) {
  EXPECT_EQ(FirstInvalidUtf8("caf\xC3\xA9/out"), std::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("caf\xE9/out"), 3u);           // Latin-1 é
  EXPECT_EQ(FirstInvalidUtf8("ab\xC3"), 2u);                // cut short
  EXPECT_EQ(FirstInvalidUtf8("\xC0\xAF"), 0u);              // overlong '/'
  EXPECT_EQ(FirstInvalidUtf8("x\xED\xA0\x80"), 1u);         // a UTF-16 surrogate
  EXPECT_EQ(FirstInvalidUtf8("\xF0\x9F\x98\x80 ok"), std::string_view::npos);
}

TEST(Utf8Test, ShowsOnlyTheBytesThatAreNot) {
  EXPECT_EQ(ShowInvalidUtf8("/tmp/caf\xE9/\xC3\xA9t\xE9"), "/tmp/caf\\xE9/\xC3\xA9t\\xE9");
  EXPECT_EQ(ShowInvalidUtf8("plain"), "plain");
  EXPECT_EQ(ShowInvalidUtf8("\xFF\xFE"), "\\xFF\\xFE");
}

TEST(Utf8Test, APathThatIsNotIsRefusedByItsField) {
  EXPECT_TRUE(CheckUtf8Path("/home/jos\xC3\xA9/out", "--output").ok());
  const Status refused = CheckUtf8Path("/home/jos\xE9/out", "--output");
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message().rfind("--output: /home/jos\\xE9/out is not UTF-8", 0), 0u) << refused.message();
  EXPECT_NE(refused.message().find("rename it"), std::string::npos);
}

}  // namespace
}  // namespace edgetrain

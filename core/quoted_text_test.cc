#include "core/quoted_text.h"

#include <string>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(QuotedExcerptTest, ShortTextIsQuotedWhole) {
  EXPECT_EQ(QuotedExcerpt("robot-team"), "\"robot-team\"");
  EXPECT_EQ(QuotedExcerpt(""), "\"\"");
  EXPECT_EQ(QuotedExcerpt("größe"), "\"größe\"");
}

// An ESC byte in a manifest reached the terminal and cleared it.
TEST(QuotedExcerptTest, ControlCharactersAndBytesThatAreNotUtf8AreShownEscaped) {
  EXPECT_EQ(QuotedExcerpt(std::string("a\x1b[2Jb\n\t\x7f") + '\0'), "\"a\\x1B[2Jb\\n\\t\\x7F\\x00\"");
  EXPECT_EQ(QuotedExcerpt("\xff\xfe"), "\"\\xFF\\xFE\"");
}

TEST(QuotedExcerptTest, LongTextIsCutBetweenCharactersAndSaysHowLongItWas) {
  EXPECT_EQ(QuotedExcerpt(std::string(26159, 'a'), 5), "\"aaaaa...\" (26,159 characters)");
  // Five bytes hold two "ö" (two bytes each), not half a third.
  EXPECT_EQ(QuotedExcerpt("öööö", 5), "\"öö...\" (4 characters)");
  EXPECT_EQ(QuotedExcerpt("abcde", 5), "\"abcde\"");
}

// A word a shell reads back as it was: the plain as it is, the rest quoted.
TEST(ShellWordTest, QuotesOnlyWhatAShellWouldSplitOrRead) {
  EXPECT_EQ(ShellWord("--config.file=/tmp/out/prometheus.yml"), "--config.file=/tmp/out/prometheus.yml");
  EXPECT_EQ(ShellWord("--storage.tsdb.path=/tmp/out dir/data"), "'--storage.tsdb.path=/tmp/out dir/data'");
  EXPECT_EQ(ShellWord("it's $HOME"), "'it'\\''s $HOME'");
  EXPECT_EQ(ShellWord(""), "''");
}

}  // namespace
}  // namespace edgetrain

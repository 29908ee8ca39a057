#include "agent/data/csv_format.h"

#include <gtest/gtest.h>

#include "agent/data/test_files.h"

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;

const DatasetInfo kThreeFeatures{1, 1, 3, 4, 0, 0};  // inputShape [3], 4 classes

TEST(CsvFormatTest, ReadsLabelFirstThenFeaturesAsTheyAre) {
  auto d = ParseCsv("3,0.5,-1,2e3\n0,1,2,3\n", kThreeFeatures, {}, "t.csv");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->labels, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(d->features, (std::vector<float>{0.5f, -1, 2000, 1, 2, 3}));
  EXPECT_TRUE(d->pixels.empty());
  std::vector<float> x(3);
  d->CopySamples(1, 1, x.data());
  EXPECT_EQ(x, (std::vector<float>{1, 2, 3}));
}

TEST(CsvFormatTest, SkipsAHeaderAndBlankLinesAndReadsSpreadsheetsQuirks) {
  // A byte-order mark, a header, Windows line ends, quoted and padded fields,
  // a label written as a float, a blank line and no final newline.
  const std::string text = "\xEF\xBB\xBFlabel,a,b,c\r\n\"1\", 2 ,+3,4\r\n\r\n2.0,5,6,7";
  auto d = ParseCsv(text, kThreeFeatures, {}, "t.csv");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->labels, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(d->features, (std::vector<float>{2, 3, 4, 5, 6, 7}));
  // A header naming the label where it is read, or naming no label, is a header.
  for (const char* header : {"target,a,b,c\n", "x,y,z,w\n"}) {
    auto named = ParseCsv(std::string(header) + "1,2,3,4\n", kThreeFeatures, {}, "t.csv");
    ASSERT_TRUE(named.ok()) << header << named.status().ToString();
    EXPECT_EQ(named->labels, (std::vector<int64_t>{1}));
  }
  // A header that names the label and numbers the rest: it was refused,
  // "'label' is not a number" (a new user's trial).
  auto numbered = ParseCsv("label,0,1,2\n1,2,3,4\n", kThreeFeatures, {}, "t.csv");
  ASSERT_TRUE(numbered.ok()) << numbered.status().ToString();
  EXPECT_EQ(numbered->labels, (std::vector<int64_t>{1}));
  // A label written as its class's name is said as the label.
  auto named_class = ParseCsv("virginica,2,3,4\n", kThreeFeatures, {}, "t.csv");
  ASSERT_FALSE(named_class.ok());
  EXPECT_EQ(named_class.status().message(),
            "t.csv:1: label 'virginica' is not a number: a label is its class's number, 0 to 3 (write each class's "
            "name as its number)");
  auto last = ParseCsv("a,b,c,label\n2,3,4,1\n", kThreeFeatures, {.label_column = -1}, "t.csv");
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ(last->labels, (std::vector<int64_t>{1}));
}

TEST(CsvFormatTest, ALabelColumnAndLevelsKeepBytes) {
  // As digits.csv.gz: grey levels 0-16, the label last.
  auto d = ParseCsv("0,8,16,3\n", kThreeFeatures, {.label_column = -1, .max_level = 16}, "digits.csv");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->labels, (std::vector<int64_t>{3}));
  EXPECT_EQ(d->pixels, (std::vector<uint8_t>{0, 8, 16}));
  EXPECT_TRUE(d->features.empty());
  std::vector<float> x(3);
  d->CopySamples(0, 1, x.data());
  EXPECT_EQ(x, (std::vector<float>{0, 0.5f, 1}));
}

TEST(CsvFormatTest, ReadsGzippedFiles) {
  const fs::path dir = testing_files::FreshDir();
  const std::string path = testing_files::WriteGz(dir / "train.csv.gz", "x,y,z,label?\n1,1,1,1\n");
  auto d = ReadCsvFile(path, kThreeFeatures);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->size(), 1);
  EXPECT_EQ(d->features, (std::vector<float>{1, 1, 1}));
}

TEST(CsvFormatTest, RefusesBadRows) {
  struct Case {
    std::string text;
    CsvOptions options;
    const char* error;
  } cases[] = {
      {"", {}, "t.csv: no samples"},
      {"label,a,b,c\n", {}, "t.csv: no samples (its first line, taken for a header: 'label,a,b,c')"},
      {"3,abc,abc,abc\n", {}, "t.csv: no samples (its first line, taken for a header: '3,abc,abc,abc')"},
      // A first line of numbers with one typo is a sample, not a header.
      {"3,abc,2,4\n1,2,3,4\n", {}, "t.csv:1: 'abc' is not a number"},
      {"1,2,3\n", {}, "t.csv:1: expected 4 values, a label and a sample's 3, found 3"},
      {"1,2,3,4\n1,2,3,4,5\n", {}, "t.csv:2: expected 4 values, a label and a sample's 3, found 5"},
      {"1,2,3,4\n1,2,x,4\n", {}, "t.csv:2: 'x' is not a number"},
      {"1,2,3,4\n1,2,,4\n", {}, "t.csv:2: '' is not a number"},
      // Another encoding's byte is escaped, so that the message stays UTF-8 (it goes into JSON).
      {"1,2,3,4\n1,caf\xe9,3,4\n", {}, "t.csv:2: 'caf\\xE9' is not a number"},
      // A file of another separator: its line is one long field.
      {"1;2;3;4\n1;2;3;4\n", {}, "t.csv:2: '1;2;3;4' is not a number; fields are separated by commas, and this one holds ';'"},
      {"1\t2\t3\t4\n1\t2\t3\t4\n", {}, "t.csv:2: '1\\x092\\x093\\x094' is not a number; fields are separated by commas, "
                                         "and this one holds tabs"},
      {"1,2,3,4\n1,2,abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrs,4\n", {},
       "t.csv:2: 'abcdefghijklmnopqrstuvwxyzabcdefghijklmn' (cut at 40 of its 45 bytes) is not a number"},
      // A header that puts the label elsewhere: read from the first column, the
      // file would train on its first feature as the label.
      {"a,b,c,label\n0,1,2,3\n", {}, "t.csv:1: the header names column 4 of 4 'label', but each sample's label is "
                                      "read from its first column: write the label first, then the features "
                                      "(docs/own-model.md)"},
      {"x,Class,y,z\n0,1,2,3\n", {}, "t.csv:1: the header names column 2 of 4 'Class', but each sample's label is "
                                      "read from its first column: write the label first, then the features "
                                      "(docs/own-model.md)"},
      {",label,x,y,z\n0,1,2,3,4\n", {}, "t.csv:1: the header names column 2 of 5 'label', but each sample's label "
                                         "is read from its first column: write the label first, then the features "
                                         "(docs/own-model.md); an unnamed first column is pandas' index: write the "
                                         "file with to_csv(..., index=False)"},
      {"1.5,2,3,4\n", {}, "t.csv:1: label '1.5' is not an integer"},
      {"4,2,3,4\n", {}, "t.csv:1: label 4 is out of range [0, 4): spec.data.classes is 4"},
      {"-1,2,3,4\n", {}, "t.csv:1: label -1 is out of range [0, 4): spec.data.classes is 4"},
      {"1,2,nan,4\n", {}, "t.csv:1: 'nan' is not a finite number"},
      {"1,2,1e39,4\n", {}, "t.csv:1: '1e39' is beyond float32's range (3.4e38), which features are kept in"},
      // Past a double's range too: a number, not "not a number".
      {"1,2,1e400,4\n", {}, "t.csv:1: '1e400' is beyond float32's range (3.4e38), which features are kept in"},
      {"1,2,-1e400,4\n", {}, "t.csv:1: '-1e400' is beyond float32's range (3.4e38), which features are kept in"},
      {"1,2,inf,4\n", {}, "t.csv:1: 'inf' is not a finite number"},
      {"1,2,3,17\n", {.label_column = 0, .max_level = 16}, "t.csv:1: value '17' is not a whole number from 0 to 16"},
      {"1,2,3.5,1\n", {.label_column = -1, .max_level = 16}, "t.csv:1: value '3.5' is not a whole number from 0 to 16"},
  };
  for (const auto& c : cases) {
    auto d = ParseCsv(c.text, kThreeFeatures, c.options, "t.csv");
    ASSERT_FALSE(d.ok()) << c.error;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(d.status().message(), c.error);
  }
  // A line of a million fields is counted, not split: the vectors it was
  // split into held 24 bytes a field before the count refused it (found in review).
  std::string wide = "1,2,3,4\n1";
  for (int i = 0; i < 1'000'000; ++i) wide += ",0";
  auto d = ParseCsv(wide + "\n", kThreeFeatures, {}, "t.csv");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "t.csv:2: expected 4 values, a label and a sample's 3, found 1000001");
}

}  // namespace
}  // namespace edgetrain::agent

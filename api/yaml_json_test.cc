#include "api/yaml_json.h"

#include <gtest/gtest.h>

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;

TEST(YamlJsonTest, TypesPlainScalarsLikeKubectlAndKeepsQuotedOnesAsStrings) {
  auto docs = ParseYamlDocuments(R"(
int: 42
negative: -3
float: 0.5
exp: 1e-3
bool: true
yes_bool: yes
off_bool: off
null_value: ~
empty:
text: hello
quoted_int: "42"
quoted_bool: 'true'
list: [1, two, 3.5]
nested: {a: {b: [x]}}
)", "t.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 1u);
  const Json& d = (*docs)[0];
  EXPECT_EQ(d["int"], 42);
  EXPECT_TRUE(d["int"].is_number_integer());
  EXPECT_EQ(d["negative"], -3);
  EXPECT_TRUE(d["float"].is_number_float());
  EXPECT_DOUBLE_EQ(d["exp"].get<double>(), 0.001);
  EXPECT_EQ(d["bool"], true);
  EXPECT_EQ(d["yes_bool"], true);
  EXPECT_EQ(d["off_bool"], false);
  EXPECT_TRUE(d["null_value"].is_null());
  EXPECT_TRUE(d["empty"].is_null());
  EXPECT_EQ(d["text"], "hello");
  EXPECT_EQ(d["quoted_int"], "42");
  EXPECT_EQ(d["quoted_bool"], "true");
  EXPECT_EQ(d["list"], Json::parse(R"([1, "two", 3.5])"));
  EXPECT_EQ(d["nested"]["a"]["b"][0], "x");
}

// As kubectl merges them: the keys written beside << win, then the first
// map named; a tag kubectl would refuse is refused with its line.
TEST(YamlJsonTest, MergeKeysMergeAndTagsAreReadAsKubectlReadsThem) {
  auto docs = ParseYamlDocuments(R"(
defaults: &defaults {name: adam, learningRate: 0.01}
more: &more {name: sgd, momentum: 0.9}
optimizer:
  <<: [*defaults, *more]
  learningRate: 0.004
epochs: !!int 0x10
)", "t.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ((*docs)[0]["optimizer"], Json::parse(R"({"name": "adam", "learningRate": 0.004, "momentum": 0.9})"));
  EXPECT_EQ((*docs)[0]["epochs"], 16);
  auto tagged = ParseYamlDocuments("spec:\n  batchSize: !!bool 32\n", "t.yaml");
  ASSERT_FALSE(tagged.ok());
  EXPECT_EQ(tagged.status().message(), "t.yaml:2:14: spec.batchSize: !!bool \"32\": not a boolean (true, false, yes, "
                                       "no, on, off)");
  auto merged_scalar = ParseYamlDocuments("a:\n  <<: 5\n", "t.yaml");
  ASSERT_FALSE(merged_scalar.ok());
  EXPECT_NE(merged_scalar.status().message().find("<< (a merge key) takes a map"), std::string::npos);
}

// Line breaks as YAML has them (CR alone too, which yaml-cpp took for no
// break), and UTF-16 named (a user's trial).
TEST(YamlJsonTest, LineBreaksOfEveryKindAndUtf16Said) {
  for (const char* text : {"a: 1\nb: 2\n", "a: 1\r\nb: 2\r\n", "a: 1\rb: 2\r"}) {
    auto docs = ParseYamlDocuments(text, "t.yaml");
    ASSERT_TRUE(docs.ok()) << docs.status().ToString();
    EXPECT_EQ((*docs)[0], Json::parse(R"({"a": 1, "b": 2})"));
  }
  auto utf16 = ParseYamlDocuments(std::string("\xFF\xFE" "a\0:\0 \0" "1\0", 10), "t.yaml");
  ASSERT_FALSE(utf16.ok());
  EXPECT_EQ(utf16.status().message(), "t.yaml is UTF-16 text (its byte-order mark says so): save it as UTF-8, which "
                                      "edgetrain reads");
}

TEST(YamlJsonTest, SyntaxErrorsNameLineAndColumn) {
  auto docs = ParseYamlDocuments("spec:\n  model: [mlp\n  data: x\n", "bad.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(docs.status().message().rfind("bad.yaml:", 0), 0u) << docs.status().message();
  EXPECT_NE(docs.status().message().find("bad.yaml:3:"), std::string::npos) << docs.status().message();

  // The parser notices an unclosed bracket or quote lines later: the error
  // names where it was opened (a new user read it one line late).
  EXPECT_NE(docs.status().message().find("(the `[` at line 2, column 10 is never closed)"), std::string::npos)
      << docs.status().message();
  auto quote = ParseYamlDocuments("spec:\n  model: {name: \"mlp}\n  data: {dataset: digits}\n", "quote.yaml");
  ASSERT_FALSE(quote.ok());
  EXPECT_NE(quote.status().message().find("(the `\"` at line 2, column 17 is never closed)"), std::string::npos)
      << quote.status().message();
  auto apostrophe = ParseYamlDocuments("a: robot's team\nb: {c: 1\nd: 2\n", "apostrophe.yaml");
  ASSERT_FALSE(apostrophe.ok());
  EXPECT_NE(apostrophe.status().message().find("(the `{` at line 2, column 4 is never closed)"), std::string::npos)
      << apostrophe.status().message();

  // An error inside brackets that do close (a missing comma) names none.
  auto comma = ParseYamlDocuments("{\"spec\": {\"model\": {\"name\": \"mlp\"}\n \"data\": {}}}\n", "comma.yaml");
  ASSERT_FALSE(comma.ok());
  EXPECT_EQ(comma.status().message().find("never closed"), std::string::npos) << comma.status().message();

  auto tabs = ParseYamlDocuments("a: 1\n\tb: 2\n", "tabs.yaml");
  ASSERT_FALSE(tabs.ok());
  EXPECT_NE(tabs.status().message().find("tabs.yaml:2:"), std::string::npos) << tabs.status().message();
}

// A tab in the indentation is named, where yaml-cpp's own words do not
// (a user's trial).
TEST(YamlJsonTest, ATabIndentingALineIsNamed) {
  auto docs = ParseYamlDocuments("spec:\n  model:\n\tname: mlp\n", "tabs.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("(line 3 is indented with a tab: YAML indents with spaces)"),
            std::string::npos)
      << docs.status().message();
}

// A line indented one space short in a list: yaml-cpp says only "end of
// sequence not found" (a user's trial), and the message says what it means.
TEST(YamlJsonTest, ALineIndentedUnlikeItsNeighboursIsSaidToBeSo) {
  auto docs = ParseYamlDocuments("spec:\n  nodes:\n    - name: a\n      cpu: 2\n   - name: b\n", "nodes.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("indented unlike its neighbours"), std::string::npos)
      << docs.status().message();
}

TEST(YamlJsonTest, DuplicateKeysAreRefusedWhereTheyStand) {
  auto docs = ParseYamlDocuments("spec:\n  seed: 1\n  seed: 2\n", "dup.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message(), "dup.yaml:3:3: duplicate key \"seed\"");
}

TEST(YamlJsonTest, KeepsEveryDocument) {
  auto docs = ParseYamlDocuments("a: 1\n---\n---\nb: 2\n", "multi.yaml");
  ASSERT_TRUE(docs.ok());
  ASSERT_EQ(docs->size(), 3u);
  EXPECT_TRUE((*docs)[1].is_null());
  EXPECT_EQ((*docs)[2]["b"], 2);
}

// Where each field was written, by its path; the empty documents dropped with
// their lines in step; and no lines for a text of one line, all of whose
// fields are on its line 1 (the operator's, an object as JSON).
TEST(YamlJsonTest, SaysWhereEachFieldIsWrittenAndDropsEmptyDocumentsInStep) {
  std::vector<FieldLines> lines;
  auto docs = ParseYamlDocuments("---\n---\nspec:\n  nodes:\n  - name: a\n    cpu: 2\n", "p.yaml", &lines);
  ASSERT_TRUE(docs.ok());
  DropEmptyDocuments(*docs, lines);
  ASSERT_EQ(docs->size(), 1u);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("spec"), 3);
  EXPECT_EQ(lines[0].at("spec.nodes[0]"), 5);
  EXPECT_EQ(lines[0].at("spec.nodes[0].cpu"), 6);
  EXPECT_EQ(LinePrefix(&lines[0], "p.yaml", "spec.nodes[0].memory"), "p.yaml:5: ") << "a missing field: its parent's";
  auto one_line = ParseYamlDocuments(R"({"spec": {"nodes": [{"name": "a"}]}})", "ns/job", &lines);
  ASSERT_TRUE(one_line.ok());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].empty());
  EXPECT_EQ(LinePrefix(&lines[0], "ns/job", "spec.nodes[0]"), "");
}

// Errors come in the file's order, whatever check found them first; those of
// no known line after, as found.
TEST(YamlJsonTest, ErrorsAreSaidInTheFilesOrder) {
  const FieldLines lines = {{"spec", 1}, {"spec.data", 2}, {"spec.data.batchSize", 3}, {"spec.sync", 9}};
  const Status status = ToStatus({{"spec.sync.quorum", "too big"},
                                  {"", "no kind"},
                                  {"spec.data.batchSize", "not a number"},
                                  {"spec.data.classes", "required"}},
                                 &lines, "job.yaml");
  EXPECT_EQ(status.message(), "job.yaml:2: spec.data.classes: required\n"
                              "job.yaml:3: spec.data.batchSize: not a number\n"
                              "job.yaml:9: spec.sync.quorum: too big\n"
                              "no kind");
  EXPECT_EQ(ToStatus({{"b", "second"}, {"a", "first"}}).message(), "b: second\na: first") << "no lines: as found";
}

// Aliases that name each other (a "billion laughs") expand a few lines to
// billions of values: refused once they pass what any manifest or profile
// holds, where they took gigabytes and tens of seconds (a user's trial); an
// alias or two, as people write them, is read.
TEST(YamlJsonTest, AliasesThatExpandPastAnyManifestAreRefused) {
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 9; ++level) {
    const std::string prev = "*a" + std::to_string(level - 1);
    bomb += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [" + prev;
    for (int k = 1; k < 10; ++k) bomb += ", " + prev;
    bomb += "]\n";
  }
  auto docs = ParseYamlDocuments(bomb, "laughs.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message(),
            "laughs.yaml: more than 500000 values once its aliases (*name) are expanded: no manifest or cluster "
            "profile is that large");
  auto used = ParseYamlDocuments("base: &link {meanMbps: 20}\nnodes: [{link: *link}, {link: *link}]\n", "a.yaml");
  ASSERT_TRUE(used.ok()) << used.status().ToString();
  EXPECT_EQ((*used)[0]["nodes"][1]["link"]["meanMbps"], 20);
}

// yaml-cpp 0.7's LoadAll loops for ever on these (its issue 1040), and bytes
// that are not UTF-8 crashed the JSON written from them; both found by
// tests/fuzz/manifest_fuzzer. An error, at once.
TEST(YamlJsonTest, AStreamYamlCppWouldLoopOnOrNotUtf8IsAnError) {
  for (const char* text : {",", "\n,\n", "a: 1\n---\n,"}) {
    auto docs = ParseYamlDocuments(text, "stray.yaml");
    ASSERT_FALSE(docs.ok()) << text;
    EXPECT_NE(docs.status().message().find("stray.yaml"), std::string::npos) << docs.status().message();
  }
  // Bytes that are no UTF-8, which the JSON made of them could not be written with.
  auto latin1 = ParseYamlDocuments("name: caf\xe9\nkind: x\n", "latin1.yaml");
  ASSERT_FALSE(latin1.ok());
  EXPECT_EQ(latin1.status().message(), "latin1.yaml:1:10: not UTF-8 text (byte 0xE9)");
  EXPECT_TRUE(ParseYamlDocuments("name: caf\xc3\xa9 \xf0\x9f\xa4\x96\n", "utf8.yaml").ok());
  // UTF-8 text that yaml-cpp reads into a scalar that is not (tests/fuzz's
  // manifest fuzzer: a NUL in a plain scalar folded over two lines).
  const std::string folded = std::string("apiVersion: edg5\n    momendaNNNN") + '\0' + std::string(36, 'N') + "O" +
                             std::string(14, 'N') + "t}\n";
  auto unreadable = ParseYamlDocuments(folded, "nul.yaml");
  ASSERT_FALSE(unreadable.ok());
  EXPECT_EQ(
      unreadable.status().message().rfind("nul.yaml:1:13: apiVersion: not UTF-8 text once read as YAML (byte ", 0),
      0u)
      << unreadable.status().message();
  // JSON has no NaN or infinity, and NaN passes every range check.
  for (const char* text : {"x: .nan\n", "x: -.inf\n", "x: 1e999\n"}) {
    auto number = ParseYamlDocuments(text, "n.yaml");
    ASSERT_FALSE(number.ok()) << text;
    EXPECT_NE(number.status().message().find("is not a finite number"), std::string::npos) << number.status().message();
  }
  EXPECT_TRUE(ParseYamlDocuments("x: \".nan\"\n", "quoted.yaml").ok()) << "a string";
  // Named by its field too, as every other refusal is (a user's trial).
  auto deep = ParseYamlDocuments("spec:\n  optimizer: {learningRate: 1e400}\n  hidden: [1, .inf]\n", "n.yaml");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().message(), "n.yaml:2:29: spec.optimizer.learningRate: \"1e400\" is not a finite number");
  auto empty = ParseYamlDocuments("---\n---\n...\n", "empty.yaml");
  EXPECT_TRUE(empty.ok()) << empty.status().ToString();
}

}  // namespace
}  // namespace edgetrain::api

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

TEST(YamlJsonTest, SyntaxErrorsNameLineAndColumn) {
  auto docs = ParseYamlDocuments("spec:\n  model: [mlp\n  data: x\n", "bad.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(docs.status().message().rfind("bad.yaml:", 0), 0u) << docs.status().message();
  EXPECT_NE(docs.status().message().find("bad.yaml:3:"), std::string::npos) << docs.status().message();

  auto tabs = ParseYamlDocuments("a: 1\n\tb: 2\n", "tabs.yaml");
  ASSERT_FALSE(tabs.ok());
  EXPECT_NE(tabs.status().message().find("tabs.yaml:2:"), std::string::npos) << tabs.status().message();
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

}  // namespace
}  // namespace edgetrain::api

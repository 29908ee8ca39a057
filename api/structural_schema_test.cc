#include "api/structural_schema.h"

#include <gtest/gtest.h>

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;

const Json kSchema = Json::parse(R"({
  "type": "object",
  "required": ["name"],
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[a-z]+$"},
    "size": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
    "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1, "exclusiveMaximum": true},
    "kind": {"type": "string", "enum": ["a", "b"]},
    "flag": {"type": "boolean"},
    "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "integer", "minimum": 0}},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "quantity": {"x-kubernetes-int-or-string": true},
    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    "nested": {
      "type": "object", "default": {},
      "properties": {"depth": {"type": "integer", "default": 2}, "mode": {"type": "string", "default": "fast"}}
    },
    "conditions": {
      "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
      "items": {"type": "object", "properties": {"type": {"type": "string"}, "status": {"type": "string"}}}
    }
  }
})");

std::vector<std::string> Errors(Json value) {
  std::vector<std::string> out;
  for (const auto& e : ValidateAndDefault(kSchema, value, "spec")) out.push_back(e.ToString());
  return out;
}

TEST(StructuralSchemaTest, FillsDefaultsIncludingInsideDefaultedObjects) {
  Json value = {{"name", "ok"}};
  EXPECT_TRUE(ValidateAndDefault(kSchema, value, "spec").empty());
  EXPECT_EQ(value["size"], 3);
  EXPECT_EQ(value["nested"], Json::parse(R"({"depth": 2, "mode": "fast"})"));
  Json explicit_null = {{"name", "ok"}, {"size", nullptr}};
  EXPECT_TRUE(ValidateAndDefault(kSchema, explicit_null, "spec").empty());
  EXPECT_EQ(explicit_null["size"], 3) << "null counts as absent";
  Json null_without_default = {{"name", "ok"}, {"labels", nullptr}, {"nested", {{"mode", nullptr}}}};
  EXPECT_TRUE(ValidateAndDefault(kSchema, null_without_default, "spec").empty());
  EXPECT_FALSE(null_without_default.contains("labels")) << "a null without a default is dropped, as absent";
  EXPECT_EQ(null_without_default["nested"]["mode"], "fast");
  Json given = {{"name", "ok"}, {"size", 7}, {"nested", {{"depth", 5}}}};
  EXPECT_TRUE(ValidateAndDefault(kSchema, given, "spec").empty());
  EXPECT_EQ(given["size"], 7);
  EXPECT_EQ(given["nested"]["depth"], 5);
  EXPECT_EQ(given["nested"]["mode"], "fast");
}

TEST(StructuralSchemaTest, AcceptsWhatTheSchemaAllows) {
  EXPECT_TRUE(Errors(Json::parse(R"({"name": "abc", "size": 10, "ratio": 0.5, "kind": "b", "flag": false,
    "tags": [0, 4], "labels": {"x": "y"}, "quantity": "500m", "free": {"anything": [1, {"goes": true}]},
    "conditions": [{"type": "Ready"}, {"type": "Done"}]})")).empty());
  EXPECT_TRUE(Errors(Json::parse(R"({"name": "abc", "quantity": 3, "ratio": 1})")).size() == 1);
}

// A string's length is in characters, as the API server counts them, not
// bytes: a long name in CJK that a cluster stores had been refused here
// (found in review).
TEST(StructuralSchemaTest, AStringsLengthIsCountedInCharacters) {
  const Json schema = Json::parse(R"({"type": "object", "properties": {"note": {"type": "string", "maxLength": 3}}})");
  Json three = {{"note", "\u00e4\u6f22\u00fc"}};  // 3 characters, 7 bytes
  EXPECT_TRUE(ValidateAndDefault(schema, three, "spec").empty());
  Json four = {{"note", "\u00e4\u6f22\u00fcx"}};
  EXPECT_EQ(ValidateAndDefault(schema, four, "spec").size(), 1u);
}

TEST(StructuralSchemaTest, ReportsEachViolationWithItsPathAndReason) {
  struct Case {
    const char* value;
    const char* error;
  } cases[] = {
      {R"({})", "spec.name: required field is missing"},
      {R"({"name": 5})", "spec.name: must be a string (got integer 5)"},
      {R"({"name": ""})", "spec.name: must be at least 1 characters long (got \"\")"},
      {R"({"name": "abcdefghij"})", "spec.name: must be at most 8 characters long"},
      {R"({"name": "ABC"})", "spec.name: must match the pattern ^[a-z]+$ (got \"ABC\")"},
      {R"({"name": "a", "size": 0})", "spec.size: must be >= 1 (got 0)"},
      {R"({"name": "a", "size": 11})", "spec.size: must be <= 10 (got 11)"},
      {R"({"name": "a", "size": 2.5})", "spec.size: must be an integer (got number 2.5)"},
      {R"({"name": "a", "size": 1e20})", "spec.size: must be an integer of 64 bits at most (got number 1e+20)"},
      {R"({"name": "a", "size": 9223372036854775808})",
       "spec.size: must be an integer of 64 bits at most (got number 9223372036854775808)"},
      {R"({"name": "a", "size": 9223372036854775807})", "spec.size: must be <= 10 (got 9223372036854775807)"},
      {R"({"name": "a", "size": "four"})", "spec.size: must be an integer (got string \"four\")"},
      {R"({"name": "a", "ratio": 0})", "spec.ratio: must be > 0 (got 0)"},
      {R"({"name": "a", "ratio": 1})", "spec.ratio: must be < 1 (got 1)"},
      {R"({"name": "a", "kind": "c"})", "spec.kind: must be one of \"a\", \"b\" (got \"c\")"},
      {R"({"name": "a", "flag": "yes"})", "spec.flag: must be a boolean (got string \"yes\")"},
      {R"({"name": "a", "tags": []})", "spec.tags: must have at least 1 item(s) (got 0)"},
      {R"({"name": "a", "tags": [1, 2, 3]})", "spec.tags: must have at most 2 item(s) (got 3)"},
      {R"({"name": "a", "tags": [1, -1]})", "spec.tags[1]: must be >= 0 (got -1)"},
      {R"({"name": "a", "tags": 1})", "spec.tags: must be a list (got integer 1)"},
      {R"({"name": "a", "labels": {"x": 1}})", "spec.labels.x: must be a string (got integer 1)"},
      {R"({"name": "a", "quantity": 0.5})", "spec.quantity: must be an integer or a string (got 0.5)"},
      {R"({"name": "a", "sise": 3})", "spec.sise: unknown field (did you mean \"size\"?)"},
      {R"({"name": "a", "colour": 3})", "spec.colour: unknown field"},
      {R"({"name": "a", "nested": {"dept": 1}})", "spec.nested.dept: unknown field (did you mean \"depth\"?)"},
      // A nested field written a level up (a profile's node given "slowdwn").
      {R"({"name": "a", "dept": 1})", "spec.dept: unknown field (did you mean \"nested.depth\"?)"},
      {R"({"name": "a", "conditions": [{"type": "A"}, {"type": "A"}]})", "spec.conditions[1]: duplicate entry with type=\"A\""},
  };
  for (const auto& c : cases) {
    std::vector<std::string> errors = Errors(Json::parse(c.value));
    ASSERT_FALSE(errors.empty()) << c.value;
    bool found = false;
    for (const auto& e : errors) found |= e.rfind(c.error, 0) == 0;
    EXPECT_TRUE(found) << "wanted: " << c.error << "\ngot:    " << testing::PrintToString(errors);
  }
}

TEST(StructuralSchemaTest, ReportsAllViolationsAtOnce) {
  EXPECT_EQ(Errors(Json::parse(R"({"size": 0, "kind": "z", "extra": 1})")).size(), 4u);
}

TEST(StructuralSchemaTest, CollectsCelRulesWithThePathOfTheirObject) {
  Json schema = Json::parse(R"json({"type": "object", "properties": {
    "spec": {"type": "object", "x-kubernetes-validations": [{"rule": "self.a > 0", "message": "a must be positive"}],
      "properties": {"inner": {"type": "object",
        "x-kubernetes-validations": [{"rule": "has(self.b)", "message": "b is needed"}]}}}}})json");
  auto rules = CollectValidationRules(schema, "");
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].path, "spec");
  EXPECT_EQ(rules[0].rule, "self.a > 0");
  EXPECT_EQ(rules[1].path, "spec.inner");
  EXPECT_EQ(rules[1].message, "b is needed");
}

}  // namespace
}  // namespace edgetrain::api

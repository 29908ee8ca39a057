#include "api/yaml_scalars.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;

// What kubectl 1.32 stored for each, applied to the API stand-in (a user's
// trial): go-yaml v2's typing, then JSON as encoding/json writes it.
TEST(YamlScalarsTest, PlainScalarsAreTypedAsKubectlTypesThem) {
  const std::pair<const char*, Json> cases[] = {
      {"42", 42},        {"-3", -3},       {"+7", 7},          {"010", 8},        {"017", 15},
      {"0x10", 16},      {"-0x10", -16},   {"0o10", 8},        {"0b101", 5},      {"1_000", 1000},
      {"09", 9},         {"3.0", 3},       {"1e3", 1000},      {"0.5", 0.5},      {".5", 0.5},
      {"-1.5e-3", -0.0015}, {"y", true},   {"N", false},       {"yes", true},     {"off", false},
      {"~", nullptr},    {"", nullptr},    {"hello", "hello"}, {"0x", "0x"},      {"1_a", "1_a"},
      {"5s", "5s"},      {"1.2.3", "1.2.3"}, {"0xG", "0xG"},
  };
  for (const auto& [text, want] : cases) {
    const Json got = ResolvePlainScalar(text);
    EXPECT_EQ(got, want) << text << " gave " << got.dump();
    EXPECT_EQ(got.type(), want.type()) << text << " gave " << got.dump();
  }
}

TEST(YamlScalarsTest, IntegersPastSixtyFourBitsAreNumbersAndPastADoubleInfinite) {
  EXPECT_EQ(ResolvePlainScalar("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(ResolvePlainScalar("-9223372036854775808"), INT64_MIN);
  EXPECT_TRUE(ResolvePlainScalar("18446744073709551615").is_number_unsigned());
  EXPECT_TRUE(ResolvePlainScalar("18446744073709551616").is_number_float());
  // 40,000 digits: once a recursion of std::regex's a digit and a crash.
  const Json huge = ResolvePlainScalar(std::string(40000, '1'));
  ASSERT_TRUE(huge.is_number_float());
  EXPECT_TRUE(std::isinf(huge.get<double>()));
  // Too small for a double is 0, as Go reads it; the field's range says the rest.
  EXPECT_EQ(ResolvePlainScalar("0." + std::string(1000, '0') + "5"), 0);
}

TEST(YamlScalarsTest, TagsAreReadAsKubectlReadsThemOrRefused) {
  EXPECT_EQ(*ResolveTaggedScalar("!", "010"), "010");
  EXPECT_EQ(*ResolveTaggedScalar("tag:yaml.org,2002:str", "32"), "32");
  EXPECT_EQ(*ResolveTaggedScalar("?", "32"), 32);
  EXPECT_EQ(*ResolveTaggedScalar("tag:yaml.org,2002:int", "0x20"), 32);
  EXPECT_EQ(*ResolveTaggedScalar("tag:yaml.org,2002:float", "3"), 3);
  EXPECT_EQ(*ResolveTaggedScalar("tag:yaml.org,2002:bool", "on"), true);
  EXPECT_TRUE(ResolveTaggedScalar("tag:yaml.org,2002:null", "~")->is_null());
  const std::pair<const char*, const char*> refused[] = {
      {"tag:yaml.org,2002:bool", "!!bool \"32\": not a boolean"},
      {"tag:yaml.org,2002:null", "!!null \"32\": not null"},
      {"!foo", "the tag !foo on \"32\" is not one a manifest may carry"},
      {"tag:yaml.org,2002:timestamp", "the tag !!timestamp on \"32\""},
  };
  for (const auto& [tag, says] : refused) {
    const StatusOr<Json> got = ResolveTaggedScalar(tag, "32");
    ASSERT_FALSE(got.ok()) << tag;
    EXPECT_NE(got.status().message().find(says), std::string::npos) << got.status().message();
  }
  const StatusOr<Json> fraction = ResolveTaggedScalar("tag:yaml.org,2002:int", "3.5");
  ASSERT_FALSE(fraction.ok());
  EXPECT_EQ(fraction.status().message(), "!!int \"3.5\": not an integer");
}

}  // namespace
}  // namespace edgetrain::api

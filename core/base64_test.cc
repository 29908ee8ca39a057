#include "core/base64.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(Base64Test, RoundTripsTheRfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(Base64Encode(plain), encoded);
    auto decoded = Base64Decode(encoded);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, plain);
  }
  EXPECT_EQ(*Base64Decode("Zm9v\nYmFy"), "foobar") << "line breaks, as PEM-in-YAML has them";
  EXPECT_EQ(Base64Decode("Zm9v!").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace edgetrain

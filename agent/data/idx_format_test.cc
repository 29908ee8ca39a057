#include "agent/data/idx_format.h"

#include <gtest/gtest.h>

namespace edgetrain::agent {
namespace {

std::string Idx(std::vector<uint32_t> dims, size_t payload, uint8_t type = 0x08) {
  std::string s = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift : {24, 16, 8, 0}) s.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  for (size_t i = 0; i < payload; ++i) s.push_back(static_cast<char>(i % 251));
  return s;
}

TEST(IdxFormatTest, ParsesDimensionsAndData) {
  std::string bytes = Idx({3, 2, 4}, 24);
  auto array = ParseIdx(bytes, 3, "images");
  ASSERT_TRUE(array.ok()) << array.status().ToString();
  EXPECT_EQ(array->dims, (std::vector<int64_t>{3, 2, 4}));
  ASSERT_EQ(array->data.size(), 24u);
  EXPECT_EQ(static_cast<uint8_t>(array->data[23]), 23);
}

TEST(IdxFormatTest, RefusesCorruptFiles) {
  struct Case {
    std::string bytes;
    int dims;
    const char* error;
  } cases[] = {
      {"", 1, "too short"},
      {std::string("\x01\x00\x08\x01", 4), 1, "bad magic"},
      {Idx({4}, 4, 0x0d), 1, "is not unsigned byte"},
      {Idx({4}, 4), 3, "expected 3 dimensions, found 1"},
      {Idx({4}, 3), 1, "header promises 4 bytes of data, file has 3"},
      {Idx({2, 2, 2}, 0).substr(0, 9), 3, "truncated IDX header"},
  };
  for (const auto& c : cases) {
    auto array = ParseIdx(c.bytes, c.dims, "f.idx");
    ASSERT_FALSE(array.ok()) << c.error;
    EXPECT_EQ(array.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(array.status().message().find(c.error), std::string::npos) << array.status().message();
  }
}

}  // namespace
}  // namespace edgetrain::agent

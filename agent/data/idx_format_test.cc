#include "agent/data/idx_format.h"

#include <gtest/gtest.h>

#include "agent/data/test_files.h"

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;
using testing_files::FreshDir;
using testing_files::Write;
using testing_files::WriteGz;

std::string Idx(std::vector<uint32_t> dims, size_t payload, uint8_t type = 0x08) {
  std::string data;
  for (size_t i = 0; i < payload; ++i) data.push_back(static_cast<char>(i % 251));
  return testing_files::Idx(type, dims, data);
}

TEST(IdxFormatTest, ParsesDimensionsAndData) {
  std::string bytes = Idx({3, 2, 4}, 24);
  auto array = ParseIdx(bytes, "images");
  ASSERT_TRUE(array.ok()) << array.status().ToString();
  EXPECT_EQ(array->type, ElementType::kUint8);
  EXPECT_EQ(array->dims, (std::vector<int64_t>{3, 2, 4}));
  ASSERT_EQ(array->data.size(), 24u);
  EXPECT_EQ(static_cast<uint8_t>(array->data[23]), 23);
  auto floats = ParseIdx(Idx({2, 2}, 16, 0x0D), "floats");
  ASSERT_TRUE(floats.ok()) << "four float32s are 16 bytes: " << floats.status().ToString();
  EXPECT_EQ(floats->type, ElementType::kFloat32);
  EXPECT_TRUE(floats->big_endian);
}

TEST(IdxFormatTest, RefusesCorruptFiles) {
  struct Case {
    std::string bytes;
    const char* error;
  } cases[] = {
      {"", "f.idx: too short for an IDX header"},
      {std::string("\x01\x00\x08\x01", 4), "f.idx: not an IDX file (bad magic number)"},
      {Idx({4}, 4, 0x0a), "f.idx: IDX element type 0x0A is not one of IDX's types"},
      {Idx({}, 0), "f.idx: IDX array has no dimensions"},
      {Idx({4}, 3), "f.idx: header promises 4 bytes of data (shape (4,) of 1-byte values), file has 3"},
      {Idx({2}, 3), "f.idx: header promises 2 bytes of data (shape (2,) of 1-byte values), file has 3"},
      {Idx({2, 2, 2}, 0).substr(0, 9), "f.idx: truncated IDX header"},
  };
  for (const auto& c : cases) {
    auto array = ParseIdx(c.bytes, "f.idx");
    ASSERT_FALSE(array.ok()) << c.error;
    EXPECT_EQ(array.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(array.status().message(), c.error);
  }
}

TEST(IdxFormatTest, ReadsBytesScaledAndFloatsAsTheyAre) {
  const fs::path dir = FreshDir();
  // Two samples of 2x3 bytes, gzipped; their labels plain.
  const std::string features = WriteGz(dir / "train-images.gz", Idx({2, 2, 3}, 12));
  const std::string labels = Write(dir / "train-labels", Idx({2}, 0) + std::string("\x01\x00", 2));
  const DatasetInfo info{1, 2, 3, 2, 0, 0};
  auto bytes = ReadIdxFiles(features, labels, info);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(bytes->size(), 2);
  EXPECT_EQ(bytes->labels, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(bytes->pixels.size(), 12u) << "bytes stay bytes";
  EXPECT_TRUE(bytes->features.empty());
  std::vector<float> x(12);
  bytes->CopySamples(1, 1, x.data());
  EXPECT_FLOAT_EQ(x[0], 6.0f / 255);
  EXPECT_FLOAT_EQ(x[5], 11.0f / 255);

  // float32, big-endian as IDX has it: [N, 6] for inputShape [6].
  std::string be;
  for (float v : {0.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f}) {
    const uint32_t bits = std::bit_cast<uint32_t>(v);
    for (int shift : {24, 16, 8, 0}) be.push_back(static_cast<char>((bits >> shift) & 0xff));
  }
  const std::string floats = Write(dir / "floats.idx", testing_files::Idx(0x0D, {1, 6}, be));
  const std::string one_label = Write(dir / "one-label.idx", Idx({1}, 1));
  auto f = ReadIdxFiles(floats, one_label, DatasetInfo{1, 1, 6, 3, 0, 0});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->features, (std::vector<float>{0.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f}));
  EXPECT_EQ(f->labels, (std::vector<int64_t>{0}));
}

}  // namespace
}  // namespace edgetrain::agent

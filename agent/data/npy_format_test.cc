#include "agent/data/npy_format.h"

#include <gtest/gtest.h>

#include "agent/data/test_files.h"

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;
using testing_files::Bytes;
using testing_files::FreshDir;
using testing_files::Npy;
using testing_files::Write;
using testing_files::WriteGz;

TEST(NpyFormatTest, ParsesTheHeaderOfEachVersion) {
  for (int major : {1, 2, 3}) {
    const std::string bytes = Npy("<f4", "(2, 3)", Bytes<float>(std::vector<float>{1, 2, 3, 4, 5, 6}), false, major);
    auto array = ParseNpy(bytes, "x.npy");
    ASSERT_TRUE(array.ok()) << major << ": " << array.status().ToString();
    EXPECT_EQ(array->type, ElementType::kFloat32);
    EXPECT_FALSE(array->big_endian);
    EXPECT_EQ(array->dims, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(array->data.size(), 24u);
  }
  auto one_dim = ParseNpy(Npy("<i8", "(3,)", Bytes<int64_t>(std::vector<int>{0, 1, 2})), "y.npy");
  ASSERT_TRUE(one_dim.ok()) << one_dim.status().ToString();
  EXPECT_EQ(one_dim->type, ElementType::kInt64);
  EXPECT_EQ(one_dim->dims, (std::vector<int64_t>{3}));
  // A Fortran-ordered column is laid out as a C-ordered one.
  EXPECT_TRUE(ParseNpy(Npy("|u1", "(3, 1)", "abc", true), "y.npy").ok());
  auto big = ParseNpy(Npy(">i2", "(1,)", std::string("\x01\x02", 2)), "y.npy");
  ASSERT_TRUE(big.ok());
  EXPECT_TRUE(big->big_endian);
}

TEST(NpyFormatTest, RefusesWhatItCannotRead) {
  const std::string four_floats = Bytes<float>(std::vector<float>{1, 2, 3, 4});
  std::string v1 = Npy("<f4", "(4,)", four_floats);
  struct Case {
    std::string bytes;
    const char* error;
  } cases[] = {
      {"", "x.npy: an empty file, not a NumPy .npy file"},
      {"PK\x03\x04 a .npz is a zip",
       "x.npy: a zip archive (numpy.savez's .npz?), not a NumPy .npy file: save each array with numpy.save"},
      {std::string("\x93NUMPY\x04\x00\x10\x00", 10) + std::string(16, ' '),
       "x.npy: npy version 4.0 is not supported (1.0, 2.0 or 3.0)"},
      {v1.substr(0, 40), "x.npy: truncated npy header"},
      {Npy("<f4", "(3,)", four_floats),
       "x.npy: header promises 12 bytes of data (shape (3,) of 4-byte values), file has 16"},
      {Npy("<f4", "(5,)", four_floats),
       "x.npy: header promises 20 bytes of data (shape (5,) of 4-byte values), file has 16"},
      {Npy("<c8", "(2,)", four_floats),
       "x.npy: dtype '<c8' is not supported: features are float32, float64 or uint8, labels integers (int8-int64, "
       "uint8-uint64) or whole numbers as floats"},
      {Npy("<f2", "(8,)", four_floats), "x.npy: dtype '<f2' is not supported"},
      {Npy("|O", "(2,)", ""), "x.npy: dtype '|O' is not supported"},
      {Npy("<f4", "(2, 2)", four_floats, true),
       "x.npy: array is in Fortran order; save it in C order (np.ascontiguousarray)"},
      {Npy("<f4", "[2, 2]", four_floats), "x.npy: bad npy header (shape)"},
  };
  for (const auto& c : cases) {
    auto array = ParseNpy(c.bytes, "x.npy");
    ASSERT_FALSE(array.ok()) << c.error;
    EXPECT_EQ(array.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(array.status().message().find(c.error), std::string::npos) << array.status().message();
  }
  std::string structured = v1;
  structured.replace(structured.find("'<f4'"), 5, "[('a', '<f4')]");
  EXPECT_EQ(ParseNpy(structured, "x.npy").status().message(), "x.npy: structured dtypes are not supported");
}

TEST(NpyFormatTest, ReadsFeaturesOfEachTypeAndIntegerLabels) {
  const fs::path dir = FreshDir();
  const DatasetInfo info{1, 2, 2, 3, 0, 0};  // inputShape [2, 2], 3 classes
  const std::vector<double> values = {0.5, -1, 2, 3, 4, 5, 6, 7.25};
  const std::string labels_i8 = Write(dir / "y8.npy", Npy("<i8", "(2,)", Bytes<int64_t>(std::vector<int>{2, 0})));
  const std::string labels_u1 = Write(dir / "y1.npy", Npy("|u1", "(2, 1)", Bytes<uint8_t>(std::vector<int>{2, 0})));
  const std::string labels_i2 = WriteGz(dir / "y2.npy.gz", Npy("<i2", "(2,)", Bytes<int16_t>(std::vector<int>{2, 0})));

  auto f4 = ReadNpyFiles(Write(dir / "x4.npy", Npy("<f4", "(2, 2, 2)", Bytes<float>(values))), labels_i8, info);
  ASSERT_TRUE(f4.ok()) << f4.status().ToString();
  EXPECT_EQ(f4->features, (std::vector<float>{0.5f, -1, 2, 3, 4, 5, 6, 7.25f}));
  EXPECT_TRUE(f4->pixels.empty());
  EXPECT_EQ(f4->labels, (std::vector<int64_t>{2, 0}));

  // float64, the features [N, 4] for the shape [2, 2]: only the count must agree.
  auto f8 = ReadNpyFiles(Write(dir / "x8.npy", Npy("<f8", "(2, 4)", Bytes<double>(values), false, 2)), labels_u1, info);
  ASSERT_TRUE(f8.ok()) << f8.status().ToString();
  std::vector<float> x(4);
  f8->CopySamples(1, 1, x.data());
  EXPECT_EQ(x, (std::vector<float>{4, 5, 6, 7.25f}));
  EXPECT_EQ(f8->labels, (std::vector<int64_t>{2, 0}));

  auto u1 = ReadNpyFiles(Write(dir / "xu.npy", Npy("|u1", "(2, 2, 2)", Bytes<uint8_t>(std::vector<int>{0, 51, 255, 1, 2, 3, 4, 5}))),
                         labels_i2, info);
  ASSERT_TRUE(u1.ok()) << u1.status().ToString();
  EXPECT_EQ(u1->pixels.size(), 8u) << "bytes stay bytes";
  EXPECT_TRUE(u1->features.empty());
  u1->CopySamples(0, 1, x.data());
  EXPECT_FLOAT_EQ(x[1], 0.2f);
  EXPECT_FLOAT_EQ(x[2], 1.0f);

  // Labels as floats of whole numbers, as np.loadtxt gives them, are classes.
  const std::string float_labels_path =
      Write(dir / "yf.npy", Npy("<f8", "(2,)", Bytes<double>(std::vector<double>{2, 0})));
  auto float_labels =
      ReadNpyFiles(Write(dir / "x4b.npy", Npy("<f4", "(2, 2, 2)", Bytes<float>(values))), float_labels_path, info);
  ASSERT_TRUE(float_labels.ok()) << float_labels.status().ToString();
  EXPECT_EQ(float_labels->labels, (std::vector<int64_t>{2, 0}));
}

}  // namespace
}  // namespace edgetrain::agent

// LoadData on spec.data's files: each format end to end, and a table of bad
// files with the error each must give.
#include <stb_image_write.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "agent/data/dataset.h"
#include "agent/data/test_files.h"

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;
using testing_files::Bytes;
using testing_files::FreshDir;
using testing_files::Idx;
using testing_files::Npy;
using testing_files::U8;
using testing_files::Write;
using testing_files::WriteGz;

DataSpec Files(DataFormat format, DataFiles train, DataFiles test, std::vector<int> input_shape, int classes) {
  DataSpec spec;
  spec.files = DataSource{format, std::move(train), std::move(test), std::move(input_shape), classes};
  return spec;
}

DataFiles Path(const std::string& path) { return {path, "", ""}; }
DataFiles Pair(const std::string& features, const std::string& labels) { return {"", features, labels}; }

void ExpectSizes(const TrainTestSplit& split, int64_t train, int64_t test, int64_t sample_size) {
  for (const Dataset* d : {&split.train, &split.test}) {
    EXPECT_EQ(d->info.train_size, train);
    EXPECT_EQ(d->info.test_size, test);
    EXPECT_EQ(d->SampleSize(), sample_size);
  }
  EXPECT_EQ(split.train.size(), train);
  EXPECT_EQ(split.test.size(), test);
}

TEST(LoadDataTest, Idx) {
  const fs::path dir = FreshDir();
  // Three 2x2 samples to train on (gzipped), one to test (plain).
  auto spec = Files(DataFormat::kIdx,
                    Pair(WriteGz(dir / "train-x.gz", Idx(0x08, {3, 2, 2}, U8({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255}))),
                         WriteGz(dir / "train-y.gz", Idx(0x08, {3}, U8({2, 1, 0})))),
                    Pair(Write(dir / "test-x", Idx(0x08, {1, 4}, U8({9, 9, 9, 9}))), Write(dir / "test-y", Idx(0x08, {1}, U8({1})))),
                    {1, 2, 2}, 3);
  auto split = LoadData(spec, {});
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  ExpectSizes(*split, 3, 1, 4);
  EXPECT_EQ(split->train.info.classes, 3);
  EXPECT_EQ(split->train.labels, (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(split->test.labels, (std::vector<int64_t>{1}));
  std::vector<float> x(4);
  split->train.CopySamples(2, 1, x.data());
  EXPECT_FLOAT_EQ(x[3], 1.0f);
}

TEST(LoadDataTest, Csv) {
  const fs::path dir = FreshDir();
  auto spec = Files(DataFormat::kCsv, Path(Write(dir / "train.csv", "label,x0,x1\n1,0.25,-3\n0,1e-2,4\n")),
                    Path(WriteGz(dir / "test.csv.gz", "1,5,6\n")), {2}, 2);
  auto split = LoadData(spec, {});
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  ExpectSizes(*split, 2, 1, 2);
  EXPECT_EQ(split->train.features, (std::vector<float>{0.25f, -3, 1e-2f, 4}));
  EXPECT_EQ(split->train.labels, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(split->test.features, (std::vector<float>{5, 6}));
}

TEST(LoadDataTest, Npy) {
  const fs::path dir = FreshDir();
  const std::vector<float> train_x = {1, 2, 3, 4, 5, 6};
  auto spec = Files(DataFormat::kNpy,
                    Pair(Write(dir / "train_x.npy", Npy("<f4", "(3, 2)", Bytes<float>(train_x))),
                         Write(dir / "train_y.npy", Npy("<i8", "(3,)", Bytes<int64_t>(std::vector<int>{0, 1, 1})))),
                    Pair(Write(dir / "test_x.npy", Npy("<f8", "(1, 2)", Bytes<double>(std::vector<double>{0.5, 1.5}))),
                         Write(dir / "test_y.npy", Npy("<i4", "(1,)", Bytes<int32_t>(std::vector<int>{1})))),
                    {2}, 2);
  auto split = LoadData(spec, {});
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  ExpectSizes(*split, 3, 1, 2);
  EXPECT_EQ(split->train.features, train_x);
  EXPECT_EQ(split->train.labels, (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(split->test.features, (std::vector<float>{0.5f, 1.5f}));
}

TEST(LoadDataTest, Images) {
  const fs::path dir = FreshDir();
  const uint8_t rgb[2 * 2 * 3] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255};
  for (const char* file : {"train/cats/1.png", "train/cats/2.png", "train/dogs/1.png", "test/cats/1.png", "test/dogs/1.png"}) {
    fs::create_directories((dir / file).parent_path());
    ASSERT_TRUE(stbi_write_png((dir / file).c_str(), 2, 2, 3, rgb, 6));
  }
  auto spec = Files(DataFormat::kImages, Path((dir / "train").string()), Path((dir / "test").string()), {3, 2, 2}, 2);
  auto split = LoadData(spec, {});
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  ExpectSizes(*split, 3, 2, 12);
  EXPECT_EQ(split->train.labels, (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(split->test.labels, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(split->train.class_names, (std::vector<std::string>{"cats", "dogs"})) << "label i is folder i";
  EXPECT_EQ(split->test.class_names, split->train.class_names);
  std::vector<float> x(12);
  split->test.CopySamples(1, 1, x.data());
  // The red plane: red, black, black, white.
  EXPECT_EQ(std::vector<float>(x.begin(), x.begin() + 4), (std::vector<float>{1, 0, 0, 1}));
}

TEST(LoadDataTest, BadFilesSayWhichAndWhatIsWrong) {
  const fs::path dir = FreshDir();
  const std::string d = dir.string();
  // Good files for the side of each case that is not under test.
  const std::string x = Write(dir / "x.npy", Npy("<f4", "(2, 2)", Bytes<float>(std::vector<float>{1, 2, 3, 4})));
  const std::string y = Write(dir / "y.npy", Npy("|u1", "(2,)", U8({0, 1})));
  const std::string idx_x = Write(dir / "x.idx", Idx(0x08, {2, 2}, U8({1, 2, 3, 4})));
  const std::string idx_y = Write(dir / "y.idx", Idx(0x08, {2}, U8({0, 1})));
  const std::string csv = Write(dir / "good.csv", "0,1,2\n");
  for (const char* c : {"images/a", "images/b"}) {
    fs::create_directories(dir / c);
    const uint8_t px[4] = {1, 2, 3, 4};
    ASSERT_TRUE(stbi_write_png((dir / c / "1.png").c_str(), 2, 2, 1, px, 2));
  }
  fs::create_directories(dir / "images-with-an-empty-class" / "a");
  fs::create_directories(dir / "images-with-an-empty-class" / "b");
  fs::copy(dir / "images" / "a" / "1.png", dir / "images-with-an-empty-class" / "a" / "1.png");
  fs::create_directories(dir / "broken-images" / "a");
  fs::create_directories(dir / "broken-images" / "b");
  fs::copy(dir / "images" / "a" / "1.png", dir / "broken-images" / "a" / "1.png");
  // An image beside the class folders, which no folder gives a class; a
  // README there is no one's and left alone.
  fs::create_directories(dir / "loose-images" / "a");
  fs::create_directories(dir / "loose-images" / "b");
  fs::copy(dir / "images" / "a" / "1.png", dir / "loose-images" / "a" / "1.png");
  fs::copy(dir / "images" / "a" / "1.png", dir / "loose-images" / "b" / "1.png");
  fs::copy(dir / "images" / "a" / "1.png", dir / "loose-images" / "stray.PNG");
  std::ofstream(dir / "images" / "README.txt") << "two classes\n";
  std::string png;
  {
    std::ifstream in(dir / "images" / "a" / "1.png", std::ios::binary);
    png.assign(std::istreambuf_iterator<char>(in), {});
  }
  Write(dir / "broken-images" / "b" / "1.png", png.substr(0, png.size() / 2));
  // A gzip stream cut in half.
  std::string noise;
  for (int i = 0; i < 100000; ++i) noise += static_cast<char>('0' + (i * 7919) % 10);
  const std::string cut = WriteGz(dir / "cut.csv.gz", noise);
  fs::resize_file(cut, fs::file_size(cut) / 2);
  fs::remove(dir / "loop.csv");
  fs::create_symlink("loop.csv", dir / "loop.csv");  // a link to itself

  struct Case {
    DataSpec spec;
    std::string error;
  } cases[] = {
      // a missing file or folder
      {Files(DataFormat::kNpy, Pair(d + "/absent.npy", y), Pair(x, y), {2}, 2), d + "/absent.npy: no such file"},
      {Files(DataFormat::kCsv, Path(d), Path(csv), {2}, 2), d + ": a folder, not a file"},
      // one the system cannot look at says why, not "no such file"
      {Files(DataFormat::kCsv, Path(d + "/loop.csv"), Path(csv), {2}, 2),
       d + "/loop.csv: Too many levels of symbolic links"},
      {Files(DataFormat::kImages, Path(d + "/no-images"), Path(d + "/images"), {2, 2}, 2), d + "/no-images: no such folder"},
      // not the format
      {Files(DataFormat::kIdx, Pair(x, idx_y), Pair(idx_x, idx_y), {2}, 2), x + ": not an IDX file (bad magic number)"},
      {Files(DataFormat::kNpy, Pair(idx_x, y), Pair(x, y), {2}, 2), idx_x + ": not a NumPy .npy file (bad magic string)"},
      {Files(DataFormat::kNpy, Pair(Write(dir / "f.npy", Npy("<f4", "(2, 2)", std::string(16, '\0'), true)), y), Pair(x, y), {2}, 2),
       d + "/f.npy: array is in Fortran order; save it in C order (np.ascontiguousarray)"},
      // a corrupt or truncated record
      {Files(DataFormat::kIdx, Pair(Write(dir / "short.idx", Idx(0x08, {2, 2}, U8({1, 2, 3}))), idx_y), Pair(idx_x, idx_y), {2}, 2),
       d + "/short.idx: header promises 4 bytes of data (shape (2, 2) of 1-byte values), file has 3"},
      {Files(DataFormat::kNpy, Pair(x, y), Pair(x, Write(dir / "short.npy", Npy("<i8", "(2,)", std::string(15, '\0')))), {2}, 2),
       d + "/short.npy: header promises 16 bytes of data (shape (2,) of 8-byte values), file has 15"},
      {Files(DataFormat::kCsv, Path(Write(dir / "ragged.csv", "0,1,2\n1,2\n")), Path(csv), {2}, 2),
       d + "/ragged.csv:2: expected 3 values, a label and a sample's 2 (inputShape), found 2"},
      {Files(DataFormat::kCsv, Path(csv), Path(cut), {2}, 2), cut + ": truncated or corrupt gzip stream"},
      // shapes that disagree with inputShape
      {Files(DataFormat::kNpy, Pair(x, y), Pair(x, y), {3}, 2), x + ": a sample has 2 values (shape (2, 2)), inputShape has 3"},
      {Files(DataFormat::kIdx, Pair(idx_x, idx_y), Pair(idx_x, idx_y), {1, 2, 2}, 2),
       idx_x + ": a sample has 2 values (shape (2, 2)), inputShape has 4"},
      {Files(DataFormat::kCsv, Path(csv), Path(csv), {3}, 2),
       csv + ":1: expected 4 values, a label and a sample's 3 (inputShape), found 3"},
      {Files(DataFormat::kImages, Path(d + "/images"), Path(d + "/images"), {1, 3, 2}, 2),
       d + "/images/a/1.png: image is 2x2 (height x width), inputShape says 3x2"},
      {Files(DataFormat::kNpy, Pair(x, Write(dir / "y2.npy", Npy("|u1", "(2, 2)", U8({0, 1, 0, 1})))), Pair(x, y), {2}, 2),
       d + "/y2.npy: labels have shape (2, 2), expected one label a sample: (samples,) or (samples, 1)"},
      // features and labels counts that differ
      {Files(DataFormat::kIdx, Pair(idx_x, Write(dir / "y3.idx", Idx(0x08, {3}, U8({0, 1, 1})))), Pair(idx_x, idx_y), {2}, 2),
       idx_x + " has 2 samples but " + d + "/y3.idx has 3 labels"},
      // labels out of range, or not integers
      {Files(DataFormat::kNpy, Pair(x, Write(dir / "y9.npy", Npy("<i2", "(2,)", Bytes<int16_t>(std::vector<int>{0, 9})))), Pair(x, y), {2}, 2),
       d + "/y9.npy: label 9 at index 1 is out of range [0, 2): spec.data.classes is 2"},
      {Files(DataFormat::kNpy, Pair(x, Write(dir / "yn.npy", Npy("<i8", "(2,)", Bytes<int64_t>(std::vector<int>{-1, 0})))), Pair(x, y), {2}, 2),
       d + "/yn.npy: label -1 at index 0 is out of range [0, 2): spec.data.classes is 2"},
      {Files(DataFormat::kNpy,
             Pair(x, Write(dir / "yf.npy", Npy("<f4", "(2,)", Bytes<float>(std::vector<float>{0, 0.5f})))), Pair(x, y),
             {2}, 2),
       d + "/yf.npy: label 0.5 at index 1 is not a whole number: a label is its sample's class, 0 to 1"},
      {Files(DataFormat::kNpy,
             Pair(x, Write(dir / "yf2.npy", Npy("<f8", "(2,)", Bytes<double>(std::vector<double>{0, 2})))), Pair(x, y),
             {2}, 2),
       d + "/yf2.npy: label 2 at index 1 is out of range [0, 2): spec.data.classes is 2"},
      {Files(DataFormat::kIdx, Pair(idx_x, idx_y), Pair(idx_x, idx_y), {2}, 1), d + "/y.idx: label 1 at index 1 is out of range [0, 1): spec.data.classes is 1"},
      {Files(DataFormat::kCsv, Path(Write(dir / "l.csv", "1,2,3\n0.5,2,3\n")), Path(csv), {2}, 2), d + "/l.csv:2: label '0.5' is not an integer"},
      {Files(DataFormat::kCsv, Path(Write(dir / "l2.csv", "2,2,3\n")), Path(csv), {2}, 2), d + "/l2.csv:1: label 2 is out of range [0, 2): spec.data.classes is 2"},
      // unsupported types and values
      {Files(DataFormat::kNpy, Pair(Write(dir / "xi.npy", Npy("<i4", "(2, 2)", std::string(16, '\0'))), y), Pair(x, y), {2}, 2),
       d + "/xi.npy: features of type int32 are not supported: features are float32, float64 or uint8"},
      {Files(DataFormat::kNpy, Pair(Write(dir / "xnan.npy", Npy("<f4", "(2, 2)", Bytes<float>(std::vector<float>{1, 2, 3, NAN}))), y),
             Pair(x, y), {2}, 2),
       d + "/xnan.npy: sample 1 has a value that is not finite (nan)"},
      {Files(DataFormat::kNpy, Pair(Write(dir / "xbig.npy", Npy("<f8", "(2, 2)", Bytes<double>(std::vector<double>{1, 2, 1e39, 4}))), y),
             Pair(x, y), {2}, 2),
       d + "/xbig.npy: sample 1 has a value beyond float32's range (1e+39), which features are kept in"},
      // image folders
      {Files(DataFormat::kImages, Path(d + "/images-with-an-empty-class"), Path(d + "/images"), {2, 2}, 2),
       d + "/images-with-an-empty-class/b: empty class folder"},
      {Files(DataFormat::kImages, Path(d + "/images"), Path(d + "/broken-images"), {2, 2}, 2),
       d + "/broken-images/b/1.png: not a PNG or JPEG image that can be decoded (corrupt or truncated)"},
      {Files(DataFormat::kImages, Path(d + "/images"), Path(d + "/images"), {2, 2}, 3),
       d + "/images: expected 3 class folders (classes), found 2: a, b"},
      {Files(DataFormat::kImages, Path(d + "/loose-images"), Path(d + "/images"), {2, 2}, 2),
       d + "/loose-images/stray.PNG: an image beside the class folders, which no folder gives a class: move it into "
           "its class's folder"},
      // empty data sets
      {Files(DataFormat::kCsv, Path(csv), Path(Write(dir / "header-only.csv", "label,a,b\n")), {2}, 2), d + "/header-only.csv: no samples"},
      {Files(DataFormat::kNpy, Pair(Write(dir / "x0.npy", Npy("<f4", "(0, 2)", "")), Write(dir / "y0.npy", Npy("|u1", "(0,)", ""))),
             Pair(x, y), {2}, 2),
       d + "/x0.npy: no samples"},
  };
  for (const auto& c : cases) {
    auto split = LoadData(c.spec, {});
    ASSERT_FALSE(split.ok()) << c.error;
    EXPECT_EQ(split.status().code(), StatusCode::kInvalidArgument) << split.status().ToString();
    EXPECT_TRUE(split.status().message().starts_with(c.error)) << split.status().message() << "\nexpected: " << c.error;
  }
}

}  // namespace
}  // namespace edgetrain::agent

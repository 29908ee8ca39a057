#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "agent/data/dataset.h"
#include "agent/data/gzip_file.h"

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;

void ExpectWellFormed(const Dataset& d, int64_t size) {
  EXPECT_EQ(d.size(), size);
  EXPECT_EQ(static_cast<int64_t>(d.pixels.size()), size * d.SampleSize());
  std::vector<float> features(d.pixels.size());
  d.CopySamples(0, size, features.data());
  auto [lo, hi] = std::minmax_element(features.begin(), features.end());
  EXPECT_GE(*lo, 0.0f);
  EXPECT_LE(*hi, 1.0f);
  EXPECT_GT(*hi, 0.5f);
  std::vector<int> per_class(d.info.classes);
  for (int64_t label : d.labels) {
    ASSERT_GE(label, 0);
    ASSERT_LT(label, d.info.classes);
    ++per_class[label];
  }
  for (int count : per_class) EXPECT_GT(count, 0) << "a class is missing";
}

// What a coordinator keeps to settle a model's buffers on: samples spread
// over the set, every class of an image folder's class-by-class order, each
// with its own label and features.
TEST(DatasetsTest, SpreadSamplesAreTakenEvenlyOverTheSet) {
  Dataset ordered;
  ordered.info.channels = 1;
  ordered.info.height = 1;
  ordered.info.width = 2;
  ordered.info.classes = 4;
  for (int64_t i = 0; i < 100; ++i) {
    ordered.labels.push_back(i / 25);  // 25 of each class, in order
    ordered.pixels.push_back(static_cast<uint8_t>(i));
    ordered.pixels.push_back(static_cast<uint8_t>(i + 100));
  }
  const Dataset kept = SpreadSamples(ordered, 8);
  EXPECT_EQ(kept.labels, (std::vector<int64_t>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(kept.pixels.size(), 16u);
  EXPECT_EQ(kept.pixels[2], 12) << "the second kept is sample 12";
  EXPECT_EQ(kept.pixels[3], 112);
  EXPECT_EQ(SpreadSamples(ordered, 1000).size(), 100) << "all it has";
  EXPECT_EQ(SpreadSamples(ordered, 0).size(), 0);
}

// Both data sets are installed by `make` (scripts/deps); these tests do not skip.
TEST(DatasetsTest, LoadsDigitsWithAFixedHeldOutTestSet) {
  auto split = LoadDataset(DatasetName::kDigits, DefaultDataSearchPath());
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  EXPECT_EQ(split->train.SampleSize(), 64);
  ExpectWellFormed(split->train, 1437);
  ExpectWellFormed(split->test, 360);
  auto again = LoadDataset(DatasetName::kDigits, DefaultDataSearchPath());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->test.labels, split->test.labels) << "the split must not depend on anything";
}

TEST(DatasetsTest, LoadsFashionMnistFromTheDebianPackage) {
  auto split = LoadDataset(DatasetName::kFashionMnist, DefaultDataSearchPath());
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  EXPECT_EQ(split->train.SampleSize(), 784);
  ExpectWellFormed(split->train, 60000);
  ExpectWellFormed(split->test, 10000);
}

TEST(DatasetsTest, TheDataFolderIsSearchedBeforeDebiansFolders) {
  EXPECT_EQ(SearchPathWith("/data").directories,
            (std::vector<std::string>{"/data", "/usr/share/datasets", "/usr/lib/python3/dist-packages/sklearn/datasets/data"}));
  EXPECT_EQ(SearchPathWith("").directories.front(), "/usr/share/datasets");
}

TEST(DatasetsTest, MissingDataSaysHowToInstallIt) {
  DataSearchPath nowhere{{testing::TempDir() + "/no-such-dir"}};
  auto fashion = LoadDataset(DatasetName::kFashionMnist, nowhere);
  ASSERT_FALSE(fashion.ok());
  EXPECT_EQ(fashion.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(fashion.status().message().find("apt-get install dataset-fashion-mnist"), std::string::npos);
  auto digits = LoadDataset(DatasetName::kDigits, nowhere);
  ASSERT_FALSE(digits.ok());
  EXPECT_NE(digits.status().message().find("scripts/deps"), std::string::npos);
}

TEST(DatasetsTest, CorruptDataIsDataLoss) {
  fs::path dir = fs::path(testing::TempDir()) / "corrupt-digits";
  fs::create_directories(dir);
  {
    gzFile f = gzopen((dir / "digits.csv.gz").c_str(), "wb");
    std::string row = "1,2,3\n";
    gzwrite(f, row.data(), static_cast<unsigned>(row.size()));
    gzclose(f);
  }
  auto digits = LoadDataset(DatasetName::kDigits, {{dir.string()}});
  ASSERT_FALSE(digits.ok());
  EXPECT_EQ(digits.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(digits.status().message().find(":1: expected 65 values, a label and a sample's 64, found 3"),
            std::string::npos)
      << digits.status().message();
}

TEST(GzipFileTest, TruncatedStreamIsDataLoss) {
  fs::path path = fs::path(testing::TempDir()) / "truncated.gz";
  {
    gzFile f = gzopen(path.c_str(), "wb");
    std::string payload(100000, 'x');
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>('a' + (i * 7919) % 26);
    gzwrite(f, payload.data(), static_cast<unsigned>(payload.size()));
    gzclose(f);
  }
  fs::resize_file(path, fs::file_size(path) / 2);
  auto content = ReadGzipFile(path.string(), DataFileLimit());
  ASSERT_FALSE(content.ok());
  EXPECT_EQ(content.status().code(), StatusCode::kDataLoss);
  EXPECT_FALSE(ReadGzipFile((fs::path(testing::TempDir()) / "absent.gz").string(), DataFileLimit()).ok());
}

// A file of a kilobyte can unpack to gigabytes: refused once it would pass
// the limit, naming the file, rather than ending the agent for its memory
// (a gzip file of 1 MB unpacking to 1 GiB took 2.1 GB: found in review).
// A plain file is judged by its size, and a pipe or a device, which has no
// end, is refused as such.
TEST(GzipFileTest, AFileUnpackedPastTheLimitIsRefused) {
  const fs::path dir = fs::path(testing::TempDir()) / "gzip-limit";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string packed = (dir / "bomb.csv.gz").string();
  {
    gzFile f = gzopen(packed.c_str(), "wb");
    const std::string zeros(1 << 20, '0');
    for (int i = 0; i < 4; ++i) gzwrite(f, zeros.data(), static_cast<unsigned>(zeros.size()));
    gzclose(f);
  }
  ASSERT_LT(fs::file_size(packed), 64u << 10);
  StatusOr<std::string> read = ReadDataFile(packed, 3 << 20);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(read.status().message().starts_with(packed + ": unpacks to more than 3.0 MiB, a quarter of the memory"))
      << read.status().message();
  EXPECT_EQ(ReadDataFile(packed, 4 << 20)->size(), size_t{4} << 20);

  const std::string plain = (dir / "plain.csv").string();
  std::ofstream(plain) << std::string(2000, '1');
  read = ReadDataFile(plain, 1000);
  ASSERT_FALSE(read.ok());
  EXPECT_TRUE(read.status().message().starts_with(plain + ": more than 1000 B")) << read.status().message();

  read = ReadDataFile("/dev/zero");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(), "/dev/zero: not a regular file (a pipe or a device): a data file is read whole");
  EXPECT_GT(DataFileLimit(), 0u);
}

}  // namespace
}  // namespace edgetrain::agent

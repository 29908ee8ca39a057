#include "agent/dp/checkpoint.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;

CoordinatorCheckpoint Sample(int64_t iteration) {
  CoordinatorCheckpoint c;
  c.job = "robots";
  c.generation = 2;
  c.iteration = iteration;
  c.samples = iteration * 256;
  c.elapsed_s = 12.5;
  c.parameters = {1.5f, -2.0f, 3.25f};
  c.optimizer.first = {0.1f, 0.2f, 0.3f};
  c.optimizer.steps = {7, 8};
  c.pushed = {1, 2, 3, 4};
  c.iterations = {5, 6};
  c.versions = {9, 10};
  return c;
}

fs::path Dir() {
  fs::path d = fs::path(testing::TempDir()) / testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(CheckpointTest, RoundTrips) {
  fs::path path = Dir() / "checkpoint.bin";
  ASSERT_TRUE(SaveCheckpoint(path.string(), Sample(40)).ok());
  auto loaded = LoadCheckpoint(path.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_TRUE(loaded->has_value());
  const CoordinatorCheckpoint& c = **loaded;
  EXPECT_EQ(c.job, "robots");
  EXPECT_EQ(c.generation, 2);
  EXPECT_EQ(c.iteration, 40);
  EXPECT_EQ(c.samples, 40 * 256);
  EXPECT_FALSE(c.complete);
  EXPECT_EQ(c.parameters, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  EXPECT_EQ(c.optimizer.first, (std::vector<float>{0.1f, 0.2f, 0.3f}));
  EXPECT_TRUE(c.optimizer.second.empty());
  EXPECT_EQ(c.optimizer.steps, (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(c.pushed, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(c.versions, (std::vector<int64_t>{9, 10}));
  auto none = LoadCheckpoint((Dir() / "absent.bin").string());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(CheckpointTest, ATornWriteNeverReplacesAGoodCheckpoint) {
  fs::path dir = Dir();
  fs::path path = dir / "checkpoint.bin";
  ASSERT_TRUE(SaveCheckpoint(path.string(), Sample(40)).ok());
  // A crash half-way through writing the next one leaves its temporary file torn.
  std::string next = EncodeCheckpoint(Sample(80));
  std::ofstream(path.string() + ".tmp", std::ios::binary) << next.substr(0, next.size() / 2);
  auto loaded = LoadCheckpoint(path.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ((*loaded)->iteration, 40);
  // The next save goes through and replaces it whole.
  ASSERT_TRUE(SaveCheckpoint(path.string(), Sample(80)).ok());
  EXPECT_EQ((*LoadCheckpoint(path.string()))->iteration, 80);
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST(CheckpointTest, DamagedCheckpointsAreDataLoss) {
  const std::string good = EncodeCheckpoint(Sample(40));
  struct Case {
    std::string bytes;
    const char* why;
  } cases[] = {
      {good.substr(0, good.size() - 9), "checksum mismatch"},
      {"not a checkpoint at all", "not an edgetrain checkpoint"},
      {"", "not an edgetrain checkpoint"},
  };
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x10;
  for (const auto& c : cases) {
    auto decoded = DecodeCheckpoint(c.bytes, "c.bin");
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(decoded.status().message().find(c.why), std::string::npos) << decoded.status().message();
  }
  auto decoded = DecodeCheckpoint(flipped, "c.bin");
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("c.bin: damaged checkpoint (checksum mismatch"), std::string::npos);
}

}  // namespace
}  // namespace edgetrain::agent

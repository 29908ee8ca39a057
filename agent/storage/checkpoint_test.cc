#include "agent/storage/checkpoint.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;

JobCheckpoint Sample(int64_t iteration) {
  JobCheckpoint c;
  c.job = "robots";
  c.plan_generation = 2;
  c.iteration = iteration;
  c.samples = iteration * 256;
  c.elapsed_s = 12.5;
  c.parameters = {1.5f, -2.0f, 3.25f};
  c.optimizer.first = {0.1f, 0.2f, 0.3f};
  c.optimizer.steps = {7, 8};
  c.ledger = LedgerState{2, {1, 2, 3, 4}, {5, 6}};
  c.versions = {9, 10};
  c.energy_joules = 123.5;
  c.accuracy = 0.494;
  c.loss = 0.41;
  c.evaluated_iteration = iteration - 10;
  c.workers = {WorkerTotals{7, 448, 30, 9000, 8000, 1.5, 0.5, 2.5, 60.0, 0.25, "0003.csv"}, WorkerTotals{}};
  c.workers[0].stream_refused_files = 2;
  c.workers[0].stream_last_refused = "bad.csv:1: expected 65 values, found 2";
  c.workers[0].node = "gateway";
  c.workers[0].injected = 386;
  c.devices_json = R"({"rank 0":{"node":"gateway","slowdown":1.0,"link":"unshaped"}})";
  c.module_crc32 = 0xcafef00d;
  c.departed_bytes_sent = 4'000;
  c.departed_bytes_received = 9'000;
  return c;
}

// A checkpoint as edgetrain 0.1 wrote it: a JSON header line, length-prefixed
// arrays and an FNV-1a checksum.
std::string FirstFormat(const JobCheckpoint& c) {
  std::string out = "EDGETRAIN-CHECKPOINT 1\n{\"job\":\"" + c.job + "\",\"generation\":" +
                    std::to_string(c.plan_generation) + ",\"iteration\":" + std::to_string(c.iteration) +
                    ",\"samples\":" + std::to_string(c.samples) + ",\"elapsedSeconds\":12.5,\"complete\":false}\n";
  auto append = [&out]<typename T>(const std::vector<T>& v) {
    uint64_t n = v.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  };
  append(c.parameters);
  append(c.optimizer.first);
  append(c.optimizer.second);
  append(c.optimizer.steps);
  append(c.ledger->pushed);
  append(c.ledger->iterations);
  append(c.versions);
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : out) h = (h ^ ch) * 1099511628211ull;
  out.append(reinterpret_cast<const char*>(&h), sizeof h);
  return out;
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
  const JobCheckpoint& c = **loaded;
  EXPECT_EQ(c.job, "robots");
  EXPECT_EQ(c.plan_generation, 2);
  EXPECT_EQ(c.iteration, 40);
  EXPECT_EQ(c.samples, 40 * 256);
  EXPECT_FALSE(c.complete);
  EXPECT_EQ(c.parameters, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  EXPECT_EQ(c.optimizer.first, (std::vector<float>{0.1f, 0.2f, 0.3f}));
  EXPECT_TRUE(c.optimizer.second.empty());
  EXPECT_EQ(c.optimizer.steps, (std::vector<int64_t>{7, 8}));
  ASSERT_TRUE(c.ledger.has_value());
  EXPECT_EQ(c.ledger->workers, 2);
  EXPECT_EQ(c.ledger->pushed, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(c.ledger->iterations, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(c.versions, (std::vector<int64_t>{9, 10}));
  EXPECT_DOUBLE_EQ(c.energy_joules, 123.5);
  EXPECT_EQ(c.accuracy, 0.494) << "the last evaluation, shown again by a resumed job";
  EXPECT_EQ(c.evaluated_iteration, 30);
  EXPECT_EQ(c.loss, 0.41);
  ASSERT_EQ(c.workers.size(), 2u);
  EXPECT_EQ(c.workers[0].samples, 448);
  EXPECT_DOUBLE_EQ(c.workers[0].held_team_s, 0.25);
  EXPECT_EQ(c.workers[0].stream_read_through, "0003.csv");
  EXPECT_EQ(c.workers[0].stream_refused_files, 2);
  EXPECT_EQ(c.workers[0].stream_last_refused, "bad.csv:1: expected 65 values, found 2");
  EXPECT_EQ(c.workers[0].node, "gateway");
  EXPECT_EQ(c.workers[0].injected, 386);
  EXPECT_EQ(c.devices_json, R"({"rank 0":{"node":"gateway","slowdown":1.0,"link":"unshaped"}})")
      << "the devices its run was started on, for the run that resumes to compare";
  EXPECT_EQ(c.module_crc32, 0xcafef00du);
  EXPECT_EQ(c.departed_bytes_sent, 4'000);
  EXPECT_EQ(c.departed_bytes_received, 9'000);
  auto none = LoadCheckpoint((Dir() / "absent.bin").string());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

// A module exported anew with its layers in another order has as many
// parameters, and took up the checkpoint's into the wrong layers: 0.81
// accuracy became 0.22, the run exiting 0 (a user's trial). Its shapes, in
// order, are kept and checked; an older checkpoint without them is read by
// its count alone.
TEST(CheckpointTest, AModelOfAsManyParametersShapedOtherwiseDoesNotFit) {
  JobCheckpoint c = Sample(7);
  c.parameters.assign(6 * 16 + 16 + 16 * 4 + 4, 0.0f);
  c.parameter_shapes = {{16, 6}, {16}, {4, 16}, {4}};
  auto decoded = DecodeCheckpoint(*EncodeCheckpoint(c), "c.bin");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->parameter_shapes, c.parameter_shapes);
  EXPECT_TRUE(ParametersFit(*decoded, {{16, 6}, {16}, {4, 16}, {4}}).ok());
  const Status reordered = ParametersFit(*decoded, {{4, 16}, {4}, {16, 6}, {16}});
  EXPECT_EQ(reordered.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(reordered.message(),
            "holds a model whose parameters are shaped [16x6], [16], [4x16], [4], in that order, and this job's are "
            "[4x16], [4], [16x6], [16]: its module's layers changed, or their order");
  EXPECT_EQ(ParametersFit(*decoded, {{16, 6}, {16}}).message(),
            "holds a model of 180 parameters shaped [16x6], [16], [4x16], [4], and this job's has 112 shaped [16x6], "
            "[16]");
  decoded->parameter_shapes.clear();  // an older checkpoint
  EXPECT_TRUE(ParametersFit(*decoded, {{4, 16}, {4}, {16, 6}, {16}}).ok());
}

TEST(CheckpointTest, AJobOfOneHasNoLedger) {
  JobCheckpoint solo = Sample(7);
  solo.ledger.reset();
  auto decoded = DecodeCheckpoint(*EncodeCheckpoint(solo), "c.bin");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_FALSE(decoded->ledger.has_value());
  EXPECT_EQ(decoded->iteration, 7);
  // Written before any evaluation: none, not an accuracy of 0.
  solo.accuracy.reset();
  solo.evaluated_iteration.reset();
  decoded = DecodeCheckpoint(*EncodeCheckpoint(solo), "c.bin");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_FALSE(decoded->accuracy.has_value());
  EXPECT_FALSE(decoded->evaluated_iteration.has_value());
}

TEST(CheckpointTest, TheFirstFormatIsStillRead) {
  auto decoded = DecodeCheckpoint(FirstFormat(Sample(40)), "old.bin");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->iteration, 40);
  EXPECT_EQ(decoded->plan_generation, 2);
  EXPECT_EQ(decoded->parameters, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  ASSERT_TRUE(decoded->ledger.has_value());
  EXPECT_EQ(decoded->ledger->iterations, (std::vector<int64_t>{5, 6}));
  std::string torn = FirstFormat(Sample(40));
  torn[torn.size() / 2] ^= 0x10;
  EXPECT_EQ(DecodeCheckpoint(torn, "old.bin").status().code(), StatusCode::kDataLoss);
}

TEST(CheckpointTest, ATornWriteNeverReplacesAGoodCheckpoint) {
  fs::path dir = Dir();
  fs::path path = dir / "checkpoint.bin";
  ASSERT_TRUE(SaveCheckpoint(path.string(), Sample(40)).ok());
  // A crash half-way through writing the next one leaves its temporary file torn.
  std::string next = *EncodeCheckpoint(Sample(80));
  const std::string torn = path.string() + ".tmp-Ab12Cd";
  std::ofstream(torn, std::ios::binary) << next.substr(0, next.size() / 2);
  auto loaded = LoadCheckpoint(path.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ((*loaded)->iteration, 40);
  // The next save goes through, whole, beside it: whose the torn one was is
  // not known (another writer's, mid-write, is not taken away from it).
  ASSERT_TRUE(SaveCheckpoint(path.string(), Sample(80)).ok());
  EXPECT_EQ((*LoadCheckpoint(path.string()))->iteration, 80);
  EXPECT_EQ(fs::file_size(torn), next.size() / 2);
}

// A checkpoint is absent only when the system says so: one it cannot look
// for (a folder that cannot be searched, a share gone stale; here a link
// that loops) had been taken for none, and the run started afresh over it.
TEST(CheckpointTest, ACheckpointThatCannotBeLookedForIsNotTakenForNone) {
  const fs::path dir = Dir();
  fs::create_directory_symlink(dir / "loop", dir / "loop");
  const auto loaded = LoadCheckpoint((dir / "loop" / "checkpoint.bin").string());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kUnavailable) << loaded.status().ToString();
  const auto none = LoadCheckpoint((dir / "checkpoint.bin").string());
  ASSERT_TRUE(none.ok() && !none->has_value()) << "one that is not there is none";
}

TEST(CheckpointTest, DamagedCheckpointsAreDataLoss) {
  const std::string good = *EncodeCheckpoint(Sample(40));
  struct Case {
    std::string bytes;
    const char* why;
  } cases[] = {
      {good.substr(0, good.size() - 9), "CRC-32 mismatch"},
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
  EXPECT_NE(decoded.status().message().find("c.bin: damaged checkpoint (CRC-32 mismatch"), std::string::npos);
}

}  // namespace
}  // namespace edgetrain::agent

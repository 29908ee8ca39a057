#include "cli/partition_command.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;

class PartitionCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("edgetrain-partition-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path Job(const std::string& partition, int workers) {
    const fs::path path = dir_ / "job.yaml";
    std::ofstream(path) << "apiVersion: edgetrain.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: skewed}\nspec:\n"
                        << "  model: {name: mlp}\n  data: {dataset: digits, partition: " << partition << "}\n"
                        << "  parallelism: {workers: " << workers << "}\n";
    return path;
  }

  fs::path dir_;
};

TEST_F(PartitionCommandTest, ShowsEachWorkersLabelsAndTheLabelsNoWorkerSees) {
  std::ostringstream out, err;
  ASSERT_EQ(PrintPartition(Job("{kind: labels, labelsPerWorker: 1}", 3).string(), false, out, err), 0) << err.str();
  const std::string text = out.str();
  EXPECT_NE(text.find("among 3 workers, partition labels, 1 per worker, seed"), std::string::npos) << text;
  EXPECT_NE(text.find("worker  samples  labels 0-9"), std::string::npos) << text;
  // Three labels dealt of ten: seven are named as never trained on.
  const size_t unseen = text.find("no worker sees labels ");
  ASSERT_NE(unseen, std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin() + static_cast<std::ptrdiff_t>(unseen), text.end(), ','), 6) << text;
}

TEST_F(PartitionCommandTest, JsonHoldsTheCountsAndTheIndicesTheyCount) {
  std::ostringstream out, err;
  ASSERT_EQ(PrintPartition(Job("{kind: labels, labelsPerWorker: 5}", 2).string(), true, out, err), 0) << err.str();
  const auto doc = nlohmann::json::parse(out.str());
  ASSERT_EQ(doc["parts"].size(), 2u);
  EXPECT_TRUE(doc["unseenLabels"].empty());
  std::set<int64_t> all;
  for (int w = 0; w < 2; ++w) {
    int64_t counted = 0, labels_seen = 0;
    for (int64_t n : doc["labels"][w].get<std::vector<int64_t>>()) {
      counted += n;
      labels_seen += n > 0;
    }
    EXPECT_EQ(labels_seen, 5);
    EXPECT_EQ(counted, static_cast<int64_t>(doc["parts"][w].size()));
    for (int64_t i : doc["parts"][w].get<std::vector<int64_t>>()) EXPECT_TRUE(all.insert(i).second) << i;
  }
}

TEST_F(PartitionCommandTest, ABrokenManifestSaysWhy) {
  std::ostringstream out, err;
  EXPECT_NE(PrintPartition(Job("{kind: labels}", 2).string(), false, out, err), 0);
  EXPECT_NE(err.str().find("labelsPerWorker is required for kind labels"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace edgetrain::cli

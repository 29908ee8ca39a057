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

  // A manifest of job `name` with `spec`'s lines, written to `file` in the test's folder.
  fs::path Manifest(const std::string& file, const std::string& name, const std::string& spec) {
    const fs::path path = dir_ / file;
    std::ofstream(path) << "apiVersion: edgetrain.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: " << name
                        << "}\nspec:\n"
                        << spec;
    return path;
  }
  fs::path Job(const std::string& partition, int workers) {
    return Manifest("job.yaml", "skewed",
                    "  model: {name: mlp}\n  data: {dataset: digits, partition: " + partition + "}\n" +
                        "  parallelism: {workers: " + std::to_string(workers) + "}\n");
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

// A pipeline's devices share each batch of the whole set: the table is what a
// data-parallel team would train on, and says so.
TEST_F(PartitionCommandTest, APipelineJobsTableSaysThePartitionDoesNotApply) {
  const fs::path path = Manifest("piped.yaml", "piped",
                                 "  model: {name: mlp}\n  data: {dataset: digits, partition: {kind: dirichlet, "
                                 "alpha: 0.1}}\n  parallelism: {mode: pipeline, workers: 2}\n");
  std::ostringstream out, err;
  ASSERT_EQ(PrintPartition(path.string(), false, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("note: spec.data.partition applies to data-parallel teams only: this job is pipeline "
                           "(spec.parallelism.mode)"),
            std::string::npos)
      << out.str();
  std::ostringstream json;
  ASSERT_EQ(PrintPartition(path.string(), true, json, err), 0) << err.str();
  EXPECT_TRUE(nlohmann::json::parse(json.str()).contains("note")) << json.str();
  std::ostringstream team;
  ASSERT_EQ(PrintPartition(Job("{kind: iid}", 2).string(), false, team, err), 0) << err.str();
  EXPECT_EQ(team.str().find("note: spec.data.partition applies"), std::string::npos) << team.str();
  // Labels no part holds: the pipeline trains on them all the same.
  const fs::path labelled = Manifest("labelled.yaml", "labelled",
                                     "  model: {name: mlp}\n  data: {dataset: digits, partition: {kind: labels, "
                                     "labelsPerWorker: 2}}\n  parallelism: {mode: pipeline, workers: 2}\n");
  std::ostringstream parted;
  ASSERT_EQ(PrintPartition(labelled.string(), false, parted, err), 0) << err.str();
  EXPECT_EQ(parted.str().find("the job never trains on them"), std::string::npos) << parted.str();
  EXPECT_NE(parted.str().find(": a data-parallel team of its workers would never train on them\n"), std::string::npos)
      << parted.str();
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

// A stream from a folder is dealt by its source: what each worker's folder
// holds now is shown, and a file that cannot be read is named.
TEST_F(PartitionCommandTest, AStreamFromAFolderShowsWhatEachWorkersFolderHolds) {
  auto csv = [](const fs::path& path, std::initializer_list<int> labels) {
    std::ofstream f(path);
    for (int label : labels) {
      f << label;
      for (int i = 0; i < 64; ++i) f << ",0.5";
      f << "\n";
    }
  };
  fs::create_directories(dir_ / "incoming/worker-0");
  fs::create_directories(dir_ / "incoming/worker-1");
  csv(dir_ / "incoming/worker-0/a.csv", {0, 0, 1});
  csv(dir_ / "incoming/worker-1/a.csv", {2});
  std::ofstream(dir_ / "incoming/worker-1/b.csv") << "3,0.5\n";  // a row too short
  // So short, under a name that is not UTF-8: --json had thrown on it.
  std::ofstream(dir_ / "incoming/worker-1/caf\xe9.csv") << "3,0.5\n";
  const fs::path path = Manifest("job.yaml", "folders",
                                 "  model: {name: mlp}\n  data: {dataset: digits, stream: {directory: incoming}}\n"
                                 "  parallelism: {workers: 2}\n");
  std::ostringstream out, err;
  ASSERT_EQ(PrintPartition(path.string(), false, out, err), 0) << err.str();
  const std::string text = out.str();
  EXPECT_NE(text.find("folders: 4 samples (10 labels) in the CSV files of"), std::string::npos) << text;
  EXPECT_NE(text.find("spec.data.partition does not apply"), std::string::npos) << text;
  EXPECT_NE(text.find("left out: "), std::string::npos) << text;
  EXPECT_NE(text.find("b.csv"), std::string::npos) << text;
  EXPECT_NE(text.find("none has arrived yet"), std::string::npos) << text;

  std::ostringstream json, json_err;
  ASSERT_EQ(PrintPartition(path.string(), true, json, json_err), 0) << json_err.str();
  const auto doc = nlohmann::json::parse(json.str());
  EXPECT_EQ(doc["labels"][0][0], 2);
  EXPECT_EQ(doc["labels"][0][1], 1);
  EXPECT_EQ(doc["labels"][1][2], 1);
  EXPECT_EQ(doc["refusedFiles"].size(), 2u);
}

// With injection, each worker's injected labels are shown, chosen as the
// coordinator chooses them: under labelShare 1, every label its part lacks
// (a new user saw the same table with injection as without).
TEST_F(PartitionCommandTest, InjectionShowsTheLabelsEachWorkerIsSent) {
  const fs::path path = Manifest("injected.yaml", "skewed",
                                 "  model: {name: mlp}\n  data: {dataset: digits, partition: {kind: labels, "
                                 "labelsPerWorker: 4}, injection: {}}\n  parallelism: {workers: 3}\n");
  std::ostringstream json, err;
  ASSERT_EQ(PrintPartition(path.string(), true, json, err), 0) << err.str();
  const nlohmann::json doc = nlohmann::json::parse(json.str());
  ASSERT_EQ(doc["injectedLabels"].size(), 3u) << doc.dump();
  for (size_t w = 0; w < 3; ++w) {
    std::vector<int> lacked;
    for (int c = 0; c < 10; ++c) {
      if (doc["labels"][w][c].get<int64_t>() == 0) lacked.push_back(c);
    }
    EXPECT_EQ(doc["injectedLabels"][w].get<std::vector<int>>(), lacked) << "worker " << w;
  }
  std::ostringstream text;
  ASSERT_EQ(PrintPartition(path.string(), false, text, err), 0) << err.str();
  EXPECT_NE(text.str().find("injected into each batch (spec.data.injection: labelShare 1, batchShare 0.5 of a batch "
                            "on top), samples of the labels each worker's part lacks:\n  worker 0: "),
            std::string::npos)
      << text.str();
  std::ostringstream plain;
  ASSERT_EQ(PrintPartition(Job("{kind: labels, labelsPerWorker: 4}", 3).string(), false, plain, err), 0);
  EXPECT_EQ(plain.str().find("injected"), std::string::npos) << plain.str();
}

// Labels the data holds no sample of are said apart from those no part
// holds: neither is trained on, but injection brings in only the second (a
// new user's 12 classes, 9 of them in the file, read "the coordinator
// injects their samples" of all of them).
TEST_F(PartitionCommandTest, LabelsWithoutSamplesAreSaidApartFromLabelsNoWorkerSees) {
  {
    std::ofstream csv(dir_ / "train.csv");
    for (int label = 0; label < 9; ++label) {
      for (int i = 0; i < 5; ++i) csv << label << ",0.1,0.2,0.3,0.4\n";
    }
  }
  const fs::path path = Manifest("own.yaml", "own",
                                 "  model: {name: mlp}\n  data:\n    format: csv\n    inputShape: [4]\n"
                                 "    classes: 12\n    train: {path: train.csv}\n    test: {path: train.csv}\n"
                                 "    partition: {kind: labels, labelsPerWorker: 2}\n  parallelism: {workers: 3}\n");
  std::ostringstream json, err;
  ASSERT_EQ(PrintPartition(path.string(), true, json, err), 0) << err.str();
  const nlohmann::json doc = nlohmann::json::parse(json.str());
  EXPECT_EQ(doc["labelsWithoutSamples"].get<std::vector<int>>(), (std::vector<int>{9, 10, 11})) << doc.dump();
  for (int label : doc["unseenLabels"].get<std::vector<int>>()) EXPECT_LT(label, 9) << doc.dump();
  std::ostringstream text;
  ASSERT_EQ(PrintPartition(path.string(), false, text, err), 0) << err.str();
  EXPECT_NE(text.str().find("the training set holds no sample of labels 9, 10, 11: the model never learns them\n"),
            std::string::npos)
      << text.str();
}

// A team of more workers than samples, which run refuses, is warned of: the
// table showed a worker of 0 samples and said nothing (a new user's trial).
TEST_F(PartitionCommandTest, MoreWorkersThanSamplesAreWarnedOf) {
  std::ofstream(dir_ / "train.csv") << "0,0.1,0.2,0.3,0.4\n1,0.1,0.2,0.3,0.4\n";
  const fs::path path = Manifest("two.yaml", "two",
                                 "  model: {name: mlp}\n  data:\n    format: csv\n    inputShape: [4]\n"
                                 "    classes: 2\n    train: {path: train.csv}\n    test: {path: train.csv}\n"
                                 "  parallelism: {workers: 3}\n");
  std::ostringstream text, err;
  ASSERT_EQ(PrintPartition(path.string(), false, text, err), 0) << err.str();
  EXPECT_NE(text.str().find("warning: the training set holds 2 sample(s), fewer than the job's 3 workers: edgetrain "
                            "run refuses a team of more workers than samples\n"),
            std::string::npos)
      << text.str();
  // And --json, whose readers had no word of it.
  std::ostringstream json;
  ASSERT_EQ(PrintPartition(path.string(), true, json, err), 0) << err.str();
  EXPECT_EQ(nlohmann::json::parse(json.str()).value("warning", ""),
            "the training set holds 2 sample(s), fewer than the job's 3 workers: edgetrain run refuses a team of more "
            "workers than samples")
      << json.str();
}

// A file of a stream's folder larger than a worker's buffer, which loses rows
// as it is read, is said as run says it (partition counted it whole, unsaid:
// a new user's trial).
TEST_F(PartitionCommandTest, AStreamFileLargerThanTheBufferIsSaidAsRunSaysIt) {
  fs::create_directories(dir_ / "incoming/worker-0");
  fs::create_directories(dir_ / "incoming/worker-1");
  {
    std::ofstream big(dir_ / "incoming/worker-1/a.csv");
    for (int row = 0; row < 300; ++row) {
      big << row % 10;
      for (int i = 0; i < 64; ++i) big << ",0.5";
      big << "\n";
    }
  }
  const fs::path path = Manifest("big.yaml", "big",
                                 "  model: {name: mlp}\n  data: {dataset: digits, batchSize: 32, stream: {directory: "
                                 "incoming}}\n  parallelism: {workers: 2}\n");
  std::ostringstream out, err;
  ASSERT_EQ(PrintPartition(path.string(), false, out, err), 0) << err.str();
  EXPECT_NE(err.str().find("a.csv holds 300 rows, more than a worker's buffer of 256 samples"), std::string::npos)
      << err.str();
}

// A file of a stream's folder still being written (its last line
// unfinished, written to just now) is not counted yet, and said not to be:
// partition had shown the worker's folder as holding nothing (a user's trial).
TEST_F(PartitionCommandTest, AStreamFileStillBeingWrittenIsSaidNotCountedYet) {
  fs::create_directories(dir_ / "incoming/worker-0");
  {
    std::ofstream part(dir_ / "incoming/worker-0/1.csv");
    part << 3;
    for (int i = 0; i < 64; ++i) part << ",0.5";
    part << "\n7,0.5";  // mid-row
  }
  const fs::path path = Manifest("writing.yaml", "writing",
                                 "  model: {name: mlp}\n  data: {dataset: digits, batchSize: 32, stream: {directory: "
                                 "incoming}}\n  parallelism: {workers: 2}\n");
  std::ostringstream out, err;
  ASSERT_EQ(PrintPartition(path.string(), false, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("not counted yet: " + (dir_ / "incoming/worker-0/1.csv").string() +
                           ", still being written, and the files after it in its folder"),
            std::string::npos)
      << out.str();
}

TEST_F(PartitionCommandTest, ABrokenManifestSaysWhy) {
  std::ostringstream out, err;
  EXPECT_NE(PrintPartition(Job("{kind: labels}", 2).string(), false, out, err), 0);
  EXPECT_NE(err.str().find("labelsPerWorker is required for kind labels"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace edgetrain::cli

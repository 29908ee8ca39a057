// `edgetrain run` end to end: the real runner starting the real agent.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stb_image_write.h>

#include "http/http_client.h"
#include "cli/child_process.h"
#include "cli/child_process_testing.h"
#include "core/job_progress.h"
#include "core/number_text.h"

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kEdgetrain = std::string(EDGETRAIN_BINARY_DIR) + "/bin/edgetrain";

bool ProcessRunningWith(const std::string& needle) { return ProcessWith(needle).has_value(); }

struct Outcome {
  int exit = -1;
  std::vector<std::string> stdout_lines;
  std::string stderr_text;
};

class RunCommandTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshTestDir("run");
  }

  // A manifest named `name` with `spec` (YAML, indented two spaces) in the test's folder.
  std::string Manifest(const std::string& name, const std::string& spec) {
    fs::path p = dir_ / (name + ".yaml");
    std::ofstream(p) << "apiVersion: edgetrain.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: " << name
                     << "\nspec:\n" << spec;
    return p.string();
  }

  // A team of `workers` on a file of 40 samples of 4 features and 2 classes,
  // in batches of `batch`, within `budget` (YAML flow).
  std::string ATeamOnFortySamples(const std::string& name, int batch, int workers, const std::string& budget) {
    std::ofstream train(dir_ / "train.csv");
    for (int i = 0; i < 40; ++i) train << i % 2 << ",0.1,0.2,0.3," << i % 5 << "\n";
    return Manifest(name, "  model: {name: mlp, hidden: [8]}\n  data: {format: csv, inputShape: [4], classes: 2, "
                          "batchSize: " + std::to_string(batch) +
                              ", train: {path: train.csv}, test: {path: train.csv}}\n  parallelism: {workers: " +
                              std::to_string(workers) + "}\n  budget: " + budget + "\n");
  }

  // The runner's run folders go to the test's folder, not /tmp.
  StatusOr<ChildProcess> Start(std::vector<std::string> args) {
    args.insert(args.begin(), kEdgetrain);
    return ChildProcess::Spawn(args, (dir_ / "stderr.log").string(), {{"TMPDIR", dir_.string()}});
  }

  // An agent for the run to start: a shell script whose `lines` run first
  // (a case on its arguments, say), then the real agent with its arguments.
  fs::path AgentThat(const std::string& name, const std::string& lines) {
    const fs::path agent = dir_ / name;
    std::ofstream(agent) << "#!/bin/sh\n"
                         << lines << "exec " << EDGETRAIN_BINARY_DIR << "/bin/edgetrain-agent \"$@\"\n";
    fs::permissions(agent, fs::perms::owner_all);
    return agent;
  }

  std::vector<fs::path> RunFolders() {
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().filename().string().rfind("edgetrain-", 0) == 0) found.push_back(e.path());
    }
    return found;
  }

  Outcome Execute(std::vector<std::string> args) {
    Outcome run;
    auto child = Start(std::move(args));
    EXPECT_TRUE(child.ok()) << child.status().ToString();
    if (!child.ok()) return run;
    while (auto line = child->ReadLine(seconds(120))) run.stdout_lines.push_back(*line);
    run.exit = child->Wait(seconds(30));
    run.stderr_text = ReadFile(dir_ / "stderr.log");
    return run;
  }

  // Waits (without sleeping blindly) until the runner's stderr shows `text`.
  // Whether the job's coordinator reports `iteration` done within `timeout`,
  // read from the /progress address the runner prints.
  bool Trained(int64_t iteration, seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    const std::regex progress("http://([0-9.:]+)/progress");
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      const std::string err = ReadFile(dir_ / "stderr.log");
      if (std::regex_search(err, m, progress)) {
        auto reply = http::HttpGet(m[1].str(), "/progress");
        if (reply.ok() && reply->status == 200) {
          auto p = DecodeJobProgress(reply->body);
          if (p.ok() && p->iteration >= iteration) return true;
        }
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }

  // Whether the runner's log shows `text` within `timeout`, past its first
  // `from` bytes (a run's own, where the log holds earlier runs' too).
  bool StderrShows(const std::string& text, seconds timeout, size_t from = 0) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (ReadFile(dir_ / "stderr.log").find(text, from) != std::string::npos) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }

  fs::path dir_;
};

constexpr const char* kDigitsSpec = R"(  model: {name: mlp, hidden: [64]}
  data: {dataset: digits, batchSize: 32}
  optimizer: {name: adam, learningRate: 0.01}
  evaluation: {everyIterations: 45}
  budget: {wallClock: 2m, epochs: 20, targetAccuracy: 0.95}
)";

TEST_F(RunCommandTest, TrainsDigitsAndEndsWithAJsonLine) {
  const fs::path log = dir_ / "progress-log.jsonl";
  // A picture an earlier run left, which --no-curves does not draw again.
  fs::create_directories(dir_ / "out");
  std::ofstream(dir_ / "out" / "report.png") << "an earlier run's";
  Outcome run = Execute({"run", Manifest("digits-ok", kDigitsSpec), "--json", "--no-curves", "--output",
                         (dir_ / "out").string(), "--progress-log", log.string()});
  ASSERT_EQ(run.exit, 0) << run.stderr_text;
  // The progress log ends with the run's final word, not the last one polled
  // (a new user's log of a one-second job was empty).
  std::ifstream logged(log);
  std::string line, last;
  while (std::getline(logged, line)) last = line;
  ASSERT_FALSE(last.empty());
  EXPECT_EQ(nlohmann::json::parse(last)["progress"]["state"], "succeeded") << last;
  ASSERT_FALSE(run.stdout_lines.empty());
  auto result = nlohmann::json::parse(run.stdout_lines.back());
  EXPECT_EQ(result["job"], "digits-ok");
  EXPECT_GE(result["accuracy"].get<double>(), 0.95);
  EXPECT_EQ(result["reached_target"], true);
  EXPECT_EQ(result["stop_reason"], "target");
  EXPECT_GT(result["iterations"].get<int>(), 0);
  EXPECT_EQ(result["samples"].get<int>() > 0, true);
  EXPECT_GT(result["wall_s"].get<double>(), result["train_s"].get<double>());
  EXPECT_TRUE(fs::exists(dir_ / "out" / "model.pt"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "model.json"));
  EXPECT_NE(run.stdout_lines[0].find("digits-ok: test accuracy"), std::string::npos) << run.stdout_lines[0];
  EXPECT_NE(run.stderr_text.find("training digits-ok: mlp on digits, 1 worker(s)"), std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("note: " + (dir_ / "out" / "report.png").string() +
                                 " is an earlier run's, not drawn again (--no-curves)"),
            std::string::npos)
      << run.stderr_text;
}

TEST_F(RunCommandTest, EvaluateGivesTheTrainedModelsTestAccuracyAgain) {
  Outcome run = Execute({"run", Manifest("digits-evaluated", kDigitsSpec), "--json", "--no-curves", "--output", (dir_ / "out").string()});
  ASSERT_EQ(run.exit, 0) << run.stderr_text;
  const double trained = nlohmann::json::parse(run.stdout_lines.back())["accuracy"].get<double>();
  const std::string model = (dir_ / "out" / "model.pt").string();

  Outcome evaluated = Execute({"evaluate", model, "--dataset", "digits", "--json"});
  ASSERT_EQ(evaluated.exit, 0) << evaluated.stderr_text;
  ASSERT_EQ(evaluated.stdout_lines.size(), 1u);
  auto result = nlohmann::json::parse(evaluated.stdout_lines[0]);
  EXPECT_EQ(result["accuracy"].get<double>(), trained) << "the run's summary evaluates the same model on the same 360";
  EXPECT_EQ(result["samples"], 360);
  EXPECT_EQ(result["dataset"], "digits");
  // A job's own files: the test split's, named as such (--json named the
  // training files, which the agent describes a data set by).
  Outcome by_job = Execute({"evaluate", model, "--job", Manifest("digits-evaluated", kDigitsSpec), "--json"});
  ASSERT_EQ(by_job.exit, 0) << by_job.stderr_text;
  EXPECT_EQ(nlohmann::json::parse(by_job.stdout_lines.at(0))["dataset"], "digits") << by_job.stdout_lines.at(0);

  // Neither a set nor a job: the one its model.json says it was trained on.
  Outcome by_card = Execute({"evaluate", model, "--json"});
  ASSERT_EQ(by_card.exit, 0) << by_card.stderr_text;
  EXPECT_EQ(nlohmann::json::parse(by_card.stdout_lines.at(0))["accuracy"].get<double>(), trained);

  Outcome said = Execute({"evaluate", model, "--dataset", "digits"});
  ASSERT_EQ(said.exit, 0);
  char accuracy[16];
  std::snprintf(accuracy, sizeof accuracy, "%.4f", trained);
  EXPECT_EQ(said.stdout_lines.at(0), model + ": test accuracy " + accuracy + " on digits (360 test samples), loss " +
                                         said.stdout_lines.at(0).substr(said.stdout_lines.at(0).rfind(' ') + 1));

  // A model in a folder whose name is not UTF-8 (Latin-1's café) is read; the
  // agent's result line, JSON, echoes its path, and that aborted the agent.
  const fs::path latin1 = dir_ / "caf\xE9";
  fs::create_directories(latin1);
  fs::copy_file(model, latin1 / "model.pt");
  Outcome elsewhere = Execute({"evaluate", (latin1 / "model.pt").string(), "--dataset", "digits", "--json"});
  ASSERT_EQ(elsewhere.exit, 0) << elsewhere.stderr_text;
  EXPECT_EQ(nlohmann::json::parse(elsewhere.stdout_lines.at(0))["accuracy"].get<double>(), trained);
  // A run cannot hand such a folder on to its agents, and says so first.
  Outcome refused = Execute({"run", Manifest("digits-evaluated", kDigitsSpec), "--output", (latin1 / "out").string()});
  EXPECT_EQ(refused.exit, 2);
  EXPECT_NE(refused.stderr_text.find("--output: " + (dir_ / "caf\\xE9" / "out").string() + " is not UTF-8"),
            std::string::npos)
      << refused.stderr_text;

  // A model of 8x8 digits cannot read 28x28 clothes.
  Outcome wrong = Execute({"evaluate", model, "--dataset", "fashion-mnist"});
  EXPECT_EQ(wrong.exit, 2) << wrong.stderr_text;
  EXPECT_NE(wrong.stderr_text.find("does not fit the fashion-mnist set's samples: it was trained on digits (model.json)"),
            std::string::npos)
      << wrong.stderr_text;
  EXPECT_EQ(said.stderr_text.find("note:"), std::string::npos) << "trained on digits: " << said.stderr_text;
  // A model of other data of the same shape is measured, and said to be (a
  // new user's model of image folders scored on digits without a word).
  // So is a model of a run interrupted before its end (a new user's model
  // of 6 steps scored what guessing does, nothing said of its run).
  int64_t iteration = 0;
  {
    const std::string card = (dir_ / "out" / "model.json").string();
    nlohmann::json json = nlohmann::json::parse(std::ifstream(card));
    json["dataset"] = "images data (folders/train)";
    json["finished"] = false;
    iteration = json["iteration"].get<int64_t>();
    std::ofstream(card) << json.dump(2);
  }
  Outcome other = Execute({"evaluate", model, "--dataset", "digits"});
  EXPECT_EQ(other.exit, 0) << other.stderr_text;
  EXPECT_NE(other.stderr_text.find("note: " + model + " was trained on images data (folders/train) (model.json), "
                                   "not on digits: this measures it on other data"),
            std::string::npos)
      << other.stderr_text;
  EXPECT_NE(other.stderr_text.find("note: " + model + " is of a run interrupted at iteration " +
                                   WithThousands(iteration) + " (model.json: finished false)"),
            std::string::npos)
      << other.stderr_text;
  // The job's manifest given for its model: the command that evaluates
  // what its run saved, or, before a run, the one that trains it (it was
  // read as a model and sent to --dataset: a new user's trial).
  const std::string saved_job = Manifest("digits-saved", std::string(kDigitsSpec) + "  output: {path: out}\n");
  Outcome manifest = Execute({"evaluate", saved_job});
  EXPECT_EQ(manifest.exit, 2);
  EXPECT_NE(manifest.stderr_text.find(saved_job + " is a TrainingJob manifest (digits-saved), not a model: evaluate "
                                      "takes the model.pt its run saved: edgetrain evaluate " + model + "\n"),
            std::string::npos)
      << manifest.stderr_text;
  const std::string unrun_job = Manifest("digits-unrun", std::string(kDigitsSpec) + "  output: {path: unrun}\n");
  Outcome unrun = Execute({"evaluate", unrun_job});
  EXPECT_EQ(unrun.exit, 2);
  EXPECT_NE(unrun.stderr_text.find(", which is not in " + (dir_ / "unrun").string() + " yet: edgetrain run " +
                                   unrun_job + " trains it, then edgetrain evaluate " +
                                   (dir_ / "unrun" / "model.pt").string() + "\n"),
            std::string::npos)
      << unrun.stderr_text;
  Outcome missing = Execute({"evaluate", (dir_ / "absent.pt").string(), "--dataset", "digits"});
  EXPECT_EQ(missing.exit, 2);
  EXPECT_NE(missing.stderr_text.find("no model at " + (dir_ / "absent.pt").string()), std::string::npos)
      << missing.stderr_text;
  // With --json, a JSON line all the same, as run's failures end with one.
  Outcome missing_json = Execute({"evaluate", (dir_ / "absent.pt").string(), "--dataset", "digits", "--json"});
  EXPECT_EQ(missing_json.exit, 2);
  ASSERT_EQ(missing_json.stdout_lines.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(missing_json.stdout_lines[0]),
            nlohmann::json({{"model", (dir_ / "absent.pt").string()},
                            {"error", "no model at " + (dir_ / "absent.pt").string()}}));
  Outcome not_a_model = Execute({"evaluate", (dir_ / "out" / "model.json").string(), "--dataset", "digits"});
  EXPECT_EQ(not_a_model.exit, 2);
  EXPECT_NE(not_a_model.stderr_text.find("is not a model edgetrain can read: not a LibTorch archive (it reads the "
                                          "model.pt edgetrain saves, and TorchScript modules saved with torch.jit.save)"),
            std::string::npos)
      << not_a_model.stderr_text;
  // Its bytes altered a third of the way in: refused, not scored (it was,
  // at 0.29 with a loss of 3.5e26, exit 0: a user's trial).
  std::string bytes = ReadFile(dir_ / "out" / "model.pt");
  for (size_t i = bytes.size() / 3; i < bytes.size() / 3 + 200; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x55);
  std::ofstream(dir_ / "altered.pt", std::ios::binary) << bytes;
  Outcome altered = Execute({"evaluate", (dir_ / "altered.pt").string(), "--dataset", "digits"});
  EXPECT_EQ(altered.exit, 2) << altered.stderr_text;
  EXPECT_NE(altered.stderr_text.find((dir_ / "altered.pt").string() + " is damaged (CRC-32 mismatch in "),
            std::string::npos)
      << altered.stderr_text;
}

// `evaluate --job` measures a model on the job's test files: a wrong
// training file is no reason not to; and a model whose layers cannot take
// the job's samples at all is said to be the model's, not a field of the
// job's (a cnn of 8x8 digits on rows of 64 read "spec.model.channels: 2
// conv blocks would halve the 1x64 images below 1x1": a new user's trial).
TEST_F(RunCommandTest, EvaluateOnAJobsFilesReadsItsTestFileAlone) {
  Outcome mlp = Execute({"run", Manifest("digits-mlp", R"(  model: {name: mlp, hidden: [16]}
  data: {dataset: digits}
  budget: {epochs: 1}
)"), "--no-curves", "--output", (dir_ / "mlp").string()});
  ASSERT_EQ(mlp.exit, 0) << mlp.stderr_text;
  std::string row = "3";
  for (int i = 0; i < 64; ++i) row += ",0.5";
  std::ofstream(dir_ / "test.csv") << row << "\n" << row << "\n";
  std::ofstream(dir_ / "train.csv") << "10" << row.substr(1) << "\n";  // a label out of range
  const std::string job = Manifest("rows", R"(  model: {name: mlp, hidden: [16]}
  data: {format: csv, train: {path: train.csv}, test: {path: test.csv}, inputShape: [64], classes: 10}
)");
  Outcome by_job = Execute({"evaluate", (dir_ / "mlp" / "model.pt").string(), "--job", job, "--json"});
  ASSERT_EQ(by_job.exit, 0) << by_job.stderr_text;
  EXPECT_EQ(nlohmann::json::parse(by_job.stdout_lines.at(0))["samples"], 2);
  // Another job's data than the model's: said (it was not: a new user's trial).
  EXPECT_NE(by_job.stderr_text.find("note: " + (dir_ / "mlp" / "model.pt").string() +
                                    " was trained on digits (model.json), not on csv data (" +
                                    (dir_ / "train.csv").string() + "): this measures it on other data\n"),
            std::string::npos)
      << by_job.stderr_text;
  fs::remove(dir_ / "train.csv");  // nor a training file that is not there
  Outcome no_train = Execute({"evaluate", (dir_ / "mlp" / "model.pt").string(), "--job", job, "--json"});
  ASSERT_EQ(no_train.exit, 0) << no_train.stderr_text;

  Outcome cnn = Execute({"run", Manifest("digits-cnn", R"(  model: {name: cnn}
  data: {dataset: digits}
  budget: {epochs: 1}
)"), "--no-curves", "--output", (dir_ / "cnn").string()});
  ASSERT_EQ(cnn.exit, 0) << cnn.stderr_text;
  const std::string model = (dir_ / "cnn" / "model.pt").string();
  Outcome misfit = Execute({"evaluate", model, "--job", job});
  EXPECT_EQ(misfit.exit, 2);
  EXPECT_NE(misfit.stderr_text.find("error: " + model + " holds a cnn that does not fit the test files' (" +
                                    (dir_ / "test.csv").string() + ") samples"),
            std::string::npos)
      << misfit.stderr_text;
  EXPECT_NE(misfit.stderr_text.find("it was trained on digits (model.json)"), std::string::npos) << misfit.stderr_text;
}

// A model of image folders measured on folders of other classes: said, as is
// a figure about what guessing scores. A model of bl, br, tl, tr scored
// 0.0460 on folders a_tl, b_tr, c_bl, d_br, unsaid (a new user's trial).
TEST_F(RunCommandTest, EvaluateOnFoldersOfOtherClassesSaysSo) {
  // Four classes of 4x4 grey images, each of one shade: shade s is class s
  // of the train folders (bl, br, tl, tr).
  auto folders = [&](const fs::path& root, const std::vector<std::pair<std::string, int>>& shades) {
    for (const auto& [name, shade] : shades) {
      fs::create_directories(root / name);
      for (int i = 0; i < 8; ++i) {
        std::vector<uint8_t> pixels(16, static_cast<uint8_t>(shade * 80 + i));
        ASSERT_TRUE(stbi_write_png((root / name / (std::to_string(i) + ".png")).c_str(), 4, 4, 1, pixels.data(), 4));
      }
    }
  };
  folders(dir_ / "train", {{"bl", 0}, {"br", 1}, {"tl", 2}, {"tr", 3}});
  // The same classes in folders renamed so that each sorts a label along.
  folders(dir_ / "renamed", {{"a_tl", 2}, {"b_tr", 3}, {"c_bl", 0}, {"d_br", 1}});
  const char* spec = R"(  model: {name: mlp, hidden: [16]}
  data: {format: images, inputShape: [1, 4, 4], classes: 4, train: {path: %s}, test: {path: %s}}
  optimizer: {name: adam, learningRate: 0.05}
  budget: {epochs: 40}
)";
  char text[512];
  std::snprintf(text, sizeof text, spec, "train", "train");
  Outcome run = Execute({"run", Manifest("shades", text), "--no-curves", "--output", (dir_ / "out").string()});
  ASSERT_EQ(run.exit, 0) << run.stderr_text;
  std::snprintf(text, sizeof text, spec, "renamed", "renamed");
  const std::string model = (dir_ / "out" / "model.pt").string();
  Outcome other = Execute({"evaluate", model, "--job", Manifest("renamed", text)});
  ASSERT_EQ(other.exit, 0) << other.stderr_text;
  EXPECT_NE(other.stderr_text.find("note: " + model + " was trained on the classes bl, br, tl, tr (model.json), and "
                                   "these test folders are a_tl, b_tr, c_bl, d_br: a label is not the same class in "
                                   "both"),
            std::string::npos)
      << other.stderr_text;
  EXPECT_NE(other.stderr_text.find(" is about what guessing scores on 4 classes (1 in 4): the model does not tell "
                                   "them apart"),
            std::string::npos)
      << other.stderr_text << other.stdout_lines.at(0);
  std::snprintf(text, sizeof text, spec, "train", "train");
  const size_t said_before = other.stderr_text.size();  // the log is appended to
  Outcome same = Execute({"evaluate", model, "--job", Manifest("same", text)});
  ASSERT_EQ(same.exit, 0) << same.stderr_text;
  EXPECT_EQ(same.stderr_text.find("note:", said_before), std::string::npos) << same.stderr_text;
}

// A training file with no sample of one of its classes: warned of, for a
// team as for a job of one (the coordinator keeps none of the set, and the
// warning was judged on what it kept: found in review).
TEST_F(RunCommandTest, ATeamsTrainingFileWithoutAClassIsWarnedOf) {
  {
    std::ofstream train(dir_ / "train.csv"), test(dir_ / "test.csv");
    for (int i = 0; i < 64; ++i) {
      train << i % 2 << "," << (i % 2) << ".5,0.25\n";
      test << i % 3 << "," << (i % 3) << ".5,0.25\n";
    }
  }
  const std::string job = Manifest("two-of-three", R"(  model: {name: mlp, hidden: [8]}
  data: {format: csv, train: {path: train.csv}, test: {path: test.csv}, inputShape: [2], classes: 3, batchSize: 8}
  parallelism: {workers: 2}
  budget: {wallClock: 2s}
)");
  const Outcome run = Execute({"run", job, "--no-curves", "--output", (dir_ / "out").string()});
  ASSERT_EQ(run.exit, 0) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("the training set holds no sample of label 2 of its 3 classes (spec.data.classes): "
                                 "the model never learns it"),
            std::string::npos)
      << run.stderr_text;
}

// A team with more workers than training samples is refused, the job's
// fault: a worker with an empty part crashed, and the run said it had
// stopped after its epochs, exit 0 (found in review).
TEST_F(RunCommandTest, ATeamWithMoreWorkersThanTrainingSamplesIsRefused) {
  std::ofstream(dir_ / "train.csv") << "0,0.5,0.25\n1,1.5,0.25\n2,2.5,0.25\n";
  std::ofstream(dir_ / "test.csv") << "0,0.5,0.25\n";
  const Outcome run = Execute({"run", Manifest("five-of-three", R"(  model: {name: mlp, hidden: [8]}
  data: {format: csv, train: {path: train.csv}, test: {path: test.csv}, inputShape: [2], classes: 3, batchSize: 8}
  parallelism: {workers: 5}
  budget: {epochs: 1}
)"), "--no-curves", "--output", (dir_ / "out").string()});
  EXPECT_EQ(run.exit, 2) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("the training set holds 3 sample(s), fewer than the job's 5 workers "
                                 "(spec.parallelism.workers): each trains on a part of its own, of one sample at "
                                 "least; ask for at most 3"),
            std::string::npos)
      << run.stderr_text;
}

TEST_F(RunCommandTest, BudgetEndingBeforeTheTargetIsStillASuccess) {
  Outcome run = Execute({"run", Manifest("digits-short", R"(  model: {name: mlp}
  data: {dataset: digits}
  budget: {epochs: 1, targetAccuracy: 0.999}
)"), "--json", "--no-curves", "--output", (dir_ / "out").string()});
  ASSERT_EQ(run.exit, 0) << run.stderr_text;
  auto result = nlohmann::json::parse(run.stdout_lines.back());
  EXPECT_EQ(result["reached_target"], false);
  EXPECT_EQ(result["stop_reason"], "epochs");
  EXPECT_EQ(result["iterations"], 23);  // ceil(1437 / 64)
}

// A stream that brings its worker no batch within the run, in a team whose
// rounds wait for every worker, is said before the run (a user's trial: 35
// samples trained in 20 s, exit 0, nothing said).
TEST_F(RunCommandTest, AStreamTooSlowToHoldUpTheTeamIsWarnedOfBeforeTheRun) {
  const std::string job = Manifest("starved", R"(  model: {name: mlp, hidden: [16]}
  data: {dataset: digits, batchSize: 32, stream: {ratesPerSecond: [0.0001, 60, 180]}}
  parallelism: {workers: 3}
  budget: {wallClock: 20s}
)");
  const Outcome validated = Execute({"validate", job});
  EXPECT_EQ(validated.exit, 0) << validated.stderr_text;
  EXPECT_NE(validated.stderr_text.find("warning: worker 0's stream brings its first batch's least of 4 samples "
                                       "(spec.data.stream.minBatchSize) only after 11h6m40s, past the run's 20s"),
            std::string::npos)
      << validated.stderr_text;
  EXPECT_EQ(validated.stderr_text.find("worker 1's stream"), std::string::npos) << validated.stderr_text;
}

// A folder where the checkpoint goes is refused, and said to be no
// checkpoint: the run said "the job's checkpoint ... is kept as it was", and
// with --fresh an earlier run's it "starts over" from (a new user's trial).
TEST_F(RunCommandTest, AFolderWhereTheCheckpointGoesIsNotCalledACheckpoint) {
  const fs::path out = dir_ / "out";
  fs::create_directories(out / "checkpoint.bin");
  for (const bool fresh : {false, true}) {
    std::vector<std::string> args = {"run", Manifest("digits-folder", kDigitsSpec), "--no-curves", "--output",
                                     out.string()};
    if (fresh) args.push_back("--fresh");
    const Outcome run = Execute(args);
    EXPECT_EQ(run.exit, 2) << run.stderr_text;
    EXPECT_NE(run.stderr_text.find("checkpoint.bin is a folder, where the job's checkpoint goes: move it away"),
              std::string::npos)
        << run.stderr_text;
    EXPECT_NE(run.stderr_text.find("no checkpoint was written in " + out.string() +
                                   "; the same command fails the same way"),
              std::string::npos)
        << run.stderr_text;
    EXPECT_EQ(run.stderr_text.find("is kept as it was"), std::string::npos) << run.stderr_text;
    EXPECT_EQ(run.stderr_text.find("starts over"), std::string::npos) << run.stderr_text;
  }
}

// Valid here, refused by the operator: validate says so beside "valid", and
// plan, which predicts the operator, refuses it (a new user read "valid" for
// an output path of /data, which kubectl apply then saw Failed).
TEST_F(RunCommandTest, ValidateSaysWhatTheOperatorWouldRefuseOfTheSameManifest) {
  auto spec = [](const std::string& output) {
    return "  model: {name: mlp, hidden: [16]}\n  data: {dataset: digits, batchSize: 32}\n  output: {path: " + output +
           "}\n  budget: {wallClock: 20s}\n";
  };
  const Outcome elsewhere = Execute({"validate", Manifest("elsewhere", spec("/models/elsewhere"))});
  EXPECT_EQ(elsewhere.exit, 0) << elsewhere.stderr_text;
  EXPECT_EQ(elsewhere.stderr_text.find("in a cluster"), std::string::npos) << elsewhere.stderr_text;
  const Outcome validated = Execute({"validate", Manifest("mounted", spec("/data"))});
  EXPECT_EQ(validated.exit, 0) << validated.stderr_text;
  ASSERT_FALSE(validated.stdout_lines.empty());
  EXPECT_NE(validated.stdout_lines[0].find(": valid;"), std::string::npos) << validated.stdout_lines[0];
  EXPECT_NE(validated.stderr_text.find("note: in a cluster the operator would refuse it (InvalidSpec): "
                                       "spec.output.path: is where the job's own files are mounted in a cluster"),
            std::string::npos)
      << validated.stderr_text;
}

// A deadline team whose quorum is every worker, rounded up, is told so, with
// the quorum that closes rounds without one (a user's team of 3 stood 8 s).
TEST_F(RunCommandTest, ADeadlineQuorumOfEveryWorkerIsSaid) {
  auto spec = [](int workers, const std::string& sync, const std::string& mode = "") {
    return "  model: {name: mlp, hidden: [16]}\n  data: {dataset: digits, batchSize: 32}\n  parallelism: {" + mode +
           "workers: " + std::to_string(workers) + "}\n" + sync + "  budget: {wallClock: 20s}\n";
  };
  const Outcome three = Execute({"validate", Manifest("three", spec(3, ""))});
  EXPECT_EQ(three.exit, 0) << three.stderr_text;
  EXPECT_NE(three.stderr_text.find("note: spec.sync.quorum 0.75 (the default) of 3 workers is all 3 (a share is "
                                   "rounded up): no round of the deadline policy closes without one, as under bsp, so "
                                   "a link in a dip holds the team (one out altogether is counted out past its "
                                   "arrival deadline); a quorum of 0.66 closes rounds at 2 of 3\n"),
            std::string::npos)
      << three.stderr_text;
  for (const std::string& other : {spec(4, ""), spec(3, "  sync: {policy: deadline, quorum: 0.6}\n"),
                                   spec(3, "  sync: {policy: deadline, quorum: 1}\n"),
                                   spec(2, "  sync: {policy: bsp}\n"),
                                   // spec.sync is not a pipeline's (a user's trial read it of one).
                                   spec(3, "", "mode: pipeline, ")}) {
    fs::remove(dir_ / "stderr.log");  // each run's own
    const Outcome said = Execute({"validate", Manifest("other", other)});
    EXPECT_EQ(said.exit, 0) << other << said.stderr_text;
    EXPECT_EQ(said.stderr_text.find("spec.sync.quorum"), std::string::npos) << other << said.stderr_text;
  }
}

// A file of more rows than a worker's buffer holds loses the rows past it
// as it is read: said before the run, with the way out (a trial's 300 rows
// into a buffer of 256 lost 44 on each worker, said nowhere).
TEST_F(RunCommandTest, AStreamFileLargerThanTheBufferIsWarnedOf) {
  fs::create_directories(dir_ / "incoming" / "worker-0");
  std::string row = "3";
  for (int i = 0; i < 64; ++i) row += ",0.5";
  {
    std::ofstream big(dir_ / "incoming" / "worker-0" / "big.csv");
    big << "label";
    for (int i = 0; i < 64; ++i) big << ",x" << i;
    big << "\n";
    for (int i = 0; i < 20; ++i) big << row << "\n";
  }
  std::ofstream(dir_ / "incoming" / "worker-0" / "small.csv") << row << "\n" << row << "\n";
  const std::string job = Manifest("big", R"(  model: {name: mlp, hidden: [16]}
  data: {dataset: digits, batchSize: 8, stream: {directory: incoming, bufferCapacity: 8}}
  parallelism: {workers: 2}
  budget: {wallClock: 2s}
)");
  const Outcome checked = Execute({"validate", job});
  EXPECT_EQ(checked.exit, 0) << checked.stderr_text;
  EXPECT_NE(checked.stderr_text.find("warning: " + (dir_ / "incoming" / "worker-0" / "big.csv").string() +
                                     " holds 20 rows, more than a worker's buffer of 8 samples: it is read alone "
                                     "once the buffer is empty, and 12 of its rows are dropped; split it into files "
                                     "of at most 8 rows, or raise spec.data.stream.bufferCapacity\n"),
            std::string::npos)
      << checked.stderr_text;
  EXPECT_EQ(checked.stderr_text.find("small.csv"), std::string::npos) << checked.stderr_text;
}

// A stream from a folder: a worker folder missing or empty is no error (the
// source may start after the run), but the runner says where each worker
// looks, so that a wrong path or layout does not train on nothing unsaid,
// and names the files it leaves alone for their names; and --stages on a data-parallel job is said to do nothing.
TEST_F(RunCommandTest, AStreamFolderWithNothingForAWorkerIsNamed) {
  fs::create_directories(dir_ / "incoming" / "worker-0");
  std::string row = "3";  // a digit: its label, then 64 features in 0..1
  for (int i = 0; i < 64; ++i) row += ",0.5";
  std::ofstream(dir_ / "incoming" / "worker-0" / "a.csv") << row << "\n" << row << "\n";
  // Rows in a folder of worker 0's folder, which it does not read.
  fs::create_directories(dir_ / "incoming" / "worker-0" / "sub");
  std::ofstream(dir_ / "incoming" / "worker-0" / "sub" / "1.csv") << row << "\n";
  // Worker 1's rows under a name the stream does not read.
  fs::create_directories(dir_ / "incoming" / "worker-1");
  std::ofstream(dir_ / "incoming" / "worker-1" / "rows.txt") << row << "\n";
  // A folder of no worker's rank, and a file beside the worker folders.
  fs::create_directories(dir_ / "incoming" / "worker-7");
  std::ofstream(dir_ / "incoming" / "loose.csv") << row << "\n";
  const std::string job = Manifest("folder", R"(  model: {name: mlp, hidden: [16]}
  data: {dataset: digits, batchSize: 8, stream: {directory: incoming}}
  parallelism: {workers: 2}
  optimizer: {name: adam, learningRate: 0.01}
  budget: {wallClock: 2s}
)");
  // Both flags, both named (--stages went unsaid beside --micro-batches: a user's trial).
  const Outcome run = Execute({"run", job, "--no-curves", "--stages", "even", "--micro-batches", "4"});
  EXPECT_EQ(run.exit, 0) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("note: --stages even and --micro-batches apply to a pipeline, hybrid or auto job of 2 "
                                 "or more workers; folder is data-parallel (spec.parallelism.mode)"),
            std::string::npos)
      << run.stderr_text;
  const std::string note = "note: nothing to read yet in " + (dir_ / "incoming" / "worker-1").string() +
                           ": worker RANK trains on the CSV files put into " + (dir_ / "incoming").string() +
                           "/worker-RANK/";
  EXPECT_NE(run.stderr_text.find(note), std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("note: " + (dir_ / "incoming" / "worker-1").string() +
                                 " holds 1 file not named NAME.csv, left alone: rows.txt\n"),
            std::string::npos)
      << run.stderr_text;
  EXPECT_EQ(run.stderr_text.find("worker-0:"), std::string::npos) << "worker 0 has a file";
  EXPECT_NE(run.stderr_text.find("note: " + (dir_ / "incoming").string() +
                                 " holds what no worker of 2 reads: loose.csv and 1 more (worker RANK reads "
                                 "worker-RANK/, RANK from 0 to 1)\n"),
            std::string::npos)
      << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("note: " + (dir_ / "incoming" / "worker-0").string() +
                                 " holds 1 folder, not read (a worker reads only the NAME.csv files directly in "
                                 "its own): sub/\n"),
            std::string::npos)
      << run.stderr_text;

  // A folder that does not exist is said apart from an empty one: a typo
  // (a user's ~/incoming, taken under the manifest's folder) read as a
  // source that had not started.
  const std::string nowhere = Manifest("nowhere", R"(  model: {name: mlp, hidden: [16]}
  data: {dataset: digits, batchSize: 8, stream: {directory: ~/incoming}}
  parallelism: {workers: 2}
  budget: {wallClock: 2s}
)");
  fs::remove(dir_ / "stderr.log");  // this command's own
  const Outcome missing = Execute({"validate", nowhere});
  EXPECT_EQ(missing.exit, 0) << missing.stderr_text;
  EXPECT_NE(missing.stderr_text.find("note: " + (dir_ / "~" / "incoming").string() +
                                     " does not exist yet (a ~ in spec.data.stream.directory is no home folder: "
                                     "write the path out): worker RANK trains on the CSV files put into its "
                                     "worker-RANK/ folder in it"),
            std::string::npos)
      << missing.stderr_text;
  EXPECT_EQ(missing.stderr_text.find("nothing to read yet"), std::string::npos) << missing.stderr_text;

  // A path that is a file: nothing could ever arrive, and the run had
  // trained on nothing for its budget, exit 0.
  std::ofstream(dir_ / "afile") << row << "\n";
  const std::string to_a_file = Manifest("to-a-file", R"(  model: {name: mlp, hidden: [16]}
  data: {dataset: digits, batchSize: 8, stream: {directory: afile}}
  parallelism: {workers: 2}
  budget: {wallClock: 2s}
)");
  const Outcome refused = Execute({"run", to_a_file});
  EXPECT_EQ(refused.exit, 2);
  EXPECT_NE(refused.stderr_text.find("error: spec.data.stream.directory: " + (dir_ / "afile").string() +
                                     " is a file, not a folder"),
            std::string::npos)
      << refused.stderr_text;
  // So is a worker's folder that is a file: it cannot be listed, and its
  // worker had trained on nothing, exit 0.
  fs::create_directories(dir_ / "worker-file");
  std::ofstream(dir_ / "worker-file" / "worker-1") << row << "\n";
  const std::string worker_file = Manifest("worker-file", R"(  model: {name: mlp, hidden: [16]}
  data: {dataset: digits, batchSize: 8, stream: {directory: worker-file}}
  parallelism: {workers: 2}
  budget: {wallClock: 2s}
)");
  const Outcome unlistable = Execute({"validate", worker_file});
  EXPECT_EQ(unlistable.exit, 2);
  EXPECT_NE(unlistable.stderr_text.find("error: " + (dir_ / "worker-file" / "worker-1").string() +
                                        " cannot be read: a file, not a folder: worker 1 trains on the CSV files put "
                                        "into it"),
            std::string::npos)
      << unlistable.stderr_text;

  // A profile's node streams feed a job whose stream names no folder: beside
  // a folder they do nothing, now said.
  std::ofstream(dir_ / "streams.yaml") << "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\n"
                                          "metadata: {name: cams}\nspec:\n  nodes:\n"
                                          "    - {name: cam-1, stream: {ratePerSecond: 2}}\n"
                                          "    - {name: cam-2, stream: {ratePerSecond: 2}}\n";
  const Outcome checked = Execute({"validate", job, "--nodes", (dir_ / "streams.yaml").string()});
  EXPECT_EQ(checked.exit, 0) << checked.stderr_text;
  EXPECT_NE(checked.stderr_text.find("note: the profile's streams (cam-1 and 1 more) do not feed folder: its "
                                     "samples are the files of "),
            std::string::npos)
      << checked.stderr_text;
}

TEST_F(RunCommandTest, InvalidManifestsExitWithTwoAndSayWhy) {
  struct Case {
    std::string spec;
    const char* error;
  } cases[] = {
      {"  model: {name: mlp}\n  data: {dataset: digits}\n  parallelism: {workers: 0}\n",
       "spec.parallelism.workers: must be >= 1 (got 0)"},
      {"  model: {name: mlp}\n  data: {dataset: digits}\n  parallelism: {mode: pipeline, workers: 1}\n",
       "spec.parallelism: pipeline parallelism needs at least 2 workers"},
      {"  model: {name: mlp\n", "is not a valid TrainingJob:\n  "},
  };
  for (const auto& c : cases) {
    Outcome run = Execute({"run", Manifest("bad", c.spec)});
    EXPECT_EQ(run.exit, 2) << c.spec;
    EXPECT_NE(run.stderr_text.find(c.error), std::string::npos) << run.stderr_text;
    EXPECT_TRUE(run.stdout_lines.empty());
  }
  // --json's failure line names the job of a manifest the schema refused,
  // read as written (it gave "job": "").
  Outcome refused = Execute({"run", Manifest("bad", cases[0].spec), "--json"});
  ASSERT_EQ(refused.stdout_lines.size(), 1u) << refused.stderr_text;
  EXPECT_EQ(nlohmann::json::parse(refused.stdout_lines[0])["job"], "bad");
  Outcome missing = Execute({"run", (dir_ / "absent.yaml").string()});
  EXPECT_EQ(missing.exit, 2);
  EXPECT_NE(missing.stderr_text.find("no such file"), std::string::npos) << missing.stderr_text;
  Outcome directory = Execute({"run", dir_.string()});
  EXPECT_EQ(directory.exit, 2);
  EXPECT_NE(directory.stderr_text.find("cannot read " + dir_.string() + ": is a directory"), std::string::npos)
      << directory.stderr_text;
  Outcome usage = Execute({"run", "a.yaml", "--frobnicate"});
  EXPECT_EQ(usage.exit, 2);
  const std::string one_line = "\nedgetrain run: unknown option --frobnicate (see edgetrain run --help)\n";
  EXPECT_EQ(usage.stderr_text.substr(usage.stderr_text.size() - std::min(usage.stderr_text.size(), one_line.size())),
            one_line)
      << "one line, not the whole usage:\n" << usage.stderr_text;
}

// The pipeline tests' spec: a digits MLP of three layers to cut, its
// spec.parallelism `parallelism` beside mode pipeline, then `rest`.
std::string DigitsPipeline(const std::string& parallelism, const std::string& rest) {
  return "  model: {name: mlp, hidden: [64, 32]}\n  data: {dataset: digits, batchSize: 32}\n"
         "  parallelism: {mode: pipeline, " + parallelism + "}\n  optimizer: {name: adam, learningRate: 0.003}\n" +
         rest;
}

// A layout by hand with a rank the job has not is refused before the layers
// are measured (seconds on a model worth splitting), not after.
TEST_F(RunCommandTest, AStageLayoutByHandIsJudgedBeforeTheLayersAreMeasured) {
  const std::string spec = DigitsPipeline("workers: 3", "  budget: {epochs: 1}\n");
  Outcome run = Execute({"run", Manifest("digits-pipe", spec), "--no-curves", "--stages", "0:0/1-2:7"});
  EXPECT_EQ(run.exit, 2) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("--stages 0:0/1-2:7: \"7\" is not a rank of the job's 3 devices (0-2)"),
            std::string::npos)
      << run.stderr_text;
  EXPECT_EQ(run.stderr_text.find("measuring the model's layers"), std::string::npos) << run.stderr_text;

  // The same layout in the spec is refused as the manifest is read.
  Outcome in_spec = Execute({"run",
                             Manifest("digits-pipe-spec",
                                      DigitsPipeline("workers: 3, stages: \"0:0/1-2:7\"", "  budget: {epochs: 1}\n")),
                             "--no-curves"});
  EXPECT_EQ(in_spec.exit, 2) << in_spec.stderr_text;
  EXPECT_NE(in_spec.stderr_text.find("spec.parallelism.stages: \"7\" is not a rank of the job's 3 devices (0-2)"),
            std::string::npos)
      << in_spec.stderr_text;
  EXPECT_EQ(in_spec.stderr_text.find("measuring the model's layers"), std::string::npos) << in_spec.stderr_text;
}

// --stages, given, wins over the spec's stages: here the planner's over a
// layout by hand, which the run then says nothing of.
TEST_F(RunCommandTest, TheStagesFlagOverridesTheSpecs) {
  const std::string spec = DigitsPipeline("workers: 2, stages: \"0:0/1-2:1\"", "  budget: {epochs: 1}\n");
  Outcome run = Execute({"run", Manifest("digits-flag", spec), "--no-curves", "--stages", "planned"});
  ASSERT_EQ(run.exit, 0) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("note: --stages planned in place of the job's spec.parallelism.stages 0:0/1-2:1\n"),
            std::string::npos)
      << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("parallelism: pipeline as asked"), std::string::npos) << run.stderr_text;
  EXPECT_EQ(run.stderr_text.find("spec.parallelism.stages 0:0/1-2:1 instead"), std::string::npos) << run.stderr_text;
}

// A pipeline job: the agent measures its layers, the planner plans, the even
// split its spec asks for instead cuts them into one stage a device (the planner,
// counting the agent's messages, keeps this small MLP on one device), a head
// and a stage agent per device train it, and the model comes out as a job of
// one's would (it evaluates again the same).
TEST_F(RunCommandTest, APipelineJobIsPlannedAndTrainedByItsStages) {
  const std::string spec =
      DigitsPipeline("workers: 3, stages: even",
                     "  faultTolerance: {gradientEachMicroBatch: true}\n  budget: {epochs: 3}\n");
  Outcome run = Execute({"run", Manifest("digits-pipe", spec), "--json", "--no-curves", "--output",
                         (dir_ / "out").string()});
  ASSERT_EQ(run.exit, 0) << run.stderr_text;
  // The planner's own prediction beside it, then the even split's.
  EXPECT_NE(run.stderr_text.find("parallelism: spec.parallelism.stages even instead of the planner's (predicted "),
            std::string::npos)
      << run.stderr_text;
  EXPECT_NE(run.stderr_text.find(" samples/s), predicted "), std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("samples/s against data parallelism's"), std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("3 stages"), std::string::npos) << run.stderr_text;
  // One device a stage: sending each micro-batch's gradient changes nothing, and the run says so.
  EXPECT_NE(run.stderr_text.find("note: spec.faultTolerance.gradientEachMicroBatch changes nothing here: no stage of "
                                 "the plan has several devices\n"),
            std::string::npos)
      << run.stderr_text;
  // Three devices emulated on fewer cores take turns, and the run says so.
  const bool fewer_cores = std::thread::hardware_concurrency() > 0 && std::thread::hardware_concurrency() < 3;
  EXPECT_EQ(run.stderr_text.find("note: the plan's 3 devices are emulated on this machine's") != std::string::npos,
            fewer_cores)
      << run.stderr_text;
  // The even split for comparison stays the even split.
  std::string summary;
  for (const auto& l : run.stdout_lines) summary += l + "\n";
  EXPECT_EQ(summary.find("stages laid out anew"), std::string::npos) << summary;
  auto result = nlohmann::json::parse(run.stdout_lines.back());
  EXPECT_EQ(result["stop_reason"], "epochs");
  EXPECT_EQ(result["iterations"], 3 * 45) << "45 batches of 32 an epoch of 1,437 samples";
  EXPECT_GE(result["accuracy"].get<double>(), 0.8);
  EXPECT_NE(run.stdout_lines[1].find("135 steps (each the whole batch through the stages)"), std::string::npos)
      << run.stdout_lines[1];
  EXPECT_NE(run.stderr_text.find("training digits-pipe: mlp on digits, 3 worker(s) (pipeline)"), std::string::npos)
      << run.stderr_text;
  ASSERT_TRUE(fs::exists(dir_ / "out" / "model.pt"));
  Outcome evaluated = Execute({"evaluate", (dir_ / "out" / "model.pt").string(), "--dataset", "digits", "--json"});
  ASSERT_EQ(evaluated.exit, 0) << evaluated.stderr_text;
  EXPECT_EQ(nlohmann::json::parse(evaluated.stdout_lines[0])["accuracy"], result["accuracy"]);
  EXPECT_TRUE(RunFolders().empty()) << "a run that succeeds leaves no folder";
}

// A user's module that is not an nn.Sequential cannot be split: auto runs it
// whole and says why (it had refused the job), and a hybrid asked of it is
// refused with the reason and the way out (a user's trial).
TEST_F(RunCommandTest, AModuleThatCannotBeSplitRunsWholeUnderAutoAndIsRefusedAHybrid) {
  const std::string script =
      "import torch\nfrom torch import nn\n"
      "class TwoPaths(nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__()\n"
      "        self.hidden = nn.Linear(64, 64)\n"
      "        self.out = nn.Linear(64, 10)\n"
      "    def forward(self, x):\n"
      "        x = x.flatten(1)\n"
      "        return self.out(x + torch.relu(self.hidden(x)))\n"
      "torch.jit.save(torch.jit.script(TwoPaths()), '" + (dir_ / "net.pt").string() + "')\n";
  std::ofstream(dir_ / "make.py") << script;
  ASSERT_EQ(std::system(("/usr/bin/python3 " + (dir_ / "make.py").string()).c_str()), 0);
  const std::string spec = "  model: {torchscript: {path: net.pt}}\n  data: {dataset: digits, batchSize: 32}\n"
                           "  parallelism: {mode: MODE, workers: 2}\n  budget: {epochs: 3}\n";
  auto with_mode = [&](const std::string& mode) {
    std::string text = spec;
    text.replace(text.find("MODE"), 4, mode);
    return Manifest("two-paths-" + mode, text);
  };
  const std::string why = (dir_ / "net.pt").string() + " is a TwoPaths, whose forward may use its children in any order";
  Outcome hybrid = Execute({"run", with_mode("hybrid"), "--no-curves", "--output", (dir_ / "hybrid").string()});
  EXPECT_EQ(hybrid.exit, 2) << hybrid.stderr_text;
  EXPECT_NE(hybrid.stderr_text.find("a pipeline cuts a model between the children of an nn.Sequential, and " + why +
                                    ": script an nn.Sequential whose children each take the one before's output and "
                                    "share no weight, or train it with parallelism.mode auto (which runs it whole) or "
                                    "dataParallel"),
            std::string::npos)
      << hybrid.stderr_text;
  Outcome run = Execute({"run", with_mode("auto"), "--json", "--no-curves", "--output", (dir_ / "auto").string()});
  ASSERT_EQ(run.exit, 0) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find(why + ", so it runs whole\n"), std::string::npos) << run.stderr_text;
  const auto result = nlohmann::json::parse(run.stdout_lines.back());
  EXPECT_EQ(result["stop_reason"], "epochs");
  EXPECT_GE(result["accuracy"].get<double>(), 0.5) << "three epochs of a 64-10 module with a skip on digits";
  // Evaluated on the job's files, the model saved is the module whole: the
  // module it trained from, moved away, was required (a new user's trial).
  fs::rename(dir_ / "net.pt", dir_ / "net-moved.pt");
  Outcome evaluated =
      Execute({"evaluate", (dir_ / "auto" / "model.pt").string(), "--job", with_mode("auto"), "--json"});
  EXPECT_EQ(evaluated.exit, 0) << evaluated.stderr_text;
}

// A team's coordinator trains none of the model it saves: a batch norm's
// statistics are settled on training samples before it evaluates and saves,
// where they were saved at their first values (a user's ResNet scored 0.26).
TEST_F(RunCommandTest, ATeamsSavedBatchNormHoldsStatisticsOfItsTraining) {
  const std::string module = (dir_ / "bn.pt").string();
  std::ofstream(dir_ / "make_bn.py")
      << "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
         "m = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 10))\n"
         "torch.jit.save(torch.jit.script(m), '" << module << "')\n";
  ASSERT_EQ(std::system(("/usr/bin/python3 " + (dir_ / "make_bn.py").string()).c_str()), 0);
  const std::string spec = "  model: {torchscript: {path: bn.pt}}\n  data: {dataset: digits, batchSize: 32}\n"
                           "  parallelism: {workers: 2}\n  optimizer: {name: adam, learningRate: 0.01}\n"
                           "  budget: {epochs: 2}\n";
  Outcome run = Execute({"run", Manifest("bn-team", spec), "--json", "--no-curves", "--insecure", "--output",
                         (dir_ / "out").string()});
  ASSERT_EQ(run.exit, 0) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("settled by passes over 32 of its batches of training samples"), std::string::npos)
      << run.stderr_text;
  // Read back as PyTorch reads it: statistics moved off their first values.
  std::ofstream(dir_ / "read_bn.py")
      << "import torch\nm = torch.jit.load('" << (dir_ / "out" / "model.pt").string() << "')\n"
         "b = dict(m.named_buffers())\n"
         "print(int(b['2.num_batches_tracked']), float(b['2.running_mean'].abs().sum()), "
         "float((b['2.running_var'] - 1).abs().sum()))\n";
  const std::string read = (dir_ / "read.txt").string();
  ASSERT_EQ(std::system(("/usr/bin/python3 " + (dir_ / "read_bn.py").string() + " > " + read).c_str()), 0);
  std::istringstream figures(ReadFile(read));
  int64_t batches = 0;
  double mean = 0, var_off_one = 0;
  figures >> batches >> mean >> var_off_one;
  EXPECT_GT(batches, 0) << ReadFile(read);
  EXPECT_GT(mean, 0) << ReadFile(read);
  EXPECT_GT(var_off_one, 0) << ReadFile(read);
  EXPECT_GE(nlohmann::json::parse(run.stdout_lines.back())["accuracy"].get<double>(), 0.85);
}

// A plan shaped by a transient device (kept company in its stage, or alone
// in one because company costs too much) says so as the run starts, as
// edgetrain plan does (a new user's trial saw it said only there).
TEST_F(RunCommandTest, APipelineRunSaysWhereATransientDeviceShapedItsPlan) {
  std::ofstream(dir_ / "spot.yaml") << "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\n"
                                       "metadata: {name: spot}\nspec:\n  nodes:\n"
                                       "    - {name: spot-vm, transient: true}\n"
                                       "    - {name: board, compute: {slowdown: 8}}\n";
  const std::string spec =
      "  model: {name: mlp, hidden: [64, 32]}\n  data: {dataset: digits, batchSize: 32}\n"
      "  parallelism: {mode: pipeline, workers: 2}\n  budget: {epochs: 1}\n";
  Outcome run = Execute({"run", Manifest("digits-spot", spec), "--nodes", (dir_ / "spot.yaml").string(), "--json",
                         "--no-curves", "--output", (dir_ / "out").string()});
  ASSERT_EQ(run.exit, 0) << run.stderr_text;
  const size_t said = run.stderr_text.find("parallelism: ");
  ASSERT_NE(said, std::string::npos) << run.stderr_text;
  const std::string line = run.stderr_text.substr(said, run.stderr_text.find('\n', said) - said);
  EXPECT_NE(line.find("transient"), std::string::npos) << line;
}

TEST_F(RunCommandTest, HelpAfterACommandPrintsItsOptions) {
  for (const char* help : {"--help", "-h"}) {
    Outcome run = Execute({"run", help});
    EXPECT_EQ(run.exit, 0) << run.stderr_text;
    std::string text;
    for (const auto& l : run.stdout_lines) text += l + "\n";
    EXPECT_NE(text.find("Usage: edgetrain run"), std::string::npos) << text;
    EXPECT_NE(text.find("--progress-log"), std::string::npos) << text;
  }
}

TEST_F(RunCommandTest, ValidateChecksWithoutTraining) {
  const fs::path examples = fs::path(EDGETRAIN_SOURCE_DIR) / "examples";
  Outcome ok = Execute({"validate", examples / "fashion-mnist.yaml"});
  EXPECT_EQ(ok.exit, 0) << ok.stderr_text;
  ASSERT_EQ(ok.stdout_lines.size(), 1u);
  EXPECT_NE(ok.stdout_lines[0].find("valid; fashion-mlp: mlp on fashion-mnist"), std::string::npos);
  EXPECT_EQ(ok.stderr_text.find("note:"), std::string::npos) << ok.stderr_text;
  // Of a job's own files it checks that they are there, and says that what
  // is in them is run's to check (a new user read "valid" for a state_dict).
  const std::string spec =
      "  model: {torchscript: {path: net.pt, inputShape: [64], classes: 10}}\n"
      "  data: {format: csv, inputShape: [64], classes: 10, train: {path: train.csv}, test: {path: train.csv}}\n";
  std::ofstream(dir_ / "net.pt") << "not a module";
  std::ofstream(dir_ / "train.csv") << "0,1\n";
  Outcome own = Execute({"validate", Manifest("own-files", spec)});
  EXPECT_EQ(own.exit, 0) << own.stderr_text;
  EXPECT_NE(own.stderr_text.find("note: the model's and the data's files are there; what is in them"),
            std::string::npos)
      << own.stderr_text;
  EXPECT_NE(own.stderr_text.find("is checked by edgetrain run before it trains, not here"), std::string::npos)
      << own.stderr_text;
  // --defaulted: the defaults applied, the paths as written (on a cluster a
  // relative path is the volume's, not this machine's folder).
  Outcome defaulted = Execute({"validate", Manifest("own-files", spec), "--defaulted"});
  ASSERT_EQ(defaulted.exit, 0) << defaulted.stderr_text;
  const auto object = nlohmann::json::parse(defaulted.stdout_lines.at(0));
  EXPECT_EQ(object["spec"]["model"]["torchscript"]["path"], "net.pt") << object.dump();
  EXPECT_EQ(object["spec"]["data"]["train"]["path"], "train.csv") << object.dump();
  EXPECT_TRUE(object["spec"].contains("optimizer")) << "defaulted\n" << object.dump();
  // A file without end is read only so far (/dev/zero had been read until
  // the allocator aborted: a user's trial).
  Outcome endless = Execute({"validate", "/dev/zero"});
  EXPECT_EQ(endless.exit, 2);
  EXPECT_NE(endless.stderr_text.find("cannot read /dev/zero: more than 16 MiB, and no manifest or cluster profile is"),
            std::string::npos)
      << endless.stderr_text;
}

// The files a manifest names are looked for before anything starts, each
// missing one named by its field (a new user's trial: validate said "valid",
// and run failed once the data had loaded, naming no field).
TEST_F(RunCommandTest, MissingFilesAreNamedByTheirFieldsBeforeAnythingStarts) {
  const std::string spec =
      "  model: {torchscript: {path: net.pt}}\n"
      "  data: {format: csv, inputShape: [64], classes: 10, train: {path: trainn.csv}, test: {path: test.csv}}\n";
  std::ofstream(dir_ / "test.csv") << "0,1\n";
  for (const char* command : {"validate", "run"}) {
    Outcome out = Execute({command, Manifest("files", spec)});
    EXPECT_EQ(out.exit, 2) << command;
    EXPECT_NE(out.stderr_text.find("names paths that are not here as it names them (missing, or a folder where a "
                                   "file is meant"),
              std::string::npos)
        << out.stderr_text;
    EXPECT_NE(out.stderr_text.find("spec.model.torchscript.path: " + (dir_ / "net.pt").string() + ": no such file"),
              std::string::npos)
        << out.stderr_text;
    EXPECT_NE(out.stderr_text.find("spec.data.train.path: " + (dir_ / "trainn.csv").string()), std::string::npos)
        << out.stderr_text;
    EXPECT_EQ(out.stderr_text.find("spec.data.test.path"), std::string::npos) << "it is there\n" << out.stderr_text;
    EXPECT_EQ(out.stderr_text.find("training "), std::string::npos) << "nothing started\n" << out.stderr_text;
  }
}

// A path of the wrong kind is refused by validate as by run, naming its field
// (a new user's trial: validate said "the files are there" for each of these,
// and run refused them).
TEST_F(RunCommandTest, FilesOfTheWrongKindAreNamedByTheirFields) {
  fs::create_directories(dir_ / "a-folder");
  std::ofstream(dir_ / "rows.csv") << "0,1\n";
  struct Case {
    std::string spec;
    std::string error;
  } cases[] = {
      {"  model: {torchscript: {path: a-folder}}\n"
       "  data: {format: csv, inputShape: [1], classes: 2, train: {path: rows.csv}, test: {path: rows.csv}}\n",
       "spec.model.torchscript.path: " + (dir_ / "a-folder").string() + ": a folder, not a file"},
      {"  model: {name: mlp}\n"
       "  data: {format: images, inputShape: [1, 8, 8], classes: 2, train: {path: rows.csv}, test: {path: a-folder}}\n",
       "spec.data.train.path: " + (dir_ / "rows.csv").string() +
           ": a file, not a folder (format images reads a folder of class folders)"},
      {"  model: {name: mlp}\n"
       "  data: {format: csv, inputShape: [1], classes: 2, train: {path: rows.csv}, test: {path: a-folder}}\n",
       "spec.data.test.path: " + (dir_ / "a-folder").string() + ": a folder, not a file"},
  };
  for (const Case& c : cases) {
    for (const char* command : {"validate", "run"}) {
      Outcome out = Execute({command, Manifest("kinds", c.spec)});
      EXPECT_EQ(out.exit, 2) << command << "\n" << out.stderr_text;
      EXPECT_NE(out.stderr_text.find(c.error), std::string::npos) << command << "\n" << out.stderr_text;
      EXPECT_EQ(out.stderr_text.find("training "), std::string::npos) << "nothing started\n" << out.stderr_text;
    }
  }
}

// A team's coordinator loads its data before it listens: a file it refuses
// is the input's fault (exit 2), as for a job of one, not a runtime failure
// that running again would mend (found in review), and no run folder stays.
TEST_F(RunCommandTest, ATeamWhoseDataItsAgentRefusesIsInvalidInput) {
  std::ofstream train(dir_ / "train.csv");
  for (int i = 0; i < 40; ++i) train << (i == 30 ? 7 : i % 3) << ",0.1,0.2,0.3," << i % 5 << "\n";
  train.close();
  std::ofstream(dir_ / "test.csv") << "0,0.1,0.2,0.3,0.4\n1,0.4,0.3,0.2,0.1\n";
  const size_t folders = RunFolders().size();
  Outcome run = Execute({"run",
                         Manifest("refused-data", "  model: {name: mlp}\n"
                                                  "  data: {format: csv, inputShape: [4], classes: 3, batchSize: 8,"
                                                  " train: {path: train.csv}, test: {path: test.csv}}\n"
                                                  "  parallelism: {workers: 2}\n"
                                                  "  budget: {wallClock: 10s}\n"),
                         "--insecure", "--json", "--output", (dir_ / "refused" / "out").string()});
  EXPECT_EQ(run.exit, 2) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("train.csv:31: label 7 is out of range [0, 3): spec.data.classes is 3"), std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find(" refused its inputs (exit 2): "), std::string::npos) << run.stderr_text;
  // Its last words without the time its log stamps them with.
  EXPECT_EQ(run.stderr_text.find("(exit 2): time="), std::string::npos) << run.stderr_text;
  // The output folder it made and wrote nothing in goes with it (every refused run left one).
  EXPECT_FALSE(fs::exists(dir_ / "refused")) << "nor the folder above it, made for it: " << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("the same command fails the same way until what the error says is dealt with"),
            std::string::npos)
      << run.stderr_text;
  EXPECT_EQ(run.stderr_text.find("logs: "), std::string::npos) << run.stderr_text;
  EXPECT_EQ(RunFolders().size(), folders);
  ASSERT_FALSE(run.stdout_lines.empty()) << run.stderr_text;
  EXPECT_EQ(nlohmann::json::parse(run.stdout_lines.back())["stop_reason"], "failed");
}

// A run whose inputs are refused says the checkpoint there is an earlier
// run's, not that there is none: a user's trial read "no checkpoint was
// written" beside one of iteration 141 (--fresh), another beside a finished
// run's (without).
TEST_F(RunCommandTest, ARefusedRunNamesTheEarlierRunsCheckpointItLeftAlone) {
  auto write_train = [&](int bad_label) {
    std::ofstream train(dir_ / "train.csv");
    for (int i = 0; i < 40; ++i) train << (i == 30 ? bad_label : i % 3) << ",0.1,0.2,0.3," << i % 5 << "\n";
  };
  write_train(2);
  std::ofstream(dir_ / "test.csv") << "0,0.1,0.2,0.3,0.4\n1,0.4,0.3,0.2,0.1\n";
  const std::string job = Manifest("earlier", "  model: {name: mlp, hidden: [8]}\n"
                                              "  data: {format: csv, inputShape: [4], classes: 3, batchSize: 8,"
                                              " train: {path: train.csv}, test: {path: test.csv}}\n"
                                              "  budget: {epochs: 2}\n");
  const std::string out = (dir_ / "earlier-out").string();
  ASSERT_EQ(Execute({"run", job, "--no-curves", "--output", out}).exit, 0);
  write_train(7);  // out of range: the agent refuses its inputs
  // With --fresh or without: a finished run's is not resumed either way.
  for (const bool fresh : {true, false}) {
    std::vector<std::string> args = {"run", job, "--no-curves", "--output", out};
    if (fresh) args.push_back("--fresh");
    const Outcome refused = Execute(args);
    EXPECT_EQ(refused.exit, 2) << refused.stderr_text;
    EXPECT_NE(refused.stderr_text.find("no checkpoint was written in " + out + " by this run (the one there is an "
                                       "earlier run's: that run finished"),
              std::string::npos)
        << refused.stderr_text;
  }
}

// Another job's finished model in the output folder is replaced, as its
// finished checkpoint is, and the note says whose it was (a user reusing a
// folder lost a model on a note that named only the file).
TEST_F(RunCommandTest, AnotherJobsFinishedModelReplacedIsNamedWithItsJob) {
  const std::string out = (dir_ / "shared").string();
  ASSERT_EQ(Execute({"run", Manifest("first-job", "  model: {name: mlp, hidden: [8]}\n  data: {dataset: digits}\n"
                                                  "  budget: {epochs: 1}\n"),
                     "--no-curves", "--output", out})
                .exit,
            0);
  const Outcome second = Execute({"run", Manifest("second-job", "  model: {name: mlp, hidden: [8]}\n"
                                                                "  data: {dataset: digits}\n  budget: {epochs: 1}\n"),
                                  "--no-curves", "--output", out});
  ASSERT_EQ(second.exit, 0) << second.stderr_text;
  EXPECT_NE(second.stderr_text.find("note: second-job starts afresh; its model will replace " + out +
                                    "/model.pt, job first-job's finished model"),
            std::string::npos)
      << second.stderr_text;
}

// A batch larger than each worker's share of data from files is said once the
// coordinator has read them, as it is before the run for a built-in set (a
// new user's trial: a batch of 65,536 over 1,438 samples of their own trained
// to 0.15 with no word).
TEST_F(RunCommandTest, ATeamWhoseBatchIsLargerThanItsShareOfItsFilesIsWarned) {
  Outcome run = Execute({"run", ATeamOnFortySamples("big-batch", 32, 2, "{epochs: 4, wallClock: 20s}"), "--insecure",
                         "--output", (dir_ / "big" / "out").string()});
  EXPECT_EQ(run.exit, 0) << run.stderr_text;
  const std::string warning =
      "warning: big-batch: each worker holds 20 training samples, fewer than its batch of 32: every step repeats samples";
  const size_t at = run.stderr_text.find(warning);
  EXPECT_NE(at, std::string::npos) << run.stderr_text;
  EXPECT_EQ(run.stderr_text.find(warning, at + 1), std::string::npos) << "said once\n" << run.stderr_text;
}

// Batches that outgrow the parts spend an epochs budget with one worker's
// push: the team trains until its model has stepped. It ended before a
// round closed and saved the model it began with, exit 0 (a new user's trial).
TEST_F(RunCommandTest, ATeamWhoseFirstPushSpendsItsEpochsStepsItsModelFirst) {
  Outcome run = Execute({"run", ATeamOnFortySamples("huge-batch", 4096, 3, "{epochs: 1, wallClock: 60s}"),
                         "--insecure", "--json", "--no-curves", "--output", (dir_ / "huge" / "out").string()});
  ASSERT_EQ(run.exit, 0) << run.stderr_text;
  const nlohmann::json result = nlohmann::json::parse(run.stdout_lines.back());
  EXPECT_EQ(result["stop_reason"], "epochs");
  EXPECT_GE(result["iterations"].get<int64_t>(), 1) << run.stderr_text;
}

// A checkpoint torn (a disk full, a card pulled) is refused as the input's
// fault: running again reads it as damaged, so the runner says what to do
// rather than to run again (it did: a new user's trial), and keeps it.
TEST_F(RunCommandTest, ADamagedCheckpointIsRefusedAndKeptWithWhatToDo) {
  fs::create_directories(dir_ / "out");
  std::ofstream(dir_ / "out" / "checkpoint.bin") << "EDGETRAIN-CHECKPOINT 2\ntorn";
  Outcome run = Execute({"run", Manifest("digits-torn", "  model: {name: mlp}\n  data: {dataset: digits}\n"),
                         "--output", (dir_ / "out").string()});
  EXPECT_EQ(run.exit, 2) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("checkpoint.bin: damaged checkpoint"), std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find(
                "move it away, or start afresh (edgetrain run --fresh; under the operator, another spec.output.path)"),
            std::string::npos)
      << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("is kept as it was; the same command fails the same way"), std::string::npos)
      << run.stderr_text;
  EXPECT_EQ(run.stderr_text.find("run the same command again"), std::string::npos) << run.stderr_text;
  EXPECT_EQ(ReadFile(dir_ / "out" / "checkpoint.bin"), "EDGETRAIN-CHECKPOINT 2\ntorn");
}

TEST_F(RunCommandTest, ValidateChecksTheClusterProfileAndThePlacementOnIt) {
  const fs::path examples = fs::path(EDGETRAIN_SOURCE_DIR) / "examples";
  Outcome ok = Execute({"validate", examples / "robot-team.yaml", "--nodes", examples / "nodes/robot-team.yaml"});
  EXPECT_EQ(ok.exit, 0) << ok.stderr_text;
  ASSERT_EQ(ok.stdout_lines.size(), 2u);
  EXPECT_NE(ok.stdout_lines[1].find("robot-team.yaml: valid; robot-team, 5 node(s): ranks on robot-1, robot-2, robot-3, robot-4 (robot-5 spare)"), std::string::npos)
      << ok.stdout_lines[1];
  EXPECT_NE(ok.stdout_lines[1].find("in the profile's order, as edgetrain run runs them"), std::string::npos)
      << "not the operator's placement: " << ok.stdout_lines[1];
  EXPECT_EQ(ok.stderr_text.find("would hold no worker"), std::string::npos) << ok.stderr_text;

  // A cluster profile named `name` of `nodes` (a YAML list) in the test's folder.
  auto profile = [&](const std::string& name, const std::string& nodes) {
    const fs::path p = dir_ / (name + ".yaml");
    std::ofstream(p) << "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {name: " << name
                     << "}\nspec: {nodes: " << nodes << "}\n";
    return p;
  };
  // A node placement would give no worker (too little memory for a worker's
  // pod) is said of, as run trains there anyway (plan refused it unsaid).
  Outcome short_of_memory = Execute({"validate", examples / "robot-team.yaml", "--nodes",
                                     profile("short", "[{name: a, memory: 2Mi}, {name: b}, {name: c}, {name: d}]")});
  EXPECT_EQ(short_of_memory.exit, 0) << short_of_memory.stderr_text;
  EXPECT_NE(short_of_memory.stderr_text.find("note: a would hold no worker of robot-team on a cluster (insufficient "
                                             "memory: 2Mi free, a worker asks 512Mi"),
            std::string::npos)
      << short_of_memory.stderr_text;
  // A node that fits not even the coordinator: said of a job of one too, in
  // plan's words (a user's trial found nothing said of one, and a team told
  // the coordinator fitted where plan said it fitted nowhere).
  Outcome nowhere =
      Execute({"validate", examples / "fashion-mnist.yaml", "--nodes", profile("none", "[{name: a, memory: 2Mi}]")});
  EXPECT_EQ(nowhere.exit, 0) << nowhere.stderr_text;
  EXPECT_NE(nowhere.stderr_text.find("would not be placed on these nodes on a cluster (0/1 nodes fit the coordinator: "
                                     "1 insufficient memory; edgetrain plan --nodes says the same)"),
            std::string::npos)
      << nowhere.stderr_text;

  Outcome small = Execute({"validate", examples / "robot-team.yaml", "--nodes", profile("tiny", "[{name: only}]")});
  EXPECT_EQ(small.exit, 2);
  EXPECT_NE(small.stderr_text.find("the cluster profile tiny has 1 node(s) for 4 workers"), std::string::npos)
      << small.stderr_text;

  Outcome broken = Execute({"validate", examples / "fashion-mnist.yaml", "--nodes",
                            profile("broken", "[{name: a, compute: {slowdown: 0}}]")});
  EXPECT_EQ(broken.exit, 2);
  EXPECT_NE(broken.stderr_text.find("spec.nodes[0].compute.slowdown"), std::string::npos) << broken.stderr_text;
}

// Refused before the data load or any agent starts (a new user's trial saw
// it refused only after).
TEST_F(RunCommandTest, AnOutputFolderThatCannotBeWrittenFailsTheRunAtOnce) {
  Outcome run = Execute({"run", Manifest("digits-nowhere", kDigitsSpec), "--output", "/proc/edgetrain-nowhere"});
  EXPECT_EQ(run.exit, 2) << "the path given is at fault";
  EXPECT_NE(run.stderr_text.find("error: cannot make the output folder /proc/edgetrain-nowhere: "), std::string::npos)
      << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("(spec.output.path, or --output)"), std::string::npos) << run.stderr_text;
  EXPECT_EQ(run.stderr_text.find("training digits-nowhere"), std::string::npos) << run.stderr_text;
  // The root, which can be written as root, is no job's folder (a run wrote
  // its model and checkpoint into /: a user's trial).
  Outcome root = Execute({"run", Manifest("digits-root", kDigitsSpec), "--output", "/tmp/../"});
  EXPECT_EQ(root.exit, 2);
  EXPECT_NE(root.stderr_text.find("error: the output folder is /, the file system's root"), std::string::npos)
      << root.stderr_text;
  EXPECT_FALSE(fs::exists("/model.json")) << "nothing written there";
}

// A script reading --json's stdout gets its one line however the run fails,
// refused before it starts included (stdout was empty then), and a progress
// log that cannot be written refuses the run before any agent starts.
TEST_F(RunCommandTest, ARunRefusedBeforeItStartsStillEndsWithItsJsonLine) {
  struct Case {
    std::vector<std::string> args;
    std::string job, error;
  } cases[] = {
      {{"run", (dir_ / "nowhere.yaml").string(), "--json"}, "", "cannot read "},
      {{"run", Manifest("digits-no-nodes", kDigitsSpec), "--nodes", (dir_ / "nope.yaml").string(), "--json"},
       "digits-no-nodes", "--nodes: cannot read "},
      {{"run", Manifest("digits-no-log", kDigitsSpec), "--progress-log", (dir_ / "no" / "such" / "x.jsonl").string(),
        "--json"},
       "digits-no-log", "cannot write "},
  };
  for (const Case& c : cases) {
    Outcome run = Execute(c.args);
    EXPECT_EQ(run.exit, 2) << run.stderr_text;
    ASSERT_EQ(run.stdout_lines.size(), 1u) << run.stderr_text;
    const auto line = nlohmann::json::parse(run.stdout_lines.back());
    EXPECT_EQ(line["job"], c.job);
    EXPECT_EQ(line["stop_reason"], "failed");
    EXPECT_EQ(line["error"].get<std::string>().rfind(c.error, 0), 0u) << line.dump();
    EXPECT_EQ(run.stderr_text.find("training "), std::string::npos) << run.stderr_text;
  }
}

TEST_F(RunCommandTest, AnAgentThatDiesIsARuntimeFailureWithItsLog) {
  Outcome run = Execute({"run", Manifest("digits-dead-agent", kDigitsSpec), "--agent", "/bin/false", "--json"});
  EXPECT_EQ(run.exit, 1);
  EXPECT_NE(run.stderr_text.find("agent 0 ended as it started, before it served its HTTP port"), std::string::npos)
      << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("logs: "), std::string::npos);
  // --json ends with a line a script reads the failure from, as it reads a result.
  ASSERT_FALSE(run.stdout_lines.empty()) << run.stderr_text;
  const auto last = nlohmann::json::parse(run.stdout_lines.back());
  EXPECT_EQ(last["job"], "digits-dead-agent");
  EXPECT_EQ(last["stop_reason"], "failed");
  EXPECT_NE(last["error"].get<std::string>().find("agent 0 ended as it started, before it served its HTTP port"),
            std::string::npos);
  EXPECT_NE(run.stderr_text.find("its HTTP port (exit 1)"), std::string::npos) << run.stderr_text;
  // Killed as it starts: by what is said (a user's trial read only that it exited).
  const fs::path killed = dir_ / "killed-agent";
  std::ofstream(killed) << "#!/bin/sh\nkill -KILL $$\n";
  fs::permissions(killed, fs::perms::owner_all);
  Outcome shot = Execute({"run", Manifest("digits-killed-agent", kDigitsSpec), "--agent", killed.string()});
  EXPECT_EQ(shot.exit, 1);
  EXPECT_NE(shot.stderr_text.find("agent 0 ended as it started, before it served its HTTP port (killed by SIGKILL)"),
            std::string::npos)
      << shot.stderr_text;
}

// A team's worker killed as it starts is a device lost at the start, as the
// docs say: the team starts without it once its grace has passed, and the run
// succeeds, saying so (it failed the run: a user's trial). Its own failure,
// as above, would fail it again, and fails the run.
TEST_F(RunCommandTest, ATeamsWorkerKilledAsItStartsIsADeviceLostAndTheTeamStartsWithoutIt) {
  const fs::path agent =
      AgentThat("agent-rank-1-killed", "case \"$*\" in *--role=worker*--rank=1\\ *) kill -KILL $$;; esac\n");
  const std::string spec = R"(  model: {name: mlp, hidden: [16]}
  data: {dataset: digits, batchSize: 32}
  parallelism: {workers: 3}
  faultTolerance: {nodeLossGrace: 4s}
  budget: {epochs: 1}
)";
  // A grace the runner's supervision starts within, its other workers up:
  // at 1 s the team had trained its epoch and ended first, once.
  Outcome run = Execute({"run", Manifest("digits-killed-worker", spec), "--agent", agent.string(), "--json",
                         "--no-curves", "--output", (dir_ / "out").string()});
  ASSERT_EQ(run.exit, 0) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("warning: worker 1 ended (killed by SIGKILL"), std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("the team has not started yet"), std::string::npos) << run.stderr_text;
  EXPECT_EQ(run.stderr_text.find("ended as it started"), std::string::npos) << run.stderr_text;
  // The others trained the epoch.
  const auto last = nlohmann::json::parse(run.stdout_lines.back());
  EXPECT_EQ(last["stop_reason"], "epochs") << last.dump();
  EXPECT_TRUE(fs::exists(dir_ / "out" / "model.pt"));
}

// A Ctrl-C while a worker is still starting (a hung mount, a thrashing
// machine: here one that never says where it serves) stops the run at once.
// Each wait had run to its 60 s, unheard, and then blamed the worker (found
// in review).
TEST_F(RunCommandTest, InterruptWhileAWorkerStartsStopsTheRunAtOnce) {
  const fs::path agent = AgentThat("agent-worker-hangs", "case \"$*\" in *--role=worker*) exec sleep 600;; esac\n");
  const std::string spec = "  model: {name: mlp, hidden: [16]}\n  data: {dataset: digits, batchSize: 32}\n"
                           "  parallelism: {workers: 2}\n  budget: {epochs: 1}\n";
  auto child = Start({"run", Manifest("digits-hung-worker", spec), "--agent", agent.string(), "--output",
                      (dir_ / "out").string()});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(StderrShows("to load their data and say where they serve", seconds(60)));
  const auto interrupted = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(-child->pid(), SIGINT), 0);
  while (child->ReadLine(seconds(60))) {
  }
  EXPECT_EQ(child->Wait(seconds(30)), 130);
  EXPECT_LT(std::chrono::steady_clock::now() - interrupted, seconds(20)) << ReadFile(dir_ / "stderr.log");
  EXPECT_EQ(ReadFile(dir_ / "stderr.log").find("had not served its HTTP port"), std::string::npos)
      << ReadFile(dir_ / "stderr.log");
  EXPECT_FALSE(ProcessRunningWith("--job=digits-hung-worker")) << "no agent left behind";
}

// A checkpoint that cannot be written for its storage (a full disk, a file
// size limit) says so, and what to do before running again: "run the same
// command again" alone sent a user round the same failure at every
// checkpoint (a new user's trial). The run's file size limit (ulimit -f,
// inherited) stands for the disk: a checkpoint of 460 kB past 200 kB.
TEST_F(RunCommandTest, ARunFailedOnItsStorageSaysWhatToDoBeforeRunningAgain) {
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  const std::string spec = "  model: {name: mlp, hidden: [512]}\n  data: {dataset: digits, batchSize: 32}\n"
                           "  budget: {epochs: 1}\n  faultTolerance: {checkpointEvery: 5}\n";
  const std::string manifest = Manifest("digits-full", spec);
  struct sigaction ignore {}, before_signal{};
  ignore.sa_handler = SIG_IGN;  // a write past the limit fails with EFBIG rather than ending the process
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &before_signal), 0);
  rlimit before{}, limited{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &before), 0);
  limited = before;
  limited.rlim_cur = 200 << 10;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  auto child = Start({"run", manifest, "--output", out.string()});
  ::setrlimit(RLIMIT_FSIZE, &before);
  ::sigaction(SIGXFSZ, &before_signal, nullptr);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  while (child->ReadLine(seconds(120))) {
  }
  EXPECT_EQ(child->Wait(seconds(30)), 1);
  const std::string err = ReadFile(dir_ / "stderr.log");
  EXPECT_NE(err.find("File too large"), std::string::npos) << err;
  EXPECT_NE(err.find("no checkpoint was written in " + out.string() + ": a file in " + out.string() +
                     " is larger than this process may write (its file size limit, ulimit -f); raise the limit, "
                     "then run again (it starts over)"),
            std::string::npos)
      << err;
  for (const auto& entry : fs::directory_iterator(out)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << "the part written is gone";
  }
}

// A Ctrl-C as the first agent starts (before it serves) is an interrupt
// like one a moment later: it had been said as a failure ("error: interrupted
// while agent 0 started", stop reason "failed") and its logs kept (a new
// user's trial).
TEST_F(RunCommandTest, InterruptAsTheFirstAgentStartsIsNoFailure) {
  const fs::path started = dir_ / "agent-started";
  // A length of sleep no other test's agent takes, to be found by.
  const fs::path agent = AgentThat("agent-starts-slowly", "touch " + started.string() + "\nexec sleep 598\n");
  auto child = Start({"run", Manifest("digits-early", kDigitsSpec), "--agent", agent.string(), "--json", "--output",
                      (dir_ / "out").string()});
  ASSERT_TRUE(child.ok());
  for (int i = 0; i < 600 && !fs::exists(started); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(fs::exists(started));
  ASSERT_EQ(::kill(-child->pid(), SIGINT), 0);
  std::vector<std::string> lines;
  while (auto line = child->ReadLine(seconds(60))) lines.push_back(*line);
  EXPECT_EQ(child->Wait(seconds(30)), 130);
  const std::string said = ReadFile(dir_ / "stderr.log");
  EXPECT_NE(said.find("interrupted: digits-early had not started; nothing was written"), std::string::npos) << said;
  EXPECT_EQ(said.find("error"), std::string::npos) << said;
  EXPECT_EQ(said.find("logs: "), std::string::npos) << said;
  ASSERT_FALSE(lines.empty());
  const auto last = nlohmann::json::parse(lines.back());
  EXPECT_EQ(last["stop_reason"], "cancelled") << last.dump();
  EXPECT_FALSE(last.contains("error")) << last.dump();
  EXPECT_TRUE(RunFolders().empty()) << "nothing ran: no logs to keep";
  EXPECT_FALSE(ProcessRunningWith("sleep 598"));
}

// A Ctrl-C while a pipeline's layers are measured stops the measuring agent
// and the run at once: it was heard only once they were measured, seconds
// later, after the plan it would no longer run was printed.
TEST_F(RunCommandTest, InterruptWhileTheLayersAreMeasuredStopsTheMeasuring) {
  // A length of sleep no other test's agent takes, to be found by.
  const fs::path agent =
      AgentThat("agent-measures-forever", "case \"$1\" in profile-layers) exec sleep 597;; esac\n");
  const std::string spec = "  model: {name: mlp, hidden: [16]}\n  data: {dataset: digits, batchSize: 32}\n"
                           "  parallelism: {mode: pipeline, workers: 2}\n  budget: {epochs: 1}\n";
  auto child = Start({"run", Manifest("digits-measured", spec), "--agent", agent.string(), "--output",
                      (dir_ / "out").string()});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(StderrShows("measuring the model's layers", seconds(60)));
  // Said as the measuring agent is started: its shell may not have become
  // the sleep yet (the full suite saw it not there, 22 ms in).
  for (int tries = 0; tries < 500 && !ProcessRunningWith("sleep 597"); ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(ProcessRunningWith("sleep 597"));
  const auto interrupted = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(-child->pid(), SIGINT), 0);
  while (child->ReadLine(seconds(60))) {
  }
  EXPECT_EQ(child->Wait(seconds(30)), 130);
  EXPECT_LT(std::chrono::steady_clock::now() - interrupted, seconds(5)) << ReadFile(dir_ / "stderr.log");
  const std::string said = ReadFile(dir_ / "stderr.log");
  EXPECT_NE(said.find("interrupted: digits-measured had not started"), std::string::npos) << said;
  EXPECT_EQ(said.find("parallelism:"), std::string::npos) << said;
  EXPECT_EQ(said.find("error"), std::string::npos) << said;
  EXPECT_FALSE(ProcessRunningWith("sleep 597")) << "the measuring agent is stopped";
}

// A --fresh run that fails before its first checkpoint does not offer the
// one an earlier run left as its own to resume from (it said "kept: run the
// command again without --fresh to resume from it", and that run then
// started an earlier job over: a new user's trial).
TEST_F(RunCommandTest, AFreshRunThatFailsBeforeItsCheckpointDoesNotOfferAnEarlierOne) {
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  std::ofstream(out / "checkpoint.bin") << "an earlier run's";
  const std::string manifest = Manifest("digits-dead-fresh", kDigitsSpec);
  Outcome fresh = Execute({"run", manifest, "--agent", "/bin/false", "--fresh", "--output", out.string()});
  EXPECT_EQ(fresh.exit, 1);
  EXPECT_EQ(fresh.stderr_text.find("to resume from it"), std::string::npos) << fresh.stderr_text;
  EXPECT_NE(fresh.stderr_text.find("the one there is an earlier run's, which this --fresh run had not yet replaced: "
                                   "the same command starts over; without --fresh, a run again is refused: " +
                                   (out / "checkpoint.bin").string() + ": damaged checkpoint"),
            std::string::npos)
      << fresh.stderr_text;
  // Without --fresh, the one there cannot be read, which a run again refuses:
  // not offered as one to resume from (found in review).
  Outcome again = Execute({"run", manifest, "--agent", "/bin/false", "--output", out.string()});
  EXPECT_EQ(again.stderr_text.find("to resume from it"), std::string::npos) << again.stderr_text;
  EXPECT_NE(again.stderr_text.find("the checkpoint in " + out.string() + ", which cannot be read, is kept as it was; "
                                   "a run of this job into " + out.string() + " refuses it"),
            std::string::npos)
      << again.stderr_text;
}

// A run whose agent cannot take its port: the port is said, with the flag
// that mends it, and a finished run's checkpoint there is not offered "to
// resume from": the next run starts afresh (a new user's trial).
TEST_F(RunCommandTest, ARunWhosePortIsTakenSaysSoAndOffersNoFinishedCheckpoint) {
  const fs::path out = dir_ / "out";
  const std::string manifest = Manifest("digits-port", kDigitsSpec);
  ASSERT_EQ(Execute({"run", manifest, "--output", out.string(), "--no-curves"}).exit, 0);
  ASSERT_TRUE(fs::exists(out / "checkpoint.bin"));
  // A port the OS gave, held.
  const int held = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(bind(held, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(listen(held, 1), 0);
  socklen_t length = sizeof address;
  ASSERT_EQ(getsockname(held, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string port = std::to_string(ntohs(address.sin_port));
  Outcome taken = Execute({"run", manifest, "--output", out.string(), "--http-port", port, "--no-curves"});
  close(held);
  EXPECT_EQ(taken.exit, 1);
  EXPECT_NE(taken.stderr_text.find("another process holds the port: give --http-port another base"),
            std::string::npos)
      << taken.stderr_text;
  EXPECT_EQ(taken.stderr_text.find("to resume from it"), std::string::npos) << taken.stderr_text;
  EXPECT_NE(taken.stderr_text.find("a run again starts over"), std::string::npos) << taken.stderr_text;
  // Nor does a --fresh run that fails say the finished run's checkpoint is one
  // a run without --fresh goes on from (a user's trial).
  Outcome fresh = Execute({"run", manifest, "--agent", "/bin/false", "--fresh", "--output", out.string()});
  EXPECT_EQ(fresh.exit, 1);
  EXPECT_NE(fresh.stderr_text.find("had not yet replaced: that run finished, so a run again starts over, with --fresh "
                                   "or without"),
            std::string::npos)
      << fresh.stderr_text;
}

constexpr const char* kLongSpec = R"(  model: {name: mlp}
  data: {dataset: digits}
  budget: {wallClock: 10m, epochs: 100000}
)";

TEST_F(RunCommandTest, InterruptStopsTheAgentSavesTheModelAndExits130) {
  const std::string manifest = Manifest("digits-interrupted", kLongSpec);
  // Run with --fresh, which running it again would start afresh again: the
  // runner says to run it without (it said to run the same command).
  auto child = Start({"run", manifest, "--output", (dir_ / "out").string(), "--fresh"});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(StderrShows("training digits-interrupted", seconds(60)));
  ASSERT_TRUE(ProcessRunningWith("--job=digits-interrupted"));
  ASSERT_TRUE(Trained(1, seconds(60))) << "a run interrupted before it trained writes nothing";
  // A second run into the folder meanwhile is refused: it had resumed from
  // the first's checkpoint and trained beside it (a user's trial).
  {
    auto second = ChildProcess::Spawn({kEdgetrain, "run", manifest, "--output", (dir_ / "out").string()},
                                      (dir_ / "second.log").string(), {{"TMPDIR", dir_.string()}});
    ASSERT_TRUE(second.ok());
    while (second->ReadLine(seconds(60))) {
    }
    EXPECT_EQ(second->Wait(seconds(30)), 2);
    EXPECT_NE(ReadFile(dir_ / "second.log").find("error: another edgetrain run is using " + (dir_ / "out").string()),
              std::string::npos)
        << ReadFile(dir_ / "second.log");
  }
  // As a terminal's Ctrl-C: SIGINT to the runner's whole process group.
  ASSERT_EQ(::kill(-child->pid(), SIGINT), 0) << "the runner leads a process group of its own";
  std::vector<std::string> lines;
  while (auto line = child->ReadLine(seconds(60))) lines.push_back(*line);
  EXPECT_EQ(child->Wait(seconds(30)), 130);
  EXPECT_NE(ReadFile(dir_ / "stderr.log").find("interrupted: stopping digits-interrupted"), std::string::npos)
      << ReadFile(dir_ / "stderr.log");
  // With its iteration: a run killed past its last checkpoint resumes from further back.
  EXPECT_TRUE(std::regex_search(ReadFile(dir_ / "stderr.log"),
                                std::regex("interrupted: the job's checkpoint in " + (dir_ / "out").string() +
                                           ", at iteration [0-9,]+, is kept: run the command again without --fresh "
                                           "to resume from it")))
      << ReadFile(dir_ / "stderr.log");
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find(", interrupted"), std::string::npos) << lines[0];
  EXPECT_TRUE(fs::exists(dir_ / "out" / "model.pt"));
  EXPECT_FALSE(ProcessRunningWith("--job=digits-interrupted"));

  // Another model's manifest on the same folder: the checkpoint is refused and
  // kept, and the runner does not say to run the same command again, which
  // would fail the same way (a new user's trial), nor keep a run folder.
  const size_t folders = RunFolders().size();
  const fs::path narrower = dir_ / "narrower.yaml";
  std::ofstream(narrower) << "apiVersion: edgetrain.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: "
                             "digits-interrupted\nspec:\n  model: {name: mlp, hidden: [16]}\n  data: {dataset: digits}\n"
                             "  budget: {wallClock: 10m, epochs: 100000}\n";
  Outcome refused = Execute({"run", narrower.string(), "--output", (dir_ / "out").string()});
  EXPECT_EQ(refused.exit, 2) << refused.stderr_text;
  EXPECT_NE(refused.stderr_text.find("holds a model of 17,226 parameters shaped [128x64], [128], [64x128], [64], "
                                     "[10x64], [10], and this job's has 1,210 shaped [16x64], [16], [10x16], [10]"),
            std::string::npos)
      << refused.stderr_text;
  // What changed is named (a team of 3 resumed as 2 was told no more than the line above).
  EXPECT_NE(refused.stderr_text.find("(the manifest changed since it was written: spec.model.hidden: "),
            std::string::npos)
      << refused.stderr_text;
  EXPECT_NE(refused.stderr_text.find("is kept as it was; the same command fails the same way until what the error "
                                     "says is dealt with"),
            std::string::npos)
      << refused.stderr_text;
  const size_t refusal = refused.stderr_text.find("holds a model of");  // the log holds earlier runs' too
  EXPECT_EQ(refused.stderr_text.find("run the same command again", refusal), std::string::npos) << refused.stderr_text;
  EXPECT_EQ(RunFolders().size(), folders);
  EXPECT_TRUE(fs::exists(dir_ / "out" / "checkpoint.bin"));

  // Run again, it resumes from where the interrupt left it, and says so; with
  // --fresh it starts over, and says what it replaces. Stopped by SIGTERM (a
  // supervisor's, not a terminal's), it exits as a shell reports that: 143;
  // by SIGHUP (its terminal closed), 129, having stopped as for Ctrl-C.
  struct Again {
    std::vector<std::string> flags;
    std::string said;
    int signal;
    int exit;
  };
  // The folder's model made a finished run's, as its card says (model.json):
  // interrupted, the runs below keep it, and the picture drawn of it.
  {
    auto card = nlohmann::json::parse(ReadFile(dir_ / "out" / "model.json"));
    ASSERT_EQ(card["finished"], false) << "an interrupted run's model";
    card["finished"] = true;
    std::ofstream(dir_ / "out" / "model.json") << card.dump(2) << "\n";
  }
  const Again again[] = {
      {{}, "resuming digits-interrupted from its checkpoint at iteration ", SIGINT, 130},
      {{"--fresh"}, "note: digits-interrupted starts afresh; its model will replace " + (dir_ / "out" / "model.pt").string(),
       SIGTERM, 143},
      // A closed terminal: it had killed the runner, and its agents with it.
      {{}, "resuming digits-interrupted from its checkpoint at iteration ", SIGHUP, 129}};
  for (const auto& [flags, said, signal, exit] : again) {
    std::vector<std::string> args = {"run", manifest, "--output", (dir_ / "out").string()};
    args.insert(args.end(), flags.begin(), flags.end());
    const size_t before = ReadFile(dir_ / "stderr.log").size();
    auto rerun = Start(args);
    ASSERT_TRUE(rerun.ok());
    EXPECT_TRUE(StderrShows(said, seconds(60), before)) << ReadFile(dir_ / "stderr.log");
    ::kill(-rerun->pid(), signal);
    while (rerun->ReadLine(seconds(60))) {
    }
    EXPECT_EQ(rerun->Wait(seconds(30)), exit);
    // Stopped as Ctrl-C stops it, not killed by the signal, whose exit
    // status a shell reports alike.
    const std::string log = ReadFile(dir_ / "stderr.log");
    EXPECT_NE(log.find("interrupted: stopping digits-interrupted", before), std::string::npos)
        << "stopped by signal " << signal << ":\n" << log.substr(before);
  }
  // Resumed, or started afresh, and interrupted, it kept the finished run's
  // model, and the picture drawn of it (the folder held one run's model and
  // another's picture).
  EXPECT_NE(ReadFile(dir_ / "stderr.log").find((dir_ / "out" / "report.png").string() +
                                               " is left as the earlier run drew it, beside its model; this run's "
                                               "is drawn once it resumes and ends (evaluations.csv and "
                                               "progress.jsonl beside them are this run's, which it resumes from)"),
            std::string::npos)
      << ReadFile(dir_ / "stderr.log");
}

// Resumed on another cluster profile, or the same one edited, a team says
// which devices differ from those the run it resumes was started on (it said
// the manifest's changes, and nothing of the profile's); resumed on the same
// profile, nothing of them, though its links go on along their traces.
TEST_F(RunCommandTest, AResumedTeamSaysWhichDevicesDifferFromThoseOfTheRunItResumes) {
  const std::string manifest = Manifest("digits-moved", R"(  model: {name: mlp, hidden: [16]}
  data: {dataset: digits, batchSize: 32}
  parallelism: {workers: 2}
  budget: {wallClock: 10m, epochs: 100000}
)");
  auto profile = [&](const std::string& name, int slowdown) {
    const fs::path p = dir_ / (name + ".yaml");
    std::ofstream(p) << "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {name: " << name
                     << "}\nspec: {nodes: [{name: a}, {name: b, compute: {slowdown: " << slowdown << "}}]}\n";
    return p.string();
  };
  const std::string out = (dir_ / "out").string();
  auto interrupted = [&](const std::string& nodes) {
    fs::remove(dir_ / "stderr.log");
    auto child = Start({"run", manifest, "--nodes", nodes, "--output", out});
    ASSERT_TRUE(child.ok());
    ASSERT_TRUE(Trained(1, seconds(60))) << ReadFile(dir_ / "stderr.log");
    ASSERT_EQ(::kill(-child->pid(), SIGINT), 0);
    while (child->ReadLine(seconds(60))) {
    }
    EXPECT_EQ(child->Wait(seconds(30)), 130) << ReadFile(dir_ / "stderr.log");
  };
  const std::string first = profile("first", 1);
  // A run that never trained writes nothing into the folder: the folder it
  // made goes (a record of its devices written beside the checkpoint, which
  // this change first did, had kept it).
  const Outcome never = Execute({"run", manifest, "--nodes", first, "--agent", "/bin/false", "--output",
                                 (dir_ / "never").string()});
  EXPECT_EQ(never.exit, 1) << never.stderr_text;
  EXPECT_FALSE(fs::exists(dir_ / "never")) << "the folder it made";
  interrupted(first);
  interrupted(first);
  EXPECT_NE(ReadFile(dir_ / "stderr.log").find("resuming digits-moved from its checkpoint"), std::string::npos)
      << ReadFile(dir_ / "stderr.log");
  EXPECT_EQ(ReadFile(dir_ / "stderr.log").find("devices differ"), std::string::npos) << ReadFile(dir_ / "stderr.log");
  interrupted(profile("second", 3));
  EXPECT_NE(ReadFile(dir_ / "stderr.log")
                .find("note: the devices differ from those the run it resumes was started on; it resumes on "
                      "these:\n  devices.rank 1.slowdown: 1 -> 3\n"),
            std::string::npos)
      << ReadFile(dir_ / "stderr.log");

  // The job as a pipeline on the first profile: its head cannot take up a
  // data-parallel team's checkpoint, and nothing is said of going on from it
  // before the refusal (a new user's trial).
  std::string text = ReadFile(manifest);
  text.replace(text.find("parallelism: {workers: 2}"), 25, "parallelism: {workers: 2, mode: pipeline}");
  const std::string piped = (dir_ / "piped.yaml").string();
  std::ofstream(piped) << text;
  const Outcome refused = Execute({"run", piped, "--nodes", first, "--output", out});
  EXPECT_EQ(refused.exit, 2) << refused.stderr_text;
  EXPECT_NE(refused.stderr_text.find("holds a different model, optimizer or team"), std::string::npos)
      << refused.stderr_text;
  const size_t before = refused.stderr_text.rfind("resuming digits-moved");  // the log holds earlier runs' too
  EXPECT_EQ(refused.stderr_text.find("devices differ", before == std::string::npos ? 0 : before), std::string::npos)
      << refused.stderr_text;
}

// Its agent stopped by someone else: the job is not done, and the runner
// does not exit 0 (it did); killed, the runner says by what, and that the
// checkpoint it left resumes the job.
TEST_F(RunCommandTest, AnAgentStoppedFromOutsideIsNotASuccess) {
  const std::string manifest = Manifest("digits-outside", std::string(kLongSpec) + "  faultTolerance: {checkpointEvery: 5}\n");
  struct Stop {
    int signal;
    int exit;
    std::vector<std::string> said;
  };
  const Stop stops[] = {
      {SIGTERM, 143, {"interrupted: digits-outside's coordinator was stopped by a signal this run did not send; "
                      "run the same command again to resume"}},
      {SIGKILL, 1, {"error: the coordinator ended (killed by SIGKILL) without a result",
                    "the job's checkpoint in " + (dir_ / "out").string() + ", at iteration ",
                    " is kept: run the same command again"}}};
  for (const auto& [signal, exit, said] : stops) {
    fs::remove(dir_ / "stderr.log");  // this run's /progress address is the one there
    auto child = Start({"run", manifest, "--output", (dir_ / "out").string()});
    ASSERT_TRUE(child.ok());
    ASSERT_TRUE(StderrShows("training digits-outside", seconds(60)));
    ASSERT_TRUE(Trained(10, seconds(60)));
    const std::optional<pid_t> agent = ProcessWith("--job=digits-outside");
    ASSERT_TRUE(agent.has_value());
    ASSERT_EQ(::kill(*agent, signal), 0);
    while (child->ReadLine(seconds(60))) {
    }
    EXPECT_EQ(child->Wait(seconds(30)), exit) << ReadFile(dir_ / "stderr.log");
    for (const std::string& line : said) {
      EXPECT_NE(ReadFile(dir_ / "stderr.log").find(line), std::string::npos) << ReadFile(dir_ / "stderr.log");
    }
  }
}

TEST_F(RunCommandTest, ARunnerWhoseReaderLeftStillStopsCleanly) {
  auto child = Start({"run", Manifest("digits-unread", kLongSpec), "--output", (dir_ / "out").string()});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(StderrShows("training digits-unread", seconds(60)));
  ASSERT_TRUE(Trained(1, seconds(60)));
  child->CloseStdout();  // as when the pipe's reader is killed
  child->Signal(SIGINT);
  EXPECT_EQ(child->Wait(seconds(30)), 130) << "141 is death by SIGPIPE while writing its summary";
  EXPECT_TRUE(fs::exists(dir_ / "out" / "model.pt"));
  EXPECT_FALSE(ProcessRunningWith("--job=digits-unread"));
}

TEST_F(RunCommandTest, NoAgentOutlivesAKilledRunner) {
  auto child = Start({"run", Manifest("digits-orphan", kLongSpec), "--output", (dir_ / "out").string()});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(StderrShows("training digits-orphan", seconds(60)));
  ASSERT_TRUE(ProcessRunningWith("--job=digits-orphan"));
  child->Signal(SIGKILL);
  EXPECT_EQ(child->Wait(seconds(10)), 128 + SIGKILL);
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (ProcessRunningWith("--job=digits-orphan") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_FALSE(ProcessRunningWith("--job=digits-orphan"));

  // Its run folder outlived it; the next run removes it and says so.
  const std::vector<fs::path> left = RunFolders();
  ASSERT_EQ(left.size(), 1u);
  Outcome next = Execute({"run", Manifest("digits-next", "  model: {name: mlp}\n  data: {dataset: digits}\n  budget: {epochs: 1}\n"),
                          "--output", (dir_ / "next").string()});
  EXPECT_EQ(next.exit, 0) << next.stderr_text;
  EXPECT_NE(next.stderr_text.find("note: removed " + left[0].string() + ", left by a runner that was killed"),
            std::string::npos)
      << next.stderr_text;
  EXPECT_TRUE(RunFolders().empty());
}

}  // namespace
}  // namespace edgetrain::cli

#include "agent/profile_layers_command.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/layer_cost.h"

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;

struct Printed {
  int code;
  std::string result;  // the JSON after `result `
};

Printed Profile(const std::vector<std::string>& args) {
  std::ostringstream lines, log;
  const int code = RunProfileLayers(args, lines, log);
  const std::string out = lines.str();
  EXPECT_EQ(out.rfind("result ", 0), 0u) << out;
  EXPECT_EQ(out.find('\n'), out.size() - 1) << "one line: " << out;
  return {code, out.size() > 8 ? out.substr(7, out.size() - 8) : ""};
}

TEST(ProfileLayersCommandTest, PrintsEachLayerOfTheModelWithItsCosts) {
  const Printed p = Profile({"--model", R"({"name":"vgg","widths":[4,4,8]})", "--data", R"({"dataset":"digits","batchSize":4,"partition":{"kind":"iid"}})", "--batch", "4",
                             "--repetitions", "1"});
  ASSERT_EQ(p.code, 0) << p.result;
  const auto layers = DecodeLayerCosts(p.result);
  ASSERT_TRUE(layers.ok()) << layers.status().ToString() << "\n" << p.result;
  ASSERT_EQ(layers->size(), 4u);
  EXPECT_EQ((*layers)[0].name, "conv1");
  EXPECT_EQ((*layers)[3].name, "classifier");
  // conv1: 4 filters of 3x3 on one channel, and their biases; its output, 4
  // channels of the 8x8 digits.
  EXPECT_EQ((*layers)[0].parameter_bytes, 4 * (4 * 9 + 4));
  EXPECT_EQ((*layers)[0].activation_bytes, 4 * 4 * 8 * 8);
  for (const LayerCost& l : *layers) EXPECT_GT(l.forward_s, 0) << l.name;
}

// In a pod, the layers are also the termination message, fitted to the
// kubelet's 4096 bytes, which the operator plans the pipeline from.
TEST(ProfileLayersCommandTest, WritesTheLayersToATerminationLogWithinItsLimit) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("profile-termination-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed())))
                               .string();
  std::filesystem::remove(path);
  const Printed p = Profile({"--model", R"({"name":"vgg","widths":[16,16,32,32,64,64,128,128]})", "--data",
                             R"({"dataset":"fashion-mnist","batchSize":64,"partition":{"kind":"iid"}})", "--batch",
                             "64", "--repetitions", "1", "--termination-log", path});
  ASSERT_EQ(p.code, 0) << p.result;
  std::ifstream in(path);
  const std::string message((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  EXPECT_GT(p.result.size(), 4096u) << "the vgg's whole profile is longer than the limit";
  EXPECT_LE(message.size(), 4096u);
  const auto layers = DecodeLayerCosts(message);
  ASSERT_TRUE(layers.ok()) << layers.status().ToString() << "\n" << message;
  ASSERT_EQ(layers->size(), 9u);
  EXPECT_GE((*layers)[0].passes.size(), 2u) << "timed passes kept, fewer of them";
  const auto printed = DecodeStagePassCost(p.result);
  ASSERT_TRUE(printed.ok()) << printed.status().ToString();
  EXPECT_EQ(printed->passes.size(), 7u) << "a stage's own passes, at each size chained: " << p.result;
  EXPECT_EQ(printed->back_to_back.size(), 7u);
  EXPECT_DOUBLE_EQ(printed->pause_s, 0.02);
  const auto fitted = DecodeStagePassCost(message);
  ASSERT_TRUE(fitted.ok());
  EXPECT_GE(fitted->passes.size(), 1u) << "thinned before the layers', not dropped";
}

TEST(ProfileLayersCommandTest, BadInputIsAnErrorResultWithExitTwo) {
  const Printed bad_model = Profile({"--model", R"({"name":"transformer"})", "--data", R"({"dataset":"digits","batchSize":4,"partition":{"kind":"iid"}})"});
  EXPECT_EQ(bad_model.code, 2);
  EXPECT_NE(bad_model.result.find(R"("error":"--model: model.name: unknown value \"transformer\"")"), std::string::npos)
      << bad_model.result;

  const Printed not_json = Profile({"--model", "vgg", "--data", R"({"dataset":"digits","batchSize":4,"partition":{"kind":"iid"}})"});
  EXPECT_EQ(not_json.code, 2);
  EXPECT_NE(not_json.result.find("--model: model: not a JSON object"), std::string::npos) << not_json.result;

  // Eight convs pool 8x8 digits below one pixel.
  const Printed too_deep = Profile({"--model", R"({"name":"vgg","widths":[4,4,4,4,4,4,4,4]})", "--data", R"({"dataset":"digits","batchSize":4,"partition":{"kind":"iid"}})"});
  EXPECT_EQ(too_deep.code, 2);
  EXPECT_NE(too_deep.result.find("\"error\""), std::string::npos) << too_deep.result;

  const Printed no_data = Profile({"--model", R"({"name":"mlp"})"});
  EXPECT_EQ(no_data.code, 2);
  EXPECT_NE(no_data.result.find("--data is required"), std::string::npos) << no_data.result;

  const Printed zero_batch = Profile({"--model", R"({"name":"mlp"})", "--data", R"({"dataset":"digits","batchSize":4,"partition":{"kind":"iid"}})", "--batch", "0"});
  EXPECT_EQ(zero_batch.code, 2);
}

// A user's module is checked as check-model and a job of one check it before
// its layers are timed: one whose output is the wrong size was planned, and
// one whose forward fails on the data's samples failed as "layer profile
// failed", exit 1 (a user's trial).
TEST(ProfileLayersCommandTest, AModuleNoJobCanTrainIsRefusedAsCheckModelRefusesIt) {
  const fs::path dir = fs::temp_directory_path() / ("profile-layers-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto exported = [&](const std::string& name, const std::string& shape, int classes) {
    const std::string path = (dir / name).string();
    const std::string command = "/usr/bin/python3 " EDGETRAIN_SOURCE_DIR "/examples/own-model/export_model.py " +
                                path + " --input-shape " + shape + " --hidden 16 --classes " +
                                std::to_string(classes) + " >/dev/null";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return nlohmann::json{{"torchscript", {{"path", path}}}}.dump();
  };
  const char* digits = R"({"dataset":"digits","batchSize":4,"partition":{"kind":"iid"}})";
  const Printed five = Profile({"--model", exported("five.pt", "1,8,8", 5), "--data", digits, "--batch", "4"});
  EXPECT_EQ(five.code, 2);
  EXPECT_NE(five.result.find("spec.model.torchscript: its output for a batch of 2 is [2, 5], expected [2, 10]"),
            std::string::npos)
      << five.result;
  // One module for digits' 8x8 samples: refused on fashion-mnist's, timed on digits'.
  const std::string eight = exported("eight.pt", "1,8,8", 10);
  const Printed fashion = Profile({"--model", eight, "--data",
                                   R"({"dataset":"fashion-mnist","batchSize":4,"partition":{"kind":"iid"}})"});
  EXPECT_EQ(fashion.code, 2);
  EXPECT_NE(fashion.result.find("spec.model.torchscript: its forward fails on a batch of the data's samples"),
            std::string::npos)
      << fashion.result;
  const Printed fits = Profile({"--model", eight, "--data", digits, "--batch", "4", "--repetitions", "1"});
  EXPECT_EQ(fits.code, 0) << fits.result;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace edgetrain::agent

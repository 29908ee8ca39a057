#include "operator/controller/model_check.h"

#include <gtest/gtest.h>

namespace edgetrain::operator_ {
namespace {

// The check pod as the kubelet reports it: `phase`, and its container ended
// with `exit_code` and `message` (none: not ended).
Json CheckPod(const std::string& phase, std::optional<int> exit_code = std::nullopt, const std::string& message = "") {
  Json pod = {{"metadata", {{"name", "team-model-check"}}}, {"status", {{"phase", phase}}}};
  if (exit_code) {
    pod["status"]["containerStatuses"] = {
        {{"name", "check"}, {"state", {{"terminated", {{"exitCode", *exit_code}, {"message", message}}}}}}};
  }
  return pod;
}

TEST(ModelCheckTest, APodThatEndedSaysWhatTheModuleIs) {
  const ModelCheck measured = ReadModelCheck(CheckPod(
      "Succeeded", 0,
      R"({"parameters":109386,"multiplyAdds":120000,"secondsPerSample":1e-5,"referenceSecondsPerSample":1e-5})"));
  EXPECT_EQ(measured.state, ModelCheckState::kMeasured);
  EXPECT_EQ(measured.size.parameters, 109386);
  EXPECT_EQ(measured.size.multiply_adds, 120000);

  const ModelCheck refused = ReadModelCheck(
      CheckPod("Failed", 2, R"({"error":"spec.model.torchscript: the module has no trainable parameters"})"));
  EXPECT_EQ(refused.state, ModelCheckState::kRefused);
  EXPECT_EQ(refused.message, "spec.model.torchscript: the module has no trainable parameters");

  // Killed for its memory: no verdict on the module, and the kubelet's word.
  Json killed = CheckPod("Failed", 137, "");
  killed["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = "OOMKilled";
  const ModelCheck failed = ReadModelCheck(killed);
  EXPECT_EQ(failed.state, ModelCheckState::kFailed);
  EXPECT_EQ(failed.message, "the check of the module in pod team-model-check ended with exit code 137 (OOMKilled)");
  // A crash leaves its log's tail (FallbackToLogsOnError), not JSON.
  EXPECT_EQ(ReadModelCheck(CheckPod("Failed", 1, "terminate called after throwing")).state, ModelCheckState::kFailed);
  EXPECT_EQ(ReadModelCheck(CheckPod("Succeeded", 0, "done")).state, ModelCheckState::kFailed) << "no size, no verdict";
}

TEST(ModelCheckTest, APodNotEndedIsStillCheckingAndSaysWhy) {
  Json unschedulable = CheckPod("Pending");
  unschedulable["status"]["conditions"] = {
      {{"type", "PodScheduled"},
       {"status", "False"},
       {"reason", "Unschedulable"},
       {"message", "0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector."}}};
  const ModelCheck waiting = ReadModelCheck(unschedulable);
  EXPECT_EQ(waiting.state, ModelCheckState::kChecking);
  EXPECT_EQ(
      waiting.message,
      "pod team-model-check is Pending: 0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector.");
  Json pulling = CheckPod("Pending");
  pulling["status"]["containerStatuses"] = {
      {{"name", "check"}, {"state", {{"waiting", {{"reason", "ErrImagePull"}}}}}}};
  EXPECT_EQ(ReadModelCheck(pulling).message, "pod team-model-check is Pending (ErrImagePull)");
  EXPECT_EQ(ReadModelCheck(CheckPod("Running")).state, ModelCheckState::kChecking);
}

TEST(ModelCheckTest, TheStatusKeepsTheSizeWithTheCheckThatMeasuredIt) {
  const Json status = {{"modelCheck", ModelCheckStatus("/data/net.pt", "0123456789abcdef", {5000, 4800})}};
  ASSERT_TRUE(CheckedSizeOf(status, "0123456789abcdef").has_value());
  EXPECT_EQ(CheckedSizeOf(status, "0123456789abcdef")->multiply_adds, 4800);
  EXPECT_FALSE(CheckedSizeOf(status, "fedcba9876543210").has_value()) << "another check is made again";
  EXPECT_EQ(CheckedSizeOf(status)->parameters, 5000) << "any check's, for the waiting line";
  EXPECT_FALSE(CheckedSizeOf(Json::object()).has_value());
}

// A pipeline's layers go to status with each layer's timed passes on one
// line, and come back as they were timed.
TEST(ModelCheckTest, ThePipelinesLayersKeepTheirPassesOnALineAndReadBack) {
  const std::vector<LayerCost> layers = {
      {"conv1", 1.5e-4, 3.25e-4, 640, 50176, {{1, 4e-4, 5e-4}, {8, 1.2e-3, 2.6e-3}}, 2.5e-6, ""},
      {"classifier", 5e-7, 0, 5160, 40, {}, 0, ""}};
  StagePassCost stage_pass;
  stage_pass.passes = {{1, 3e-4, 6e-4}, {8, 3.5e-4, 7e-4}};
  stage_pass.back_to_back = {{1, 1e-4, 2e-4}, {8, 1.5e-4, 3e-4}};
  stage_pass.pause_s = 0.02;
  const Json status = {
      {"modelCheck", LayersCheckStatus("0123456789abcdef", layers, {3.4e-5, 1.4e9}, stage_pass, "gateway")}};
  const Json& written = status["modelCheck"]["layers"];
  ASSERT_TRUE(written[0]["passes"].is_string()) << written;
  EXPECT_EQ(written[0]["passes"], "1:0.0004:0.0005 8:0.0012:0.0026");
  EXPECT_FALSE(written[1].contains("passes")) << "none timed, none written";
  const auto back = CheckedLayersOf(status, "0123456789abcdef");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->node, "gateway");
  ASSERT_EQ(back->layers.size(), 2u);
  ASSERT_EQ(back->layers[0].passes.size(), 2u);
  EXPECT_EQ(back->layers[0].passes[1].samples, 8);
  EXPECT_EQ(back->layers[0].passes[1].forward_s, 1.2e-3);
  EXPECT_EQ(back->layers[0].passes[1].backward_s, 2.6e-3);
  EXPECT_EQ(back->layers[0].optimizer_s, 2.5e-6);
  EXPECT_EQ(back->transport.message_s, 3.4e-5) << "the agent's messages come back with the layers";
  EXPECT_EQ(back->transport.bytes_per_s, 1.4e9);
  EXPECT_EQ(status["modelCheck"]["stagePasses"], "1:0.0003:0.0006 8:0.00035:0.0007") << "a line, as a layer's";
  ASSERT_EQ(back->stage_pass.passes.size(), 2u) << "a stage's own passes come back with the layers";
  EXPECT_EQ(back->stage_pass.passes[1].samples, 8);
  EXPECT_EQ(back->stage_pass.passes[1].backward_s, 7e-4);
  ASSERT_EQ(back->stage_pass.back_to_back.size(), 2u);
  EXPECT_EQ(back->stage_pass.back_to_back[1].backward_s, 3e-4);
  EXPECT_EQ(back->stage_pass.pause_s, 0.02);
  EXPECT_FALSE(CheckedLayersOf(status, "fedcba9876543210").has_value()) << "another check measures again";

  Json edited = status;
  edited["modelCheck"]["layers"][0]["passes"] = "1:0.0004 8:0.0012:0.0026";
  EXPECT_FALSE(CheckedLayersOf(edited, "0123456789abcdef").has_value()) << "a line written by hand: measured again";
  Json stage_edited = status;
  stage_edited["modelCheck"]["stagePasses"] = "1:0.0003";
  EXPECT_FALSE(CheckedLayersOf(stage_edited, "0123456789abcdef").has_value()) << "the stage's line too";
  stage_edited["modelCheck"]["stagePasses"] = "";
  EXPECT_FALSE(CheckedLayersOf(stage_edited, "0123456789abcdef").has_value()) << "emptied by hand";
}

TEST(ModelCheckTest, APodFailedBeforeItsContainerRanIsNoVerdict) {
  Json refused = CheckPod("Failed");
  refused["status"]["reason"] = "OutOfcpu";
  refused["status"]["message"] = "Node didn't have enough resource: cpu";
  const ModelCheck failed = ReadModelCheck(refused);
  EXPECT_EQ(failed.state, ModelCheckState::kFailed);
  EXPECT_EQ(failed.message,
            "pod team-model-check failed before the check ran: OutOfcpu Node didn't have enough resource: cpu");
}

}  // namespace
}  // namespace edgetrain::operator_

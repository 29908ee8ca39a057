// The CLI's C++ twins of the CRD's CEL rules must match the CRD one to one, and
// each must refuse a manifest that breaks its rule with the rule's own message.
#include "api/cross_field_rules.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

#include "api/crd.h"
#include "api/structural_schema.h"
#include "api/trainingjob.h"

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;

const Json kValid = Json::parse(R"({
  "apiVersion": "edgetrain.dev/v1alpha1", "kind": "TrainingJob",
  "metadata": {"name": "ok"},
  "spec": {"model": {"name": "mlp"}, "data": {"dataset": "digits"}}
})");

// For each CRD rule message, a merge patch that breaks exactly that rule. A new
// rule in the CRD fails EveryCrdRuleHasATwinThatRefusesABreakingManifest until a
// breaking manifest is added here (and its C++ twin to cross_field_rules.cc).
const std::map<std::string, const char*> kBreaking = {
    {"pipeline parallelism needs at least 2 workers", R"({"spec": {"parallelism": {"mode": "pipeline", "workers": 1}}})"},
    {"stages applies only to a pipeline, hybrid or auto job of 2 or more workers",
     R"({"spec": {"parallelism": {"workers": 2, "stages": "even"}}})"},
    {"data.stream.ratesPerSecond needs one rate per worker",
     R"({"spec": {"parallelism": {"workers": 2}, "data": {"stream": {"ratesPerSecond": [10, 20, 30]}}}})"},
    {"stream.minBatchSize cannot be more than batchSize: a batch never waits for more than it takes",
     R"({"spec": {"parallelism": {"workers": 2}, "data": {"batchSize": 16, "stream": {"ratesPerSecond": [10, 20],
                                                                                  "minBatchSize": 17}}}})"},
    {"a stream's samples come from a directory or at emulated ratesPerSecond, not both",
     R"({"spec": {"parallelism": {"workers": 2}, "data": {"stream": {"ratesPerSecond": [10, 20], "directory": "in"}}}})"},
    {"stream.bufferCapacity cannot be less than batchSize: the buffer holds at least the batch a worker takes from it",
     R"({"spec": {"data": {"batchSize": 32, "stream": {"ratesPerSecond": [10], "buffer": "persist", "bufferCapacity": 8}}}})"},
    {"bufferCapacity applies only to the persist buffer",
     R"({"spec": {"data": {"stream": {"ratesPerSecond": [10], "buffer": "truncate", "bufferCapacity": 100}}}})"},
    {"give one of name (a built-in model) and torchscript (your own): not both, nor neither",
     R"({"spec": {"model": {"torchscript": {"path": "model.pt"}}}})"},
    {"hidden applies only to the mlp model", R"({"spec": {"model": {"name": "cnn", "hidden": [10]}}})"},
    {"give one of dataset (a built-in set) and format (your own files): not both, nor neither",
     R"({"spec": {"data": {"format": "csv", "train": {"path": "a.csv"}, "test": {"path": "b.csv"}, "inputShape": [4],
                           "classes": 2}}})"},
    {"data from files needs train, test, inputShape and classes",
     R"({"spec": {"data": {"dataset": null, "format": "csv", "train": {"path": "a.csv"}, "test": {"path": "b.csv"},
                           "classes": 2}}})"},
    {"train, test, inputShape and classes apply only to data from files (format)",
     R"({"spec": {"data": {"classes": 2}}})"},
    {"idx and npy data name a features and a labels file for train and for test, not a path",
     R"({"spec": {"data": {"dataset": null, "format": "npy", "train": {"path": "x.npy"},
                           "test": {"features": "x.npy", "labels": "y.npy"}, "inputShape": [4], "classes": 2}}})"},
    {"csv and images data name one path for train and one for test, not features or labels",
     R"({"spec": {"data": {"dataset": null, "format": "images", "train": {"path": "train"},
                           "test": {"path": "test", "labels": "y.npy"}, "inputShape": [3, 32, 32], "classes": 2}}})"},
    {"images data need inputShape [channels, height, width] or [height, width]: an image has a height and a width",
     R"({"spec": {"data": {"dataset": null, "format": "images", "train": {"path": "train"}, "test": {"path": "test"},
                           "inputShape": [64], "classes": 2}}})"},
    {"volume is either a persistentVolumeClaim or a configMap",
     R"({"spec": {"data": {"volume": {"persistentVolumeClaim": {"claimName": "d"}, "configMap": {"name": "d"}}}}})"},
    {"channels applies only to the cnn model", R"({"spec": {"model": {"name": "mlp", "channels": [10]}}})"},
    {"widths applies only to the vgg model", R"({"spec": {"model": {"name": "cnn", "widths": [10]}}})"},
    {"alpha is required for kind dirichlet and allowed only there",
     R"({"spec": {"data": {"partition": {"kind": "dirichlet"}}}})"},
    {"labelsPerWorker is required for kind labels and allowed only there",
     R"({"spec": {"data": {"partition": {"kind": "iid", "labelsPerWorker": 2}}}})"},
    {"stalenessBound applies only to the rog and ssp policies",
     R"({"spec": {"sync": {"policy": "bsp", "stalenessBound": 4}}})"},
    {"wallClock must be longer than 0", R"({"spec": {"budget": {"wallClock": "0s"}}})"},
    {"gangTimeout must be at least 1s: pods take seconds to start, and a shorter timeout tears down every gang it "
     "places",
     R"({"spec": {"placement": {"gangTimeout": "999ms"}}})"},
    {"quorum and deadlineSlack apply only to the deadline policy", R"({"spec": {"sync": {"policy": "bsp", "quorum": 0.5}}})"},
    {"momentum applies only to the sgd optimizer", R"({"spec": {"optimizer": {"name": "adam", "momentum": 0.9}}})"},
};

std::vector<SchemaRule> CrdRules() {
  auto schema = TrainingJobSchema();
  EXPECT_TRUE(schema.ok()) << schema.status().ToString();
  return CollectValidationRules(*schema, "");
}

TEST(CrossFieldRulesTest, EveryCrdRuleHasATwinThatRefusesABreakingManifest) {
  std::vector<SchemaRule> rules = CrdRules();
  ASSERT_GE(rules.size(), 8u);
  for (const auto& rule : rules) {
    SCOPED_TRACE(rule.path + ": " + rule.rule);
    bool twin = false;
    for (const auto& cpp : CrossFieldRules()) twin |= cpp.path == rule.path && cpp.message == rule.message;
    EXPECT_TRUE(twin) << "no C++ twin in cross_field_rules.cc with this path and message: " << rule.message;

    auto breaking = kBreaking.find(rule.message);
    ASSERT_NE(breaking, kBreaking.end()) << "no breaking manifest in this test for: " << rule.message;
    Json manifest = kValid;
    manifest.merge_patch(Json::parse(breaking->second));
    auto job = ParseTrainingJob(manifest.dump(), "rule.yaml");
    ASSERT_FALSE(job.ok()) << "accepted a manifest that breaks it";
    EXPECT_EQ(job.status().message(), rule.path + ": " + rule.message);
  }
}

TEST(CrossFieldRulesTest, EveryTwinHasItsRuleInTheCrd) {
  std::set<std::pair<std::string, std::string>> crd;
  for (const auto& r : CrdRules()) crd.insert({r.path, r.message});
  for (const auto& cpp : CrossFieldRules()) {
    EXPECT_TRUE(crd.count({std::string(cpp.path), std::string(cpp.message)}))
        << "C++ rule without a CEL rule in the CRD: " << cpp.path << ": " << cpp.message;
  }
  EXPECT_EQ(CrossFieldRules().size(), crd.size());
}

TEST(CrossFieldRulesTest, ManifestsThatKeepTheRulesPass) {
  const char* patches[] = {
      R"({"spec": {"parallelism": {"mode": "pipeline", "workers": 2}}})",
      R"({"spec": {"parallelism": {"workers": 2}, "data": {"stream": {"ratesPerSecond": [10, 20]}}}})",
      R"({"spec": {"model": {"name": "cnn", "channels": [8]}}})",
      R"({"spec": {"model": {"name": "vgg", "widths": [8, 8, 16]}}})",
      R"({"spec": {"data": {"partition": {"kind": "dirichlet", "alpha": 0.5}}}})",
      R"({"spec": {"sync": {"policy": "bsp", "stalenessBound": 0}}})",
      R"({"spec": {"sync": {"policy": "ssp", "stalenessBound": 20}}})",
      R"({"spec": {"sync": {"policy": "deadline", "quorum": 0.5, "deadlineSlack": 2}}})",
      R"({"spec": {"sync": {"policy": "deadline", "compression": "int8"}}})",
      R"({"spec": {"optimizer": {"name": "sgd", "momentum": 0.9}}})",
      R"({"spec": {"placement": {"gangTimeout": "1s"}}})",
      R"({"spec": {"output": {"path": "/models", "volume": {"persistentVolumeClaim": {"claimName": "m"}}}}})",
  };
  for (const char* patch : patches) {
    Json manifest = kValid;
    manifest.merge_patch(Json::parse(patch));
    auto job = ParseTrainingJob(manifest.dump(), "ok.yaml");
    EXPECT_TRUE(job.ok()) << patch << ": " << job.status().message();
  }
}

}  // namespace
}  // namespace edgetrain::api

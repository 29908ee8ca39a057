#include "api/cross_field_rules.h"

#include <string>

#include "core/duration_text.h"

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;

// CEL's has(self.field): present and not null.
bool Has(const Json& self, const char* field) {
  return self.is_object() && self.contains(field) && !self[field].is_null();
}

// The object at a dotted path, or nullptr when any part is absent.
const Json* At(const Json& root, std::string_view path) {
  const Json* node = &root;
  while (!path.empty()) {
    size_t dot = path.find('.');
    std::string key(path.substr(0, dot));
    if (!node->is_object() || !node->contains(key) || (*node)[key].is_null()) return nullptr;
    node = &(*node)[key];
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return node;
}

}  // namespace

// Whether `self`'s duration `key`, when given, holds `test`: one absent, or
// not a string or not a duration, is the schema's and its pattern's to refuse.
template <typename Test>
bool DurationHolds(const Json& self, const char* key, Test test) {
  if (!Has(self, key) || !self[key].is_string()) return true;
  const StatusOr<Duration> d = ParseDuration(self[key].get<std::string>());
  return !d.ok() || test(*d);
}

const std::vector<CrossFieldRule>& CrossFieldRules() {
  static const std::vector<CrossFieldRule> rules = {
      {"spec.parallelism", "pipeline parallelism needs at least 2 workers",
       [](const Json& self) { return self["mode"] != "pipeline" || self["workers"].get<int>() >= 2; }},
      // auto and hybrid of one worker are a job of one (core/job_spec.cc): no stages.
      {"spec.parallelism", "stages applies only to a pipeline, hybrid or auto job of 2 or more workers",
       [](const Json& self) {
         return self["stages"] == "planned" || (self["mode"] != "dataParallel" && self["workers"].get<int>() >= 2);
       }},
      {"spec", "data.stream.ratesPerSecond needs one rate per worker",
       [](const Json& self) {
         return !Has(self["data"], "stream") || !Has(self["data"]["stream"], "ratesPerSecond") ||
                self["data"]["stream"]["ratesPerSecond"].size() == self["parallelism"]["workers"].get<size_t>();
       }},
      {"spec.data", "stream.minBatchSize cannot be more than batchSize: a batch never waits for more than it takes",
       [](const Json& self) {
         return !Has(self, "stream") || !Has(self["stream"], "minBatchSize") ||
                self["stream"]["minBatchSize"].get<int64_t>() <= self["batchSize"].get<int64_t>();
       }},
      {"spec.data", "stream.bufferCapacity cannot be less than batchSize: the buffer holds at least the batch a worker takes from it",
       [](const Json& self) {
         // It was raised to a batch without a word, and the stream's table
         // then showed more samples held than the capacity asked for.
         return !Has(self, "stream") || !Has(self["stream"], "bufferCapacity") ||
                self["stream"]["bufferCapacity"].get<int64_t>() >= self["batchSize"].get<int64_t>();
       }},
      {"spec.data.stream", "a stream's samples come from a directory or at emulated ratesPerSecond, not both",
       [](const Json& self) { return !Has(self, "directory") || !Has(self, "ratesPerSecond"); }},
      {"spec.data.stream", "bufferCapacity applies only to the persist buffer",
       [](const Json& self) { return !Has(self, "bufferCapacity") || self["buffer"] == "persist"; }},
      {"spec.model", "give one of name (a built-in model) and torchscript (your own): not both, nor neither",
       [](const Json& self) { return Has(self, "name") != Has(self, "torchscript"); }},
      {"spec.model", "hidden applies only to the mlp model",
       [](const Json& self) { return !Has(self, "hidden") || (Has(self, "name") && self["name"] == "mlp"); }},
      {"spec.model", "channels applies only to the cnn model",
       [](const Json& self) { return !Has(self, "channels") || (Has(self, "name") && self["name"] == "cnn"); }},
      {"spec.model", "widths applies only to the vgg model",
       [](const Json& self) { return !Has(self, "widths") || (Has(self, "name") && self["name"] == "vgg"); }},
      {"spec.data", "give one of dataset (a built-in set) and format (your own files): not both, nor neither",
       [](const Json& self) { return Has(self, "dataset") != Has(self, "format"); }},
      {"spec.data", "data from files needs train, test, inputShape and classes",
       [](const Json& self) {
         return !Has(self, "format") ||
                (Has(self, "train") && Has(self, "test") && Has(self, "inputShape") && Has(self, "classes"));
       }},
      {"spec.data", "train, test, inputShape and classes apply only to data from files (format)",
       [](const Json& self) {
         return Has(self, "format") ||
                (!Has(self, "train") && !Has(self, "test") && !Has(self, "inputShape") && !Has(self, "classes"));
       }},
      {"spec.data", "idx and npy data name a features and a labels file for train and for test, not a path",
       [](const Json& self) {
         if (!Has(self, "format") || !Has(self, "train") || !Has(self, "test")) return true;
         if (self["format"] != "idx" && self["format"] != "npy") return true;
         const Json &train = self["train"], &test = self["test"];
         return Has(train, "features") && Has(train, "labels") && Has(test, "features") && Has(test, "labels") &&
                !Has(train, "path") && !Has(test, "path");
       }},
      {"spec.data", "csv and images data name one path for train and one for test, not features or labels",
       [](const Json& self) {
         if (!Has(self, "format") || !Has(self, "train") || !Has(self, "test")) return true;
         if (self["format"] != "csv" && self["format"] != "images") return true;
         const Json &train = self["train"], &test = self["test"];
         return Has(train, "path") && Has(test, "path") && !Has(train, "features") && !Has(train, "labels") &&
                !Has(test, "features") && !Has(test, "labels");
       }},
      {"spec.data",
       "images data need inputShape [channels, height, width] or [height, width]: an image has a height and a width",
       [](const Json& self) {
         // [N] read as 1 x N: a user's [64] was refused image by image as
         // "inputShape says 1x64", a shape no one had written.
         return !Has(self, "format") || self["format"] != "images" || !Has(self, "inputShape") ||
                self["inputShape"].size() >= 2;
       }},
      {"spec.data", "volume is either a persistentVolumeClaim or a configMap",
       [](const Json& self) {
         return !Has(self, "volume") ||
                Has(self["volume"], "persistentVolumeClaim") != Has(self["volume"], "configMap");
       }},
      {"spec.data.partition", "alpha is required for kind dirichlet and allowed only there",
       [](const Json& self) { return Has(self, "alpha") == (self["kind"] == "dirichlet"); }},
      {"spec.data.partition", "labelsPerWorker is required for kind labels and allowed only there",
       [](const Json& self) { return Has(self, "labelsPerWorker") == (self["kind"] == "labels"); }},
      {"spec.sync", "stalenessBound applies only to the rog and ssp policies",
       [](const Json& self) {
         return (self["policy"] != "bsp" && self["policy"] != "deadline") || !Has(self, "stalenessBound") ||
                self["stalenessBound"] == 0;
       }},
      {"spec.sync", "quorum and deadlineSlack apply only to the deadline policy",
       [](const Json& self) {
         return self["policy"] == "deadline" || (!Has(self, "quorum") && !Has(self, "deadlineSlack"));
       }},
      {"spec.optimizer", "momentum applies only to the sgd optimizer",
       [](const Json& self) { return self["name"] == "sgd" || !Has(self, "momentum"); }},
      {"spec.budget", "wallClock must be longer than 0",
       [](const Json& self) { return DurationHolds(self, "wallClock", [](Duration d) { return d > Duration::zero(); }); }},
      {"spec.placement",
       "gangTimeout must be at least 1s: pods take seconds to start, and a shorter timeout tears down every gang it "
       "places",
       [](const Json& self) {
         return DurationHolds(self, "gangTimeout", [](Duration d) { return d >= std::chrono::seconds(1); });
       }},
  };
  return rules;
}

std::vector<FieldError> CheckCrossFieldRules(const Json& manifest) {
  std::vector<FieldError> errors;
  for (const auto& rule : CrossFieldRules()) {
    const Json* self = At(manifest, rule.path);
    if (self && !rule.holds(*self)) errors.push_back({std::string(rule.path), std::string(rule.message)});
  }
  return errors;
}

}  // namespace edgetrain::api

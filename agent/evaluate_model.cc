#include "agent/evaluate_model.h"

#include <filesystem>
#include <cmath>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "agent/data/dataset.h"
#include "agent/failure_report.h"
#include "agent/one_shot_command.h"
#include "agent/storage/atomic_file.h"
#include "agent/torch/torchscript_trainer.h"
#include "agent/torch/trainer.h"
#include "api/result_json.h"
#include "core/exit_codes.h"
#include "core/finite_step.h"

namespace edgetrain::agent {
namespace {

// Whose samples a model is measured on: a built-in set's, or a job's test
// files' (its training files named here read as if they were measured on: a
// new user's trial).
std::string MeasuredOn(const DataSpec& data) {
  if (!data.files) return "the " + DescribeData(data) + " set's";  // not "digits's" (a user's trial)
  const DataFiles& test = data.files->test;
  return "the test files' (" + (test.path.empty() ? test.features : test.path) + ")";
}

// What the run that saved `model_path` trained it on, as its model.json
// beside it says, for a model that does not fit the data it is given.
std::string WhatItWasTrainedOn(const std::string& model_path) {
  std::string trained_on;
  if (auto card = ReadWholeFile((std::filesystem::path(model_path).parent_path() / "model.json").string()); card.ok()) {
    trained_on = nlohmann::json::parse(*card, nullptr, false).value("dataset", "");
  }
  return trained_on.empty() ? ": was it trained on another data set?"
                            : ": it was trained on " + trained_on + " (model.json)";
}

// What a model scored on a test set, and the set's classes: how many, and
// their names where its folders give them.
struct Measured {
  Evaluation evaluation;
  int64_t samples = 0;
  int classes = 0;
  std::vector<std::string> class_names;
};

StatusOr<Measured> Evaluate(const std::string& model_path, const DataSpec& data_spec, const std::string& data_dir) {
  // A TorchScript module (a user's own model, trained or not) runs its own
  // forward; a built-in model's file holds weights, and their shapes say
  // which model to build for them.
  ModelSpec spec;
  EDGETRAIN_ASSIGN_OR_RETURN(const bool scripted, IsTorchScriptModule(model_path));
  if (scripted) {
    spec.kind = ModelKind::kTorchScript;
    spec.torchscript_path = model_path;
  } else {
    EDGETRAIN_ASSIGN_OR_RETURN(spec, ReadModelSpec(model_path));
  }
  EDGETRAIN_ASSIGN_OR_RETURN(Dataset test, LoadTestData(data_spec, SearchPathWith(data_dir)));
  StatusOr<std::unique_ptr<Trainer>> created = CreateTrainer({spec, test.info, 0, 1, SampleShape(data_spec)});
  if (!created.ok()) {
    // The model model.pt's weights name does not fit these samples at all: a
    // cnn of digits on rows of 64 said "spec.model.channels: 2 conv blocks
    // would halve the 1x64 images below 1x1", a field the job did not have
    // (a new user's trial).
    return InvalidArgumentError(model_path + " holds a " + std::string(NameOf(spec.kind)) + " that does not fit " +
                                MeasuredOn(data_spec) + " samples (" + created.status().message() + ")" +
                                WhatItWasTrainedOn(model_path));
  }
  std::unique_ptr<Trainer> trainer = std::move(*created);
  // A module was loaded with its weights; a built-in model was built, and takes them now.
  if (Status loaded = spec.kind == ModelKind::kTorchScript ? Status::Ok() : trainer->LoadModel(model_path);
      !loaded.ok()) {
    return InvalidArgumentError(model_path + " does not fit " + MeasuredOn(data_spec) + " samples" +
                                WhatItWasTrainedOn(model_path));
  }
  Measured measured;
  measured.samples = test.size();
  measured.classes = test.info.classes;
  measured.class_names = test.class_names;
  EDGETRAIN_ASSIGN_OR_RETURN(measured.evaluation, trainer->Evaluate(test));
  return measured;
}

}  // namespace

int RunEvaluateModel(const std::vector<std::string>& args, std::ostream& lines, std::ostream& log) {
  std::string model_path, dataset_name, data_json, data_dir = DefaultDataDir();
  CLI::App app("edgetrain-agent evaluate: the test accuracy of a saved model", "edgetrain-agent evaluate");
  app.add_option("--model", model_path, "a model.pt an agent saved")->required();
  CLI::Option* dataset =
      app.add_option("--dataset", dataset_name, "the built-in data set whose test set to evaluate on")
          ->check(CLI::IsMember({std::string(NameOf(DatasetName::kDigits)), std::string(NameOf(DatasetName::kFashionMnist))}));
  app.add_option("--data", data_json, "or a manifest's spec.data, in JSON, whose test set to evaluate on")
      ->excludes(dataset);
  app.add_option("--data-dir", data_dir, "where data sets are looked for first");
  const auto fail = [&](const Status& status) { return ReportFailure(status, lines, log); };
  if (std::optional<int> done = ParseOneShot(app, args, lines, fail)) return *done;
  DataSpec data;
  if (!data_json.empty()) {
    StatusOr<DataSpec> decoded = DecodeDataSpec(data_json);
    if (!decoded.ok()) return ReportFailure(decoded.status().WithContext("--data"), lines, log);
    data = *decoded;
  } else if (!dataset_name.empty()) {
    data.dataset = dataset_name == NameOf(DatasetName::kDigits) ? DatasetName::kDigits : DatasetName::kFashionMnist;
  } else {
    return ReportFailure(InvalidArgumentError("give --dataset NAME or --data JSON"), lines, log);
  }
  auto measured = Evaluate(model_path, data, data_dir);
  if (!measured.ok()) return ReportFailure(measured.status(), lines, log);
  if (Status finite = FiniteEvaluation(measured->evaluation.loss); !finite.ok()) {
    return ReportFailure(InvalidArgumentError(model_path + ": " + finite.message()), lines, log);
  }
  nlohmann::json result = {{"model", model_path},
                           {"dataset", DescribeData(data)},
                           {"accuracy", measured->evaluation.accuracy},
                           {"loss", measured->evaluation.loss},
                           {"samples", measured->samples},
                           {"classes", measured->classes}};
  // Image folders' names, label i the i-th: the runner compares them with
  // those the model was trained on (its model.json).
  if (!measured->class_names.empty()) result["classNames"] = measured->class_names;
  lines << "result " << api::ResultJson(result) << std::endl;
  return kExitOk;
}

}  // namespace edgetrain::agent

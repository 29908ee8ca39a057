#include "cli/evaluate_command.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "api/result_json.h"
#include "cli/agent_launcher.h"
#include "cli/child_process.h"
#include "cli/job_loading.h"
#include "cli/model_card.h"
#include "cli/run_plan.h"
#include "core/chance_accuracy.h"
#include "core/exit_codes.h"
#include "core/job_spec.h"
#include "core/number_text.h"

namespace edgetrain::cli {

namespace fs = std::filesystem;

namespace {

// A TrainingJob manifest given where the model goes (`edgetrain evaluate
// JOB.yaml`): what its run saves, as the command that evaluates it. It had
// been read as a model and refused for naming no data set, which sent a new
// user to --dataset.
int SayWhatAManifestsRunSaves(const EvaluateOptions& options, const std::string& job_name, std::ostream& err) {
  err << "edgetrain evaluate: " << options.model_path << " is a TrainingJob manifest (" << job_name
      << "), not a model: evaluate takes the model.pt its run saved";
  // Where its run puts the model needs only the manifest, not its files.
  StatusOr<std::string> text = ReadText(options.model_path);
  StatusOr<api::TrainingJobManifest> parsed =
      text.ok() ? api::ParseTrainingJob(*text, options.model_path) : StatusOr<api::TrainingJobManifest>(text.status());
  if (parsed.ok()) {
    const api::TrainingJobManifest& job = *parsed;
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    // As the manifest was named: from the working folder, if it was and the
    // model's folder is under it; else whole.
    auto said = [&](const fs::path& path) {
      const fs::path from_here = path.lexically_relative(cwd);
      const bool relative = fs::path(options.model_path).is_relative() && !from_here.empty() &&
                            *from_here.begin() != "..";
      return relative ? from_here.string() : path.string();
    };
    const fs::path folder = OutputFolder(job, options.model_path, "", cwd);
    const fs::path model = folder / "model.pt";
    const std::string test_data = job.spec.data.files ? " --job " + options.model_path : "";
    if (fs::exists(model, ec)) {
      err << ": edgetrain evaluate " << said(model) << test_data;
    } else {
      err << ", which is not in " << said(folder) << " yet: edgetrain run " << options.model_path
          << " trains it, then edgetrain evaluate " << said(model) << test_data;
    }
  }
  err << "\n";
  return kExitInvalid;
}

int Evaluate(const EvaluateOptions& options, std::ostream& out, std::ostream& err);

}  // namespace

int EvaluateModel(const EvaluateOptions& options, std::ostream& out, std::ostream& err) {
  if (!options.json) return Evaluate(options, out, err);
  // With --json a failure ends with a JSON line too, as run's does: a script
  // reading stdout had nothing to read (a new user's trial).
  std::ostringstream said;
  const int exit = Evaluate(options, out, said);
  err << said.str();
  if (exit == kExitOk) return exit;
  std::string why;
  std::istringstream lines(said.str());
  for (std::string line; std::getline(lines, line) && why.empty();) {
    for (const char* prefix : {"error: ", "edgetrain evaluate: "}) {
      if (line.rfind(prefix, 0) == 0) why = line.substr(std::string(prefix).size());
    }
  }
  out << api::ResultJson({{"model", options.model_path}, {"error", why.empty() ? said.str() : why}}) << "\n";
  return exit;
}

namespace {

int Evaluate(const EvaluateOptions& options, std::ostream& out, std::ostream& err) {
  if (const std::string job = JobNameIn(options.model_path, /*training_jobs_only=*/true); !job.empty()) {
    return SayWhatAManifestsRunSaves(options, job, err);
  }
  // Neither given: the built-in set its model.json says it was trained on
  // (examples/model/load_model.py's hint, "edgetrain evaluate MODEL", was
  // then refused for want of one: a new user's trial).
  std::string dataset = options.dataset;
  if (dataset.empty() && options.job_path.empty()) {
    const std::string trained_on = ModelCardField(options.model_path, "dataset");
    for (DatasetName name : {DatasetName::kDigits, DatasetName::kFashionMnist}) {
      if (trained_on == NameOf(name)) dataset = trained_on;
    }
  }
  if (dataset.empty() == options.job_path.empty()) {
    std::error_code ec;
    if (!std::filesystem::exists(options.model_path, ec)) {
      err << "edgetrain evaluate: no model at " << options.model_path << "\n";
    } else {
      err << "edgetrain evaluate: give --dataset NAME (a built-in set) or --job JOB.yaml (its test data); "
          << options.model_path << "'s model.json names no built-in set it was trained on\n";
    }
    return kExitInvalid;
  }
  std::string data = dataset.empty() ? "" : "--dataset=" + dataset;
  std::string described = dataset;
  api::TrainingJobManifest job;
  if (!options.job_path.empty()) {
    api::SupportCheck support;
    if (int code = LoadJob(options.job_path, err, job, support, api::Runner::kLocal, JobFiles::kTest); code != kExitOk) {
      return code;
    }
    data = "--data=" + job.object["spec"]["data"].dump();
    if (const auto& files = job.spec.data.files) {
      described = job.name + "'s test files (" + (files->test.path.empty() ? files->test.features : files->test.path) + ")";
    } else {
      described = DescribeData(job.spec.data);
    }
  }
  // A built-in model of another set's shape is refused by its weights; a
  // model of files whose samples are shaped alike is not (a new user's model
  // of the walkthrough's image folders scored 0.9667 on digits against
  // 0.9415 on its own test files, without a word). Said once it is measured:
  // said first, it preceded the refusal of a model that did not fit.
  std::string other_data;
  // So with another job's data: a model of one CSV file scored on another
  // job's test file said nothing (a new user's trial). model.json names
  // what it trained on as DescribeData does, a job's files by their paths.
  const std::string evaluated_on = dataset.empty() ? DescribeData(job.spec.data) : dataset;
  const std::string trained_on = ModelCardField(options.model_path, "dataset");
  if (!trained_on.empty() && trained_on != evaluated_on) {
    other_data = "note: " + options.model_path + " was trained on " + trained_on + " (model.json), not on " +
                 evaluated_on + ": this measures it on other data" +
                 (dataset.empty() ? "" : " (--job JOB.yaml evaluates it on its job's test data)") + "\n";
  }
  const std::string agent = options.agent_binary.empty() ? AgentBeside() : options.agent_binary;
  auto evaluated = AskAgent({agent, "evaluate", "--model=" + options.model_path, data});
  if (!evaluated.ok()) {
    err << "error: " << evaluated.status().message() << " (pass --agent PATH to name the agent binary)\n";
    return ExitCodeFor(evaluated.status());
  }
  const int exit = evaluated->exit;
  nlohmann::json json = evaluated->result;
  if (exit != kExitOk || !json.contains("accuracy")) {
    const std::string why = json.is_object() ? json.value("error", "") : "";
    err << "error: " << (why.empty() ? "the agent exited (status " + std::to_string(exit) + ") without a result" : why)
        << "\n";
    return exit != kExitOk ? exit : kExitFailed;
  }
  // Class folders other than those the model learned: label i is another
  // class in each, and the figure is no measure of the model on its own
  // classes. A model of bl, br, tl, tr scored 0.0460 on folders a_tl, b_tr,
  // c_bl, d_br, unsaid (a new user's trial).
  const std::vector<std::string> trained_classes = ModelCardClasses(options.model_path);
  std::vector<std::string> test_classes;
  if (json.contains("classNames") && json["classNames"].is_array()) {
    for (const nlohmann::json& name : json["classNames"]) {
      if (name.is_string()) test_classes.push_back(name.get<std::string>());
    }
  }
  if (!trained_classes.empty() && !test_classes.empty() && trained_classes != test_classes) {
    auto listed = [](const std::vector<std::string>& names) {
      std::string text;
      for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
      return text;
    };
    other_data += "note: " + options.model_path + " was trained on the classes " + listed(trained_classes) +
                  " (model.json), and these test folders are " + listed(test_classes) +
                  ": a label is not the same class in both, so this is no measure of the model on its own classes\n";
  }
  const int classes = json.value("classes", 0);
  const double accuracy = json["accuracy"].get<double>();
  if (AboutWhatGuessingScores(accuracy, classes)) {
    char note[160];
    std::snprintf(note, sizeof note, "note: %.4f is about what guessing scores on %d classes (1 in %d)", accuracy,
                  classes, classes);
    other_data += std::string(note) + ": the model does not tell them apart (untrained, or trained on other data)\n";
  }
  // A model of a run stopped before its end: said, as its score may be of a
  // few steps (a new user's model of 6 steps scored what guessing does,
  // with nothing said of the run it came from).
  const nlohmann::json card = ModelCard(options.model_path);
  if (card.is_object() && card.contains("finished") && card["finished"] == false) {
    const std::string at = card.contains("iteration") && card["iteration"].is_number_integer()
                               ? " at iteration " + WithThousands(card["iteration"].get<int64_t>())
                               : "";
    other_data += "note: " + options.model_path + " is of a run interrupted" + at +
                  " (model.json: finished false): run its job again to resume it\n";
  }
  err << other_data;
  if (options.json) {
    // The agent names a data set by its training files; what was evaluated
    // is the test split (a new user's --json named the train folder).
    json["dataset"] = described;
    out << api::ResultJson(json) << "\n";  // the model's path, as given, may not be UTF-8
  } else {
    char line[512];
    std::snprintf(line, sizeof line, ": test accuracy %.4f on %s (%s test samples), loss %.4f\n",
                  json["accuracy"].get<double>(), described.c_str(),
                  WithThousands(json["samples"].get<int64_t>()).c_str(),
                  // JSON has no NaN: an agent that wrote one wrote null.
                  json["loss"].is_number() ? json["loss"].get<double>() : std::nan(""));
    out << options.model_path << line;
  }
  return kExitOk;
}

}  // namespace

}  // namespace edgetrain::cli

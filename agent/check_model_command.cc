#include "agent/check_model_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "agent/one_shot_command.h"
#include "agent/termination_log.h"
#include "agent/torch/trainer.h"
#include "api/result_json.h"
#include "core/dataset_info.h"
#include "core/exit_codes.h"
#include "core/median.h"
#include "core/step_cost.h"

namespace edgetrain::agent {
namespace {

using Json = nlohmann::json;

// The model and batch kReferenceFlopsPerSecond was calibrated with
// (core/step_cost.h): its step's cost is known, so timing it beside the
// module's tells the module's in the same units on any machine.
JobSpec ReferenceJob() {
  JobSpec spec;
  spec.model.kind = ModelKind::kMlp;
  spec.model.hidden = {128, 64};
  spec.data.dataset = DatasetName::kFashionMnist;
  spec.data.batch_size = 64;
  return spec;
}

// One step (forward, backward) of a trainer on random samples of its data's
// shape, timed.
class TimedStep {
 public:
  TimedStep(Trainer& trainer, const DatasetInfo& info, int batch) : trainer_(trainer), batch_(batch) {
    const int64_t sample = static_cast<int64_t>(info.channels) * info.height * info.width;
    std::mt19937 random(1);
    std::uniform_real_distribution<float> pixel(0, 1);
    features_.resize(static_cast<size_t>(sample * batch));
    for (float& f : features_) f = pixel(random);
    labels_.resize(static_cast<size_t>(batch));
    for (size_t i = 0; i < labels_.size(); ++i) labels_[i] = static_cast<int64_t>(i) % std::max(info.classes, 1);
    gradient_.resize(trainer.Parameters().size());
  }
  // Seconds a sample.
  StatusOr<double> Run() {
    const auto start = std::chrono::steady_clock::now();
    StatusOr<double> loss = trainer_.ComputeGradient(features_.data(), labels_.data(), batch_, gradient_);
    if (!loss.ok()) return loss.status();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / batch_;
  }

 private:
  Trainer& trainer_;
  const int batch_;
  std::vector<float> features_;
  std::vector<int64_t> labels_;
  std::vector<float> gradient_;
};

int Finish(const Json& result, int code, const std::string& termination_log, std::ostream& lines, std::ostream& log) {
  const std::string json = api::ResultJson(result);
  lines << "result " << json << std::endl;
  // The verdict is what the operator reads, and from this file alone: a
  // check that could not leave it failed, as profile-layers does.
  if (!termination_log.empty() && !WriteTerminationLog(termination_log, FitTerminationMessage(json), log)) {
    return code == kExitOk ? kExitFailed : code;
  }
  return code;
}

int Fail(const Status& status, const std::string& termination_log, std::ostream& lines, std::ostream& log) {
  return FailOneShot("check-model", status, termination_log, lines, log);
}

}  // namespace

int64_t EquivalentMultiplyAdds(double model_seconds, double reference_seconds, int64_t parameters, int batch) {
  const StepCost reference = StepCostOf(ReferenceJob());
  // The reference's flops a sample as PredictStep counts them, then the module's in proportion.
  const double reference_flops =
      FlopsASample(static_cast<double>(reference.multiply_adds), reference.parameters, reference.batch_size);
  const double flops = reference_seconds > 0 ? model_seconds / reference_seconds * reference_flops : 0;
  return MultiplyAddsOf(flops, parameters, batch);
}

int RunCheckModel(const std::vector<std::string>& args, std::ostream& lines, std::ostream& log) {
  std::string model_json, data_json, termination_log;
  int repetitions = 5;
  CLI::App app("edgetrain-agent check-model: load a TorchScript module, check it, and measure its step",
               "edgetrain-agent check-model");
  app.add_option("--model", model_json, "the model, as a manifest's spec.model in JSON (a torchscript one)")
      ->required();
  app.add_option("--data", data_json, "the data it trains on, as a manifest's spec.data in JSON (its shape only)")
      ->required();
  app.add_option("--repetitions", repetitions, "timed steps of each model; the median counts")
      ->check(CLI::Range(1, 1000));
  app.add_option("--termination-log", termination_log,
                 "where the result's JSON is also written (a pod's termination message)");
  const auto fail = [&](const Status& status) { return Fail(status, termination_log, lines, log); };
  if (std::optional<int> done = ParseOneShot(app, args, lines, fail)) return *done;
  StatusOr<ModelSpec> model = DecodeModelSpec(model_json);
  if (!model.ok()) return Fail(model.status().WithContext("--model"), termination_log, lines, log);
  if (model->kind != ModelKind::kTorchScript) {
    return Fail(InvalidArgumentError("--model: not a torchscript model: a built-in one's size is known from its spec"),
                termination_log, lines, log);
  }
  StatusOr<DataSpec> data = DecodeDataSpec(data_json);
  if (!data.ok()) return Fail(data.status().WithContext("--data"), termination_log, lines, log);

  // The checks a team's agents would run, before any of them is placed.
  const DatasetInfo info = InfoOf(*data);
  StatusOr<std::unique_ptr<Trainer>> module = CreateTrainer({*model, info, 1, 1, SampleShape(*data)});
  if (!module.ok()) return Fail(module.status(), termination_log, lines, log);
  const int batch = std::max(data->batch_size, 1);
  const JobSpec reference_job = ReferenceJob();
  StatusOr<std::unique_ptr<Trainer>> reference =
      CreateTrainer({reference_job.model, InfoOf(reference_job.data), 1, 1, SampleShape(reference_job.data)});
  if (!reference.ok()) return Fail(reference.status(), termination_log, lines, log);
  TimedStep module_step(**module, info, batch);
  TimedStep reference_step(**reference, InfoOf(reference_job.data), reference_job.data.batch_size);
  // One untimed step each (LibTorch's first pass allocates), then the two in
  // turn, so that whatever else the node runs slows both alike: the medians'
  // ratio is what is kept.
  std::vector<double> module_seconds, reference_seconds;
  for (int i = 0; i <= repetitions; ++i) {
    StatusOr<double> m = module_step.Run();
    if (!m.ok()) return Fail(m.status().WithContext("spec.model.torchscript"), termination_log, lines, log);
    StatusOr<double> r = reference_step.Run();
    if (!r.ok()) return Fail(r.status(), termination_log, lines, log);
    if (i == 0) continue;
    module_seconds.push_back(*m);
    reference_seconds.push_back(*r);
  }
  const double seconds = Median(module_seconds), reference_median = Median(reference_seconds);
  const int64_t parameters = (*module)->ParameterCount();
  return Finish({{"parameters", parameters},
                 {"multiplyAdds", EquivalentMultiplyAdds(seconds, reference_median, parameters, batch)},
                 {"secondsPerSample", seconds},
                 {"referenceSecondsPerSample", reference_median}},
                kExitOk, termination_log, lines, log);
}

}  // namespace edgetrain::agent

#include "agent/check_model_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "agent/termination_log.h"
#include "agent/torch/trainer.h"
#include "core/dataset_info.h"
#include "core/exit_codes.h"

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

// Seconds a sample of one step (forward, backward) of `trainer` takes on
// random samples of `shape`: the median of `repetitions` timed steps, after
// one untimed (LibTorch's first pass allocates).
StatusOr<double> SecondsPerSample(Trainer& trainer, const DatasetInfo& info, int batch, int repetitions) {
  const int64_t sample = static_cast<int64_t>(info.channels) * info.height * info.width;
  std::mt19937 random(1);
  std::uniform_real_distribution<float> pixel(0, 1);
  std::vector<float> features(static_cast<size_t>(sample * batch));
  for (float& f : features) f = pixel(random);
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i) % std::max(info.classes, 1);
  std::vector<float> gradient(trainer.Parameters().size());
  std::vector<double> seconds;
  for (int i = 0; i <= repetitions; ++i) {
    const auto start = std::chrono::steady_clock::now();
    StatusOr<double> loss = trainer.ComputeGradient(features.data(), labels.data(), batch, gradient);
    if (!loss.ok()) return loss.status();
    if (i > 0) seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return seconds[seconds.size() / 2] / batch;
}

int Finish(const Json& result, int code, const std::string& termination_log, std::ostream& lines, std::ostream& log) {
  const std::string json = result.dump();
  lines << "result " << json << std::endl;
  if (!termination_log.empty()) WriteTerminationLog(termination_log, FitTerminationMessage(json), log);
  return code;
}

int Fail(const Status& status, const std::string& termination_log, std::ostream& lines, std::ostream& log) {
  log << "edgetrain-agent check-model: " << status.message() << "\n";
  return Finish({{"error", status.message()}}, ExitCodeFor(status), termination_log, lines, log);
}

}  // namespace

int64_t EquivalentMultiplyAdds(double model_seconds, double reference_seconds, int64_t parameters, int batch) {
  const StepCost reference = StepCostOf(ReferenceJob());
  // A step does 6 flops a multiply-add of each sample and 4 a parameter
  // (PredictStep); the reference's a sample, then the module's in proportion.
  const double reference_flops = 6.0 * static_cast<double>(reference.multiply_adds) +
                                 4.0 * static_cast<double>(reference.parameters) / reference.batch_size;
  const double flops = reference_seconds > 0 ? model_seconds / reference_seconds * reference_flops : 0;
  const double multiply_adds = (flops - 4.0 * static_cast<double>(parameters) / std::max(batch, 1)) / 6.0;
  return std::max<int64_t>(0, std::llround(multiply_adds));
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
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  } catch (const CLI::ParseError& e) {
    return Fail(InvalidArgumentError(e.what()), termination_log, lines, log);
  }
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
  StatusOr<double> seconds = SecondsPerSample(**module, info, batch, repetitions);
  if (!seconds.ok()) return Fail(seconds.status().WithContext("spec.model.torchscript"), termination_log, lines, log);

  const JobSpec reference_job = ReferenceJob();
  StatusOr<std::unique_ptr<Trainer>> reference =
      CreateTrainer({reference_job.model, InfoOf(reference_job.data), 1, 1, SampleShape(reference_job.data)});
  if (!reference.ok()) return Fail(reference.status(), termination_log, lines, log);
  StatusOr<double> reference_seconds =
      SecondsPerSample(**reference, InfoOf(reference_job.data), reference_job.data.batch_size, repetitions);
  if (!reference_seconds.ok()) return Fail(reference_seconds.status(), termination_log, lines, log);

  const int64_t parameters = (*module)->ParameterCount();
  return Finish({{"parameters", parameters},
                 {"multiplyAdds", EquivalentMultiplyAdds(*seconds, *reference_seconds, parameters, batch)},
                 {"secondsPerSample", *seconds},
                 {"referenceSecondsPerSample", *reference_seconds}},
                kExitOk, termination_log, lines, log);
}

}  // namespace edgetrain::agent

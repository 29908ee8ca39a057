#include "agent/profile_layers_command.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "agent/one_shot_command.h"
#include "agent/termination_log.h"
#include "agent/torch/layer_profile.h"
#include "agent/torch/trainer.h"
#include "agent/transport/transport_probe.h"
#include "core/dataset_info.h"
#include "core/exit_codes.h"

namespace edgetrain::agent {
namespace {

int Fail(const Status& status, const std::string& termination_log, std::ostream& lines, std::ostream& log) {
  return FailOneShot("profile-layers", status, termination_log, lines, log);
}

}  // namespace

int RunProfileLayers(const std::vector<std::string>& args, std::ostream& lines, std::ostream& log) {
  std::string model_json, data_json, optimizer_json, termination_log;
  LayerProfileOptions options;
  CLI::App app("edgetrain-agent profile-layers: each layer of a model, timed on this machine",
               "edgetrain-agent profile-layers");
  app.add_option("--model", model_json, "the model, as a manifest's spec.model in JSON (a TorchScript module other than an nn.Sequential is one layer)")->required();
  app.add_option("--data", data_json, "the data the model takes, as a manifest's spec.data in JSON (its shape only)")
      ->required();
  app.add_option("--optimizer", optimizer_json,
                 "the job's optimizer, as a manifest's spec.optimizer in JSON: each layer's step of it is timed too");
  app.add_option("--batch", options.batch_size, "samples each timed pass runs on (the costs are per sample)")
      ->check(CLI::Range(1, 65536));
  app.add_option("--repetitions", options.repetitions, "timed passes of each layer; the median counts")
      ->check(CLI::Range(1, 1000));
  // One, as the agents train and as the reference machine's compute score was
  // measured (core/step_cost.h): the costs are then on the scale of speed 1.
  app.add_option("--threads", options.intra_op_threads, "LibTorch intra-op threads")->check(CLI::Range(1, 256));
  // The operator's pod for a pipeline job (operator/controller/model_check.h)
  // reads the layers from its termination message.
  app.add_option("--termination-log", termination_log,
                 "where the result's JSON is also written, fitted to a pod's termination message (4096 bytes)");
  const auto fail = [&](const Status& status) { return Fail(status, termination_log, lines, log); };
  if (std::optional<int> done = ParseOneShot(app, args, lines, fail)) return *done;
  StatusOr<ModelSpec> model = DecodeModelSpec(model_json);
  if (!model.ok()) return Fail(model.status().WithContext("--model"), termination_log, lines, log);
  StatusOr<DataSpec> data = DecodeDataSpec(data_json);
  if (!data.ok()) return Fail(data.status().WithContext("--data"), termination_log, lines, log);
  if (!optimizer_json.empty()) {
    StatusOr<OptimizerSpec> optimizer = DecodeOptimizerSpec(optimizer_json);
    if (!optimizer.ok()) return Fail(optimizer.status().WithContext("--optimizer"), termination_log, lines, log);
    options.optimizer = *optimizer;
  }
  // The samples' shape is all the layers need: random samples of it are timed,
  // so no data file is read.
  options.sample_shape = SampleShape(*data);
  // A user's module is first checked as check-model and a job of one check
  // it, so that what none of them can train is refused in the same words,
  // exit 2: a forward of two inputs or float64 weights failed here as "layer
  // profile failed", exit 1, and an output of the wrong size was planned (a
  // user's trial).
  if (model->kind == ModelKind::kTorchScript) {
    StatusOr<std::unique_ptr<Trainer>> checked = CreateTrainer({*model, InfoOf(*data), 1, 1, options.sample_shape});
    if (!checked.ok()) return Fail(checked.status(), termination_log, lines, log);
  }
  StagePassCost stage_pass;
  StatusOr<std::vector<LayerCost>> layers = ProfileLayers(*model, InfoOf(*data), options, &stage_pass);
  if (!layers.ok()) return Fail(layers.status(), termination_log, lines, log);
  // The runtime's messages, on this machine as its layers: a planner that
  // counted compute alone put a stage of the MLP at half its time a step.
  // Not measured is counted as free, not an error: the layers still plan.
  TransportCost transport;
  if (StatusOr<TransportCost> measured = MeasureTransport(); measured.ok()) {
    transport = *measured;
  } else {
    log << "edgetrain-agent profile-layers: messages not timed (" << measured.status().message()
        << "); the planner will count them as free\n";
  }
  lines << "result " << EncodeLayerCosts(*layers, transport, stage_pass) << std::endl;
  if (!termination_log.empty()) {
    StatusOr<std::string> fitted = EncodeLayerCostsWithin(*layers, kTerminationMessageLimit, transport, stage_pass);
    if (!fitted.ok()) return Fail(fitted.status(), termination_log, lines, log);
    if (!WriteTerminationLog(termination_log, *fitted, log)) return kExitFailed;
  }
  return kExitOk;
}

}  // namespace edgetrain::agent

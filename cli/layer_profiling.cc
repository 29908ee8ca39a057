#include "cli/layer_profiling.h"

#include <optional>

#include "cli/agent_launcher.h"
#include "cli/child_process.h"
#include "core/exit_codes.h"

namespace edgetrain::cli {

StatusOr<std::vector<LayerCost>> ProfileLayersWithAgent(const LayerProfileRequest& request) {
  const std::string agent = request.agent_binary.empty() ? AgentBeside() : request.agent_binary;
  // Why it fails comes back in its result line; its log adds nothing.
  auto profiler = ChildProcess::Spawn({agent, "profile-layers", "--model=" + request.model.dump(),
                                       "--dataset=" + std::string(NameOf(request.dataset)),
                                       "--batch=" + std::to_string(request.batch_size),
                                       "--repetitions=" + std::to_string(request.repetitions)},
                                      "/dev/null");
  if (!profiler.ok()) {
    return profiler.status().WithContext("measuring the model's layers (pass --agent PATH to name the agent binary)");
  }
  std::optional<std::string> result;
  while (auto line = profiler->ReadLine(std::chrono::minutes(5))) {
    if (line->rfind("result ", 0) == 0) result = line->substr(7);
  }
  const int exit = profiler->Wait(std::chrono::seconds(15));
  if (exit == kExitOk && result) return DecodeLayerCosts(*result);
  const auto json = nlohmann::json::parse(result.value_or("{}"), nullptr, /*allow_exceptions=*/false);
  const std::string why = json.is_object() ? json.value("error", "") : "";
  if (why.empty()) {
    return InternalError(agent + " profile-layers exited (status " + std::to_string(exit) + ") without a result");
  }
  const std::string said = agent + " profile-layers: " + why;
  return exit == kExitInvalid ? InvalidArgumentError(said) : InternalError(said);
}

StatusOr<std::vector<LayerCost>> ProfileJobLayers(const api::TrainingJobManifest& job, const std::string& agent_binary) {
  LayerProfileRequest request;
  request.agent_binary = agent_binary;
  request.model = job.object["spec"]["model"];
  request.dataset = job.spec.data.dataset;
  request.batch_size = job.spec.data.batch_size;
  return ProfileLayersWithAgent(request);
}

}  // namespace edgetrain::cli

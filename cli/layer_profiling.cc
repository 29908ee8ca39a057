#include "cli/layer_profiling.h"

#include "cli/agent_launcher.h"
#include "core/exit_codes.h"

namespace edgetrain::cli {

StatusOr<ProfiledModel> ProfileLayersWithAgent(const LayerProfileRequest& request) {
  const std::string agent = request.agent_binary.empty() ? AgentBeside() : request.agent_binary;
  std::vector<std::string> command = {agent, "profile-layers", "--model=" + request.model.dump(),
                                      "--data=" + request.data.dump(),
                                      "--batch=" + std::to_string(request.batch_size),
                                      "--repetitions=" + std::to_string(request.repetitions),
                                      "--threads=" + std::to_string(request.threads)};
  if (request.optimizer.is_object()) command.push_back("--optimizer=" + request.optimizer.dump());
  auto profiled = AskAgent(command, AgentThreadsEnv(request.threads));
  if (!profiled.ok()) {
    return profiled.status().WithContext("measuring the model's layers (pass --agent PATH to name the agent binary)");
  }
  const int exit = profiled->exit;
  if (exit == kExitOk && profiled->result.is_object()) {
    const std::string result = profiled->result.dump();
    ProfiledModel model;
    EDGETRAIN_ASSIGN_OR_RETURN(model.layers, DecodeLayerCosts(result));
    EDGETRAIN_ASSIGN_OR_RETURN(model.transport, DecodeTransportCost(result));
    return model;
  }
  const std::string why = profiled->result.is_object() ? profiled->result.value("error", "") : "";
  if (why.empty()) {
    return InternalError(agent + " profile-layers exited (status " + std::to_string(exit) + ") without a result");
  }
  const std::string said = agent + " profile-layers: " + why;
  return exit == kExitInvalid ? InvalidArgumentError(said) : InternalError(said);
}

StatusOr<ProfiledModel> ProfileJobLayers(const api::TrainingJobManifest& job, const std::string& agent_binary,
                                                  int threads) {
  LayerProfileRequest request;
  request.agent_binary = agent_binary;
  request.model = job.object["spec"]["model"];
  request.data = job.object["spec"]["data"];
  request.optimizer = job.object["spec"].value("optimizer", nlohmann::json());
  request.batch_size = job.spec.data.batch_size;
  request.threads = threads;
  return ProfileLayersWithAgent(request);
}

}  // namespace edgetrain::cli

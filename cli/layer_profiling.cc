#include "cli/layer_profiling.h"

#include "cli/agent_launcher.h"
#include "core/exit_codes.h"

namespace edgetrain::cli {

namespace {

// The agent's result, or its failure in its own words: InvalidArgument when
// it refused the input (exit 2).
StatusOr<nlohmann::json> ResultOf(const std::string& agent, const std::string& command, const AgentAnswer& answer) {
  if (answer.exit == kExitOk && answer.result.is_object()) return answer.result;
  const std::string why = answer.result.is_object() ? answer.result.value("error", "") : "";
  if (why.empty()) {
    return InternalError(agent + " " + command + " exited (status " + std::to_string(answer.exit) +
                         ") without a result");
  }
  const std::string said = agent + " " + command + ": " + why;
  return answer.exit == kExitInvalid ? InvalidArgumentError(said) : InternalError(said);
}

}  // namespace

StatusOr<ProfiledModel> ProfileLayersWithAgent(const LayerProfileRequest& request) {
  const std::string agent = request.agent_binary.empty() ? AgentBeside() : request.agent_binary;
  std::vector<std::string> command = {agent, "profile-layers", "--model=" + request.model.dump(),
                                      "--data=" + request.data.dump(),
                                      "--batch=" + std::to_string(request.batch_size),
                                      "--repetitions=" + std::to_string(request.repetitions),
                                      "--threads=" + std::to_string(request.threads)};
  if (request.optimizer.is_object()) command.push_back("--optimizer=" + request.optimizer.dump());
  auto profiled = AskAgent(command, AgentThreadsEnv(request.threads), request.interrupted);
  if (profiled.status().code() == StatusCode::kCancelled) return profiled.status();
  if (!profiled.ok()) {
    return profiled.status().WithContext("measuring the model's layers (pass --agent PATH to name the agent binary)");
  }
  EDGETRAIN_ASSIGN_OR_RETURN(nlohmann::json result, ResultOf(agent, "profile-layers", *profiled));
  ProfiledModel model;
  EDGETRAIN_ASSIGN_OR_RETURN(model.layers, DecodeLayerCosts(result.dump()));
  EDGETRAIN_ASSIGN_OR_RETURN(model.transport, DecodeTransportCost(result.dump()));
  EDGETRAIN_ASSIGN_OR_RETURN(model.stage_pass, DecodeStagePassCost(result.dump()));
  return model;
}

StatusOr<ModelSize> CheckJobModule(const api::TrainingJobManifest& job, const std::string& agent_binary) {
  const std::string agent = agent_binary.empty() ? AgentBeside() : agent_binary;
  nlohmann::json data = job.object["spec"]["data"];
  data["batchSize"] = job.spec.data.batch_size;
  auto checked = AskAgent({agent, "check-model", "--model=" + job.object["spec"]["model"].dump(), "--data=" + data.dump()},
                          AgentThreadsEnv(1));
  if (!checked.ok()) {
    return checked.status().WithContext("checking the module (pass --agent PATH to name the agent binary)");
  }
  EDGETRAIN_ASSIGN_OR_RETURN(nlohmann::json result, ResultOf(agent, "check-model", *checked));
  const auto parameters = result.find("parameters"), multiply_adds = result.find("multiplyAdds");
  if (parameters == result.end() || !parameters->is_number_integer() || multiply_adds == result.end() ||
      !multiply_adds->is_number_integer()) {
    return InternalError(agent + " check-model gave no size: " + result.dump());
  }
  return ModelSize{parameters->get<int64_t>(), multiply_adds->get<int64_t>()};
}

StatusOr<ProfiledModel> ProfileJobLayers(const api::TrainingJobManifest& job, const std::string& agent_binary,
                                         int threads, const std::atomic<bool>* interrupted) {
  LayerProfileRequest request;
  request.agent_binary = agent_binary;
  request.model = job.object["spec"]["model"];
  request.data = job.object["spec"]["data"];
  request.optimizer = job.object["spec"].value("optimizer", nlohmann::json());
  request.batch_size = job.spec.data.batch_size;
  request.threads = threads;
  request.interrupted = interrupted;
  return ProfileLayersWithAgent(request);
}

}  // namespace edgetrain::cli

#include "operator/controller/model_check.h"

#include <sstream>

namespace edgetrain::operator_ {
namespace {

// The check container's final state, once it ended.
const Json* Terminated(const Json& pod) {
  if (!pod.contains("/status/containerStatuses"_json_pointer)) return nullptr;
  for (const Json& c : pod["status"]["containerStatuses"]) {
    if (c.contains("/state/terminated"_json_pointer)) return &c["state"]["terminated"];
  }
  return nullptr;
}

}  // namespace

ModelCheck ReadModelCheck(const Json& pod) {
  ModelCheck check;
  const std::string name = pod.value("/metadata/name"_json_pointer, std::string());
  const std::string phase = pod.value("/status/phase"_json_pointer, std::string("Pending"));
  const Json* ended = Terminated(pod);
  // Failed before its container ran: the kubelet refused it (OutOfcpu,
  // NodeAffinity) or it was evicted. No verdict on the module.
  if (phase == "Failed" && !ended) {
    check.state = ModelCheckState::kFailed;
    check.message = "pod " + name + " failed before the check ran: " +
                    pod.value("/status/reason"_json_pointer, std::string("no reason given")) + " " +
                    pod.value("/status/message"_json_pointer, std::string());
    while (!check.message.empty() && check.message.back() == ' ') check.message.pop_back();
    return check;
  }
  if ((phase != "Succeeded" && phase != "Failed") || !ended) {
    check.message = "pod " + name + " is " + phase;
    // Why it waits, when the kubelet or the scheduler says.
    for (const Json& c : pod.value("/status/containerStatuses"_json_pointer, Json::array())) {
      const std::string waiting = c.value("/state/waiting/reason"_json_pointer, std::string());
      if (!waiting.empty()) check.message += " (" + waiting + ")";
    }
    for (const Json& c : pod.value("/status/conditions"_json_pointer, Json::array())) {
      if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False") {
        check.message += ": " + c.value("message", c.value("reason", ""));
      }
    }
    return check;
  }
  const std::string message = ended->value("message", "");
  const int exit_code = ended->value("exitCode", -1);
  const Json result = Json::parse(message, nullptr, /*allow_exceptions=*/false);
  if (phase == "Succeeded" && result.is_object() && result.contains("layers")) {
    StatusOr<std::vector<LayerCost>> layers = DecodeLayerCosts(message);
    StatusOr<TransportCost> transport = DecodeTransportCost(message);
    StatusOr<StagePassCost> stage_pass = DecodeStagePassCost(message);
    if (layers.ok() && transport.ok() && stage_pass.ok()) {
      check.state = ModelCheckState::kMeasured;
      check.layers = std::move(*layers);
      check.transport = *transport;
      check.stage_pass = std::move(*stage_pass);
      check.node = pod.value("/spec/nodeName"_json_pointer, std::string());
      return check;
    }
  }
  if (phase == "Succeeded" && result.is_object() && result.contains("parameters") && result.contains("multiplyAdds")) {
    check.state = ModelCheckState::kMeasured;
    check.size.parameters = result.value("parameters", int64_t{0});
    check.size.multiply_adds = result.value("multiplyAdds", int64_t{0});
    return check;
  }
  // Exit 2 is the agent saying its input is wrong (core/exit_codes.h).
  if (exit_code == 2 && result.is_object() && result.contains("error")) {
    check.state = ModelCheckState::kRefused;
    check.message = result.value("error", "");
    return check;
  }
  check.state = ModelCheckState::kFailed;
  const std::string reason = ended->value("reason", "");
  check.message = "the check of the module in pod " + name + " ended with exit code " + std::to_string(exit_code) +
                  (reason.empty() ? "" : " (" + reason + ")") + (message.empty() ? "" : ": " + message);
  return check;
}

std::string ModuleOf(const api::TrainingJobManifest& job) {
  const Json& spec = job.object.at("spec");
  std::string module = job.spec.model.torchscript_path;
  if (spec.contains("/model/torchscript/configMap"_json_pointer)) {
    module += " (ConfigMap " + spec["model"]["torchscript"]["configMap"].get<std::string>() + ")";
  }
  return module;
}

Json ModelCheckStatus(const std::string& module, const std::string& check, const ModelSize& size) {
  return {{"module", module}, {"check", check}, {"parameters", size.parameters}, {"multiplyAdds", size.multiply_adds}};
}

std::optional<ModelSize> CheckedSizeOf(const Json& status, const std::string& check) {
  const Json checked = status.value("modelCheck", Json::object());
  if (!checked.is_object() || !checked.contains("parameters")) return std::nullopt;
  if (!check.empty() && checked.value("check", "") != check) return std::nullopt;
  return ModelSize{checked.value("parameters", int64_t{0}), checked.value("multiplyAdds", int64_t{0})};
}

namespace {

// A layer's timed passes in status as one line, "SAMPLES:FORWARD:BACKWARD"
// a pass, space apart: as objects, kubectl describe gave each figure of each
// pass a line of its own, 19 lines a layer of the vgg, 171 for its nine.
std::string PassesLine(const Json& passes) {
  std::string line;
  for (const Json& p : passes) {
    line += (line.empty() ? "" : " ") + p.at("samples").dump() + ":" + p.at("forwardSeconds").dump() + ":" +
            p.at("backwardSeconds").dump();
  }
  return line;
}

// The passes back as the layers' wire format has them; null when the line is
// not one PassesLine writes (written by hand).
Json PassesOfLine(const std::string& line) {
  Json passes = Json::array();
  std::istringstream words(line);
  for (std::string word; words >> word;) {
    const size_t a = word.find(':'), b = word.find(':', a == std::string::npos ? a : a + 1);
    if (a == std::string::npos || b == std::string::npos) return nullptr;
    const Json samples = Json::parse(word.substr(0, a), nullptr, false);
    const Json forward = Json::parse(word.substr(a + 1, b - a - 1), nullptr, false);
    const Json backward = Json::parse(word.substr(b + 1), nullptr, false);
    if (!samples.is_number_integer() || !forward.is_number() || !backward.is_number()) return nullptr;
    passes.push_back({{"samples", samples}, {"forwardSeconds", forward}, {"backwardSeconds", backward}});
  }
  return passes;
}

}  // namespace

Json LayersCheckStatus(const std::string& check, const std::vector<LayerCost>& layers, const TransportCost& transport,
                       const StagePassCost& stage_pass, const std::string& node) {
  Json encoded = Json::parse(EncodeLayerCosts(layers, transport, stage_pass));
  Json list = encoded["layers"];
  for (Json& layer : list) {
    if (layer.contains("passes")) layer["passes"] = PassesLine(layer["passes"]);
  }
  Json status = {{"check", check}, {"node", node}, {"layers", list}};
  if (encoded.contains("transport")) status["transport"] = encoded["transport"];
  for (const char* key : {"stagePasses", "stagePassesBackToBack"}) {
    if (encoded.contains(key)) status[key] = PassesLine(encoded[key]);
  }
  if (encoded.contains("stagePauseSeconds")) status["stagePauseSeconds"] = encoded["stagePauseSeconds"];
  return status;
}

std::optional<CheckedLayers> CheckedLayersOf(const Json& status, const std::string& check) {
  const Json checked = status.value("modelCheck", Json::object());
  if (!checked.is_object() || !checked.contains("layers") || checked.value("check", "") != check) return std::nullopt;
  Json list = checked["layers"];
  if (!list.is_array()) return std::nullopt;
  for (Json& layer : list) {
    if (!layer.is_object() || !layer.contains("passes") || !layer["passes"].is_string()) continue;
    layer["passes"] = PassesOfLine(layer["passes"].get<std::string>());
    if (layer["passes"].is_null()) return std::nullopt;  // written by hand: measured again
  }
  Json stage = Json::object();
  for (const char* key : {"stagePasses", "stagePassesBackToBack"}) {
    const auto line = checked.find(key);
    if (line == checked.end()) continue;
    // Written by hand (not a line, or an empty one): measured again.
    if (!line->is_string() || line->get<std::string>().empty()) return std::nullopt;
    stage[key] = PassesOfLine(line->get<std::string>());
    if (stage[key].is_null()) return std::nullopt;
  }
  if (checked.contains("stagePauseSeconds")) stage["stagePauseSeconds"] = checked["stagePauseSeconds"];
  StatusOr<std::vector<LayerCost>> layers = DecodeLayerCosts(Json{{"layers", list}}.dump());
  StatusOr<TransportCost> transport = DecodeTransportCost(checked.dump());
  StatusOr<StagePassCost> stage_pass = DecodeStagePassCost(stage.dump());
  if (!layers.ok() || !transport.ok() || !stage_pass.ok()) return std::nullopt;  // written by hand: measured again
  return CheckedLayers{std::move(*layers), *transport, std::move(*stage_pass), checked.value("node", "")};
}

}  // namespace edgetrain::operator_

#include "core/layer_cost.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace edgetrain {

using Json = nlohmann::json;

std::string EncodeLayerCosts(std::span<const LayerCost> layers) {
  Json list = Json::array();
  for (const LayerCost& l : layers) {
    list.push_back({{"name", l.name},
                    {"forwardSeconds", l.forward_s},
                    {"backwardSeconds", l.backward_s},
                    {"parameterBytes", l.parameter_bytes},
                    {"activationBytes", l.activation_bytes}});
  }
  return Json{{"layers", list}}.dump();
}

StatusOr<std::vector<LayerCost>> DecodeLayerCosts(std::string_view json) {
  const Json root = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return InvalidArgumentError("layers: not a JSON object");
  const auto list = root.find("layers");
  if (list == root.end() || !list->is_array() || list->empty()) {
    return InvalidArgumentError("layers: expected a non-empty array");
  }
  std::vector<LayerCost> layers;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& j = (*list)[i];
    const std::string at = "layers[" + std::to_string(i) + "]";
    if (!j.is_object()) return InvalidArgumentError(at + ": not an object");
    LayerCost l;
    auto seconds = [&](const char* key, double& out) -> Status {
      const auto v = j.find(key);
      if (v == j.end() || !v->is_number() || !(v->get<double>() >= 0) || !std::isfinite(v->get<double>())) {
        return InvalidArgumentError(at + "." + key + ": expected seconds, a finite number >= 0");
      }
      out = v->get<double>();
      return Status::Ok();
    };
    auto bytes = [&](const char* key, int64_t& out) -> Status {
      const auto v = j.find(key);
      if (v == j.end() || !v->is_number_integer() || v->get<int64_t>() < 0) {
        return InvalidArgumentError(at + "." + key + ": expected bytes, a whole number >= 0");
      }
      out = v->get<int64_t>();
      return Status::Ok();
    };
    const auto name = j.find("name");
    if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) {
      return InvalidArgumentError(at + ".name: expected the layer's name");
    }
    l.name = name->get<std::string>();
    EDGETRAIN_RETURN_IF_ERROR(seconds("forwardSeconds", l.forward_s));
    EDGETRAIN_RETURN_IF_ERROR(seconds("backwardSeconds", l.backward_s));
    EDGETRAIN_RETURN_IF_ERROR(bytes("parameterBytes", l.parameter_bytes));
    EDGETRAIN_RETURN_IF_ERROR(bytes("activationBytes", l.activation_bytes));
    layers.push_back(std::move(l));
  }
  return layers;
}

}  // namespace edgetrain

#include "core/layer_cost.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace edgetrain {

namespace {

using Json = nlohmann::json;

// A number of seconds at `key` of `j`, finite and >= 0.
Status ReadSeconds(const Json& j, const std::string& at, const char* key, double& out) {
  const auto v = j.find(key);
  if (v == j.end() || !v->is_number() || !(v->get<double>() >= 0) || !std::isfinite(v->get<double>())) {
    return InvalidArgumentError(at + "." + key + ": expected seconds, a finite number >= 0");
  }
  out = v->get<double>();
  return Status::Ok();
}

// "passes": each of at least one sample, more than the one before.
StatusOr<std::vector<LayerPass>> ReadPasses(const Json& list, const std::string& at) {
  if (!list.is_array()) return InvalidArgumentError(at + ": expected an array of timed passes");
  std::vector<LayerPass> passes;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string here = at + "[" + std::to_string(i) + "]";
    const Json& j = list[i];
    if (!j.is_object()) return InvalidArgumentError(here + ": not an object");
    LayerPass pass;
    const auto samples = j.find("samples");
    if (samples == j.end() || !samples->is_number_integer() || samples->get<int64_t>() < 1 ||
        samples->get<int64_t>() > (int64_t{1} << 30)) {
      return InvalidArgumentError(here + ".samples: expected a whole number of samples >= 1");
    }
    pass.samples = samples->get<int>();
    if (!passes.empty() && pass.samples <= passes.back().samples) {
      return InvalidArgumentError(here + ".samples: passes go from fewest samples to most, each once");
    }
    EDGETRAIN_RETURN_IF_ERROR(ReadSeconds(j, here, "forwardSeconds", pass.forward_s));
    EDGETRAIN_RETURN_IF_ERROR(ReadSeconds(j, here, "backwardSeconds", pass.backward_s));
    passes.push_back(pass);
  }
  return passes;
}

double Seconds(const LayerPass& p) { return p.forward_s + p.backward_s; }

// Seconds of a pass over `samples` (> 0) samples by passes timed at sizes
// (fewest first), linear between them; outside them, `outside` of the
// nearest.
template <typename Outside>
double Interpolated(std::span<const LayerPass> passes, double samples, Outside outside) {
  if (samples <= passes.front().samples) return outside(passes.front());
  if (samples >= passes.back().samples) return outside(passes.back());
  size_t i = 1;
  while (passes[i].samples < samples) ++i;
  const LayerPass& a = passes[i - 1];
  const LayerPass& b = passes[i];
  return Seconds(a) + (samples - a.samples) * (Seconds(b) - Seconds(a)) / (b.samples - a.samples);
}

}  // namespace

double PassSeconds(const LayerCost& layer, double samples) {
  if (!(samples > 0)) return 0;
  if (layer.passes.empty()) return samples * (layer.forward_s + layer.backward_s);
  // In proportion to the nearest pass timed: a layer's time is its samples'.
  return Interpolated(layer.passes, samples, [&](const LayerPass& p) { return samples * Seconds(p) / p.samples; });
}

double StagePassSeconds(std::span<const LayerPass> passes, double samples) {
  if (!(samples > 0) || passes.empty()) return 0;
  // As the nearest pass timed: a stage's own cost is the pass's.
  return Interpolated(passes, samples, Seconds);
}

namespace {

Json PassesJson(std::span<const LayerPass> passes) {
  Json list = Json::array();
  for (const LayerPass& pass : passes) {
    list.push_back({{"samples", pass.samples}, {"forwardSeconds", pass.forward_s}, {"backwardSeconds", pass.backward_s}});
  }
  return list;
}

// Every other pass, the fewest and the most samples kept; then `least` of
// them. Whether any was left out.
bool Thinned(std::vector<LayerPass>& passes, size_t least = 0) {
  if (passes.size() <= 2) {
    const bool any = passes.size() > least;
    passes.resize(std::min(passes.size(), least));
    return any;
  }
  std::vector<LayerPass> kept;
  for (size_t i = 0; i < passes.size(); i += 2) kept.push_back(passes[i]);
  if (kept.back().samples != passes.back().samples) kept.push_back(passes.back());
  passes = std::move(kept);
  return true;
}

}  // namespace

std::string EncodeLayerCosts(std::span<const LayerCost> layers, const TransportCost& transport,
                             const StagePassCost& stage) {
  Json list = Json::array();
  for (const LayerCost& l : layers) {
    list.push_back({{"name", l.name},
                    {"forwardSeconds", l.forward_s},
                    {"backwardSeconds", l.backward_s},
                    {"parameterBytes", l.parameter_bytes},
                    {"activationBytes", l.activation_bytes}});
    if (l.optimizer_s > 0) list.back()["optimizerSeconds"] = l.optimizer_s;
    if (!l.cannot_cut.empty()) list.back()["cannotCut"] = l.cannot_cut;
    if (!l.passes.empty()) list.back()["passes"] = PassesJson(l.passes);
  }
  Json root{{"layers", list}};
  if (transport.message_s > 0 || transport.bytes_per_s > 0) {
    root["transport"] = {{"messageSeconds", transport.message_s}, {"bytesPerSecond", transport.bytes_per_s}};
  }
  if (!stage.passes.empty()) {
    root["stagePasses"] = PassesJson(stage.passes);
    if (!stage.back_to_back.empty()) root["stagePassesBackToBack"] = PassesJson(stage.back_to_back);
    if (stage.pause_s > 0) root["stagePauseSeconds"] = stage.pause_s;
  }
  return root.dump();
}

namespace {

double ThreeFigures(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return seconds;
  const double scale = std::pow(10.0, 2 - static_cast<int>(std::floor(std::log10(seconds))));
  return std::round(seconds * scale) / scale;
}

}  // namespace

StatusOr<std::string> EncodeLayerCostsWithin(std::span<const LayerCost> layers, size_t limit,
                                             const TransportCost& transport, const StagePassCost& stage) {
  const TransportCost rounded{ThreeFigures(transport.message_s), ThreeFigures(transport.bytes_per_s)};
  auto round = [](std::vector<LayerPass>& passes) {
    for (LayerPass& p : passes) {
      p.forward_s = ThreeFigures(p.forward_s);
      p.backward_s = ThreeFigures(p.backward_s);
    }
  };
  std::vector<LayerCost> fitted(layers.begin(), layers.end());
  for (LayerCost& l : fitted) {
    l.forward_s = ThreeFigures(l.forward_s);
    l.backward_s = ThreeFigures(l.backward_s);
    l.optimizer_s = ThreeFigures(l.optimizer_s);
    round(l.passes);
  }
  StagePassCost own = stage;
  round(own.passes);
  round(own.back_to_back);
  for (;;) {
    std::string json = EncodeLayerCosts(fitted, rounded, own);
    if (json.size() <= limit) return json;
    // A stage's own passes first, down to one size (they vary little with
    // the size, the layers' much), then the layers'.
    bool thinned = Thinned(own.passes, 1);
    thinned = Thinned(own.back_to_back, 1) || thinned;
    if (!thinned) {
      for (LayerCost& l : fitted) thinned = Thinned(l.passes) || thinned;
    }
    if (!thinned) {
      return FailedPreconditionError("the model's " + std::to_string(layers.size()) + " layers take " +
                                    std::to_string(json.size()) + " bytes even without their timed passes, over " +
                                    std::to_string(limit));
    }
  }
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
    EDGETRAIN_RETURN_IF_ERROR(ReadSeconds(j, at, "forwardSeconds", l.forward_s));
    EDGETRAIN_RETURN_IF_ERROR(ReadSeconds(j, at, "backwardSeconds", l.backward_s));
    EDGETRAIN_RETURN_IF_ERROR(bytes("parameterBytes", l.parameter_bytes));
    EDGETRAIN_RETURN_IF_ERROR(bytes("activationBytes", l.activation_bytes));
    if (j.contains("optimizerSeconds")) {
      EDGETRAIN_RETURN_IF_ERROR(ReadSeconds(j, at, "optimizerSeconds", l.optimizer_s));
    }
    if (const auto passes = j.find("passes"); passes != j.end()) {
      EDGETRAIN_ASSIGN_OR_RETURN(l.passes, ReadPasses(*passes, at + ".passes"));
    }
    if (const auto why = j.find("cannotCut"); why != j.end()) {
      if (!why->is_string()) return InvalidArgumentError(at + ".cannotCut: expected why the layer is not cut, a string");
      l.cannot_cut = why->get<std::string>();
    }
    layers.push_back(std::move(l));
  }
  return layers;
}

StatusOr<StagePassCost> DecodeStagePassCost(std::string_view json) {
  const Json root = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return InvalidArgumentError("the layers' profile: not a JSON object");
  StagePassCost cost;
  if (const auto passes = root.find("stagePasses"); passes != root.end()) {
    EDGETRAIN_ASSIGN_OR_RETURN(cost.passes, ReadPasses(*passes, "stagePasses"));
  }
  if (const auto passes = root.find("stagePassesBackToBack"); passes != root.end()) {
    EDGETRAIN_ASSIGN_OR_RETURN(cost.back_to_back, ReadPasses(*passes, "stagePassesBackToBack"));
  }
  if (const auto pause = root.find("stagePauseSeconds"); pause != root.end()) {
    if (!pause->is_number() || !(pause->get<double>() >= 0) || !std::isfinite(pause->get<double>())) {
      return InvalidArgumentError("stagePauseSeconds: expected seconds, a finite number >= 0");
    }
    cost.pause_s = pause->get<double>();
  }
  return cost;
}

StatusOr<TransportCost> DecodeTransportCost(std::string_view json) {
  const Json root = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return InvalidArgumentError("the layers' profile: not a JSON object");
  TransportCost cost;
  const auto t = root.find("transport");
  if (t == root.end()) return cost;
  if (!t->is_object()) return InvalidArgumentError("transport: expected an object");
  for (auto [key, out] : {std::pair<const char*, double*>{"messageSeconds", &cost.message_s},
                          std::pair<const char*, double*>{"bytesPerSecond", &cost.bytes_per_s}}) {
    const auto v = t->find(key);
    if (v == t->end()) continue;
    if (!v->is_number() || !(v->get<double>() >= 0) || !std::isfinite(v->get<double>())) {
      return InvalidArgumentError(std::string("transport.") + key + ": expected a number >= 0");
    }
    *out = v->get<double>();
  }
  return cost;
}

}  // namespace edgetrain

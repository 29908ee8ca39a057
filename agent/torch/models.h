#pragma once
// The built-in models, by the name a manifest gives them.

#include <span>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/dataset_info.h"
#include "core/job_spec.h"
#include "core/status.h"

namespace edgetrain::agent {

// A unit a pipeline may cut after: a stage runs a contiguous range of these.
struct ModelLayer {
  std::string name;  // "fc1", "conv3", "classifier"
  torch::nn::Sequential net;
  // Why a plan may not cut inside this layer although it holds several
  // (core/layer_cost.h): a TorchScript module that is not an nn.Sequential,
  // taken whole. Empty for every other layer.
  std::string cannot_cut;
};

// The model as its layers, in the order data flows: the one definition of each
// built-in model, which whole-model training and pipeline stages both run. A
// TorchScript model is loaded, and cut between the children of its
// nn.Sequential (ScriptedLayers).
StatusOr<std::vector<ModelLayer>> BuildLayers(const ModelSpec& spec, const DatasetInfo& data);

// One sample's shape as a model's first layer takes it, without the batch
// dim: `given` (core/dataset_info.h's SampleShape, which a TorchScript model
// needs), or [channels, height, width] of `data` when it is empty.
inline std::vector<int64_t> FirstLayerSampleShape(const std::vector<int>& given, const DatasetInfo& data) {
  if (given.empty()) return {data.channels, data.height, data.width};
  return {given.begin(), given.end()};
}

// The children of a scripted nn.Sequential at spec.torchscript_path as layers
// (BuildLayers), named "0.Linear", "1.ReLU", ...: the units a pipeline cuts
// between. Each layer's parameters are the loaded module's own. Any other
// module is one layer, named by its class, with `cannot_cut` saying why: its
// forward may not run its children in order, so a plan may run it whole on
// a device or a group (parallelism.mode auto) but not split it
// (PipelineProblemOf refuses pipeline and hybrid). InvalidArgument, naming
// spec.model.torchscript, for an nn.Sequential without children. Defined
// beside the TorchScript trainer, which loads modules the same way.
StatusOr<std::vector<ModelLayer>> ScriptedLayers(const ModelSpec& spec);

// The layers' modules, shared not copied, in one flat Sequential: their indices
// there are the names a saved model gives its parameters ("3.weight"), which
// ReadModelSpec and docs/using-the-model.md rely on.
torch::nn::Sequential Chain(std::span<const ModelLayer> layers);

// Maps [batch, channels, height, width] images to class logits: Chain of all
// the layers.
StatusOr<torch::nn::Sequential> BuildModel(const ModelSpec& spec, const DatasetInfo& data);

}  // namespace edgetrain::agent

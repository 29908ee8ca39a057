#include "agent/torch/models.h"

#include "core/model_shape.h"

namespace edgetrain::agent {
namespace {

namespace nn = torch::nn;

// Builds a model's layers front to back, tracking the shape of what flows
// between them.
class LayerStack {
 public:
  explicit LayerStack(const DatasetInfo& data)
      : channels_(data.channels), height_(data.height), width_(data.width), classes_(data.classes) {}

  // fc1, fc2, ...: a Linear and its ReLU.
  void Dense(int64_t out) {
    nn::Sequential net = Flattened();
    net->push_back(nn::Linear(Features(), out));
    net->push_back(nn::ReLU());
    layers_.push_back({"fc" + std::to_string(++dense_), net, ""});
    channels_ = out;
  }

  // conv1, conv2, ...: a 3x3 conv (padding 1, so the size stays) and its ReLU.
  void Conv(int64_t out) {
    nn::Sequential net;
    net->push_back(nn::Conv2d(nn::Conv2dOptions(channels_, out, 3).padding(1)));
    net->push_back(nn::ReLU());
    layers_.push_back({"conv" + std::to_string(++convs_), net, ""});
    channels_ = out;
  }

  // A 2x2 max-pool, folded into the conv before it: a cut between the two
  // would send four times the bytes and save no compute.
  void Pool() {
    layers_.back().net->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
    height_ /= 2;
    width_ /= 2;
  }

  // The last layer, "classifier": one Linear to the classes.
  std::vector<ModelLayer> Classify() && {
    nn::Sequential net = Flattened();
    net->push_back(nn::Linear(Features(), classes_));
    layers_.push_back({"classifier", net, ""});
    return std::move(layers_);
  }

 private:
  int64_t Features() const { return channels_ * height_ * width_; }

  // A new layer's modules, starting with a Flatten if images still flow in.
  nn::Sequential Flattened() {
    nn::Sequential net;
    if (!flat_) net->push_back(nn::Flatten());
    flat_ = true;
    channels_ = Features();
    height_ = width_ = 1;
    return net;
  }

  int64_t channels_, height_, width_, classes_;
  bool flat_ = false;
  int dense_ = 0, convs_ = 0;
  std::vector<ModelLayer> layers_;
};

std::vector<ModelLayer> Mlp(const std::vector<int>& hidden, const DatasetInfo& data) {
  LayerStack stack(data);
  for (int width : hidden) stack.Dense(width);
  return std::move(stack).Classify();
}

std::vector<ModelLayer> Cnn(const std::vector<int>& channels, const DatasetInfo& data) {
  LayerStack stack(data);
  for (int out : channels) {
    stack.Conv(out);
    stack.Pool();
  }
  return std::move(stack).Classify();
}

// conv1 .. convN, each a layer of its own: the model a pipeline splits, whose
// early convs see large images through few channels and late ones the reverse.
std::vector<ModelLayer> Vgg(const std::vector<int>& widths, const DatasetInfo& data) {
  LayerStack stack(data);
  for (size_t i = 0; i < widths.size(); ++i) {
    stack.Conv(widths[i]);
    if (VggPoolFollows(i, widths.size())) stack.Pool();
  }
  return std::move(stack).Classify();
}

}  // namespace

StatusOr<std::vector<ModelLayer>> BuildLayers(const ModelSpec& spec, const DatasetInfo& data) {
  EDGETRAIN_RETURN_IF_ERROR(CheckModelFitsData(spec, data));
  switch (spec.kind) {
    case ModelKind::kMlp: return Mlp(HiddenWidths(spec), data);
    case ModelKind::kCnn: return Cnn(ConvChannels(spec), data);
    case ModelKind::kVgg: return Vgg(VggWidths(spec), data);
    case ModelKind::kTorchScript: return ScriptedLayers(spec);
  }
  return InternalError("unknown model");
}

nn::Sequential Chain(std::span<const ModelLayer> layers) {
  nn::Sequential net;
  for (const ModelLayer& layer : layers) net->extend(*layer.net);
  return net;
}

StatusOr<nn::Sequential> BuildModel(const ModelSpec& spec, const DatasetInfo& data) {
  EDGETRAIN_ASSIGN_OR_RETURN(std::vector<ModelLayer> layers, BuildLayers(spec, data));
  return Chain(layers);
}

}  // namespace edgetrain::agent

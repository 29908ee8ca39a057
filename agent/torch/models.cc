#include "agent/torch/models.h"

#include "core/model_shape.h"

namespace edgetrain::agent {
namespace {

namespace nn = torch::nn;

nn::Sequential Mlp(const std::vector<int>& hidden, const DatasetInfo& data) {
  nn::Sequential net;
  net->push_back(nn::Flatten());
  int64_t in = int64_t{data.channels} * data.height * data.width;
  for (int width : hidden) {
    net->push_back(nn::Linear(in, width));
    net->push_back(nn::ReLU());
    in = width;
  }
  net->push_back(nn::Linear(in, data.classes));
  return net;
}

nn::Sequential Cnn(const std::vector<int>& channels, const DatasetInfo& data) {
  nn::Sequential net;
  int64_t in = data.channels, h = data.height, w = data.width;
  for (int out : channels) {
    net->push_back(nn::Conv2d(nn::Conv2dOptions(in, out, 3).padding(1)));
    net->push_back(nn::ReLU());
    net->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
    in = out;
    h /= 2;
    w /= 2;
  }
  net->push_back(nn::Flatten());
  net->push_back(nn::Linear(in * h * w, data.classes));
  return net;
}

}  // namespace

StatusOr<nn::Sequential> BuildModel(const ModelSpec& spec, const DatasetInfo& data) {
  EDGETRAIN_RETURN_IF_ERROR(CheckModelFitsData(spec, data));
  switch (spec.kind) {
    case ModelKind::kMlp: return Mlp(HiddenWidths(spec), data);
    case ModelKind::kCnn: return Cnn(ConvChannels(spec), data);
  }
  return InternalError("unknown model");
}

}  // namespace edgetrain::agent

#pragma once
// The built-in models' layer sizes, resolved from a ModelSpec, and whether a model
// fits its data — checked when a manifest is read, long before LibTorch builds it.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/dataset_info.h"
#include "core/job_spec.h"
#include "core/status.h"

namespace edgetrain {

// mlp: the hidden widths, [128, 64] when none are given (the CRD cannot default
// `hidden` itself: it is refused on other models).
std::vector<int> HiddenWidths(const ModelSpec& spec);
// cnn: output channels of each 3x3-conv/ReLU/2x2-max-pool block, [16, 32] by default.
std::vector<int> ConvChannels(const ModelSpec& spec);
// vgg: output channels of each 3x3 conv (with its ReLU), [16, 16, 32, 32, 64, 64,
// 128, 128] by default: eight convs, four pools, 28x28 down to 1x1. Eight or more
// are what make where a pipeline cuts matter, yet fewer are allowed: digits'
// 8x8 images halve only three times, so at most six convs fit them, and tests
// want a vgg small enough to train in milliseconds.
std::vector<int> VggWidths(const ModelSpec& spec);

// vgg: whether a 2x2 max-pool follows conv `index` (from 0) of `convs`. The convs
// come in blocks of two, each block ending in a pool; an odd count leaves a last
// block of one conv, pooled like the others, so every conv's output is pooled
// before the classifier at most one conv later.
bool VggPoolFollows(size_t index, size_t convs);

// The layers a pipeline cuts a built-in model into, as agent/torch/models.cc
// builds them: a layer per hidden width, conv block or conv, and the
// classifier. None for a TorchScript module, whose children only loading it
// tells.
std::optional<int> BuiltInLayerCount(const ModelSpec& spec);

// A way a model does not fit its data: the spec.model field at fault, and
// why.
struct ModelMisfit {
  std::string field;    // "spec.model.widths", "spec.model.torchscript.classes"
  std::string message;  // without the field
};
// Every misfit of `spec` to `data`: a layer size below 1, (cnn's channels,
// vgg's widths) more pools than halve the images down to 1x1, (a TorchScript
// module) an inputShape or classes other than the data's; a built-in model's
// first alone, the later ones following from it.
std::vector<ModelMisfit> ModelMisfits(const ModelSpec& spec, const DatasetInfo& data);

// ModelMisfits as one InvalidArgument, each "field: message", joined by
// "; " (LibTorch's builders, which have no manifest's lines to give).
Status CheckModelFitsData(const ModelSpec& spec, const DatasetInfo& data);

}  // namespace edgetrain

#pragma once
// The built-in models' layer sizes, resolved from a ModelSpec, and whether a model
// fits its data — checked when a manifest is read, long before LibTorch builds it.

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

// InvalidArgument naming spec.model.channels when the conv blocks would halve the
// images below 1x1.
Status CheckModelFitsData(const ModelSpec& spec, const DatasetInfo& data);

}  // namespace edgetrain

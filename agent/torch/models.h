#pragma once
// The built-in models, by the name a manifest gives them.

#include <torch/torch.h>

#include "core/dataset_info.h"
#include "core/job_spec.h"
#include "core/status.h"

namespace edgetrain::agent {

// Maps [batch, channels, height, width] images to class logits.
StatusOr<torch::nn::Sequential> BuildModel(const ModelSpec& spec, const DatasetInfo& data);

}  // namespace edgetrain::agent

#pragma once
// What every whole-model trainer does with a batch once it has a forward: a
// gradient into the engine's flat buffer, and an evaluation over a data set in
// chunks. The built-in models (trainer.cc) and TorchScript modules
// (torchscript_trainer.cc) differ only in their forward and parameters.

#include <functional>
#include <span>
#include <vector>

#include <torch/torch.h>

#include "agent/data/dataset.h"
#include "agent/torch/trainer.h"
#include "core/status.h"

namespace edgetrain::agent {

// `n` samples' features to their logits.
using Forward = std::function<torch::Tensor(const float* features, int64_t n)>;

// Cross-entropy of `forward` on the batch, backward, and each parameter's
// gradient copied into `gradient`, tensor after tensor (zeros for one the loss
// does not reach). The parameters' grads must have been cleared. Returns the
// mean loss, or InternalError when `gradient` is not the parameters' size;
// throws what LibTorch throws.
StatusOr<double> BackwardInto(const Forward& forward, const std::vector<torch::Tensor>& parameters, const float* features,
                    const int64_t* labels, int64_t n, std::span<float> gradient);

// Accuracy and mean cross-entropy of `forward` over the whole of `data`,
// without gradients, a thousand samples at a time. Throws what LibTorch throws.
Evaluation EvaluateInChunks(const Forward& forward, const Dataset& data);
// How many samples of `data` EvaluateInChunks passes at once.
int64_t EvaluationChunk(const Dataset& data);

}  // namespace edgetrain::agent

#include "agent/torch/batch_passes.h"

#include <algorithm>
#include <cstring>

namespace edgetrain::agent {

StatusOr<double> BackwardInto(const Forward& forward, const std::vector<torch::Tensor>& parameters,
                              const float* features, const int64_t* labels, int64_t n, std::span<float> gradient) {
  int64_t total = 0;
  for (const torch::Tensor& p : parameters) total += p.numel();
  if (static_cast<int64_t>(gradient.size()) != total) {
    return InternalError("gradient buffer of " + std::to_string(gradient.size()) + " floats for a model of " +
                         std::to_string(total));
  }
  torch::Tensor y = torch::from_blob(const_cast<int64_t*>(labels), {n}, torch::kInt64);
  torch::Tensor loss = torch::nn::functional::cross_entropy(forward(features, n), y);
  loss.backward();
  int64_t offset = 0;
  for (const torch::Tensor& p : parameters) {
    float* out = gradient.data() + offset;
    if (p.grad().defined()) {
      torch::Tensor g = p.grad().contiguous();
      std::memcpy(out, g.data_ptr<float>(), sizeof(float) * static_cast<size_t>(p.numel()));
    } else {
      std::fill(out, out + p.numel(), 0.0f);
    }
    offset += p.numel();
  }
  return loss.item<double>();
}

int64_t EvaluationChunk(const Dataset& data) {
  // Chunks small enough that a layer's activations stay under the allocator's
  // mmap threshold (32 MiB, agent/main.cc), so each chunk reuses the last's
  // memory rather than faulting in fresh zeroed pages: the vgg's test set in
  // chunks of 1,000 (50 MB of activations a layer) took `edgetrain evaluate`
  // 18.5 s, in chunks of 100 3.8 s, of 83 (these) 3.6-3.9 s; a pipeline's head
  // evaluates so while its stages wait. A chunk's input of 256 KiB is 83
  // Fashion-MNIST samples; activations are some tens of times their input.
  constexpr int64_t kChunkInputBytes = 256 << 10, kMostSamples = 1000;
  return std::clamp<int64_t>(kChunkInputBytes / std::max<int64_t>(1, data.SampleSize() * int64_t{sizeof(float)}), 1,
                             kMostSamples);
}

Evaluation EvaluateInChunks(const Forward& forward, const Dataset& data) {
  torch::NoGradGuard no_grad;
  const int64_t chunk = EvaluationChunk(data);
  int64_t correct = 0;
  double loss_sum = 0;
  std::vector<float> features(static_cast<size_t>(std::min(chunk, data.size()) * data.SampleSize()));
  for (int64_t start = 0; start < data.size(); start += chunk) {
    const int64_t n = std::min(chunk, data.size() - start);
    data.CopySamples(start, n, features.data());
    torch::Tensor logits = forward(features.data(), n);
    torch::Tensor y = torch::from_blob(const_cast<int64_t*>(data.labels.data() + start), {n}, torch::kInt64);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    correct += logits.argmax(1).eq(y).sum().item<int64_t>();
  }
  const double n = static_cast<double>(std::max<int64_t>(1, data.size()));
  return Evaluation{static_cast<double>(correct) / n, loss_sum / n};
}

}  // namespace edgetrain::agent

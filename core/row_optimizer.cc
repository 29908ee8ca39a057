#include "core/row_optimizer.h"

#include <cmath>

namespace edgetrain {
namespace {
// Adam's constants as in LibTorch's defaults, so a job of one agent and a job of
// many train with the same optimizer.
constexpr double kBeta1 = 0.9;
constexpr double kBeta2 = 0.999;
constexpr double kEpsilon = 1e-8;
}  // namespace

RowOptimizer::RowOptimizer(const OptimizerSpec& spec, const RowLayout& layout) : spec_(spec), layout_(layout) {
  const size_t n = static_cast<size_t>(layout.total_floats());
  if (spec.kind == OptimizerKind::kAdam) {
    state_.first.assign(n, 0.0f);
    state_.second.assign(n, 0.0f);
  } else if (spec.momentum.value_or(0) > 0) {
    state_.first.assign(n, 0.0f);
  }
  state_.steps.assign(layout.size(), 0);
}

void RowOptimizer::Apply(size_t row, std::span<float> params, std::span<const float> gradient, double iterations) {
  const int64_t offset = layout_.row(row).offset;
  const float lr = static_cast<float>(spec_.learning_rate * iterations);
  const float decay = static_cast<float>(spec_.weight_decay);
  const int64_t step = ++state_.steps[row];
  const size_t n = params.size();
  if (spec_.kind == OptimizerKind::kAdam) {
    // Four distinct arrays: restrict lets the compiler vectorize without
    // checking for overlaps.
    float* __restrict m = state_.first.data() + offset;
    float* __restrict v = state_.second.data() + offset;
    float* __restrict p = params.data();
    const float* __restrict gr = gradient.data();
    const double correction1 = 1 - std::pow(kBeta1, static_cast<double>(step));
    const double correction2 = 1 - std::pow(kBeta2, static_cast<double>(step));
    const float step_size = static_cast<float>(spec_.learning_rate * std::sqrt(iterations) / correction1);
    const float root_correction2 = static_cast<float>(std::sqrt(correction2));
    for (size_t i = 0; i < n; ++i) {
      float g = gr[i] + decay * p[i];
      m[i] = static_cast<float>(kBeta1) * m[i] + static_cast<float>(1 - kBeta1) * g;
      v[i] = static_cast<float>(kBeta2) * v[i] + static_cast<float>(1 - kBeta2) * g * g;
      p[i] -= step_size * m[i] / (std::sqrt(v[i]) / root_correction2 + static_cast<float>(kEpsilon));
    }
    return;
  }
  const float momentum = static_cast<float>(spec_.momentum.value_or(0));
  if (momentum > 0) {
    float* buffer = state_.first.data() + offset;
    for (size_t i = 0; i < n; ++i) {
      float g = gradient[i] + decay * params[i];
      // PyTorch's convention: the buffer starts as the first gradient.
      buffer[i] = step == 1 ? g : momentum * buffer[i] + g;
      params[i] -= lr * buffer[i];
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) params[i] -= lr * (gradient[i] + decay * params[i]);
}

}  // namespace edgetrain

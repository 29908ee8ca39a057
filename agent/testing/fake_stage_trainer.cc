#include "agent/testing/fake_stage_trainer.h"

namespace edgetrain::agent::testing {

StatusOr<std::vector<float>> FakeStageTrainer::Forward(int64_t id, std::span<const float> input) {
  if (inputs_.count(id)) return FailedPreconditionError("micro-batch " + std::to_string(id) + " is already in flight");
  const double pace = stage_.device ? stage_.device->Pace() : 1;
  clock_.SleepFor(std::chrono::duration_cast<Duration>(
      (stage_.forward * static_cast<int64_t>(input.size()) * stage_.layers + stage_.per_pass) * pace));
  std::vector<float> out(input.begin(), input.end());
  for (int l = 0; l < stage_.layers; ++l) {
    for (float& x : out) x *= weights_[static_cast<size_t>(l)];
  }
  inputs_[id].assign(input.begin(), input.end());
  outputs_[id] = out;
  most_in_flight_ = std::max(most_in_flight_, InFlight());
  return out;
}

StatusOr<LossAndInputGradient> FakeStageTrainer::BackwardFromLoss(int64_t id, std::span<const int64_t> labels,
                                                                  double scale) {
  if (!stage_.last) return FailedPreconditionError("only the last stage starts from the loss");
  auto out = outputs_.find(id);
  if (out == outputs_.end()) return InvalidArgumentError("micro-batch " + std::to_string(id) + " is not in flight");
  const size_t n = labels.size();
  LossAndInputGradient r;
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) {
    const double d = out->second[i] - static_cast<double>(labels[i]);
    r.loss += 0.5 * d * d / n;
    g[i] = static_cast<float>(d * scale / n);
  }
  EDGETRAIN_ASSIGN_OR_RETURN(r.input_gradient, Back(id, g));
  return r;
}

StatusOr<std::vector<float>> FakeStageTrainer::Backward(int64_t id, std::span<const float> output_gradient) {
  if (stage_.last) return FailedPreconditionError("the last stage starts from the loss");
  return Back(id, output_gradient);
}

StatusOr<std::vector<float>> FakeStageTrainer::Back(int64_t id, std::span<const float> output_gradient) {
  auto in = inputs_.find(id);
  if (in == inputs_.end()) return InvalidArgumentError("micro-batch " + std::to_string(id) + " is not in flight");
  if (output_gradient.size() != in->second.size()) return InvalidArgumentError("gradient of the wrong size");
  const double pace = stage_.device ? stage_.device->Pace() : 1;
  clock_.SleepFor(std::chrono::duration_cast<Duration>(
      (stage_.backward * static_cast<int64_t>(output_gradient.size()) * stage_.layers + stage_.per_pass) * pace));
  // Layer by layer from the last, as stages of one layer each would: the
  // gradient of a layer's weight is its input times its output's gradient.
  std::vector<float> g(output_gradient.begin(), output_gradient.end());
  for (size_t l = static_cast<size_t>(stage_.layers); l-- > 0;) {
    for (size_t i = 0; i < g.size(); ++i) {
      float x = in->second[i];  // the layer's input: what the layers before it made of the stage's
      for (size_t k = 0; k < l; ++k) x *= weights_[k];
      gradients_[l] += x * g[i];
    }
    for (float& v : g) v *= weights_[l];
  }
  std::vector<float> input_gradient;
  if (!stage_.first) input_gradient = std::move(g);
  inputs_.erase(in);
  outputs_.erase(id);
  return input_gradient;
}

}  // namespace edgetrain::agent::testing

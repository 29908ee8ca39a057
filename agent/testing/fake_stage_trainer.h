#pragma once
// A pipeline stage for the runtime's tests on a simulated clock: one weight a
// layer, a float a sample flowing through (out = in x each weight in turn; the
// last stage's loss is half the squared distance to the label), and each pass
// taking simulated time per sample, so stages can be made as uneven as a test
// needs. A stage of two layers computes what two stages of one compute.

#include <algorithm>
#include <map>
#include <vector>

#include "agent/torch/stage_trainer.h"
#include "core/clock.h"

namespace edgetrain::agent::testing {

// A device whose passes slow down from one of them on, by `factor`: it
// outlives the fakes a device builds as its layers change.
struct FakeDevice {
  int passes = 0;
  int slows_at_pass = 0;  // 0: never
  double factor = 1;
  double Pace() { return slows_at_pass > 0 && ++passes >= slows_at_pass ? factor : 1; }
};

struct FakeStage {
  bool first = false;
  bool last = false;
  Duration forward = std::chrono::milliseconds(1);  // a sample's
  Duration backward = std::chrono::milliseconds(2);
  int layers = 1;
  FakeDevice* device = nullptr;  // none: its pace never changes
  // Parameters that take no part in the passes (a tensor of their own after
  // the layers'): a stage whose state is large, to send over a slow link.
  int64_t padding = 0;
  // What every pass costs besides its samples' (a kernel's launch, a
  // message's framing), which a profile timed per sample may not know.
  Duration per_pass{};
};

class FakeStageTrainer final : public StageTrainer {
 public:
  FakeStageTrainer(FakeStage stage, Clock& clock)
      : stage_(stage), clock_(clock), weights_(static_cast<size_t>(stage.layers + stage.padding), 0.5f),
        gradients_(static_cast<size_t>(stage.layers + stage.padding), 0.0f) {}

  std::vector<int64_t> InputShape() const override { return {1}; }
  std::vector<int64_t> OutputShape() const override { return {1}; }
  int64_t InputSize() const override { return 1; }
  int64_t OutputSize() const override { return 1; }
  bool IsFirst() const override { return stage_.first; }
  bool IsLast() const override { return stage_.last; }
  StatusOr<std::vector<float>> Forward(int64_t id, std::span<const float> input) override;
  StatusOr<LossAndInputGradient> BackwardFromLoss(int64_t id, std::span<const int64_t> labels, double scale) override;
  StatusOr<std::vector<float>> Backward(int64_t id, std::span<const float> output_gradient) override;
  int InFlight() const override { return static_cast<int>(inputs_.size()); }
  void DropInFlight() override {
    inputs_.clear();
    outputs_.clear();
  }
  std::span<float> Parameters() override { return weights_; }
  std::span<const float> Gradients() const override { return gradients_; }
  void ZeroGradients() override { std::fill(gradients_.begin(), gradients_.end(), 0.0f); }
  std::vector<std::vector<int64_t>> ParameterShapes() const override {
    std::vector<std::vector<int64_t>> shapes(static_cast<size_t>(stage_.layers), std::vector<int64_t>{1});
    if (stage_.padding > 0) shapes.push_back({stage_.padding});
    return shapes;
  }
  int64_t ParameterCount() const override { return static_cast<int64_t>(weights_.size()); }

  int most_in_flight() const { return most_in_flight_; }

 private:
  StatusOr<std::vector<float>> Back(int64_t id, std::span<const float> output_gradient);

  const FakeStage stage_;
  Clock& clock_;
  std::vector<float> weights_;  // a layer's each, then the padding
  std::vector<float> gradients_;
  std::map<int64_t, std::vector<float>> inputs_;  // in flight
  std::map<int64_t, std::vector<float>> outputs_;
  int most_in_flight_ = 0;
};

}  // namespace edgetrain::agent::testing

#pragma once
// A Trainer without LibTorch for the engine's tests: deterministic, cheap, and
// taking simulated time for each step, so a team of them runs on a
// DeterministicClock in milliseconds.
//
// Its model is a point w in R^n, and sample i pulls it towards its class's
// target T(y_i), a fixed random vector: the loss of a batch is the mean of
// |w - T(y_i)|^2 / 2, its gradient w - mean T(y_i). The test set's optimum is
// w* = mean over the test set of T(y_i), and "accuracy" is 1 - |w - w*| / |w*|
// (floored at 0): 0 at the start (w = 0), 1 at the optimum. A worker on a
// skewed partition pulls towards its own classes, as on real non-IID data, and
// stale gradients with momentum overshoot here as they do on real models.

#include <cstdint>
#include <vector>

#include "agent/data/dataset.h"
#include "agent/torch/trainer.h"
#include "core/clock.h"

namespace edgetrain::agent::testing {

struct FakeModel {
  std::vector<std::vector<int64_t>> shapes = {{8, 32}, {32}};  // nine rows of 32 floats
  int classes = 10;
  Duration step = std::chrono::milliseconds(5);  // simulated compute time of a step
  Duration per_sample{};                         // and of each sample of its batch
  Duration evaluation{};                         // simulated time an evaluation takes
  uint64_t seed = 1;
  // The share of coordinates at which the classes' targets are not 0 (the
  // same ones for every class): below 1, a gradient as sparse as a first
  // layer's over inputs that are mostly 0, which top-k compression keeps whole.
  double target_density = 1;
  // A buffer, as a batch norm's count of batches: the batches it computed a
  // gradient of, which only training moves, saved with the model.
  bool counts_batches = false;
};

class FakeTrainer final : public Trainer {
 public:
  FakeTrainer(const FakeModel& model, Clock& clock);

  StatusOr<double> ComputeGradient(const float* features, const int64_t* labels, int64_t n,
                                   std::span<float> gradient) override;
  std::span<float> Parameters() override { return params_; }
  std::vector<std::vector<int64_t>> ParameterShapes() const override { return model_.shapes; }
  StatusOr<Evaluation> Evaluate(const Dataset& data) override;
  Status SaveModel(const std::string& path) override;
  int64_t ParameterCount() const override { return static_cast<int64_t>(params_.size()); }
  bool HoldsBuffers() const override { return model_.counts_batches; }
  StatusOr<std::string> SaveBuffers() override;
  Status LoadBuffers(std::string_view bytes) override;

 private:
  const FakeModel model_;
  Clock& clock_;
  std::vector<std::vector<float>> targets_;  // per class
  std::vector<float> params_;
  int64_t batches_ = 0;  // counts_batches' buffer
};

// `train` and `test` samples of one 1x1x1 pixel each, labels round the classes.
TrainTestSplit FakeData(int64_t train, int64_t test, int classes);

}  // namespace edgetrain::agent::testing

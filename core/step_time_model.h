#pragma once
// A device's compute time for a step of n samples, as fixed + n x per-sample,
// fitted to its recent steps (least squares, older steps weighing less).
//
// Why not a step's time over its samples: a step has a fixed cost (kernel
// launches, the optimizer's pass, a framework's dispatch per operator) that
// weighs more on a small batch, so a device dealt few samples would measure
// slower a sample and be dealt fewer still (compute-weighted batches starved
// the slow devices of a real team that way). The fixed cost can only be told
// apart from the per-sample one while batches vary: until they do, it is the
// last one that could be told (none at first), and the per-sample time is
// what is left of a step's mean time.

#include <cstdint>

namespace edgetrain {

struct StepTime {
  double fixed_seconds = 0;   // a step's, whatever its batch
  double sample_seconds = 0;  // each sample's; 0: not measured yet
};

class StepTimeModel {
 public:
  // `memory`: the weight a step keeps per step that follows (0.95: about the
  // last twenty steps count).
  explicit StepTimeModel(double memory = 0.95) : memory_(memory) {}

  // A step of `samples` took `seconds` of compute.
  void Observe(int64_t samples, double seconds);
  StepTime cost() const { return cost_; }

 private:
  const double memory_;
  // Weighted sums over the steps seen: of 1, n, t, n^2 and n x t.
  double w_ = 0, n_ = 0, t_ = 0, nn_ = 0, nt_ = 0;
  StepTime cost_;
};

}  // namespace edgetrain

#pragma once
// The optimizer, applied row by row where the rows arrive: at the coordinator.
//
// Why there: one copy of the optimizer's state (momentum, Adam moments) instead
// of one per worker; workers stay stateless apart from their gradient residuals,
// so a crashed or disconnected worker rejoins by pulling rows; and every update is
// elementwise, so a row is updated the moment its gradient arrives, without
// waiting for the rest of the model.

#include <cstdint>
#include <span>
#include <vector>

#include "core/job_spec.h"
#include "core/row_layout.h"

namespace edgetrain {

struct OptimizerState {
  std::vector<float> first;    // SGD momentum buffer, or Adam's first moment
  std::vector<float> second;   // Adam's second moment
  std::vector<int64_t> steps;  // per row: updates applied (Adam's bias correction)
};

class RowOptimizer {
 public:
  RowOptimizer(const OptimizerSpec& spec, const RowLayout& layout);

  // One update of row `row`: `params` and `gradient` are that row's values.
  // `share` is the part of a full step this gradient earns: 1/N when each of N
  // workers' gradients is applied as it arrives. It scales the step, not the
  // gradient — the same for SGD, and for Adam, whose step does not shrink with
  // its gradient, the only way N arrivals add up to one step.
  void Apply(size_t row, std::span<float> params, std::span<const float> gradient, double share = 1.0);

  const OptimizerState& state() const { return state_; }
  OptimizerState& mutable_state() { return state_; }

 private:
  OptimizerSpec spec_;
  const RowLayout& layout_;
  OptimizerState state_;
};

}  // namespace edgetrain

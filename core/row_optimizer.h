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

  // One update of row `row`: `params` and `gradient` are that row's values,
  // the gradient being the mean over `iterations` of the team's iterations (a
  // row's clock can move by several at once). That is a batch `iterations`
  // times larger, and the step grows as the batch-size scaling rules say:
  // linearly for SGD (Goyal et al. 2017), by the square root for Adam (Malladi
  // et al. 2022). One Adam step of k times the rate on a stale mean overshot:
  // with S = 20 and a straggler, whole teams diverged. `params` and `gradient`
  // must not overlap (the loop is vectorized on that promise).
  void Apply(size_t row, std::span<float> params, std::span<const float> gradient, double iterations = 1.0);

  const OptimizerState& state() const { return state_; }
  OptimizerState& mutable_state() { return state_; }

 private:
  OptimizerSpec spec_;
  const RowLayout& layout_;
  OptimizerState state_;
};

}  // namespace edgetrain

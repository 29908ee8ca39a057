#pragma once
// The order in which a pipeline stage runs a step's micro-batches: 1F1B with
// a flush (PipeDream-Flush). Each stage first runs forward as many
// micro-batches as there are stages after it, then alternates one forward and
// one backward, then runs the backwards left. Every micro-batch of a step sees
// the same weights, so the step equals a single device's on the whole batch;
// and a stage holds at most min(M, stages from it to the end) micro-batches'
// activations at once (core/pipeline_cost.h counts memory so).

#include <vector>

namespace edgetrain {

enum class PassKind { kForward, kBackward };

struct Pass {
  PassKind kind = PassKind::kForward;
  int micro_batch = 0;
  bool operator==(const Pass&) const = default;
};

// The passes of stage `stage` (0 is the first) of `stages`, for a step of
// `micro_batches`: each micro-batch once forward, then once backward.
std::vector<Pass> OneForwardOneBackward(int stage, int stages, int micro_batches);

// What a step of that schedule takes, run to its dependencies: a stage's
// forward of micro-batch i follows the stage before's (plus the transfer of
// the cut between them), its backward follows the stage after's (plus the
// transfer back), and each stage runs its passes one at a time in the order
// above. `transfer_s[s]` is the cut after stage s (stages - 1 of them). The
// cost model's formula (core/pipeline_cost.h) is held to this in tests.
double SimulatedStepSeconds(const std::vector<double>& forward_s, const std::vector<double>& backward_s,
                            const std::vector<double>& transfer_s, int micro_batches);

}  // namespace edgetrain

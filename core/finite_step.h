#pragma once
// A step whose loss is not finite trains nothing more: the model
// has diverged (a learning rate too high for it and its data) or computes
// NaN or infinity (a log of 0, a division by 0 in a user's own model). No
// step trains it back, and every step after would only spread the NaN to
// every weight, while the run went on to "succeed" with a loss shown as 0 (a
// new user's trial). So the job stops at that step, before the weights move:
// the model and checkpoints it keeps are the last finite ones. Running again
// unchanged diverges at the same step (runs are seeded), so it is the job's
// settings that are wrong: InvalidArgument, which is exit 2 and which the
// operator does not restart.

#include <cstdint>
#include <span>

#include "core/status.h"

namespace edgetrain {

// Ok when `loss` is finite; otherwise InvalidArgument saying so, at `step`,
// and what to change. Each step's loss, not its gradient: a scan of the
// gradient cost 93 us a step on the 235,146 weights of bench/recovery's MLP,
// and a gradient with an infinity under a finite loss shows as a loss that
// is not finite at the next step.
Status FiniteStep(int64_t step, double loss);
// The same of weights about to be kept (a checkpoint, the final model):
// between a step whose gradient held an infinity and the next, whose loss
// says so, the weights kept would be of no use to resume from. Checked
// where they are written, whose copy costs as much.
Status FiniteWeights(int64_t step, std::span<const float> weights);
// The same of a model's loss on the test set: outputs that are not finite
// score every class NaN, which picks the first class, and an accuracy of the
// first class's share was reported as the model's, exit 0 (a new user's
// trial: a forward that computes NaN only when evaluating).
Status FiniteEvaluation(double loss);

}  // namespace edgetrain

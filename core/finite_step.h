#pragma once
// A step whose loss or gradient is not finite trains nothing more: the model
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

// Ok when `loss` and every value of `gradient` (none: the loss alone) are
// finite; otherwise InvalidArgument saying which, at `step`, and what to change.
Status FiniteStep(int64_t step, double loss, std::span<const float> gradient = {});

}  // namespace edgetrain

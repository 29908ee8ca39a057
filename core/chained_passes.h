#pragma once
// From the layers timed one by one to what a stage of them pays: a stage runs
// its layers through a trainer, one after another, its input copied in and
// its output out, the loss on the last, each pass after a pause (its
// neighbours' turns, an emulated device's sleep), and that costs more than
// the layers' passes in a loop of their own (docs/pipeline.md, "The cost
// model"). `edgetrain-agent profile-layers` times the whole model so, and
// the last layer alone as a stage; these turn the timings into the layers'
// passes and a stage's own cost of a pass (core/layer_cost.h).

#include <span>
#include <vector>

#include "core/layer_cost.h"

namespace edgetrain {

// What a stage pays a pass beyond its layers: the last layer's passes as a
// stage of its own (`alone`, at each size it trained on), less the layer's
// passes timed one by one at the same size, forward and backward apart and
// each at least 0. A size the layer was not timed at is left out.
std::vector<LayerPass> StageOwnPasses(const LayerCost& last, std::span<const LayerPass> alone);

// Each size's passes of every layer scaled, forward and backward apart, so
// that they sum to the whole model's chained pass at that size (`chained`,
// back to back, ascending, the sizes it trained on) less a stage's own cost
// there back to back (`own.back_to_back`, which a plan counts once a stage):
// what is left beyond the layers' times is the layers' data no longer in the
// caches a loop of one layer kept warm, shared among them by their time.
// The stage's own back to back is first held to what the chain measured
// beyond the layers' times (none where the chain measured less), so that the
// layers never cost less than they did one by one for it: a stage of one
// cheap layer timed as dear as the whole chain is the machine's noise, and
// would leave the layers nothing; and its passes after a pause are held to
// no less than back to back. A size every layer was timed at but the chain
// was not (too large to chain for memory, or one it could not train on)
// takes the ratios of the largest chained size below it, or stays as timed
// when there is none: left as timed, the largest sizes would read cheaper a
// sample than the chained ones below them, and the planner would favour
// them for nothing. Then each layer's figures a sample are its largest
// pass's.
void ScaleToTheChain(std::vector<LayerCost>& layers, std::span<const LayerPass> chained, StagePassCost& own);

}  // namespace edgetrain

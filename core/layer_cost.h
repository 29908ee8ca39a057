#pragma once
// What a pipeline planner knows of one layer of a model: the unit it may cut
// after. A built-in model is a sequence of these, in the order data flows
// (agent/torch/layer_profile.h measures them on a device).

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/transport_cost.h"

namespace edgetrain {

// One timed pass of a layer over `samples` samples, on the device it was
// measured on.
struct LayerPass {
  int samples = 0;
  double forward_s = 0;
  double backward_s = 0;
};

struct LayerCost {
  std::string name;  // "conv1", "fc": what a plan's stages are said to hold
  // Seconds per sample on the device it was measured on (speed 1), in a pass
  // over the job's batch: a device of speed v takes these divided by v.
  double forward_s = 0;
  double backward_s = 0;
  // The layer's weights (float32), held by every device of the stage that has it
  // and exchanged among them once a step.
  int64_t parameter_bytes = 0;
  // The layer's output for one sample (float32): sent to the next stage when a
  // cut follows this layer, with the gradient of as many bytes coming back, and
  // kept for the backward pass of every micro-batch in flight.
  int64_t activation_bytes = 0;
  // Passes timed at several sizes, fewest samples first. A pass's time is not
  // in proportion to its samples: a pass over a few pays every operator's
  // fixed cost, one over many spills the caches (docs/pipeline.md, "The
  // cost model", has the vgg's figures), and a pipeline's micro-batches are
  // small. Empty: in proportion, at the figures above.
  std::vector<LayerPass> passes;
  // Seconds of the job's optimizer stepping the layer's weights once, on the
  // device it was measured on: every device of a stage pays it once a step,
  // after the flush, however many micro-batches the step had. 0 when not
  // measured.
  double optimizer_s = 0;
  // Why no plan may cut this layer from the others although it is a whole
  // model (a TorchScript module that is not an nn.Sequential, taken as one
  // layer): said when a pipeline or hybrid is asked of it, and in auto's
  // reason. Empty for a layer of a model that is cut between its layers.
  std::string cannot_cut;
};

// What a stage pays for a pass beyond its layers, whatever they are: its
// input taken into the trainer and its output out, the loss on the last
// stage, and the caches, predictors and pages it finds cold after the pause
// a stage's device takes between passes (an emulated device's sleep, its
// neighbours' turns). On this machine a stage of conv8 and the classifier
// took 0.93 ms a pass back to back, 1.22 after a pause of 1 ms and 2.05
// after 20; spread over the layers by their time, as the chain's overhead
// was, a stage of cheap layers was given none of it, and the even split's
// last stage, at a slowdown of 20, computed at 1.8 times its prediction
// (docs/pipeline.md, "The cost model"). Paid once a stage a pass, on the
// device it was measured on (speed 1).
struct StagePassCost {
  // Each after a pause of `pause_s`; fewest samples first. Empty: not
  // measured, and not counted.
  std::vector<LayerPass> passes;
  // The same sizes back to back, with no pause; empty: as `passes`.
  std::vector<LayerPass> back_to_back;
  double pause_s = 0;
};

// Seconds of one forward and backward pass of `layer` over `samples` samples
// (>= 0), on the device it was measured on: linear between the passes
// measured, and in proportion below the first and above the last.
double PassSeconds(const LayerCost& layer, double samples);
// A stage's own seconds for a pass over `samples` (> 0) samples, of one of
// its lists: linear between the sizes measured and as the nearest of them
// outside (a cost of the pass, not of its samples). 0 for no samples, or
// when not measured.
double StagePassSeconds(std::span<const LayerPass> passes, double samples);

// The layers as `edgetrain-agent profile-layers` prints them and `edgetrain
// plan` reads them back, one format on both sides of the process boundary:
// {"layers":[{"name":"conv1","forwardSeconds":..,"backwardSeconds":..,
// "parameterBytes":..,"activationBytes":..,"optimizerSeconds":..,
// "passes":[{"samples":1,"forwardSeconds":..,"backwardSeconds":..},...]},
// ...],"transport":{"messageSeconds":..,"bytesPerSecond":..},
// "stagePasses":[{"samples":1,"forwardSeconds":..,"backwardSeconds":..},...],
// "stagePassesBackToBack":[...],"stagePauseSeconds":..}; "passes",
// "optimizerSeconds", "transport" (the agent's messages, timed beside the
// layers) and the stage's (StagePassCost) may be left out, and are when not
// measured.
std::string EncodeLayerCosts(std::span<const LayerCost> layers, const TransportCost& transport = {},
                             const StagePassCost& stage = {});
// The keys of that format beside "layers": what a plan's `plannedFrom` and
// `edgetrain plan --json` copy as the agent printed them.
inline constexpr std::array<const char*, 4> kKeysBesideTheLayers = {"transport", "stagePasses",
                                                                    "stagePassesBackToBack", "stagePauseSeconds"};
// The same format in at most `limit` bytes, for a pod's termination message
// (the kubelet keeps 4096): seconds to three significant figures (a pass's
// time varies more than that from run to run), then every other timed pass
// left out, the fewest and the most samples always kept, then the layers'
// passes altogether; before any of the layers', a stage's own the same way
// down to one size (it varies little with the size: the vgg's 0.61 ms a
// pass of 1, 0.70 of 64), never to none (a cost the layers' passes were
// timed less of, which nothing else stands for). FailedPrecondition when
// even the layers alone are longer.
StatusOr<std::string> EncodeLayerCostsWithin(std::span<const LayerCost> layers, size_t limit,
                                             const TransportCost& transport = {}, const StagePassCost& stage = {});
// InvalidArgument, naming the field, for anything else (a missing or negative
// figure, no layers at all).
StatusOr<std::vector<LayerCost>> DecodeLayerCosts(std::string_view json);
// The same format's "transport": zeros (not measured) when left out;
// InvalidArgument, naming the field, for a figure that is not >= 0.
StatusOr<TransportCost> DecodeTransportCost(std::string_view json);
// The same format's "stagePasses", "stagePassesBackToBack" and
// "stagePauseSeconds": none (not measured) when left out; InvalidArgument,
// naming the field, as for a layer's "passes".
StatusOr<StagePassCost> DecodeStagePassCost(std::string_view json);

}  // namespace edgetrain

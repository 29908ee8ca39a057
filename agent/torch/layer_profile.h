#pragma once
// What each layer of a built-in model costs on this device, measured: the
// pipeline planner's input (core/layer_cost.h). Like trainer.h, a door to
// LibTorch that lets no torch type through.

#include <cstdint>
#include <optional>
#include <vector>

#include "core/clock.h"
#include "core/dataset_info.h"
#include "core/job_spec.h"
#include "core/layer_cost.h"
#include "core/status.h"

namespace edgetrain::agent {

struct LayerProfileOptions {
  int batch_size = 32;  // the most samples a timed pass runs on: the job's batch
  // Timed passes of each layer, at each size after an untimed one (and each
  // layer after three untimed passes at the whole batch); the median counts.
  // Of 3, a pass of 3 ms in a layer's 0.1 ms came two in three at one size
  // in run after run (fc1's 2-sample backward); of 5, in none.
  int repetitions = 5;
  uint64_t seed = 0;    // the weights and the images
  int intra_op_threads = 1;
  // An emulated slower device (core/job_plan.h): it takes `slowdown` times the
  // measured time, as the agent makes it by sleeping (slowdown - 1) times each
  // step. At least 1.
  double slowdown = 1;
  // What the passes are timed by; null: the real clock. Tests inject one whose
  // every reading moves on by a fixed tick, so each pass takes exactly a tick.
  const Clock* clock = nullptr;
  // One sample's shape as the first layer takes it (core/dataset_info.h's
  // SampleShape); empty means [channels, height, width] of the data.
  std::vector<int> sample_shape = {};
  // The job's optimizer: each layer's step of it is timed too
  // (LayerCost::optimizer_s), on the weights laid out as a stage lays them.
  // None: not timed (0).
  std::optional<OptimizerSpec> optimizer = {};
  // The whole model's passes timed too, chained through a stage trainer as
  // the runtime runs a stage, and the last layer's as a stage of its own;
  // each size's layers scaled to sum to the chain less a stage's own cost
  // of a pass (core/chained_passes.h): a stage's passes had run 1.19-1.55
  // times its layers' timed one by one (docs/pipeline.md, "The cost model").
  bool chained = true;
  // The most the chained passes may hold of activations (kept for their
  // backward, estimated from each layer's output); larger sizes take the
  // ratios of the largest chained. Small beside the devices a pipeline is
  // planned on, boards of a gigabyte and more (the default vgg's at 64
  // samples: 28 MiB), so that the check of a model split for want of memory
  // does not ask for the memory it lacks.
  int64_t chain_stash_bytes = int64_t{128} << 20;
  // The pause slept before each of a stage's own passes timed after one
  // (StagePassCost::passes): a stage's device pauses between its passes (an
  // emulated device's sleep of its slowdown, its neighbours' turns), and on
  // this machine a pass after a 20 ms pause took about a millisecond more
  // than back to back, its caches and predictors cold; after 1 ms, a
  // quarter of that (docs/pipeline.md, "The cost model").
  double pause_s = 0.02;
};

// The sizes a layer's passes are timed at: the powers of two below `batch`, then `batch`.
std::vector<int> PassSizes(int batch);

// The layers of `spec` on `data`, in the order data flows (BuildLayers in
// agent/torch/models.h: the units a pipeline may cut after), each timed on
// its real input (the previous layers' output for random images) in passes
// of 1, 2, 4, ... samples and of the whole batch (LayerCost::passes: a
// pipeline's micro-batches and their shares are small, and a small pass
// costs more a sample).
// Backward is the layer's own: the gradients of its parameters and, past the
// first layer, of its input (what a stage sends upstream), from an upstream
// gradient of its output's shape. With an optimizer, its step over the
// layer's weights is timed as a stage takes it (RowOptimizer by layer),
// stepped between the timed passes as a stage steps between steps. InvalidArgument when the model cannot fit the data or the
// options are out of range.
// Chained (the default), each size's layers are scaled to the whole model's
// pass through a stage trainer, back to back, less what a stage pays a pass
// whatever its layers: that, timed as a stage of the last layer alone less
// the layer's own time, back to back and after a pause, goes to `stage`
// when given (a stage's passes cost it once each, however few its layers).
StatusOr<std::vector<LayerCost>> ProfileLayers(const ModelSpec& spec, const DatasetInfo& data,
                                               const LayerProfileOptions& options = {},
                                               StagePassCost* stage = nullptr);

}  // namespace edgetrain::agent

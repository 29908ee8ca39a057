#pragma once
// What one training step of a data-parallel worker costs, predicted from the
// manifest alone: the arithmetic of a batch and the bits of one exchange with the
// coordinator. Placement ranks devices with it (docs/placement.md); it need not
// be exact, only order devices as their measured throughput would.

#include <cstdint>

#include "core/job_spec.h"

namespace edgetrain {

struct StepCost {
  int64_t parameters = 0;       // of the built-in model
  int64_t multiply_adds = 0;    // per sample, forward
  int batch_size = 0;
  double bits_per_exchange = 0; // one step's push and pull, at the job's compression
};

StepCost StepCostOf(const JobSpec& spec);

// A model's size as an agent that loaded it measured it: a TorchScript
// module's layers are known only to LibTorch, so the operator has an agent load
// it before placing its team (docs/operator.md, "Your own model").
struct ModelSize {
  int64_t parameters = 0;
  // Per sample, forward: the multiply-adds a dense layer of the same measured
  // cost would do (an equivalent, not a count; core/step_cost.cc's calibration).
  int64_t multiply_adds = 0;
};

// The step of `spec`'s job with its model's size as measured rather than as
// the manifest's built-in model would be.
StepCost StepCostOf(const JobSpec& spec, const ModelSize& measured);

// A device of compute score 1 (this project's reference machine: a 2-core x86-64
// VM, one intra-op thread) sustains this many floating-point operations a second
// on the built-in models. Calibrated with a job of one: fashion-mnist, mlp
// [128, 64] (109,386 parameters), batch 64, turned 91,000-105,000 samples/s over
// three 4 s runs, at 6 flops per multiply-add (forward, backward) and 4 per
// parameter (the update) per step.
inline constexpr double kReferenceFlopsPerSecond = 6.5e10;

struct PredictedStep {
  double compute_seconds = 0;
  double communicate_seconds = 0;
  double seconds() const { return compute_seconds + communicate_seconds; }
  double samples_per_second(int batch) const { return seconds() > 0 ? batch / seconds() : 0; }
};

// A step on a device of `compute_score` whose link to the coordinator carries
// `link_mbps` (0: the coordinator's own device, no link to cross). A score of 0
// never finishes a step (infinite compute time).
PredictedStep PredictStep(const StepCost& cost, double compute_score, double link_mbps);

}  // namespace edgetrain

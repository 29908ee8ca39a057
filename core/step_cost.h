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
// on the built-in models, past a step's own cost below. Calibrated with jobs of
// one, 8 s each, Adam (2026-11-29): fashion-mnist, mlp [128, 64] (109,386
// parameters), batch 64, turned 96,900 samples/s (661 us a step; predicted
// 657), and mlp [256, 128], batch 64, 49,500 (1,293 us; predicted 1,328), at 6
// flops per multiply-add (forward, backward) and 4 per parameter (the update)
// per step. Convolutions run at other rates: a digits cnn [16, 32] took 732 us
// a step against 302 predicted, a fashion-mnist vgg 44 ms against 51.
inline constexpr double kReferenceFlopsPerSecond = 7.3e10;
// What a step costs whatever its arithmetic, on the reference machine: the
// passes' and the optimizer's dispatch, the batch's assembly. A digits mlp [32]
// of batch 32 (some 460,000 flops) took 85 us a step, 376,000 samples/s, which
// the flops alone had put at 4.5 million (a new user's trial read the plan's
// 4,479,901 samples/s against 10,000-21,000 measured).
inline constexpr double kStepOverheadSeconds = 80e-6;
// What one exchange of a data-parallel step costs past its bits on the link:
// the push's and the update's encoding, the RPCs, the coordinator's turn.
// Measured with a team of two digits mlp [32] workers and their coordinator
// on this machine, links unshaped: 0.77 ms a worker's step, against 85 us of
// compute alone. On real devices each has its own cores, which this machine's
// three agents shared: an upper figure.
inline constexpr double kExchangeOverheadSeconds = 0.69e-3;

struct PredictedStep {
  double compute_seconds = 0;
  double communicate_seconds = 0;
  double seconds() const { return compute_seconds + communicate_seconds; }
  double samples_per_second(int batch) const { return seconds() > 0 ? batch / seconds() : 0; }
};

// What a step computes, a sample: 6 flops a multiply-add (forward 2,
// backward twice that) and the update's 4 a parameter, shared by the
// batch's samples. The one count PredictStep, a measured module's size and
// a pipeline's layers as timed are all read by.
double FlopsASample(double multiply_adds, int64_t parameters, int batch);
// Its inverse: the multiply-adds a sample that make `flops` a sample for a
// model of `parameters` at `batch`; none below none.
int64_t MultiplyAddsOf(double flops, int64_t parameters, int batch);

// A step on a device of `compute_score` whose link to the coordinator carries
// `link_mbps` (0: the coordinator's own device, no link to cross). A score of 0
// never finishes a step (infinite compute time).
PredictedStep PredictStep(const StepCost& cost, double compute_score, double link_mbps);

}  // namespace edgetrain

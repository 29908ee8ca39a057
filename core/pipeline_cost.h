#pragma once
// The cost model of a synchronous hybrid pipeline: stages of contiguous
// layers, each on a group of devices that share its micro-batches (data
// parallel inside the stage), run 1F1B with a flush at every step. One model
// scores every plan: the planner's (core/pipeline_planner.h), the even split
// and plain data parallelism it is compared against, and the brute force that
// proves the planner in tests. docs/pipeline.md derives it.
//
// For a stage s of layers [a, e) on group G, with micro-batches of b samples:
//   shares     device d computes n_d of each micro-batch's b samples, dealt by
//              speed in whole samples as the runtime deals them (ShareOut in
//              core/batch_order.h)
//   compute    c_s = max over d of (W(a, e, n_d) + S_d(n_d)) / speed_d, W
//              being the layers' measured pass time over n_d samples
//              (PassSeconds in core/layer_cost.h: not in proportion to the
//              samples), S_d the stage's own cost of a pass whatever its
//              layers (StagePassCost: once a stage, so a split pays it once
//              more), as timed after a pause on an emulated device, which
//              sleeps after every pass, and back to back on one of its own
//   link       l_s = max over d of n_d · (in + out) / min(up_d, down_d)
//              in, out: activation bytes of the cut before and after the stage
//              (none at the pipeline's ends). Each direction of a device's link
//              carries one cut's activations and the other's gradients.
//   period     p_s = max(c_s, l_s): transfers overlap compute, so the busier of
//              the two paces the stage.
//   latency    t_s = c_s + 2 · l_s: one micro-batch's way through the stage,
//              forward and back, its transfers not overlapped.
//   exchange   x_s = 0 alone; in a group, max over d of P/up_d + P/down_d for
//              the stage's parameter bytes P: each pushes its gradient and
//              receives the mean once a step, after the flush.
//   messages   α each, the runtime's own cost of one (TransportCost::message_s,
//              core/transport_cost.h). Every message goes through the head,
//              so a micro-batch entering a stage after the first adds 4 to t_s
//              (its activations in, their gradient back, each to the head and
//              on); a group's exchange 2 to x_s; and the head's word to every
//              stage and its answer, 2 a step, to every stage's flush (the 2α
//              of T; in a run, the head re-plans with what they took its
//              steps, TransportCost::orders_s). Bytes pay the stream's own rate on top of the link's,
//              in l_s and x_s.
//   commit     o_s = max over d of O(a, e) / speed_d, O being the layers'
//              measured optimizer step (LayerCost::optimizer_s): every device
//              of the group steps its copy of the weights once a step, before
//              the next step's first pass.
// and for M micro-batches a step:
//   step       T = (M - 1) · max p_s + Σ t_s + max (x_s + o_s + 2α)
//              the first micro-batch's way through every stage and back, the
//              other M - 1 at the slowest stage's pace, then the exchange and
//              the optimizer's step. The stages step at once, so the slowest
//              counts; a stage after the first may overlap its own with the
//              wait for its first micro-batch, which T does not credit.
//   memory     device d of stage s holds its layers' parameters times the
//              optimizer's state factor, and the activations of min(M, K - s)
//              micro-batches in flight (1F1B over K stages) at n_d samples each.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/layer_cost.h"
#include "core/transport_cost.h"

namespace edgetrain {

struct PipelineDevice {
  std::string name;
  double speed = 1;          // against the device the layers were measured on
  int64_t memory_bytes = 0;  // what training may use on it; 0: not limited
  double up_bytes_per_s = 0;    // its link, each way; 0: not limited (a wired head)
  double down_bytes_per_s = 0;
  // Liable to vanish (a spot VM, edgetrain.dev/transient): the planner keeps
  // it company in its stage where that costs little (PlannerOptions).
  bool transient = false;
  // A device emulated on the planning machine by sleeping after each pass
  // (a cluster profile's compute.slowdown): each of its passes follows a
  // sleep, and pays a stage's own cost of a pass as timed after a pause
  // (StagePassCost). 1: a device of its own, which pays it as back to back.
  double emulated_slowdown = 1;
};

struct PipelineProblem {
  std::vector<LayerCost> layers;
  std::vector<PipelineDevice> devices;
  int batch_size = 32;  // samples a step
  // Bytes held per parameter byte: the weights, their gradient, and the
  // optimizer's state (Adam: 4, SGD with momentum: 3, plain SGD: 2).
  double state_factor = 4;
  int max_micro_batches = 32;  // the planner tries each divisor of batch_size up to this
  TransportCost transport;
  // What each stage pays a pass beyond its layers, once a stage, measured
  // with them; not measured: nothing.
  StagePassCost stage_pass;
  // spec.faultTolerance.gradientEachMicroBatch: a group's devices send their
  // gradient up once a micro-batch, beside its activations, not once a step.
  bool gradient_each_micro_batch = false;
};

// Layers [first_layer, end_layer) on `devices` (indices into the problem's).
struct PipelineStage {
  int first_layer = 0;
  int end_layer = 0;
  std::vector<int> devices;
};

struct StageCost {
  double compute_s = 0;
  double link_s = 0;
  double period_s = 0;
  double latency_s = 0;
  double exchange_s = 0;
  double commit_s = 0;  // the optimizer's step, on the group's slowest device
  double orders_s = 0;  // the head's word to the stage each step, and the stage's answer
  double messages_s = 0;  // of latency_s: a micro-batch's messages in and out through the head
  bool fits = true;  // every device of the group within its memory
  std::vector<int64_t> memory_bytes;  // per device of the group, in its order
  // The most micro-batches in flight every device of the group has memory
  // for: 0 when not even the parameters fit; INT_MAX when none is limited.
  int max_in_flight = 0;
};

// What a stage costs whatever the size of its micro-batches.
struct StageRates {
  int first_layer = 0;
  int end_layer = 0;
  double exchange_s = 0;  // once a step, whatever the micro-batches
  double commit_s = 0;    // the same
  double orders_s = 0;    // the same
  // The messages a micro-batch's way through the stage waits for, forward
  // and back: its input from the stage before and its gradient back to it.
  double messages_s = 0;
  double held_bytes = 0;  // parameters and optimizer state, on each device of the group
  double cut_bytes = 0;   // a sample's activations in and out of the stage (in + out)
  double stash_bytes = 0; // a sample's activations kept for its backward pass
  double part_bytes = 0;  // a group's device's gradient sent up each micro-batch (gradientEachMicroBatch)
};

struct PipelineCost {
  bool fits = false;
  std::string misfit;  // why not, when it does not fit
  double step_s = 0;
  double samples_per_s = 0;
  int bottleneck_stage = 0;  // the stage with the longest period
  std::vector<StageCost> stages;
};

struct PipelinePlan {
  std::vector<PipelineStage> stages;
  int micro_batches = 1;
  int micro_batch_size = 0;
  PipelineCost cost;
};

// The model over one problem, its layers' sums kept so that a stage costs
// O(devices) whatever its length: the planner asks for millions.
class PipelineCostModel {
 public:
  explicit PipelineCostModel(const PipelineProblem& problem);

  // One stage's figures; `in_flight` micro-batches are held at once.
  StageCost Stage(int first_layer, int end_layer, std::span<const int> devices, int micro_batch_size,
                  int in_flight) const;
  // The same in two steps, for the planner, which asks for millions of
  // stages at several micro-batch sizes: what the stage costs at any size,
  // then at one, `shares` being ShareOut of the micro-batch over the group's
  // speeds (without memory_bytes).
  StageRates Rates(int first_layer, int end_layer, std::span<const int> devices) const;
  StageCost Scale(const StageRates& rates, std::span<const int> devices, std::span<const int64_t> shares,
                  int in_flight) const;
  // The samples of a micro-batch each device of `devices` computes.
  std::vector<int64_t> Shares(std::span<const int> devices, int micro_batch_size) const;

  // The whole plan. Not fitting (memory) is a cost, not an error; a malformed
  // plan (layers not covered in order, a device twice or unknown, a stage
  // with none) is std::nullopt.
  std::optional<PipelineCost> Plan(std::span<const PipelineStage> stages, int micro_batches) const;

  // T from the stages' largest period, summed latency and largest flush (the
  // exchange inside a group and the optimizer's step: what a stage does once
  // a step, after its micro-batches).
  static double StepSeconds(int micro_batches, double max_period_s, double latency_s, double max_flush_s) {
    return (micro_batches - 1) * max_period_s + latency_s + max_flush_s;
  }
  static double FlushSeconds(const StageCost& stage) { return stage.exchange_s + stage.commit_s + stage.orders_s; }
  static double FlushSeconds(const StageRates& rates) { return rates.exchange_s + rates.commit_s + rates.orders_s; }

  // Forward and backward passes of layers [first, end) over `samples`
  // samples in one pass, at speed 1, as a stage of them runs it on device
  // `device`: its own cost of a pass (StagePassCost) included, as after a
  // pause on an emulated device and as back to back on one of its own.
  double WorkSeconds(int first_layer, int end_layer, int64_t samples, int device) const;
  // What device `device` computes a step of layers [first, end) in passes of
  // `passes` samples each (its share of each micro-batch), its optimizer's
  // step included, at its speed: its own part of the step, which a stage's
  // answer reports as it ran (StepDone.work_seconds; core/device_pace.h).
  double DeviceStepSeconds(int first_layer, int end_layer, int device, std::span<const int64_t> passes) const;
  // The least a sample of layers [first, end) costs at speed 1, in a pass of
  // any size: samples · this bounds WorkSeconds from below (a stage's own
  // cost of a pass only adds to it), which is what the planner prunes by.
  double LeastWorkSeconds(int first_layer, int end_layer) const {
    return least_work_s_[end_layer] - least_work_s_[first_layer];
  }
  // A sample of layers [first, end) at speed 1 in passes of the size that
  // runs them fastest a sample on device `device`, up to the batch: its
  // capacity, were it to run them alone.
  double BestWorkSeconds(int first_layer, int end_layer, int device) const;

  const PipelineProblem& problem() const { return problem_; }

 private:
  const PipelineProblem& problem_;
  // Pass sizes every layer's time is linear between (each layer's and a
  // stage's own measured sizes, and 0), and the prefix sums over layers of
  // their pass times at each: work_s_[k * (layers + 1) + l] for the first l
  // layers over sizes_[k] samples.
  std::vector<double> sizes_;
  std::vector<double> work_s_;
  // A stage's own cost of a pass over sizes_[k] samples, after the pause it
  // was timed after and back to back (0s when not measured), and which of
  // the two each device pays: WorkSeconds, the planner's innermost call,
  // looks the bracket up once for both.
  std::vector<double> stage_paused_s_, stage_back_to_back_s_;
  std::vector<const std::vector<double>*> stage_s_of_;
  std::vector<double> least_work_s_;  // prefix sums of each layer's least time a sample
  // For each whole number of samples up to the batch, the size at or above
  // it and how far it lies from the size below: the planner's passes are
  // whole samples, and it asks millions of times.
  struct Bracket {
    size_t above = 1;
    double weight = 0;
  };
  std::vector<Bracket> brackets_;
  // Each device's 1 / speed and its link's seconds a byte, the slower way.
  std::vector<double> seconds_a_unit_, seconds_a_byte_;
  std::vector<int64_t> parameters_;  // prefix sums of parameter bytes
  std::vector<int64_t> stash_;       // prefix sums of activation bytes
  std::vector<double> optimizer_s_;  // prefix sums of the optimizer's step
};

// The micro-batch counts the planner tries: divisors of the batch up to the limit.
std::vector<int> MicroBatchCounts(const PipelineProblem& problem);

}  // namespace edgetrain

#include "agent/torch/layer_profile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "agent/torch/models.h"
#include "agent/torch/stage_trainer.h"
#include "agent/torch/torchscript_trainer.h"
#include "core/chained_passes.h"
#include "core/median.h"
#include "core/number_text.h"
#include "core/row_layout.h"
#include "core/row_optimizer.h"

namespace edgetrain::agent {
namespace {

constexpr int64_t kFloatBytes = 4;
// Untimed passes of each layer at the whole batch before it is timed.
constexpr int kWarmUpPasses = 3;
// What autograd keeps of a layer for its backward, as a multiple of its
// output: a conv's output before its pool, its activation's, the pool's
// indices.
constexpr int64_t kStashPerOutput = 4;

struct LayerTiming {
  double forward_s = 0;   // one pass over the input
  double backward_s = 0;
  torch::Tensor output;   // the next layer's input
};

// `between` runs, untimed by the passes, after each: what a device does
// between two steps' passes of a layer.
LayerTiming TimeLayer(torch::nn::Sequential& net, const torch::Tensor& input, const Clock& clock, int repetitions,
                      const std::function<void()>& between) {
  std::vector<torch::Tensor> wrt = net->parameters();
  if (input.requires_grad()) wrt.push_back(input);
  std::vector<double> forward, backward;
  torch::Tensor output;
  for (int pass = 0; pass <= repetitions; ++pass) {  // pass 0 warms up: allocations, lazy init
    const TimePoint began = clock.Now();
    output = net->forward(input);
    const TimePoint forwarded = clock.Now();
    const torch::Tensor upstream = torch::randn_like(output);
    const TimePoint backward_began = clock.Now();
    // allow_unused: a module's spare head or auxiliary layer that its forward
    // does not use has no gradient, and trains fine; without it the profile
    // failed, and with it `auto` and every pipeline (found in review).
    if (!wrt.empty()) {
      torch::autograd::grad({output}, wrt, {upstream}, /*retain_graph=*/c10::nullopt, /*create_graph=*/false,
                            /*allow_unused=*/true);
    }
    const TimePoint backwarded = clock.Now();
    between();
    if (pass == 0) continue;
    forward.push_back(ToSeconds(forwarded - began));
    backward.push_back(ToSeconds(backwarded - backward_began));
  }
  return {Median(forward), Median(backward), output.detach()};
}

// The optimizer's step over a layer's weights, as a stage's Commit takes it:
// by layer, on a copy of the weights laid end to end and a gradient of random
// values, its state growing from nothing as a job's does. Stepped between the
// layer's timed passes, as a stage steps between its steps' passes: the
// passes then find the caches as a step leaves them (the weights, their
// gradient and Adam's two moments streamed through), not as a loop of passes
// alone keeps them.
class LayerOptimizer {
 public:
  LayerOptimizer(torch::nn::Sequential& net, const OptimizerSpec& spec) {
    std::vector<std::vector<int64_t>> shapes;
    for (const auto& p : net->parameters()) {
      shapes.push_back(p.sizes().vec());
      const torch::Tensor flat = p.detach().contiguous().view(-1);
      params_.insert(params_.end(), flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
    }
    const torch::Tensor noise = torch::randn({static_cast<int64_t>(params_.size())}) * 1e-3;
    gradient_.assign(noise.data_ptr<float>(), noise.data_ptr<float>() + noise.numel());
    layout_ = std::make_unique<RowLayout>(shapes, SyncGranularity::kLayer);
    optimizer_ = std::make_unique<RowOptimizer>(spec, *layout_);
  }

  // One step, timed; the first (the state's allocation) is not kept.
  void Step(const Clock& clock) {
    const TimePoint began = clock.Now();
    for (size_t r = 0; r < layout_->size(); ++r) {
      const RowSpan& row = layout_->row(r);
      const size_t offset = static_cast<size_t>(row.offset), length = static_cast<size_t>(row.length);
      optimizer_->Apply(r, std::span<float>(params_).subspan(offset, length),
                        std::span<const float>(gradient_).subspan(offset, length));
    }
    const TimePoint ended = clock.Now();
    if (warmed_) steps_.push_back(ToSeconds(ended - began));
    warmed_ = true;
  }
  double Seconds() const { return steps_.empty() ? 0 : Median(steps_); }

 private:
  std::vector<float> params_, gradient_;
  std::unique_ptr<RowLayout> layout_;
  std::unique_ptr<RowOptimizer> optimizer_;
  std::vector<double> steps_;
  bool warmed_ = false;
};

Status CheckOptions(const LayerProfileOptions& o) {
  if (o.batch_size < 1) return InvalidArgumentError("layer profile: batch_size must be >= 1");
  if (o.repetitions < 1) return InvalidArgumentError("layer profile: repetitions must be >= 1");
  if (o.intra_op_threads < 1) return InvalidArgumentError("layer profile: intra_op_threads must be >= 1");
  // As a plan's: a device faster than this one cannot be emulated by sleeping.
  if (!(o.slowdown >= 1) || !std::isfinite(o.slowdown)) {
    return InvalidArgumentError("layer profile: slowdown must be >= 1 (got " + std::to_string(o.slowdown) + ")");
  }
  return Status::Ok();
}

// Passes through `stage` as the runtime runs a stage: its forward, then its
// backward (from the loss when the stage is the model's last, else from a
// gradient of its output), each a median over `repetitions` at each of
// `sizes`, `between` run untimed before each, as layer passes on a device
// of `options.slowdown`; none at a size it cannot train on (a BatchNorm1d on
// one sample).
std::vector<LayerPass> TimeStagePasses(StageTrainer& stage, const DatasetInfo& data,
                                       const LayerProfileOptions& options, const std::vector<int>& sizes,
                                       const Clock& clock, const std::function<void()>& between) {
  const int largest = sizes.empty() ? 0 : sizes.back();
  const torch::Tensor inputs = torch::rand({largest, stage.InputSize()});
  const torch::Tensor gradients = torch::randn({largest, stage.OutputSize()}) * 1e-3;
  const torch::Tensor classes = torch::randint(std::max(1, data.classes), {largest}, torch::kLong);
  const std::span<const float> input(inputs.data_ptr<float>(), static_cast<size_t>(inputs.numel()));
  const std::span<const float> gradient(gradients.data_ptr<float>(), static_cast<size_t>(gradients.numel()));
  const std::span<const int64_t> labels(classes.data_ptr<int64_t>(), static_cast<size_t>(classes.numel()));
  std::vector<LayerPass> out;
  int64_t id = 0;
  for (int samples : sizes) {
    const auto n = static_cast<size_t>(samples);
    std::vector<double> forward, backward;
    bool trains = true;
    for (int pass = 0; pass <= options.repetitions && trains; ++pass) {  // pass 0 warms up
      between();
      const TimePoint began = clock.Now();
      TimePoint forwarded = began;
      Status ran = InternalError("not run");
      try {
        const auto outputs = stage.Forward(id, input.subspan(0, n * static_cast<size_t>(stage.InputSize())));
        forwarded = clock.Now();
        if (!outputs.ok()) {
          ran = outputs.status();
        } else if (stage.IsLast()) {
          ran = stage.BackwardFromLoss(id, labels.subspan(0, n), 1.0).status();
        } else {
          ran = stage.Backward(id, gradient.subspan(0, n * static_cast<size_t>(stage.OutputSize()))).status();
        }
      } catch (const std::exception& e) {  // a user's module raising on so few samples
        ran = InvalidArgumentError(e.what());
      }
      const TimePoint backwarded = clock.Now();
      ++id;
      if (!ran.ok()) {
        stage.DropInFlight();
        trains = false;
      } else if (pass > 0) {
        forward.push_back(ToSeconds(forwarded - began));
        backward.push_back(ToSeconds(backwarded - forwarded));
      }
    }
    stage.ZeroGradients();
    if (trains) out.push_back({samples, Median(forward) * options.slowdown, Median(backward) * options.slowdown});
  }
  return out;
}

}  // namespace

std::vector<int> PassSizes(int batch) {
  std::vector<int> sizes;
  for (int samples = 1; samples < batch; samples *= 2) sizes.push_back(samples);
  sizes.push_back(batch);
  return sizes;
}

StatusOr<std::vector<LayerCost>> ProfileLayers(const ModelSpec& spec, const DatasetInfo& data,
                                               const LayerProfileOptions& options, StagePassCost* stage) {
  EDGETRAIN_RETURN_IF_ERROR(CheckOptions(options));
  const RealClock real;
  const Clock& clock = options.clock ? *options.clock : real;
  // What was being timed, for an error: a user's module raising said only
  // "a layer of the module raised" (a user's trial).
  std::string timing;
  try {
    torch::set_num_threads(options.intra_op_threads);
    torch::manual_seed(options.seed);
    EDGETRAIN_ASSIGN_OR_RETURN(std::vector<ModelLayer> layers, BuildLayers(spec, data));
    // Images in [0, 1), as the agents scale theirs.
    std::vector<int64_t> shape = FirstLayerSampleShape(options.sample_shape, data);
    shape.insert(shape.begin(), options.batch_size);
    torch::Tensor input = torch::rand(shape);
    std::vector<LayerCost> costs;
    for (size_t i = 0; i < layers.size(); ++i) {
      ModelLayer& layer = layers[i];
      layer.net->train();
      LayerCost cost;
      cost.name = layer.name;
      cost.cannot_cut = layer.cannot_cut;
      torch::Tensor output;
      std::optional<LayerOptimizer> optimizer;
      const bool weighted = !layer.net->parameters().empty();
      if (options.optimizer && weighted) optimizer.emplace(layer.net, *options.optimizer);
      const std::function<void()> between = [&] {
        if (optimizer) optimizer->Step(clock);
      };
      // The first passes pay for growing the heap to what they hold and for
      // lazy initialisation, for several passes, not one: the first layer's
      // 1-sample backward, timed first, measured 2.8-3.6 ms against
      // 0.13-0.2 ms once warm (an MLP's fc1, a new user's trial). The layer
      // at the whole batch first, untimed: what its timed passes hold at
      // most, and no more (a whole model's activations at once would not fit
      // where a model is split for want of memory; found in review).
      timing = "layer " + std::to_string(i) + " (" + layer.name + "), a pass of " +
               CountOf(options.batch_size, "sample", "samples");
      {
        const torch::Tensor whole = input.detach().requires_grad_(i > 0);
        (void)TimeLayer(layer.net, whole, clock, kWarmUpPasses, [] {});
      }
      for (int samples : PassSizes(options.batch_size)) {
        // Nothing upstream of the first layer wants the gradient of the images.
        const torch::Tensor part = input.narrow(0, 0, samples).detach().requires_grad_(i > 0);
        LayerTiming timing;
        try {
          timing = TimeLayer(layer.net, part, clock, options.repetitions, between);
        } catch (const std::exception&) {
          // A layer that cannot train on so few samples (a user's
          // BatchNorm1d, on one: "Expected more than 1 value per channel")
          // is timed on the sizes it takes; the cost model scales the
          // smallest of them down (core/pipeline_cost.h). The agent aborted
          // on it (a user's trial). At the whole batch it is the job's error.
          if (samples == options.batch_size) throw;
          continue;
        }
        cost.passes.push_back(
            {samples, timing.forward_s * options.slowdown, timing.backward_s * options.slowdown});
        output = std::move(timing.output);
      }
      // The figures a sample, in a pass over the whole batch (the last timed).
      cost.forward_s = cost.passes.back().forward_s / options.batch_size;
      cost.backward_s = cost.passes.back().backward_s / options.batch_size;
      for (const auto& p : layer.net->parameters()) cost.parameter_bytes += kFloatBytes * p.numel();
      if (optimizer) cost.optimizer_s = optimizer->Seconds() * options.slowdown;
      cost.activation_bytes = kFloatBytes * (output.numel() / options.batch_size);
      costs.push_back(std::move(cost));
      input = output;
    }
    timing = "the layers chained, as a stage runs them";
    if (options.chained) {
      // The chain holds every layer's activations at once, where the layers
      // timed one by one held one layer's: only the sizes whose stash stays
      // under chain_stash_bytes are chained. And the layers timed one by one
      // go first: the chain is a second model.
      layers.clear();
      input = torch::Tensor();
      int64_t stash_per_sample = 0;
      for (const LayerCost& c : costs) stash_per_sample += kStashPerOutput * c.activation_bytes;
      const std::vector<int> all = PassSizes(options.batch_size);
      // The sizes ascend: those chained are the first of them. A size a layer
      // cannot train on (a BatchNorm1d on one sample) comes back as none.
      std::vector<int> sizes;
      for (int samples : all) {
        if (stash_per_sample * samples <= options.chain_stash_bytes) sizes.push_back(samples);
      }
      // The chain back to back, as a device that does not pause runs it;
      // what a pause adds is timed on the stage's own passes, below.
      const int count = static_cast<int>(costs.size());
      auto trainer = [&](int first) {
        return CreateStageTrainer({spec, data, options.seed, options.intra_op_threads, first, count,
                                   options.sample_shape});
      };
      EDGETRAIN_ASSIGN_OR_RETURN(std::unique_ptr<StageTrainer> chain, trainer(0));
      const std::vector<LayerPass> chained = TimeStagePasses(*chain, data, options, sizes, clock, [] {});
      // The last layer alone as a stage, back to back and each pass after a
      // pause, as an emulated device's sleep leaves it: with the loss, as
      // the last stage of any plan has it (a stage elsewhere copies a
      // gradient in instead, alike). A model of one layer (a module taken
      // whole) is its own chain: neither loaded nor timed back to back again.
      std::unique_ptr<StageTrainer> alone = std::move(chain);
      if (count > 1) {
        alone.reset();
        EDGETRAIN_ASSIGN_OR_RETURN(alone, trainer(count - 1));
      }
      const std::function<void()> pause = [&] {
        if (options.pause_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(options.pause_s));
      };
      StagePassCost own;
      own.back_to_back = StageOwnPasses(
          costs.back(), count > 1 ? TimeStagePasses(*alone, data, options, sizes, clock, [] {}) : chained);
      own.passes = StageOwnPasses(costs.back(), TimeStagePasses(*alone, data, options, sizes, clock, pause));
      own.pause_s = options.pause_s;
      ScaleToTheChain(costs, chained, own);
      if (stage) *stage = std::move(own);
    }
    return costs;
  } catch (const c10::Error& e) {
    return InternalError("layer profile failed: " + timing + ": " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    // A user's module raising in its forward (torch::jit::JITException):
    // said, where it aborted the agent.
    return InvalidArgumentError("layer profile failed: a layer of the module raised, timing " + timing + ": " +
                                ErrorReason(e));
  }
}

}  // namespace edgetrain::agent

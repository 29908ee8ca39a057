#pragma once
// One pipeline stage's share of a model: layers [first_layer, end_layer) of
// BuildLayers (agent/torch/models.h), trained one micro-batch at a time.
// Like trainer.h, a door to LibTorch that lets no torch type or exception
// through: callers see float arrays, spans and Status.
//
// A step of the synchronous pipeline (1F1B, flushed every step) is, on every
// stage, Forward of each of its micro-batches and, in any interleaving, the
// backward of each (BackwardFromLoss on the last stage, Backward elsewhere).
// The parameters' gradients sum over the step's micro-batches, each scaled by
// its share of the batch, so the step's gradient is the whole batch's: the
// pipeline trains as the whole-model Trainer does on one device.
//
// Not thread-safe: one stage's schedule runs on one thread.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/dataset_info.h"
#include "core/job_spec.h"
#include "core/status.h"

namespace edgetrain::agent {

struct StageTrainerOptions {
  ModelSpec model;
  DatasetInfo data;
  // The whole model's seed: every stage builds all the layers with it, as
  // CreateTrainer does, and keeps its own, so its initial weights are the
  // whole model's slice.
  uint64_t seed = 0;
  int intra_op_threads = 1;
  int first_layer = 0;  // the stage runs layers [first_layer, end_layer) of BuildLayers
  int end_layer = 0;
  // One sample's shape as the first layer takes it (core/dataset_info.h's
  // SampleShape); empty means [channels, height, width] of `data`. Only a
  // TorchScript model needs it: the built-in ones reshape for themselves.
  std::vector<int> sample_shape = {};
};

struct LossAndInputGradient {
  double loss = 0;                    // the micro-batch's mean cross-entropy, unscaled
  std::vector<float> input_gradient;  // n x InputSize(); empty on the first stage
};

class StageTrainer {
 public:
  virtual ~StageTrainer() = default;

  // What flows in and out per sample, without the batch dim: the first stage
  // takes images ({channels, height, width}, laid out as Dataset features), the
  // others the previous layer's output; the last stage gives the logits
  // ({classes}). Between stages activations travel flat, sample after sample.
  virtual std::vector<int64_t> InputShape() const = 0;
  virtual std::vector<int64_t> OutputShape() const = 0;
  // Floats per sample: the products of those shapes.
  virtual int64_t InputSize() const = 0;
  virtual int64_t OutputSize() const = 0;
  virtual bool IsFirst() const = 0;  // takes images: no input gradient to send upstream
  virtual bool IsLast() const = 0;   // gives logits: its backward starts from the loss

  // Forward of micro-batch `id` (any key the caller picks, unique among those in
  // flight) on input.size() / InputSize() samples. Keeps what its backward needs
  // until then. Returns the output, n x OutputSize() floats: the logits on the
  // last stage. FailedPrecondition when the input is not a whole, positive
  // number of samples or `id` is already in flight: the caller's misuse.
  //
  // InvalidArgument from a pass is a user's module raising on it alone (its
  // own code, ModuleFailed's words), which the stage tells its head as the
  // job's fault (agent/pipeline/stage_runner.cc); a built-in layer's failure
  // is Internal.
  virtual StatusOr<std::vector<float>> Forward(int64_t id, std::span<const float> input) = 0;

  // Last stage only: the mean cross-entropy of micro-batch `id` against its n
  // labels, scaled by `scale` before backward through the stage. The caller
  // passes micro-batch size / batch size, so the gradients summed over a step's
  // micro-batches are the whole batch's mean-loss gradient.
  virtual StatusOr<LossAndInputGradient> BackwardFromLoss(int64_t id, std::span<const int64_t> labels,
                                                          double scale) = 0;

  // Any stage but the last: backward of micro-batch `id` from the gradient of
  // its output (n x OutputSize() floats, as the next stage's BackwardFromLoss or
  // Backward returned). Returns the gradient of its input, n x InputSize()
  // floats, or nothing on the first stage, which has no one to send it to and
  // does not compute it.
  //
  // Both backwards add to Gradients() and end the micro-batch.
  // FailedPrecondition for an id not in flight, arrays of the wrong size or
  // labels outside the classes (the micro-batch stays in flight); a failure
  // inside LibTorch drops the micro-batch.
  virtual StatusOr<std::vector<float>> Backward(int64_t id, std::span<const float> output_gradient) = 0;

  // Micro-batches forwarded and not yet backwarded: what the stage holds.
  virtual int InFlight() const = 0;
  // Forgets every micro-batch in flight, unbackwarded: a step abandoned to be
  // replayed without a lost device.
  virtual void DropInFlight() = 0;

  // The stage's parameters as one flat vector, tensor after tensor in the order
  // of ParameterShapes(): every stage's, concatenated in stage order, are the
  // whole model's Trainer::Parameters(). Read in place: writing here changes
  // the model.
  virtual std::span<float> Parameters() = 0;
  // Their gradient summed over every backward since ZeroGradients(), in the
  // same layout.
  virtual std::span<const float> Gradients() const = 0;
  virtual void ZeroGradients() = 0;
  virtual std::vector<std::vector<int64_t>> ParameterShapes() const = 0;
  virtual int64_t ParameterCount() const = 0;
};

// Builds the stage, with the weights CreateTrainer gives the same (model,
// data, seed). InvalidArgument when the model cannot fit the data or the
// layer range is empty or outside the model's layers.
StatusOr<std::unique_ptr<StageTrainer>> CreateStageTrainer(const StageTrainerOptions& options);

// How many layers BuildLayers gives `model` on `data`: the end_layer of the
// last stage. InvalidArgument when the model cannot fit the data.
StatusOr<int> CountLayers(const ModelSpec& model, const DatasetInfo& data);

}  // namespace edgetrain::agent

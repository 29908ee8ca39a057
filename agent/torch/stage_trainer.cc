#include "agent/torch/stage_trainer.h"

#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <string>

#include "agent/torch/flat_parameters.h"
#include "agent/torch/models.h"
#include "agent/torch/torchscript_trainer.h"

namespace edgetrain::agent {
namespace {

int64_t Product(const std::vector<int64_t>& dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}

std::vector<float> ToVector(const torch::Tensor& t) {
  torch::Tensor contiguous = t.detach().contiguous();
  const float* data = contiguous.data_ptr<float>();
  return {data, data + contiguous.numel()};
}

// The per-sample shape of what enters layer `first` and leaves layer `end` - 1,
// found by running one blank image through the layers up to `end`: the layers
// themselves are the one definition of every shape.
struct StageShapes {
  std::vector<int64_t> input, output;
};
StageShapes MeasureShapes(std::span<ModelLayer> layers, const StageTrainerOptions& options, size_t first,
                          size_t end) {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> sample = FirstLayerSampleShape(options.sample_shape, options.data);
  sample.insert(sample.begin(), 1);
  torch::Tensor x = torch::zeros(sample);
  StageShapes shapes;
  for (size_t i = 0; i < end; ++i) {
    if (i == first) shapes.input = x.sizes().slice(1).vec();
    // In eval mode: a batch norm trains on no single sample (a user's
    // BatchNorm1d aborted the agent), and one image's blank pass moves none
    // of its running statistics.
    const bool training = layers[i].net->is_training();
    layers[i].net->eval();
    x = layers[i].net->forward(x);
    layers[i].net->train(training);
  }
  shapes.output = x.sizes().slice(1).vec();
  return shapes;
}

// What a micro-batch's backward needs from its forward.
struct Stashed {
  int64_t samples = 0;
  torch::Tensor input;   // a leaf; requires grad past the first stage
  torch::Tensor output;  // the end of its autograd graph
};

class TorchStageTrainer final : public StageTrainer {
 public:
  TorchStageTrainer(torch::nn::Sequential net, StageShapes shapes, bool first, bool last, int64_t classes,
                    bool users_module)
      : net_(std::move(net)),
        shapes_(std::move(shapes)),
        first_(first),
        last_(last),
        users_module_(users_module),
        classes_(classes),
        input_size_(Product(shapes_.input)),
        output_size_(Product(shapes_.output)) {
    net_->train();
    parameters_ = FlattenParameters(*net_);
    gradients_ = FlattenGradients(*net_);
  }

  std::vector<int64_t> InputShape() const override { return shapes_.input; }
  std::vector<int64_t> OutputShape() const override { return shapes_.output; }
  int64_t InputSize() const override { return input_size_; }
  int64_t OutputSize() const override { return output_size_; }
  bool IsFirst() const override { return first_; }
  bool IsLast() const override { return last_; }

  StatusOr<std::vector<float>> Forward(int64_t id, std::span<const float> input) override {
    const int64_t floats = static_cast<int64_t>(input.size());
    if (floats == 0 || floats % input_size_ != 0) {
      return FailedPreconditionError("forward of micro-batch " + std::to_string(id) + ": " + std::to_string(floats) +
                                     " floats of input are not a whole number of samples of " +
                                     std::to_string(input_size_));
    }
    if (stash_.contains(id)) {
      return FailedPreconditionError("forward of micro-batch " + std::to_string(id) +
                                     ": it is already in flight (each id once until its backward)");
    }
    const int64_t n = floats / input_size_;
    try {
      // A copy, not a view of the caller's floats: autograd keeps the input
      // for the backward, long after the caller's buffer is gone.
      torch::Tensor x = torch::from_blob(const_cast<float*>(input.data()), Batched(shapes_.input, n)).clone();
      // The first stage's input is images: nothing upstream wants their gradient.
      if (!first_) x.requires_grad_(true);
      torch::Tensor y = net_->forward(x);
      // Activations cross the links as float32: a layer that ends in another
      // floating type (a user's .double()) is cast, the cast in the graph so
      // that the gradient comes back through it. It failed as the module's
      // own code, where data parallelism trains it (found in review).
      if (y.is_floating_point() && y.scalar_type() != torch::kFloat32) y = y.to(torch::kFloat32);
      std::vector<float> output = ToVector(y);
      stash_.emplace(id, Stashed{n, std::move(x), std::move(y)});
      return output;
    } catch (const std::exception& e) {
      return PassFailed("forward of micro-batch " + std::to_string(id), e, n);
    }
  }

  StatusOr<LossAndInputGradient> BackwardFromLoss(int64_t id, std::span<const int64_t> labels,
                                                  double scale) override {
    if (!last_) {
      return FailedPreconditionError("backward of micro-batch " + std::to_string(id) +
                                     " from the loss: only the last stage has logits; this one takes its "
                                     "output's gradient (Backward)");
    }
    EDGETRAIN_ASSIGN_OR_RETURN(Stashed * stashed, Find(id));
    if (static_cast<int64_t>(labels.size()) != stashed->samples) {
      return FailedPreconditionError("backward of micro-batch " + std::to_string(id) + ": " +
                                     std::to_string(labels.size()) + " labels for " +
                                     std::to_string(stashed->samples) + " samples");
    }
    for (int64_t label : labels) {
      if (label < 0 || label >= classes_) {
        return FailedPreconditionError("backward of micro-batch " + std::to_string(id) + ": label " +
                                       std::to_string(label) + " outside the " + std::to_string(classes_) +
                                       " classes");
      }
    }
    Stashed batch = Take(id);
    try {
      torch::Tensor y = torch::from_blob(const_cast<int64_t*>(labels.data()), {batch.samples}, torch::kInt64);
      torch::Tensor loss = torch::nn::functional::cross_entropy(batch.output, y);
      (loss * scale).backward();
      LossAndInputGradient result{loss.item<double>(), InputGradient(batch)};
      KeepGradientsFlat(*net_, gradients_);
      return result;
    } catch (const std::exception& e) {
      return PassFailed("backward of micro-batch " + std::to_string(id), e, batch.samples);
    }
  }

  StatusOr<std::vector<float>> Backward(int64_t id, std::span<const float> output_gradient) override {
    if (last_) {
      return FailedPreconditionError("backward of micro-batch " + std::to_string(id) +
                                     ": the last stage's backward starts from the loss (BackwardFromLoss)");
    }
    EDGETRAIN_ASSIGN_OR_RETURN(Stashed * stashed, Find(id));
    const int64_t want = stashed->samples * output_size_;
    if (static_cast<int64_t>(output_gradient.size()) != want) {
      return FailedPreconditionError("backward of micro-batch " + std::to_string(id) + ": " +
                                     std::to_string(output_gradient.size()) + " floats of output gradient for " +
                                     std::to_string(stashed->samples) + " samples of " + std::to_string(output_size_));
    }
    Stashed batch = Take(id);
    try {
      torch::Tensor upstream = torch::from_blob(const_cast<float*>(output_gradient.data()),
                                                Batched(shapes_.output, batch.samples));
      // A first stage without weights (a scripted model's Flatten, say) has
      // nothing to learn and nobody upstream: its output is no graph's end.
      if (batch.output.requires_grad()) batch.output.backward(upstream);
      std::vector<float> input_gradient = InputGradient(batch);
      KeepGradientsFlat(*net_, gradients_);
      return input_gradient;
    } catch (const std::exception& e) {
      return PassFailed("backward of micro-batch " + std::to_string(id), e, batch.samples);
    }
  }

  int InFlight() const override { return static_cast<int>(stash_.size()); }
  void DropInFlight() override { stash_.clear(); }

  std::span<float> Parameters() override {
    return {parameters_.data_ptr<float>(), static_cast<size_t>(parameters_.numel())};
  }
  std::span<const float> Gradients() const override {
    return {gradients_.data_ptr<float>(), static_cast<size_t>(gradients_.numel())};
  }
  void ZeroGradients() override { gradients_.zero_(); }

  std::vector<std::vector<int64_t>> ParameterShapes() const override {
    std::vector<std::vector<int64_t>> shapes;
    for (const auto& p : net_->parameters()) shapes.push_back(p.sizes().vec());
    return shapes;
  }
  int64_t ParameterCount() const override { return parameters_.numel(); }

 private:
  static std::vector<int64_t> Batched(const std::vector<int64_t>& sample, int64_t n) {
    std::vector<int64_t> dims{n};
    dims.insert(dims.end(), sample.begin(), sample.end());
    return dims;
  }

  // A pass that threw. A user's module's layers raise what its own code
  // does (a BatchNorm given one sample, a reshape a share's size cannot
  // take): the job's fault, as ModuleFailed says, which no other device
  // would compute otherwise. A scripted layer's raise is no c10::Error, and
  // escaped: the agent aborted, and the head, taking it for a lost device,
  // had the next device of its group compute its shares and abort alike (a
  // user's trial). A built-in layer's is this runtime's fault.
  Status PassFailed(const std::string& pass, const std::exception& e, int64_t samples) const {
    if (users_module_) return ModuleFailed(pass + " failed", e, samples);
    return InternalError(pass + " failed: " + ErrorReason(e));
  }

  StatusOr<Stashed*> Find(int64_t id) {
    auto it = stash_.find(id);
    if (it == stash_.end()) {
      return FailedPreconditionError("backward of micro-batch " + std::to_string(id) + ": it is not in flight (" +
                                     std::to_string(stash_.size()) + " are; was it forwarded, or backwarded already?)");
    }
    return &it->second;
  }

  Stashed Take(int64_t id) {
    auto node = stash_.extract(id);
    return std::move(node.mapped());
  }

  std::vector<float> InputGradient(const Stashed& batch) const {
    if (first_) return {};
    const torch::Tensor& grad = batch.input.grad();
    // A stage whose output does not depend on its input has none (no built-in
    // model has such a stage); its upstream still expects n x InputSize().
    if (!grad.defined()) return std::vector<float>(static_cast<size_t>(batch.samples * input_size_), 0.0f);
    return ToVector(grad);
  }

  torch::nn::Sequential net_;
  StageShapes shapes_;
  bool first_, last_;
  bool users_module_;  // layers of a TorchScript module: a raise in them is its own
  int64_t classes_;
  int64_t input_size_, output_size_;
  torch::Tensor parameters_;  // every parameter's storage, tensor after tensor
  torch::Tensor gradients_;   // every parameter's grad, in the same layout
  std::map<int64_t, Stashed> stash_;
};

Status CheckLayerRange(const StageTrainerOptions& o, size_t layers) {
  if (o.first_layer < 0 || o.end_layer > static_cast<int64_t>(layers) || o.first_layer >= o.end_layer) {
    return InvalidArgumentError("stage layers [" + std::to_string(o.first_layer) + ", " + std::to_string(o.end_layer) +
                                ") are not a non-empty range of the model's " + std::to_string(layers) +
                                " layers [0, " + std::to_string(layers) + ")");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<StageTrainer>> CreateStageTrainer(const StageTrainerOptions& options) {
  if (options.intra_op_threads < 1) return InvalidArgumentError("stage: intra_op_threads must be >= 1");
  try {
    torch::set_num_threads(options.intra_op_threads);
    // Every layer built, in order, from the whole model's seed, as CreateTrainer
    // builds them: each takes its weights from the same point of the random
    // stream, so the stage's are the whole model's.
    torch::manual_seed(options.seed);
    EDGETRAIN_ASSIGN_OR_RETURN(std::vector<ModelLayer> layers, BuildLayers(options.model, options.data));
    EDGETRAIN_RETURN_IF_ERROR(CheckLayerRange(options, layers.size()));
    const auto first = static_cast<size_t>(options.first_layer);
    const auto end = static_cast<size_t>(options.end_layer);
    StageShapes shapes = MeasureShapes(layers, options, first, end);
    torch::nn::Sequential net = Chain(std::span<const ModelLayer>(layers).subspan(first, end - first));
    return std::unique_ptr<StageTrainer>(std::make_unique<TorchStageTrainer>(
        std::move(net), std::move(shapes), first == 0, end == layers.size(), options.data.classes,
        options.model.kind == ModelKind::kTorchScript));
  } catch (const std::exception& e) {
    // The shapes are measured on one sample through the layers: a user's
    // module that cannot take it fails as its own code.
    if (options.model.kind == ModelKind::kTorchScript) return ModuleFailed("cannot build the stage", e, 1);
    return InternalError(std::string("cannot build the stage: ") + ErrorReason(e));
  }
}

StatusOr<int> CountLayers(const ModelSpec& model, const DatasetInfo& data) {
  try {
    EDGETRAIN_ASSIGN_OR_RETURN(std::vector<ModelLayer> layers, BuildLayers(model, data));
    return static_cast<int>(layers.size());
  } catch (const c10::Error& e) {
    return InternalError(std::string("cannot build the model: ") + e.what_without_backtrace());
  }
}

}  // namespace edgetrain::agent

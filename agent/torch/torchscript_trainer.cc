#include "agent/torch/torchscript_trainer.h"

#include <torch/csrc/jit/frontend/error_report.h>
#include <torch/script.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <new>
#include <set>
#include <sstream>

#include "agent/storage/archive_integrity.h"
#include "agent/storage/atomic_file.h"
#include "agent/torch/batch_passes.h"
#include "agent/torch/flat_parameters.h"
#include "agent/torch/models.h"
#include "core/number_text.h"

namespace edgetrain::agent {
namespace {

constexpr const char* kPath = "spec.model.torchscript.path";
constexpr const char* kModel = "spec.model.torchscript";

std::string ShapeText(c10::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// As a manifest gives it: "cnn with channels [16, 32]".
std::string BuiltInModelText(const ModelSpec& spec) {
  const std::vector<int>& sizes = spec.kind == ModelKind::kMlp   ? spec.hidden
                                  : spec.kind == ModelKind::kCnn ? spec.channels
                                                                 : spec.widths;
  const char* field = spec.kind == ModelKind::kMlp ? "hidden" : spec.kind == ModelKind::kCnn ? "channels" : "widths";
  std::string text = std::string(NameOf(spec.kind)) + " with " + field + " [";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

StatusOr<torch::jit::Module> LoadModule(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return InvalidArgumentError(std::string(kPath) + ": no file at " + path);
  // A module whose bytes were altered loads, and trains or scores as they now
  // are (agent/storage/archive_integrity.h).
  if (Status intact = CheckArchiveIntegrity(path); intact.code() == StatusCode::kDataLoss) {
    return InvalidArgumentError(std::string(kPath) + ": " + intact.message());
  }
  torch::jit::Module module;
  try {
    module = torch::jit::load(path, torch::kCPU);
  } catch (const torch::jit::ErrorReport& e) {
    // TorchScript whose code names what this LibTorch lacks (an operator of
    // a newer PyTorch): it was told to save what it had saved, with no
    // reason (the report's text begins with a newline; found in review).
    std::string why = ErrorReason(e);
    if (!why.empty() && why.back() == '.') why.pop_back();  // a semicolon follows
    return InvalidArgumentError(std::string(kPath) + ": " + path + " is TorchScript whose code this LibTorch (" +
                                TORCH_VERSION + ") cannot compile: " + why +
                                "; save it from PyTorch " + TORCH_VERSION + ", or without what that names");
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string(kPath) + ": " + path +
                                " is not a TorchScript module (save one with torch.jit.save(torch.jit.script(model), "
                                "path)): " + ErrorReason(e));
  }
  if (!module.find_method("forward")) {
    // A built-in model's model.pt, which edgetrain saves without code, is
    // named as such: "save the scripted module itself" is no help to a user
    // who gave a run's own output (a user's trial).
    if (StatusOr<ModelSpec> builtin = ReadModelSpec(path); builtin.ok()) {
      return InvalidArgumentError(std::string(kPath) + ": " + path + " is a built-in model edgetrain saved, " +
                                  BuiltInModelText(*builtin) +
                                  ": its parameters without code (docs/using-the-model.md), not a module; train "
                                  "that model with spec.model.name and its sizes in place of spec.model.torchscript");
    }
    return InvalidArgumentError(std::string(kPath) + ": " + path +
                                " has no forward method: it holds weights, not a module; save the scripted or "
                                "traced module itself with torch.jit.save");
  }
  return module;
}

// The loss is cross-entropy on logits, a log-softmax of its own: a module
// whose forward ends in a softmax trains on the log of probabilities, its
// gradients flattened wherever one class is sure, and learns slower and
// worse, with no error to show (a user's module so ended at 0.828). Rows each
// in [0, 1] and summing to 1 are that; logits so by chance, on both rows of
// the check batch, are not to be expected.
std::string ProbabilitiesCaution(const torch::Tensor& out) {
  const torch::Tensor rows = out.to(torch::kFloat64);
  const bool in_unit = rows.min().item<double>() >= 0 && rows.max().item<double>() <= 1;
  if (!in_unit || !torch::allclose(rows.sum(1), torch::ones({rows.size(0)}, torch::kFloat64), 0, 1e-4)) return {};
  return std::string(kModel) + ": its forward returns probabilities (each row in [0, 1], summing to 1), where the "
         "loss takes logits and applies the softmax itself: it trains on a softmax of a softmax, slower and to a "
         "worse model; return the scores before the softmax (torch.argmax of either gives the same class)";
}

// The module's trainable parameters in parameters() order, each tensor once:
// a weight two layers share (an embedding tied to its output layer) is
// listed twice, and a team sent and stepped it twice, 8,970 floats for a
// module of 4,874 (found in review).
std::vector<torch::Tensor> TrainableOnce(const torch::jit::Module& module) {
  std::vector<torch::Tensor> once;
  std::set<const c10::TensorImpl*> seen;
  for (const torch::Tensor& p : module.parameters()) {
    if (p.requires_grad() && seen.insert(p.unsafeGetTensorImpl()).second) once.push_back(p);
  }
  return once;
}

class TorchScriptTrainer final : public Trainer {
 public:
  TorchScriptTrainer(torch::jit::Module module, std::vector<int64_t> sample_shape, int classes)
      : module_(std::move(module)), sample_shape_(std::move(sample_shape)), classes_(classes) {}

  bool HoldsBuffers() const override { return module_.buffers(/*recurse=*/true).size() > 0; }

  // What the job needs of the module, checked once, before any training.
  Status Check() {
    for (const torch::Tensor& p : module_.parameters()) {
      if (p.scalar_type() != torch::kFloat32) {
        return InvalidArgumentError(std::string(kModel) + ": a parameter of shape " + ShapeText(p.sizes()) +
                                    " holds " + std::string(c10::toString(p.scalar_type())) +
                                    "; edgetrain trains float32 (call model.float() before saving)");
      }
    }
    trainable_ = TrainableOnce(module_);
    if (trainable_.empty()) {
      return InvalidArgumentError(std::string(kModel) + ": the module has no trainable parameters");
    }
    torch::Tensor out;
    std::vector<int64_t> batch_shape = {2};
    batch_shape.insert(batch_shape.end(), sample_shape_.begin(), sample_shape_.end());
    try {
      torch::NoGradGuard no_grad;
      module_.eval();
      const c10::IValue returned = module_.forward({torch::zeros(batch_shape)});
      // Said as what it returned, not as a forward that failed (a user's
      // module returning (logits, features) read "its forward fails").
      if (!returned.isTensor()) {
        return InvalidArgumentError(std::string(kModel) + ": its forward returns a " + returned.tagKind() +
                                    ", expected one tensor of logits: return the logits alone (a wrapper module "
                                    "whose forward picks them out of what it returns, scripted, will do)");
      }
      out = returned.toTensor();
    } catch (const std::exception& e) {
      // A forward of several inputs: edgetrain passes one, a batch of samples.
      const std::string why = ErrorReason(e);
      // Else, which of the manifest's fields gives the samples' shape (a new
      // user's trial asked for it).
      const std::string hint = why.find("missing value for argument") != std::string::npos
                                   ? " (edgetrain calls forward with one tensor, a batch of samples: a module of "
                                     "several inputs needs a wrapper that takes one)"
                                   : " (a sample's shape is spec.data.inputShape, or a built-in set's [channels, "
                                     "height, width]: a model that takes another needs inputShape changed, or a "
                                     "wrapper that reshapes)";
      // The batch's size said, as the 2 shows in PyTorch's shapes: a user
      // read "expected input[1, 2, 96] to have 3 channels, but got 2" as 2
      // channels of the data's.
      return InvalidArgumentError(std::string(kModel) + ": its forward fails on a batch of the data's samples, of shape " +
                                  ShapeText(sample_shape_) + " (a check batch of 2, a tensor " +
                                  ShapeText(batch_shape) + "): " + why + hint);
    }
    if (out.dim() != 2 || out.size(0) != 2 || out.size(1) != classes_) {
      return InvalidArgumentError(std::string(kModel) + ": its output for a batch of 2 is " + ShapeText(out.sizes()) +
                                  ", expected [2, " + std::to_string(classes_) +
                                  "]: one logit for each of spec.data's " + std::to_string(classes_) + " classes");
    }
    // The loss takes floating-point logits; integers would fail only at the
    // first step, as a kernel LibTorch lacks (a new user's trial), and so
    // would half-precision ones, at evaluation (found in review).
    if (!out.is_floating_point()) {
      return InvalidArgumentError(std::string(kModel) + ": its output is " +
                                  std::string(c10::toString(out.scalar_type())) +
                                  ", expected float32 logits (a forward that ends in .long(), .int() or argmax "
                                  "gives integers, through which no gradient flows)");
    }
    if (out.scalar_type() != torch::kFloat32 && out.scalar_type() != torch::kFloat64) {
      return InvalidArgumentError(std::string(kModel) + ": its output is " +
                                  std::string(c10::toString(out.scalar_type())) +
                                  ", expected float32 logits: this LibTorch's loss has no kernel for it on the CPU "
                                  "(end the forward with .float())");
    }
    caution_ = ProbabilitiesCaution(out);
    flat_ = FlattenParameters(trainable_);
    return Status::Ok();
  }

  std::string Caution() const override { return caution_; }

  StatusOr<double> ComputeGradient(const float* features, const int64_t* labels, int64_t n,
                                   std::span<float> gradient) override {
    try {
      module_.train();
      for (torch::Tensor& p : trainable_) p.mutable_grad() = torch::Tensor();
      return BackwardInto(Forward(), trainable_, features, labels, n, gradient);
    } catch (const std::exception& e) {
      return ModuleFailed("gradient computation failed", e, n);
    }
  }

  std::span<float> Parameters() override { return {flat_.data_ptr<float>(), static_cast<size_t>(flat_.numel())}; }

  std::vector<std::vector<int64_t>> ParameterShapes() const override {
    std::vector<std::vector<int64_t>> shapes;
    for (const torch::Tensor& p : trainable_) shapes.push_back(p.sizes().vec());
    return shapes;
  }

  Status SettleBuffers(const Dataset& samples, int64_t batch) override {
    if (!HoldsBuffers() || samples.size() == 0) return Status::Ok();
    try {
      torch::NoGradGuard no_grad;
      // A scripted batch norm's momentum is a constant of its class, not an
      // attribute to set for the while, as PyTorch's update_bn does. Of a
      // momentum m the passes leave (1 - m)^passes of the statistics before
      // (other weights'): enough passes, cycling over the samples, leave 1%,
      // at most kMostPasses. A momentum of None averages every batch since
      // num_batches_tracked was 0: reset, so that the average is of these
      // weights' passes alone, not of every earlier settling's (found in
      // review).
      constexpr int64_t kMostPasses = 256;
      constexpr double kLeftOfBefore = 0.01;
      double slowest = 1;  // the least momentum of the module's norms
      for (const torch::jit::Module& m : module_.modules()) {
        // A norm that keeps no running statistics holds None in their
        // place (track_running_stats=False): nothing to settle, and a tensor
        // asked of None failed the job (found in review).
        if (!m.hasattr("running_mean") || !m.hasattr("running_var") || !m.attr("running_mean").isTensor() ||
            !m.attr("running_var").isTensor()) {
          continue;
        }
        const c10::ClassTypePtr type = m.type();
        const c10::IValue momentum = m.hasattr("momentum")             ? m.attr("momentum")
                                     : type->hasConstant("momentum") ? type->getConstant("momentum")
                                                                     : c10::IValue(0.1);
        if (momentum.isNone()) {
          m.attr("running_mean").toTensor().zero_();
          m.attr("running_var").toTensor().fill_(1);
          if (m.hasattr("num_batches_tracked")) m.attr("num_batches_tracked").toTensor().zero_();
        } else if (momentum.isDouble() && momentum.toDouble() > 0 && momentum.toDouble() < 1) {
          slowest = std::min(slowest, momentum.toDouble());
        }
      }
      const int64_t n = std::max<int64_t>(1, batch);
      const int64_t whole = std::max<int64_t>(1, samples.size() / n);  // whole batches, as the job trains on
      const int64_t passes =
          slowest < 1 ? std::clamp<int64_t>(static_cast<int64_t>(std::ceil(std::log(kLeftOfBefore) /
                                                                            std::log(1 - slowest))),
                                            whole, kMostPasses)
                      : whole;
      module_.train();
      const int64_t count = std::min(n, samples.size());  // a set smaller than a batch: one pass of it
      std::vector<float> features(static_cast<size_t>(count * samples.SampleSize()));
      const agent::Forward forward = Forward();
      for (int64_t pass = 0; pass < passes; ++pass) {
        samples.CopySamples((pass % whole) * n, count, features.data());
        (void)forward(features.data(), count);
      }
      return Status::Ok();
    } catch (const std::exception& e) {
      return ModuleFailed("settling the module's buffers failed", e,
                          std::min(std::max<int64_t>(1, batch), samples.size()));
    }
  }

  // Pickled by name, as torch.save pickles a dict of tensors.
  StatusOr<std::string> SaveBuffers() override {
    if (!HoldsBuffers()) return std::string();
    try {
      c10::Dict<std::string, at::Tensor> named;
      for (const auto& b : module_.named_buffers(/*recurse=*/true)) named.insert(b.name, b.value);
      const std::vector<char> bytes = torch::jit::pickle_save(named);
      return std::string(bytes.begin(), bytes.end());
    } catch (const std::exception& e) {
      return InternalError(std::string("cannot save the module's buffers: ") + ErrorReason(e));
    }
  }

  Status LoadBuffers(std::string_view bytes) override {
    if (bytes.empty()) return Status::Ok();
    const auto mine = module_.named_buffers(/*recurse=*/true);
    const Status other = InvalidArgumentError("holds another model's buffers");
    try {
      const c10::IValue loaded = torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
      if (!loaded.isGenericDict()) return other;
      const c10::Dict<c10::IValue, c10::IValue> theirs = loaded.toGenericDict();
      if (theirs.size() != mine.size()) return other;
      std::vector<std::pair<at::Tensor, at::Tensor>> into;  // mine, theirs
      for (const auto& b : mine) {
        const auto it = theirs.find(c10::IValue(b.name));
        if (it == theirs.end() || !it->value().isTensor()) return other;
        const at::Tensor t = it->value().toTensor();
        if (!t.sizes().equals(b.value.sizes()) || t.scalar_type() != b.value.scalar_type()) return other;
        into.emplace_back(b.value, t);
      }
      torch::NoGradGuard no_grad;
      for (auto& [to, from] : into) to.copy_(from);
      return Status::Ok();
    } catch (const std::exception& e) {
      return InvalidArgumentError("holds buffers that cannot be read: " + ErrorReason(e));
    }
  }

  StatusOr<Evaluation> Evaluate(const Dataset& data) override {
    try {
      module_.eval();
      return EvaluateInChunks(Forward(), data);
    } catch (const std::exception& e) {
      // The module's own code, as a step's failure is (exit 2): "run it
      // again to resume" failed the same way (found in review).
      return ModuleFailed("evaluation failed (the module in eval mode)", e,
                          std::min(data.size(), EvaluationChunk(data)));
    }
  }

  // TorchScript again, so PyTorch's torch.jit.load reads the trained model.
  // Each parameter is saved owning its storage — as views of one flat tensor
  // they would load in Python as views of it too — and then made a view
  // again. Called between steps, as every Trainer method is.
  // Serialised in memory, then written as any file is (a full disk aborted
  // LibTorch's own file writer: see trainer.cc).
  Status SaveModel(const std::string& path) override {
    std::ostringstream bytes;
    try {
      torch::NoGradGuard no_grad;
      for (torch::Tensor& p : trainable_) p.set_data(p.detach().clone());
      module_.save(bytes);
      ViewParametersIn(flat_, trainable_);
    } catch (const std::exception& e) {
      ViewParametersIn(flat_, trainable_);
      return InternalError("cannot serialise " + path + ": " + ErrorReason(e));
    }
    return WriteFileAtomically(path, std::move(bytes).str());
  }

  Status LoadModel(const std::string& path) override {
    EDGETRAIN_ASSIGN_OR_RETURN(torch::jit::Module loaded, LoadModule(path));
    const std::vector<torch::Tensor> theirs = TrainableOnce(loaded);
    if (theirs.size() != trainable_.size()) return InvalidArgumentError(path + " holds another model's weights");
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < theirs.size(); ++i) {
      if (!theirs[i].sizes().equals(trainable_[i].sizes())) {
        return InvalidArgumentError(path + " holds another model's weights");
      }
    }
    for (size_t i = 0; i < theirs.size(); ++i) trainable_[i].copy_(theirs[i]);
    return Status::Ok();
  }

  int64_t ParameterCount() const override { return flat_.numel(); }

 private:
  // Samples in the shape the module takes, [n, *sample_shape], through it.
  agent::Forward Forward() {
    return [this](const float* features, int64_t n) {
      std::vector<int64_t> shape = {n};
      shape.insert(shape.end(), sample_shape_.begin(), sample_shape_.end());
      return module_.forward({torch::from_blob(const_cast<float*>(features), shape, torch::kFloat32)}).toTensor();
    };
  }

  torch::jit::Module module_;
  std::vector<int64_t> sample_shape_;
  int classes_;
  std::vector<torch::Tensor> trainable_;  // in parameters() order: the layout of flat_
  torch::Tensor flat_;
  std::string caution_;  // Check's: what trains, but not as meant
};

// One child of a scripted nn.Sequential as a layer a pipeline stage may hold:
// its forward is the child's, and its trainable parameters are the child's
// own tensors, registered here, not copied, so a stage trains what the whole
// module's trainer trains and, laid end to end, the stages' parameters are
// the module's in its order.
class ScriptedLayerImpl : public torch::nn::Module {
 public:
  explicit ScriptedLayerImpl(torch::jit::Module child) : child_(std::move(child)) {
    std::set<const c10::TensorImpl*> registered;
    for (const auto& p : child_.named_parameters(/*recurse=*/true)) {
      if (!p.value.requires_grad()) continue;  // frozen, as the whole-module trainer leaves it
      // A weight two of its parts share, once: as TrainableOnce takes it.
      if (!registered.insert(p.value.unsafeGetTensorImpl()).second) continue;
      std::string name = p.name;
      std::replace(name.begin(), name.end(), '.', '_');
      register_parameter(name, p.value);
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    if (child_.is_training() != is_training()) child_.train(is_training());  // dropout, batch norm
    return child_.forward({std::move(x)}).toTensor();
  }

 private:
  torch::jit::Module child_;
};
TORCH_MODULE(ScriptedLayer);

}  // namespace

std::string ErrorReason(const std::exception& e) {
  const auto* error = dynamic_cast<const c10::Error*>(&e);
  std::string what = error ? error->what_without_backtrace() : e.what();
  // A compile's report begins with a newline: its first line was empty.
  what.erase(0, std::min(what.size(), what.find_first_not_of(" \n")));
  if (size_t raised = what.rfind("Error: "); raised != std::string::npos) {
    const size_t start = what.rfind('\n', raised);
    what = what.substr(start == std::string::npos ? 0 : start + 1);
  }
  return what.substr(0, what.find('\n'));
}

Status ModuleFailed(const std::string& what, const std::exception& e, int64_t samples) {
  const std::string reason = ErrorReason(e);
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr || reason.find("can't allocate memory") != std::string::npos ||
      reason.find("out of memory") != std::string::npos) {
    return InternalError(what + ": " + reason);
  }
  // A batch norm cannot train on one sample, and an epoch's last batch holds
  // one where the samples are one past a multiple of the batch: the forward
  // alone was blamed, where another batch size mends it (a new user's trial:
  // 1,985 samples in batches of 32).
  const bool one_for_a_batch_norm =
      samples == 1 && reason.find("Expected more than 1 value per channel") != std::string::npos;
  return InvalidArgumentError(what + ": " + reason + " (the module's own code, on a batch of " +
                              CountOf(samples, "sample", "samples") +
                              "; it fails the same way when run again: look at its forward" +
                              (one_for_a_batch_norm
                                   ? std::string("; a batch norm trains on 2 samples or more, and a batch of 1 is "
                                                 "an epoch's last where the samples are one past a multiple of "
                                                 "spec.data.batchSize, or a pipeline's micro-batch of 1: another "
                                                 "batch size mends it")
                                   : std::string()) +
                              ")");
}

StatusOr<std::vector<ModelLayer>> ScriptedLayers(const ModelSpec& spec) {
  EDGETRAIN_ASSIGN_OR_RETURN(torch::jit::Module module, LoadModule(spec.torchscript_path));
  // Only nn.Sequential promises that its forward runs its children in order,
  // each on the one before's output: any other module's forward may do
  // anything with them, so cutting it between children would train another
  // model. It is one layer instead: auto may still run it whole on one
  // device or on a group (data parallelism), where it had refused the job (a
  // user's trial: most models worth training are not an nn.Sequential).
  // Its class is torch.nn.modules.container.Sequential, give or take the
  // ___torch_mangle_N that TorchScript puts in a name it has compiled before
  // (an nn.Sequential within an nn.Sequential).
  const auto& type = module.type()->name();
  const std::string name = type ? type->qualifiedName() : "";
  if (!type || type->name() != "Sequential" || name.find("torch.nn.modules.container.") == std::string::npos) {
    const std::string class_name = type ? type->name() : std::string("module of no class");
    torch::nn::Sequential net;
    net->push_back(ScriptedLayer(module));
    return std::vector<ModelLayer>{{class_name, std::move(net),
                                    spec.torchscript_path + " is a " + class_name +
                                        ", whose forward may use its children in any order"}};
  }
  // Children that share a weight (tied) are one layer too: stages of their
  // own would each train a copy of it, and the stages' state no longer fit
  // the whole module's; a pipeline of a tied module saved the model it began
  // with (a new user's trial).
  std::map<const c10::TensorImpl*, std::string> holder;
  for (const auto& child : module.named_children()) {
    for (const torch::Tensor& p : child.value.parameters(/*recurse=*/true)) {
      if (!p.requires_grad()) continue;
      const auto [held, fresh] = holder.emplace(p.unsafeGetTensorImpl(), child.name);
      if (fresh || held->second == child.name) continue;
      torch::nn::Sequential net;
      net->push_back(ScriptedLayer(module));
      return std::vector<ModelLayer>{{"Sequential", std::move(net),
                                      spec.torchscript_path + "'s layers " + held->second + " and " + child.name +
                                          " share a weight, which stages of their own would train as two copies"}};
    }
  }
  std::vector<ModelLayer> layers;
  for (const auto& child : module.named_children()) {
    const auto& child_type = child.value.type()->name();
    torch::nn::Sequential net;
    net->push_back(ScriptedLayer(child.value));
    layers.push_back({child.name + "." + (child_type ? child_type->name() : "module"), std::move(net), ""});
  }
  if (layers.empty()) return InvalidArgumentError(std::string(kModel) + ": the nn.Sequential has no layers");
  return layers;
}

StatusOr<std::unique_ptr<Trainer>> LoadTorchScriptTrainer(const TrainerOptions& options) {
  torch::set_num_threads(options.intra_op_threads);
  EDGETRAIN_ASSIGN_OR_RETURN(torch::jit::Module module, LoadModule(options.model.torchscript_path));
  std::vector<int64_t> shape = FirstLayerSampleShape(options.sample_shape, options.data);
  auto trainer = std::make_unique<TorchScriptTrainer>(std::move(module), std::move(shape), options.data.classes);
  EDGETRAIN_RETURN_IF_ERROR(trainer->Check());
  return std::unique_ptr<Trainer>(std::move(trainer));
}

StatusOr<bool> IsTorchScriptModule(const std::string& path) {
  try {
    return torch::jit::load(path, torch::kCPU).find_method("forward").has_value();
  } catch (const torch::jit::ErrorReport&) {  // no c10::Error: it aborted `evaluate`
    return LoadModule(path).status();  // which says why
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace edgetrain::agent

#include "agent/torch/trainer.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <sstream>

#include "agent/storage/archive_integrity.h"
#include "agent/storage/atomic_file.h"
#include "agent/torch/batch_passes.h"
#include "agent/torch/flat_parameters.h"
#include "agent/torch/models.h"
#include "agent/torch/torchscript_trainer.h"

namespace edgetrain::agent {
namespace {

class TorchTrainer final : public Trainer {
 public:
  TorchTrainer(torch::nn::Sequential model, torch::Tensor flat, DatasetInfo data)
      : model_(std::move(model)), flat_(std::move(flat)), data_(data) {}

  StatusOr<double> ComputeGradient(const float* features, const int64_t* labels, int64_t n,
                                   std::span<float> gradient) override {
    try {
      model_->train();
      model_->zero_grad();
      return BackwardInto(Forward(), model_->parameters(), features, labels, n, gradient);
    } catch (const c10::Error& e) {
      return InternalError(std::string("gradient computation failed: ") + e.what_without_backtrace());
    }
  }

  std::span<float> Parameters() override {
    return {flat_.data_ptr<float>(), static_cast<size_t>(flat_.numel())};
  }

  std::vector<std::vector<int64_t>> ParameterShapes() const override {
    std::vector<std::vector<int64_t>> shapes;
    for (const auto& p : model_->parameters()) shapes.push_back(p.sizes().vec());
    return shapes;
  }

  StatusOr<Evaluation> Evaluate(const Dataset& data) override {
    try {
      model_->eval();
      return EvaluateInChunks(Forward(), data);
    } catch (const c10::Error& e) {
      return InternalError(std::string("evaluation failed: ") + e.what_without_backtrace());
    }
  }

  Status SaveModel(const std::string& path) override {
    return Save(path, [&](torch::serialize::OutputArchive& archive) { model_->save(archive); });
  }

  Status LoadModel(const std::string& path) override {
    try {
      // Loading replaces a tensor's storage; the parameters must stay views of
      // flat_, so the weights are read into a copy and copied over.
      auto loaded = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(model_->clone());
      torch::serialize::InputArchive archive;
      archive.load_from(path);
      loaded->load(archive);
      torch::NoGradGuard no_grad;
      auto ours = model_->parameters();
      auto theirs = loaded->parameters();
      for (size_t i = 0; i < ours.size(); ++i) {
        if (!ours[i].sizes().equals(theirs[i].sizes())) return InvalidArgumentError(path + " holds another model's weights");
        ours[i].copy_(theirs[i]);
      }
      return Status::Ok();
    } catch (const c10::Error& e) {
      return InvalidArgumentError("cannot load " + path + " into this model: " + e.what_without_backtrace());
    }
  }

  int64_t ParameterCount() const override {
    int64_t n = 0;
    for (const auto& p : model_->parameters()) n += p.numel();
    return n;
  }

 private:
  // Samples as images [n, channels, height, width], through the model.
  agent::Forward Forward() {
    return [this](const float* features, int64_t n) {
      return model_->forward(torch::from_blob(const_cast<float*>(features),
                                              {n, data_.channels, data_.height, data_.width}, torch::kFloat32));
    };
  }

  // Serialised in memory, then written as any file is: LibTorch's own file
  // writer, on a full disk, threw from a destructor and aborted the agent
  // with the trained model unsaved (a new user's trial).
  template <typename Fill>
  Status Save(const std::string& path, Fill fill) {
    std::ostringstream bytes;
    try {
      torch::serialize::OutputArchive archive;
      fill(archive);
      archive.save_to(bytes);
    } catch (const c10::Error& e) {
      return InternalError("cannot serialise " + path + ": " + e.what_without_backtrace());
    }
    return WriteFileAtomically(path, std::move(bytes).str());
  }

  torch::nn::Sequential model_;
  torch::Tensor flat_;  // every parameter's storage, tensor after tensor
  DatasetInfo data_;
};

}  // namespace

StatusOr<ModelSpec> ReadModelSpec(const std::string& path) {
  // SaveModel writes an nn::Sequential: one sub-archive per layer, named by its
  // index; layers with weights are the convolutions and the linear layers.
  std::vector<std::pair<int, std::vector<int64_t>>> weights;  // layer index, weight shape
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return InvalidArgumentError("no model at " + path);
  if (std::filesystem::is_directory(path, ec)) return InvalidArgumentError(path + " is a directory, not a model.pt");
  // Checked here, its first look, once: a file whose bytes were altered
  // reads as a model, and LoadModel took its weights as they now are.
  if (Status intact = CheckArchiveIntegrity(path); intact.code() == StatusCode::kDataLoss) {
    return InvalidArgumentError(intact.message());  // the file is at fault: exit 2
  }
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    for (const std::string& key : archive.keys()) {
      torch::serialize::InputArchive layer;
      torch::Tensor weight;
      // A layer's index as SaveModel names it, within an int: a module's
      // child named "99999999999" threw from std::stoi, and a weight of no
      // dimension was read at its first (found in review).
      int index = 0;
      const auto [end, parsed] = std::from_chars(key.data(), key.data() + key.size(), index);
      if (key.empty() || parsed != std::errc() || end != key.data() + key.size() || index < 0) continue;
      if (archive.try_read(key, layer) && layer.try_read("weight", weight) && weight.dim() >= 1) {
        weights.emplace_back(index, weight.sizes().vec());
      }
    }
  } catch (const std::exception&) {
    // Any TorchScript module is read too (agent/evaluate_model.cc looks for
    // one first): the message had said only edgetrain's own were (a user's trial).
    return InvalidArgumentError(path + " is not a model edgetrain can read: not a LibTorch archive (it reads the "
                                       "model.pt edgetrain saves, and TorchScript modules saved with torch.jit.save)");
  }
  std::sort(weights.begin(), weights.end());
  if (weights.empty() || weights.back().second.size() != 2) {
    return InvalidArgumentError(path + " is not a model edgetrain can read: a LibTorch archive but neither a "
                                       "TorchScript module nor a model edgetrain saved (no layers ending in a "
                                       "linear one)");
  }
  ModelSpec spec;
  spec.kind = weights.front().second.size() == 4 ? ModelKind::kCnn : ModelKind::kMlp;
  // A cnn pools after every conv (conv, ReLU, pool: its convs lie 3 apart); a
  // vgg's first block has two convs with only a ReLU between. A vgg of one conv
  // is a cnn of one block, and reads as one: the same layers.
  for (size_t i = 0; spec.kind == ModelKind::kCnn && i + 1 < weights.size(); ++i) {
    if (weights[i + 1].second.size() == 4 && weights[i + 1].first - weights[i].first == 2) spec.kind = ModelKind::kVgg;
  }
  std::vector<int>& sizes = spec.kind == ModelKind::kMlp   ? spec.hidden
                            : spec.kind == ModelKind::kCnn ? spec.channels
                                                           : spec.widths;
  for (size_t i = 0; i + 1 < weights.size(); ++i) sizes.push_back(static_cast<int>(weights[i].second[0]));
  return spec;
}

StatusOr<std::unique_ptr<Trainer>> CreateTrainer(const TrainerOptions& options) {
  if (options.model.kind == ModelKind::kTorchScript) {
    // A user's module may draw from torch's generator as it trains (its
    // dropout): seeded, it draws the same every run (three runs of one
    // module with dropout had ended at 0.830, 0.842 and 0.826: a new user's
    // trial).
    torch::manual_seed(options.seed);
    return LoadTorchScriptTrainer(options);
  }
  try {
    torch::set_num_threads(options.intra_op_threads);
    torch::manual_seed(options.seed);
    EDGETRAIN_ASSIGN_OR_RETURN(torch::nn::Sequential model, BuildModel(options.model, options.data));
    torch::Tensor flat = FlattenParameters(*model);
    return std::unique_ptr<Trainer>(std::make_unique<TorchTrainer>(std::move(model), std::move(flat), options.data));
  } catch (const c10::Error& e) {
    return InternalError(std::string("cannot build the model: ") + e.what_without_backtrace());
  }
}

}  // namespace edgetrain::agent

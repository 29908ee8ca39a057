#include "agent/torch/trainer.h"

#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

#include "agent/torch/models.h"

namespace edgetrain::agent {
namespace {

// Makes a freshly written file durable, then moves it over `path` atomically.
Status Commit(const std::string& tmp, const std::string& path) {
  int fd = ::open(tmp.c_str(), O_RDONLY);
  if (fd < 0) return InternalError("cannot reopen " + tmp + " to flush it");
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) return InternalError("fsync " + tmp + " failed");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return InternalError("cannot rename " + tmp + " to " + path);
  // The rename itself is durable only once the directory is flushed.
  std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
  int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return Status::Ok();
}

class TorchTrainer final : public Trainer {
 public:
  TorchTrainer(torch::nn::Sequential model, std::unique_ptr<torch::optim::Optimizer> optimizer, DatasetInfo data)
      : model_(std::move(model)), optimizer_(std::move(optimizer)), data_(data) {}

  StatusOr<double> TrainStep(const float* features, const int64_t* labels, int64_t n) override {
    try {
      model_->train();
      torch::Tensor x = Images(features, n);
      torch::Tensor y = torch::from_blob(const_cast<int64_t*>(labels), {n}, torch::kInt64);
      optimizer_->zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(model_->forward(x), y);
      loss.backward();
      optimizer_->step();
      return loss.item<double>();
    } catch (const c10::Error& e) {
      return InternalError(std::string("training step failed: ") + e.what_without_backtrace());
    }
  }

  StatusOr<Evaluation> Evaluate(const Dataset& data) override {
    try {
      torch::NoGradGuard no_grad;
      model_->eval();
      constexpr int64_t kChunk = 1000;
      int64_t correct = 0;
      double loss_sum = 0;
      for (int64_t start = 0; start < data.size(); start += kChunk) {
        int64_t n = std::min(kChunk, data.size() - start);
        torch::Tensor logits = model_->forward(Images(data.Sample(start), n));
        torch::Tensor y = torch::from_blob(const_cast<int64_t*>(data.labels.data() + start), {n}, torch::kInt64);
        loss_sum += torch::nn::functional::cross_entropy(
                        logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                        .item<double>();
        correct += logits.argmax(1).eq(y).sum().item<int64_t>();
      }
      double n = static_cast<double>(std::max<int64_t>(1, data.size()));
      return Evaluation{static_cast<double>(correct) / n, loss_sum / n};
    } catch (const c10::Error& e) {
      return InternalError(std::string("evaluation failed: ") + e.what_without_backtrace());
    }
  }

  Status SaveModel(const std::string& path) override {
    return Save(path, [&](torch::serialize::OutputArchive& archive) { model_->save(archive); });
  }

  Status SaveCheckpoint(const std::string& path) override {
    return Save(path, [&](torch::serialize::OutputArchive& archive) {
      torch::serialize::OutputArchive model_archive, optimizer_archive;
      model_->save(model_archive);
      optimizer_->save(optimizer_archive);
      archive.write("model", model_archive);
      archive.write("optimizer", optimizer_archive);
    });
  }

  int64_t ParameterCount() const override {
    int64_t n = 0;
    for (const auto& p : model_->parameters()) n += p.numel();
    return n;
  }

 private:
  torch::Tensor Images(const float* features, int64_t n) {
    return torch::from_blob(const_cast<float*>(features), {n, data_.channels, data_.height, data_.width},
                            torch::kFloat32);
  }

  template <typename Fill>
  Status Save(const std::string& path, Fill fill) {
    const std::string tmp = path + ".tmp";
    try {
      torch::serialize::OutputArchive archive;
      fill(archive);
      archive.save_to(tmp);
    } catch (const c10::Error& e) {
      return InternalError("cannot write " + tmp + ": " + e.what_without_backtrace());
    }
    return Commit(tmp, path);
  }

  torch::nn::Sequential model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  DatasetInfo data_;
};

}  // namespace

StatusOr<std::unique_ptr<Trainer>> CreateTrainer(const TrainerOptions& options) {
  try {
    torch::set_num_threads(options.intra_op_threads);
    torch::manual_seed(options.seed);
    EDGETRAIN_ASSIGN_OR_RETURN(torch::nn::Sequential model, BuildModel(options.model, options.data));
    std::unique_ptr<torch::optim::Optimizer> optimizer;
    const OptimizerSpec& o = options.optimizer;
    switch (o.kind) {
      case OptimizerKind::kSgd:
        optimizer = std::make_unique<torch::optim::SGD>(
            model->parameters(),
            torch::optim::SGDOptions(o.learning_rate).momentum(o.momentum.value_or(0)).weight_decay(o.weight_decay));
        break;
      case OptimizerKind::kAdam:
        optimizer = std::make_unique<torch::optim::Adam>(
            model->parameters(), torch::optim::AdamOptions(o.learning_rate).weight_decay(o.weight_decay));
        break;
    }
    return std::unique_ptr<Trainer>(std::make_unique<TorchTrainer>(std::move(model), std::move(optimizer), options.data));
  } catch (const c10::Error& e) {
    return InternalError(std::string("cannot build the model: ") + e.what_without_backtrace());
  }
}

}  // namespace edgetrain::agent

#include "agent/testing/fake_trainer.h"

#include <cmath>
#include <fstream>
#include <random>

#include "agent/storage/atomic_file.h"

namespace edgetrain::agent::testing {

FakeTrainer::FakeTrainer(const FakeModel& model, Clock& clock) : model_(model), clock_(clock) {
  int64_t n = 0;
  for (const auto& shape : model.shapes) {
    int64_t size = 1;
    for (int64_t d : shape) size *= d;
    n += size;
  }
  params_.assign(static_cast<size_t>(n), 0.0f);
  std::mt19937_64 rng(model.seed);
  std::normal_distribution<float> value(0.0f, 1.0f);
  targets_.resize(static_cast<size_t>(model.classes));
  for (auto& t : targets_) {
    t.resize(params_.size());
    for (float& v : t) v = 1.0f + value(rng);  // away from 0, where the model starts
  }
  if (model.target_density < 1) {
    // Drawn after the targets, so that a dense model's are what they were.
    std::bernoulli_distribution kept(model.target_density);
    for (size_t i = 0; i < params_.size(); ++i) {
      if (kept(rng)) continue;
      for (auto& t : targets_) t[i] = 0;
    }
  }
}

StatusOr<double> FakeTrainer::ComputeGradient(const float*, const int64_t* labels, int64_t n,
                                              std::span<float> gradient) {
  clock_.SleepFor(model_.step + model_.per_sample * n);
  ++batches_;
  std::fill(gradient.begin(), gradient.end(), 0.0f);
  double loss = 0;
  for (int64_t k = 0; k < n; ++k) {
    const std::vector<float>& target = targets_[static_cast<size_t>(labels[k])];
    for (size_t i = 0; i < params_.size(); ++i) {
      const float d = params_[i] - target[i];
      gradient[i] += d / static_cast<float>(n);
      loss += 0.5 * d * d / static_cast<double>(n);
    }
  }
  return loss;
}

StatusOr<Evaluation> FakeTrainer::Evaluate(const Dataset& data) {
  if (model_.evaluation > Duration{}) clock_.SleepFor(model_.evaluation);
  std::vector<double> optimum(params_.size(), 0.0);
  for (int64_t label : data.labels) {
    for (size_t i = 0; i < params_.size(); ++i) optimum[i] += targets_[static_cast<size_t>(label)][i];
  }
  double off = 0, norm = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    optimum[i] /= static_cast<double>(std::max<int64_t>(1, data.size()));
    off += (params_[i] - optimum[i]) * (params_[i] - optimum[i]);
    norm += optimum[i] * optimum[i];
  }
  return Evaluation{std::max(0.0, 1.0 - std::sqrt(off / norm)), 0.5 * off};
}

Status FakeTrainer::SaveModel(const std::string& path) {
  // Written as the real trainers write theirs.
  std::string bytes(reinterpret_cast<const char*>(params_.data()), params_.size() * 4);
  if (model_.counts_batches) bytes += *SaveBuffers();
  return WriteFileAtomically(path, bytes);
}

StatusOr<std::string> FakeTrainer::SaveBuffers() {
  return model_.counts_batches ? std::to_string(batches_) : std::string();
}

Status FakeTrainer::LoadBuffers(std::string_view bytes) {
  if (bytes.empty()) return Status::Ok();
  if (!model_.counts_batches) return InvalidArgumentError("holds buffers this model has none of");
  batches_ = std::stoll(std::string(bytes));
  return Status::Ok();
}

TrainTestSplit FakeData(int64_t train, int64_t test, int classes) {
  TrainTestSplit d;
  d.train.info = d.test.info = {1, 1, 1, classes, train, test};
  for (auto [set, n] : {std::pair{&d.train, train}, std::pair{&d.test, test}}) {
    set->pixels.assign(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < n; ++i) set->labels.push_back(i % classes);
  }
  return d;
}

}  // namespace edgetrain::agent::testing

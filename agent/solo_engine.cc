#include "agent/solo_engine.h"

#include <algorithm>
#include <numeric>

#include "core/finite_step.h"

namespace edgetrain::agent {
namespace {

std::vector<int64_t> AllOf(const Dataset& d) {
  std::vector<int64_t> all(static_cast<size_t>(d.size()));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

}  // namespace

SoloEngine::SoloEngine(const JobSpec& spec, Trainer& trainer, const TrainTestSplit& data,
                       std::vector<int64_t> samples, SoloDevice device, Clock& clock)
    : spec_(spec), trainer_(trainer), data_(data), device_(device), clock_(clock),
      emulated_(clock, device.slowdown, device.thread_cpu_seconds),
      // One row per tensor: every row steps at every step, as one optimizer would.
      layout_(trainer.ParameterShapes(), SyncGranularity::kLayer), optimizer_(spec.optimizer, layout_),
      batches_(samples.empty() ? AllOf(data.train) : std::move(samples), spec.data.batch_size, spec.seed),
      x_(static_cast<size_t>(spec.data.batch_size * data.train.SampleSize())),
      y_(static_cast<size_t>(spec.data.batch_size)), gradient_(static_cast<size_t>(layout_.total_floats())),
      energy_(device.power, clock.Now()) {}

Status SoloEngine::Restore(const JobCheckpoint& c) {
  std::span<float> params = trainer_.Parameters();
  const OptimizerState& fresh = optimizer_.state();
  if (!c.ledger) EDGETRAIN_RETURN_IF_ERROR(ParametersFit(c, trainer_.ParameterShapes()));
  if (c.ledger || c.parameters.size() != params.size() || c.optimizer.first.size() != fresh.first.size() ||
      c.optimizer.second.size() != fresh.second.size() || c.optimizer.steps.size() != fresh.steps.size()) {
    return FailedPreconditionError("holds a different model, optimizer or team");
  }
  // Checked before anything is written. A checkpoint older than buffers
  // were kept has none: they start from the module's, as they did.
  if (Status buffers = trainer_.LoadBuffers(c.buffers); !buffers.ok()) {
    return FailedPreconditionError(buffers.message());
  }
  std::copy(c.parameters.begin(), c.parameters.end(), params.begin());
  optimizer_.mutable_state() = c.optimizer;
  iteration_ = c.iteration;
  samples_ = c.samples;
  energy_before_j_ = c.energy_joules;
  if (c.loss) smoothed_loss_ = *c.loss;  // the loss shown goes on, not from the first batch's
  // The data go on where the interrupted run was, so that it ends at the
  // weights the uninterrupted one would have (a new pass from here had the
  // interrupted epoch's last batch whole, and its samples out of step).
  batches_.SkipSamples(samples_);
  return Status::Ok();
}

Status SoloEngine::Advance() {
  const std::span<const int64_t> batch = batches_.Next();
  const int64_t m = static_cast<int64_t>(batch.size());
  const int64_t sample_size = data_.train.SampleSize();
  for (int64_t k = 0; k < m; ++k) {
    data_.train.CopySamples(batch[k], 1, x_.data() + k * sample_size);
    y_[k] = data_.train.labels[batch[k]];
  }

  const EmulatedDevice::Mark began = emulated_.Begin();
  energy_.BeginCompute(began.at);
  EDGETRAIN_ASSIGN_OR_RETURN(double loss, trainer_.ComputeGradient(x_.data(), y_.data(), m, gradient_));
  EDGETRAIN_RETURN_IF_ERROR(FiniteStep(iteration_ + 1, loss));  // before the weights move
  std::span<float> params = trainer_.Parameters();
  for (size_t r = 0; r < layout_.size(); ++r) {
    const RowSpan& row = layout_.row(r);
    optimizer_.Apply(r, params.subspan(static_cast<size_t>(row.offset), static_cast<size_t>(row.length)),
                     std::span<const float>(gradient_).subspan(static_cast<size_t>(row.offset),
                                                               static_cast<size_t>(row.length)));
  }
  emulated_.Finish(began, {PassWork::kStep, m});
  energy_.EndCompute(clock_.Now());
  smoothed_loss_ = smoothed_loss_ < 0 ? loss : smoothed_loss_ + kLossSmoothing * (loss - smoothed_loss_);
  ++iteration_;
  samples_ += m;
  return Status::Ok();
}

JobProgress SoloEngine::Progress() {
  JobProgress p;
  p.state = JobState::kTraining;
  p.iteration = iteration_;
  p.samples = samples_;
  p.epoch = static_cast<int>(samples_ / std::max<int64_t>(1, batches_.SamplesPerEpoch()));
  p.loss = std::max(0.0, smoothed_loss_);
  p.energy_joules = energy_before_j_ + energy_.Split(clock_.Now()).total_j();
  WorkerProgress w;
  w.batch_size = spec_.data.batch_size;
  w.samples = samples_;
  w.iteration = iteration_;
  w.energy_joules = *p.energy_joules;
  p.workers.push_back(w);
  return p;
}

StatusOr<double> SoloEngine::Evaluate() {
  EDGETRAIN_ASSIGN_OR_RETURN(Evaluation e, trainer_.Evaluate(data_.test));
  EDGETRAIN_RETURN_IF_ERROR(FiniteEvaluation(e.loss));
  return e.accuracy;
}

void SoloEngine::Snapshot(JobCheckpoint& into) {
  std::span<const float> params = trainer_.Parameters();
  into.parameters.assign(params.begin(), params.end());
  into.parameter_shapes = trainer_.ParameterShapes();
  into.optimizer = optimizer_.state();
  // Pickling tensors in memory fails only as memory does; a checkpoint
  // without them still resumes, its statistics from the module's.
  if (StatusOr<std::string> buffers = trainer_.SaveBuffers(); buffers.ok()) into.buffers = std::move(*buffers);
}

}  // namespace edgetrain::agent

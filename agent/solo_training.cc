#include "agent/solo_training.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

#include <nlohmann/json.hpp>

#include "agent/storage/atomic_file.h"
#include "agent/storage/evaluation_log.h"
#include "core/budget.h"
#include "core/energy_model.h"

namespace edgetrain::agent {
namespace {

// Smoothing of the loss shown while training: about the last 50 steps.
constexpr double kLossSmoothing = 0.02;
// How often the board is refreshed: often enough for a progress bar, rarely
// enough that copying the progress costs nothing next to a training step.
constexpr Duration kPublishEvery = std::chrono::milliseconds(100);

Status WriteModelCard(const std::string& path, const SoloTrainingOptions& options, const JobProgress& p) {
  nlohmann::json card = {{"model", NameOf(options.spec.model.kind)},
                         {"dataset", NameOf(options.spec.data.dataset)},
                         {"iteration", p.iteration},
                         {"samples", p.samples},
                         {"accuracy", p.accuracy ? nlohmann::json(*p.accuracy) : nlohmann::json(nullptr)},
                         {"weights", "model.pt"},
                         {"format", "LibTorch serialize::OutputArchive of the model's parameters and buffers"}};
  return WriteFileAtomically(path, card.dump(2) + "\n");
}

}  // namespace

StatusOr<JobProgress> RunSoloTraining(const SoloTrainingOptions& options, Trainer& trainer,
                                      const TrainTestSplit& data, Clock& clock, ProgressBoard& board,
                                      const std::atomic<bool>& cancel) {
  const JobSpec& spec = options.spec;
  const int64_t batch = spec.data.batch_size;
  std::vector<int64_t> order = options.samples;
  if (order.empty()) {
    order.resize(static_cast<size_t>(data.train.size()));
    std::iota(order.begin(), order.end(), 0);
  }
  const int64_t n = static_cast<int64_t>(order.size());
  const int64_t steps_per_epoch = (n + batch - 1) / batch;
  const int64_t sample_size = data.train.SampleSize();

  std::error_code ec;
  std::filesystem::create_directories(options.output_dir, ec);
  if (ec) return FailedPreconditionError("cannot create output directory " + options.output_dir + ": " + ec.message());

  const TimePoint start = clock.Now();
  Budget budget(spec.budget, steps_per_epoch, start);
  // This machine stands for one device with the default power profile (docs/energy.md).
  EnergyMeter energy(PowerProfile{}, start);
  std::mt19937_64 rng(spec.seed);
  EDGETRAIN_ASSIGN_OR_RETURN(EvaluationLog evaluations,
                             EvaluationLog::Open(options.output_dir + "/evaluations.csv", /*resume=*/false));
  TimePoint last_eval = start;
  // Allocated once; each step gathers its shuffled samples into these.
  std::vector<float> x(batch * sample_size);
  std::vector<int64_t> y(batch);

  JobProgress p;
  p.state = JobState::kTraining;
  p.workers.push_back({0, static_cast<int>(batch), 0, 0, 0});
  double smoothed_loss = -1;
  std::optional<StopReason> stop;
  int64_t evaluated_at = -1;

  auto evaluate = [&]() -> Status {
    EDGETRAIN_ASSIGN_OR_RETURN(Evaluation e, trainer.Evaluate(data.test));
    p.accuracy = e.accuracy;
    evaluated_at = p.iteration;
    last_eval = clock.Now();
    evaluations.Record(ToSeconds(last_eval - start), p.iteration, p.samples, e.accuracy,
                       energy.Split(last_eval).total_j());
    return Status::Ok();
  };
  TimePoint published{};
  auto publish = [&] {
    TimePoint now = clock.Now();
    published = now;
    p.elapsed_s = ToSeconds(now - start);
    p.samples_per_second = p.elapsed_s > 0 ? static_cast<double>(p.samples) / p.elapsed_s : 0;
    p.fraction = budget.Fraction(now, p.iteration);
    auto eta = budget.Eta(now, p.iteration);
    p.eta_s = eta ? std::optional<double>(ToSeconds(*eta)) : std::nullopt;
    p.workers[0].samples = p.samples;
    p.energy_joules = energy.Split(now).total_j();
    p.workers[0].energy_joules = *p.energy_joules;
    board.Update([&](JobProgress& shown) { shown = p; });
  };

  while (!stop) {
    p.epoch = static_cast<int>(p.iteration / steps_per_epoch);
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t first = 0; first < n && !stop; first += batch) {
      int64_t m = std::min(batch, n - first);
      for (int64_t k = 0; k < m; ++k) {
        data.train.CopySamples(order[first + k], 1, x.data() + k * sample_size);
        y[k] = data.train.labels[order[first + k]];
      }
      const TimePoint step_began = clock.Now();
      energy.BeginCompute(step_began);
      EDGETRAIN_ASSIGN_OR_RETURN(double loss, trainer.TrainStep(x.data(), y.data(), m));
      if (options.slowdown > 1) {
        clock.SleepFor(std::chrono::duration_cast<Duration>((clock.Now() - step_began) * (options.slowdown - 1)));
      }
      energy.EndCompute(clock.Now());
      smoothed_loss = smoothed_loss < 0 ? loss : smoothed_loss + kLossSmoothing * (loss - smoothed_loss);
      p.loss = smoothed_loss;
      ++p.iteration;
      p.samples += m;

      const bool due_by_time =
          spec.evaluation.every_seconds && ToSeconds(clock.Now() - last_eval) >= *spec.evaluation.every_seconds;
      if (p.iteration % spec.evaluation.every_iterations == 0 || due_by_time) {
        EDGETRAIN_RETURN_IF_ERROR(evaluate());
        if (budget.TargetReached(*p.accuracy)) stop = StopReason::kTarget;
      }
      const int every = spec.fault_tolerance.checkpoint_every;
      if (every > 0 && p.iteration % every == 0) {
        EDGETRAIN_RETURN_IF_ERROR(trainer.SaveCheckpoint(options.output_dir + "/checkpoint.pt"));
      }
      if (!stop) stop = budget.Exhausted(clock.Now(), p.iteration);
      if (!stop && cancel.load(std::memory_order_relaxed)) stop = StopReason::kCancelled;
      if (clock.Now() - published >= kPublishEvery || evaluated_at == p.iteration) publish();
    }
  }

  // The summary always reports the final model's accuracy on the full test set.
  if (evaluated_at != p.iteration) EDGETRAIN_RETURN_IF_ERROR(evaluate());
  p.model_path = options.output_dir + "/model.pt";
  EDGETRAIN_RETURN_IF_ERROR(trainer.SaveModel(p.model_path));
  EDGETRAIN_RETURN_IF_ERROR(WriteModelCard(options.output_dir + "/model.json", options, p));
  p.reached_target = budget.TargetReached(*p.accuracy);
  p.stop_reason = std::string(NameOf(*stop));
  p.state = JobState::kSucceeded;
  publish();
  return p;
}

}  // namespace edgetrain::agent

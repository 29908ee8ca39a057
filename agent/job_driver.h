#pragma once
// Drives a job from its start to its end, whatever trains it (a TrainingEngine:
// a job of one, a team's coordinator, a pipeline's head), so that every
// kind of job resumes, budgets, evaluates, checkpoints, reports and saves its
// model the same way:
//   1. resume from the output folder's checkpoint of this job, unless the plan
//      says start afresh or the last run completed (say which, either way);
//   2. start the engine (a team gathers), and the job's clock with it;
//   3. advance the engine until the budget ends, the target is reached or the
//      job is cancelled, evaluating and checkpointing on their schedules
//      (core/training_schedule.h) and publishing progress on the board;
//   4. finish: evaluate the final model, write the last checkpoint (complete),
//      model.pt and model.json.

#include <atomic>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "agent/progress_board.h"
#include "agent/telemetry/metrics.h"
#include "agent/training_engine.h"
#include "core/clock.h"
#include "core/job_plan.h"

namespace edgetrain::agent {

class JobDriver {
 public:
  JobDriver(const JobPlan& plan, TrainingEngine& engine, Clock& clock, ProgressBoard& board,
            CoordinatorMetrics& metrics, std::ostream& log);

  // The final progress, with the model's path; an error if the job failed.
  StatusOr<JobProgress> Run(const std::atomic<bool>& cancel);
  // Said in the job's log and, from its first report on, in its progress.
  void Warn(const std::string& warning);
  // How often the board is refreshed (100 ms unless set).
  void SetPublishEvery(Duration every) { publish_every_ = every; }
  // What the model's labels stand for, written on its card (model.json's
  // `classes`): none unless the data names them (Dataset::class_names).
  void NameClasses(std::vector<std::string> names) { class_names_ = std::move(names); }

 private:
  // The checkpoint this run resumes from, restored into the engine; nullopt
  // when it starts afresh.
  StatusOr<std::optional<JobCheckpoint>> Resume();
  JobCheckpoint Checkpoint(const JobProgress& p);
  Status WriteModelCard(const JobProgress& p);
  // How long the first evaluation may take, before one has said: the longer
  // of the wall-clock budget's last tenth and EvaluationGuess. Rough, and
  // only to leave one that would run past the budget's end to the final
  // model's, in the budget's second half (Run). Of a job with a wall-clock
  // budget.
  double FirstEvaluationGuess(const JobProgress& p) const;
  // What an evaluation will take: the engine's own guess where it has one (a
  // team's coordinator times a slice of the test set, a pipeline's head sums
  // its layers as profiled: both evaluate at no emulated slowdown), else the
  // test set passed forward at the pace of training so far (0 before a
  // step), an upper bound at small batches, each pass's own cost counted a
  // sample.
  double EvaluationGuess(const JobProgress& p) const;
  // An interrupted run evaluates its final model only when that takes no
  // longer than this.
  static constexpr double kPromptEvaluationSeconds = 2.0;
  void Publish(const JobProgress& p);

  const JobPlan& plan_;
  TrainingEngine& engine_;
  Clock& clock_;
  ProgressBoard& board_;
  CoordinatorMetrics& metrics_;
  std::ostream& log_;
  // Resume's: what of the spec changed since the checkpoint it resumed from.
  std::vector<std::string> changed_since_checkpoint_;
  // A TorchScript job's module file's CRC-32 as the run found it, kept in its
  // checkpoints; none for a built-in model.
  std::optional<uint32_t> module_crc32_;
  std::vector<std::string> warnings_;
  // Often enough for a progress bar, rarely enough that copying the progress
  // costs nothing next to a training step.
  Duration publish_every_ = std::chrono::milliseconds(100);
  std::vector<std::string> class_names_;
};

}  // namespace edgetrain::agent

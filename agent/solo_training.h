#pragma once
// Training on one agent: the whole job in one process, as a job of one worker
// runs. The multi-agent engine (row-granular data parallelism) replaces this
// loop's optimizer step with synchronisation through the coordinator; budgets,
// evaluation, checkpoints and progress stay as they are here.

#include <atomic>
#include <string>
#include <vector>

#include "agent/data/dataset.h"
#include "agent/progress_board.h"
#include "agent/torch/trainer.h"
#include "core/clock.h"
#include "core/job_progress.h"
#include "core/job_spec.h"

namespace edgetrain::agent {

struct SoloTrainingOptions {
  JobSpec spec;
  std::string output_dir;        // model.pt, model.json, checkpoint.pt, evaluations.csv go here
  std::vector<int64_t> samples;  // the training samples to use; empty: all of them
  double slowdown = 1;           // an emulated slower device: each step takes this many times as long
};

// Trains until the budget ends or `cancel` is set, keeping `board` current.
// Returns the final progress (with the model's path), or an error.
StatusOr<JobProgress> RunSoloTraining(const SoloTrainingOptions& options, Trainer& trainer,
                                      const TrainTestSplit& data, Clock& clock, ProgressBoard& board,
                                      const std::atomic<bool>& cancel);

}  // namespace edgetrain::agent

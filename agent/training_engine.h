#pragma once
// What trains a job, as its driver (agent/job_driver.h) sees it: a job of one
// in this process (agent/solo_engine.h), a data-parallel team through its
// coordinator (agent/dp/coordinator.h), a pipeline through its head
// (agent/pipeline/pipeline_head.h). The driver owns the job's life — resume,
// budget, schedules, progress, the final model — and an engine only how
// training moves on.

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "agent/storage/checkpoint.h"
#include "core/clock.h"
#include "core/job_progress.h"
#include "core/status.h"

namespace edgetrain::agent {

// Which model a finished job keeps.
enum class FinalModel {
  kCurrent,         // the model as training left it
  kLastEvaluated,   // the one that reached the target, not the updates that
                    // landed while the decision was made
};

class TrainingEngine {
 public:
  virtual ~TrainingEngine() = default;

  // The samples one pass over the training data trains: an epochs budget
  // counts passes by samples, so that a batch size changed before a resume
  // keeps the passes already made (counted in steps of the new size, a job
  // resumed at 4x its batch was over its epochs at once: a new user's trial).
  virtual int64_t SamplesPerEpoch() const = 0;

  // Puts the model and counters back as a checkpoint of this job left them.
  // FailedPrecondition when the checkpoint is of another model or team.
  virtual Status Restore(const JobCheckpoint& checkpoint) = 0;
  // Returns once training can start: a team once its workers have gathered.
  // The job's clock starts then. Returns early, OK, if `cancel` is set.
  virtual Status Start(const std::atomic<bool>& cancel) = 0;
  // Moves training on: a job of one trains a step; a coordinator lets a tick
  // pass while its workers train.
  virtual Status Advance() = 0;
  // The job's samples (Progress().samples) at which its epochs budget is
  // spent: an engine whose Advance lets a tick pass ends the tick there, not
  // at its end, once its iteration has moved past `past_iteration` (the
  // driver does not end a job by its epochs before its model stepped in the
  // run). A team of small data trained 4,032 samples for an epochs budget of
  // 2,874, its epochs each shorter than a tick (a new user's trial).
  virtual void EndTicksAtSamples(int64_t /*samples*/, int64_t /*past_iteration*/) {}
  // When the job's training clock read 0, where training taught the engine
  // better than the driver's checkpoint did: a coordinator placed anew that
  // trained on from a worker's copy of the model took the job's clock with
  // it (core/model_takeover.h), which the budget then counts from. None: the
  // driver's own.
  virtual std::optional<TimePoint> JobClockStart() { return std::nullopt; }
  // The job's progress so far: iteration, samples, loss, energy, workers. The
  // driver adds accuracy, timing and the end.
  virtual JobProgress Progress() = 0;
  // The model's test-set accuracy as it is now.
  virtual StatusOr<double> Evaluate() = 0;
  // How many samples Evaluate passes through the model: what the driver
  // guesses an evaluation's length from before the first has taken one.
  virtual int64_t TestSamples() const = 0;
  // Seconds an evaluation will take, where the engine knows better than the
  // driver's guess from the pace of training: a pipeline's head from its
  // layers as profiled (its training pace is its slowest devices' and its
  // bubbles', not its own forward).
  virtual std::optional<double> EvaluationGuess() const { return std::nullopt; }
  // The model's state, for a checkpoint (the driver adds the job's counters).
  virtual void Snapshot(JobCheckpoint& into) = 0;
  // The job was interrupted (SIGTERM, SIGINT), not ended: said before Finish,
  // so that a team's workers are told the job resumes, rather than that it is
  // over (a coordinator placed anew, or restarted, takes them up again).
  virtual void Interrupted() {}
  // Training is over: nothing changes the model from here on, and a team's
  // workers are told to stop. `final` says which model is kept. An error: the
  // model trained could not be had (a pipeline's stages' state never
  // fetched), and nothing is to be saved as though it were.
  virtual Status Finish(FinalModel final) = 0;
  virtual Status SaveModel(const std::string& path) = 0;
};

}  // namespace edgetrain::agent

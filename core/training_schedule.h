#pragma once
// When a job evaluates its model and writes a checkpoint: every N iterations,
// on the multiples of N (so a resumed job keeps the marks it had), and for
// evaluation also every T seconds if the spec asks. A coordinator looks at
// the team's iteration every tick and may find it past several marks at once:
// one evaluation, one checkpoint, then the next mark after where it is.

#include <cstdint>
#include <optional>

#include "core/job_spec.h"
#include "core/time.h"

namespace edgetrain {

class TrainingSchedule {
 public:
  // `iteration` and `now`: where the job starts (0, or where it resumes).
  // `checkpoint_every` 0: no periodic checkpoints.
  TrainingSchedule(const EvaluationSpec& evaluation, int checkpoint_every, int64_t iteration, TimePoint now);

  bool EvaluationDue(int64_t iteration, TimePoint now) const;
  void Evaluated(int64_t iteration, TimePoint now);
  bool CheckpointDue(int64_t iteration) const;
  void Checkpointed(int64_t iteration);

 private:
  static int64_t NextMark(int64_t iteration, int64_t every) { return (iteration / every + 1) * every; }

  const int64_t evaluate_every_;
  const std::optional<Duration> evaluate_period_;
  const int64_t checkpoint_every_;
  int64_t next_evaluation_;
  TimePoint last_evaluation_;
  int64_t next_checkpoint_;
};

}  // namespace edgetrain

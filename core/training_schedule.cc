#include "core/training_schedule.h"

#include <algorithm>

namespace edgetrain {

TrainingSchedule::TrainingSchedule(const EvaluationSpec& evaluation, int checkpoint_every, int64_t iteration,
                                   TimePoint now)
    : evaluate_every_(std::max(1, evaluation.every_iterations)),
      evaluate_period_(evaluation.every_seconds && *evaluation.every_seconds > 0
                           ? std::optional<Duration>(FromSeconds(*evaluation.every_seconds))
                           : std::nullopt),
      checkpoint_every_(checkpoint_every), next_evaluation_(NextMark(iteration, evaluate_every_)),
      last_evaluation_(now),
      next_checkpoint_(checkpoint_every > 0 ? NextMark(iteration, checkpoint_every) : -1) {}

bool TrainingSchedule::EvaluationDue(int64_t iteration, TimePoint now) const {
  return iteration >= next_evaluation_ || (evaluate_period_ && now - last_evaluation_ >= *evaluate_period_);
}

void TrainingSchedule::Evaluated(int64_t iteration, TimePoint now) {
  next_evaluation_ = NextMark(iteration, evaluate_every_);
  last_evaluation_ = now;
}

bool TrainingSchedule::CheckpointDue(int64_t iteration) const {
  return checkpoint_every_ > 0 && iteration >= next_checkpoint_;
}

void TrainingSchedule::Checkpointed(int64_t iteration) {
  if (checkpoint_every_ > 0) next_checkpoint_ = NextMark(iteration, checkpoint_every_);
}

}  // namespace edgetrain

#pragma once
// A model's buffers settled on training samples (Trainer::SettleBuffers) by
// the engine that holds the model a team or a pipeline evaluates and saves,
// and trains none of: a team's coordinator, a pipeline's head. Settled once
// for each weights they hold: a run's end evaluates the final model, then
// saves it, and settled them twice over the same weights.

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "agent/data/dataset.h"
#include "agent/torch/trainer.h"
#include "core/status.h"

namespace edgetrain::agent {

class SettledBuffers {
 public:
  // `samples`: none for a model without buffers, and nothing is done.
  void Use(Dataset samples, int64_t batch) {
    samples_ = std::move(samples);
    batch_ = batch;
  }

  // `model`'s buffers settled, unless they were for the weights it holds.
  Status For(Trainer& model) {
    if (samples_.size() == 0) return Status::Ok();
    const std::span<float> weights = model.Parameters();
    if (std::equal(weights.begin(), weights.end(), settled_for_.begin(), settled_for_.end())) return Status::Ok();
    EDGETRAIN_RETURN_IF_ERROR(model.SettleBuffers(samples_, batch_));
    settled_for_.assign(weights.begin(), weights.end());
    return Status::Ok();
  }

 private:
  Dataset samples_;
  int64_t batch_ = 1;
  std::vector<float> settled_for_;  // the weights the buffers were last settled for
};

}  // namespace edgetrain::agent

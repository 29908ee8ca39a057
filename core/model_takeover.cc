#include "core/model_takeover.h"

#include <algorithm>

namespace edgetrain {

ModelTakeover::ModelTakeover(int workers)
    : offers_(static_cast<size_t>(workers), -1),
      elapsed_s_(static_cast<size_t>(workers), 0),
      energy_j_(static_cast<size_t>(workers), 0),
      passed_over_(static_cast<size_t>(workers), false) {}

void ModelTakeover::Offered(int w, int64_t clock, double job_elapsed_s, double job_energy_j) {
  if (settled_ || passed_over_[w]) return;
  offers_[w] = clock;
  elapsed_s_[w] = job_elapsed_s;
  energy_j_[w] = job_energy_j;
}

void ModelTakeover::Withdrawn(int w) {
  offers_[w] = -1;
  passed_over_[w] = true;
  if (asked_ == w) asked_.reset();
}

std::optional<int> ModelTakeover::Donor(int64_t own) {
  if (settled_ || asked_) return std::nullopt;
  // The furthest along; the lowest rank of equals, so that the choice is the
  // same however the hellos raced.
  const auto best = std::max_element(offers_.begin(), offers_.end());
  if (best == offers_.end() || *best <= own) {
    settled_ = true;
    return std::nullopt;
  }
  asked_ = static_cast<int>(best - offers_.begin());
  return asked_;
}

void ModelTakeover::Taken() {
  asked_.reset();
  settled_ = true;
}

}  // namespace edgetrain

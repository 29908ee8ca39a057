#include "core/row_aggregator.h"

#include <algorithm>
#include <cmath>

namespace edgetrain {

RowAggregator::RowAggregator(const RowLayout& layout, const OptimizerSpec& optimizer, std::span<const float> initial)
    : layout_(layout), params_(initial.begin(), initial.end()), optimizer_(optimizer, layout),
      gathered_(static_cast<size_t>(layout.total_floats()), 0.0f), applied_clock_(layout.size(), 0),
      versions_(layout.size(), 0) {}

std::span<const float> RowAggregator::row_values(size_t r) const {
  const RowSpan& span = layout_.row(r);
  return {params_.data() + span.offset, static_cast<size_t>(span.length)};
}

void RowAggregator::CloseRoundsAtDeadlines(int workers, LateGradients late, AbsentWorkers absent, bool each_push,
                                           int ahead) {
  rounds_ = true;
  each_push_ = each_push;
  workers_ = workers;
  late_ = late;
  absent_ = absent;
  slots_.assign(static_cast<size_t>(ahead) + 1, RoundSlot{});
  for (RoundSlot& slot : slots_) {
    slot.gathered.assign(static_cast<size_t>(layout_.total_floats()), 0.0f);
    slot.weight.assign(layout_.size(), 0.0);
    slot.gave.assign(static_cast<size_t>(workers) * layout_.size(), false);
  }
  if (absent == AbsentWorkers::kMemory) {
    memory_.assign(static_cast<size_t>(workers), std::vector<float>(static_cast<size_t>(layout_.total_floats()), 0.0f));
    remembered_.assign(static_cast<size_t>(workers) * layout_.size(), false);
  }
}

void RowAggregator::MoveByMeanOfPushes(double outer_learning_rate, double outer_momentum) {
  outer_ = true;
  outer_lr_ = outer_learning_rate;
  outer_momentum_ = outer_momentum;
  if (outer_momentum > 0) velocity_.assign(static_cast<size_t>(layout_.total_floats()), 0.0f);
}

int64_t RowAggregator::least_applied_clock() const {
  return applied_clock_.empty() ? 0 : *std::min_element(applied_clock_.begin(), applied_clock_.end());
}

void RowAggregator::Step(size_t r, int64_t clock, const StalenessLedger& ledger) {
  const RowSpan& span = layout_.row(r);
  const size_t offset = static_cast<size_t>(span.offset), length = static_cast<size_t>(span.length);
  RoundSlot& open = Slot(applied_clock_[r] + 1);
  std::span<float> gradient(open.gathered.data() + offset, length);
  double weight = open.weight[r];
  // A clock that moved by more than one round (a worker counted out) takes
  // what gathered for the rounds it passed as well.
  for (int64_t q = applied_clock_[r] + 2; q <= clock && q <= applied_clock_[r] + static_cast<int64_t>(slots_.size());
       ++q) {
    RoundSlot& passed = Slot(q);
    for (size_t i = 0; i < length; ++i) gradient[i] += passed.gathered[offset + i];
    std::fill_n(passed.gathered.begin() + static_cast<ptrdiff_t>(offset), length, 0.0f);
    weight += passed.weight[r];
    passed.weight[r] = 0;
    for (int w = 0; w < workers_; ++w) passed.gave[static_cast<size_t>(w) * layout_.size() + r] = false;
  }
  if (absent_ == AbsentWorkers::kMemory) {
    // A worker in the team that gave nothing to this round is counted with
    // what it gave last (MIFA): its data is not dropped from the mean.
    for (int w = 0; w < workers_; ++w) {
      const size_t k = static_cast<size_t>(w) * layout_.size() + r;
      if (open.gave[k] || !remembered_[k] || !ledger.active(w)) continue;
      const float* m = memory_[w].data() + offset;
      for (size_t i = 0; i < length; ++i) gradient[i] += m[i];
      weight += 1;
    }
  }
  if (weight > 0) {
    const float mean = static_cast<float>(1.0 / weight);
    for (float& g : gradient) g *= mean;
    std::span<float> params(params_.data() + offset, length);
    if (!outer_) {
      optimizer_.Apply(r, params, gradient, 1.0);
    } else if (outer_momentum_ > 0) {
      const float mu = static_cast<float>(outer_momentum_), lr = static_cast<float>(outer_lr_);
      float* v = velocity_.data() + offset;
      for (size_t i = 0; i < length; ++i) {
        v[i] = mu * v[i] + gradient[i];
        params[i] -= lr * (gradient[i] + mu * v[i]);  // Nesterov
      }
    } else {
      const float lr = static_cast<float>(outer_lr_);
      for (size_t i = 0; i < length; ++i) params[i] -= lr * gradient[i];
    }
    ++versions_[r];
  }
  std::fill(gradient.begin(), gradient.end(), 0.0f);
  open.weight[r] = 0;
  for (int w = 0; w < workers_; ++w) open.gave[static_cast<size_t>(w) * layout_.size() + r] = false;
  applied_clock_[r] = clock;
}

bool RowAggregator::StepMovedRows(const StalenessLedger& ledger) {
  bool stepped = false;
  for (size_t r = 0; r < layout_.size(); ++r) {
    const int64_t clock = ledger.Clock(r);
    if (clock <= applied_clock_[r]) continue;
    if (rounds_) {
      Step(r, clock, ledger);
      stepped = true;
    }
  }
  return stepped;
}

StatusOr<bool> RowAggregator::ApplyPush(int w, int64_t iteration, std::span<const PushedRow> rows,
                                        StalenessLedger& ledger, std::span<const size_t> skipped) {
  bool stepped = false;
  for (size_t r : skipped) {
    if (!rounds_ || r >= layout_.size()) continue;
    ledger.RecordPush(w, r, iteration);
    const int64_t clock = ledger.Clock(r);
    if (clock > applied_clock_[r]) {
      Step(r, clock, ledger);
      stepped = true;
    }
  }
  for (const PushedRow& row : rows) {
    if (row.id >= layout_.size()) return InvalidArgumentError("row " + std::to_string(row.id) + " does not exist");
    const RowSpan& span = layout_.row(row.id);
    if (rounds_) {
      const size_t offset = static_cast<size_t>(span.offset), length = static_cast<size_t>(span.length);
      // For round `iteration`: late when the row has stepped for it already.
      const int64_t late_by = applied_clock_[row.id] - (iteration - 1);
      const size_t k = static_cast<size_t>(w) * layout_.size() + row.id;
      scratch_.resize(length);
      EDGETRAIN_RETURN_IF_ERROR(DecodeRow(row.encoding, row.scale, row.values, scratch_));
      if (late_by <= 0 && iteration - applied_clock_[row.id] <= static_cast<int64_t>(slots_.size())) {
        RoundSlot& slot = Slot(iteration);
        for (size_t i = 0; i < length; ++i) slot.gathered[offset + i] += scratch_[i];
        // With local steps a worker's second push to a round adds to its
        // first: one contribution.
        if (!slot.gave[k] || each_push_) slot.weight[row.id] += 1;
        slot.gave[k] = true;
        if (absent_ == AbsentWorkers::kMemory) {
          std::copy(scratch_.begin(), scratch_.end(), memory_[w].begin() + span.offset);
          remembered_[k] = true;
        }
      } else if (late_by > 0) {
        ++late_rows_;
        if (late_ == LateGradients::kFold) {
          // Into the round now open, as much less as it is late (FedBuff's 1/sqrt(1 + tau)).
          RoundSlot& slot = Slot(applied_clock_[row.id] + 1);
          const double fold = 1.0 / std::sqrt(1.0 + static_cast<double>(late_by));
          for (size_t i = 0; i < length; ++i) slot.gathered[offset + i] += static_cast<float>(fold) * scratch_[i];
          slot.weight[row.id] += fold;
        }
      }
      ledger.RecordPush(w, row.id, iteration);
      const int64_t clock = ledger.Clock(row.id);
      if (clock > applied_clock_[row.id]) {
        Step(row.id, clock, ledger);
        stepped = true;
      }
      continue;
    }
    std::span<float> gradient(gathered_.data() + span.offset, static_cast<size_t>(span.length));
    EDGETRAIN_RETURN_IF_ERROR(AddDecodedRow(row.encoding, row.scale, row.values, gradient));
    ledger.RecordPush(w, row.id, iteration);
    const int64_t clock = ledger.Clock(row.id);
    if (clock <= applied_clock_[row.id]) continue;
    const int64_t moved = std::clamp<int64_t>(clock - applied_clock_[row.id], 1, std::max(1, ledger.bound()));
    const int contributors = std::max(1, ledger.active_count());
    const float mean = 1.0f / static_cast<float>(contributors * moved);
    for (float& g : gradient) g *= mean;
    std::span<float> params(params_.data() + span.offset, static_cast<size_t>(span.length));
    optimizer_.Apply(row.id, params, gradient, static_cast<double>(moved));
    std::fill(gradient.begin(), gradient.end(), 0.0f);
    applied_clock_[row.id] = clock;
    ++versions_[row.id];
    stepped = true;
  }
  ledger.RecordIteration(w, iteration);
  return stepped;
}

RowAggregator::State RowAggregator::Snapshot() const { return {params_, optimizer_.state(), versions_}; }

Status RowAggregator::Restore(State state) {
  const OptimizerState& fresh = optimizer_.state();
  if (state.parameters.size() != params_.size() || state.versions.size() != versions_.size() ||
      state.optimizer.first.size() != fresh.first.size() || state.optimizer.second.size() != fresh.second.size() ||
      state.optimizer.steps.size() != fresh.steps.size()) {
    return FailedPreconditionError("it holds a different model or optimizer");
  }
  params_ = std::move(state.parameters);
  optimizer_.mutable_state() = std::move(state.optimizer);
  versions_ = std::move(state.versions);
  return Status::Ok();
}

}  // namespace edgetrain

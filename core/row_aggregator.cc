#include "core/row_aggregator.h"

#include <algorithm>
#include <cmath>

#include "core/float_sums.h"

namespace edgetrain {

RowAggregator::RowAggregator(const RowLayout& layout, const OptimizerSpec& optimizer, std::span<const float> initial)
    : layout_(layout), params_(initial.begin(), initial.end()), optimizer_(optimizer, layout),
      gathered_(static_cast<size_t>(layout.total_floats()), 0.0f), applied_clock_(layout.size(), 0),
      versions_(layout.size(), 0), gathered_count_(layout.size(), 0) {}

std::span<const float> RowAggregator::row_values(size_t r) const {
  const RowSpan& span = layout_.row(r);
  return {params_.data() + span.offset, static_cast<size_t>(span.length)};
}

void RowAggregator::CloseRoundsAtDeadlines() { rounds_ = true; }

int64_t RowAggregator::least_applied_clock() const {
  return applied_clock_.empty() ? 0 : *std::min_element(applied_clock_.begin(), applied_clock_.end());
}

void RowAggregator::Step(size_t r, int64_t clock, int64_t divisor, double moved) {
  const RowSpan& span = layout_.row(r);
  std::span<float> gradient(gathered_.data() + span.offset, static_cast<size_t>(span.length));
  if (divisor > 0) {  // none gathered (a round closed with nothing of this row): the clock moves alone
    const float mean = 1.0f / static_cast<float>(divisor);
    for (float& g : gradient) g *= mean;
    std::span<float> params(params_.data() + span.offset, static_cast<size_t>(span.length));
    optimizer_.Apply(r, params, gradient, moved);
    ++versions_[r];
  }
  std::fill(gradient.begin(), gradient.end(), 0.0f);
  gathered_count_[r] = 0;
  for (size_t i = r; i < in_sum_.size(); i += layout_.size()) in_sum_[i] = InSum{};
  applied_clock_[r] = clock;
}

void RowAggregator::StepRound(size_t r, int64_t clock) { Step(r, clock, gathered_count_[r], 1.0); }

void RowAggregator::StepBounded(size_t r, int64_t clock, const StalenessLedger& ledger) {
  const int64_t moved = std::clamp<int64_t>(clock - applied_clock_[r], 1, std::max(1, ledger.bound()));
  const int contributors = std::max(1, ledger.active_count());
  // Never fewer than the gradients gathered: a worker counted out after its
  // push left its gradient in the sum and out of the count, and the row
  // stepped on the sum of two over one (found in review).
  const int64_t divisor = std::max<int64_t>(contributors * moved, gathered_count_[r]);
  Step(r, clock, gathered_count_[r] > 0 ? divisor : 0, static_cast<double>(moved));
}

bool RowAggregator::StepMovedRows(const StalenessLedger& ledger) {
  bool stepped = false;
  for (size_t r = 0; r < layout_.size(); ++r) {
    const int64_t clock = ledger.Clock(r);
    if (clock <= applied_clock_[r]) continue;
    if (rounds_) {
      StepRound(r, clock);
    } else {
      StepBounded(r, clock, ledger);
    }
    stepped = true;
  }
  return stepped;
}

Status RowAggregator::CheckIteration(int w, int64_t iteration, const StalenessLedger& ledger) {
  // A worker computes no iteration past what the rows it was sent allow. A
  // push beyond it was computed by no worker of this team; applied, it would
  // set rows' clocks where no honest push is, so that every later push was
  // dropped as late or the job ended at its epochs. (One behind is harmless:
  // clocks only go forward, and a round already closed drops it. An honest
  // worker sends one, too, once a Welcome sets it back to where the team is.)
  if (const int64_t furthest = ledger.FurthestComputable(w); iteration > furthest) {
    refusal_ = "future_iteration";
    return InvalidArgumentError("iteration " + std::to_string(iteration) + " is beyond " +
                                std::to_string(furthest) + ", the furthest the rows it was sent let it compute");
  }
  return Status::Ok();
}

Status RowAggregator::DecodePush(int w, int64_t iteration, std::span<const PushedRow> rows) {
  const size_t first = static_cast<size_t>(w) * layout_.size();
  if (pushed_for_.size() < first + layout_.size()) pushed_for_.resize(first + layout_.size(), -1);
  if (in_sum_.size() < first + layout_.size()) in_sum_.resize(first + layout_.size());
  const std::span<int64_t> pushed_for(pushed_for_.data() + first, layout_.size());
  marked_.clear();  // rows of this part marked as pushed for `iteration`, and what they were
  again_.clear();
  auto refuse = [&](const char* why, std::string message) {
    // A refused part leaves no mark: its rows may come again.
    for (const auto& [r, before] : marked_) pushed_for[r] = before;
    refusal_ = why;
    return InvalidArgumentError(std::move(message));
  };
  size_t floats = 0;
  for (const PushedRow& row : rows) {
    if (row.id >= layout_.size()) return refuse("no_such_row", "row " + std::to_string(row.id) + " does not exist");
    // Twice for one iteration would count a worker's gradient twice in the mean.
    if (pushed_for[row.id] == iteration) {
      return refuse("row_twice",
                    "row " + std::to_string(row.id) + " comes twice for iteration " + std::to_string(iteration));
    }
    marked_.emplace_back(row.id, pushed_for[row.id]);
    // A worker's pushes of a row on one stream go forward: one within what it
    // has in the sum is of a stream before (ForgetPushes).
    const InSum& in_sum = in_sum_[first + row.id];
    again_.push_back(in_sum.first >= 0 && iteration >= in_sum.first && iteration <= in_sum.last);
    pushed_for[row.id] = iteration;
    floats += static_cast<size_t>(layout_.row(row.id).length);
  }
  decoded_.resize(floats);
  size_t at = 0;
  for (const PushedRow& row : rows) {
    std::span<float> out(decoded_.data() + at, static_cast<size_t>(layout_.row(row.id).length));
    if (Status decoded = DecodeRow(row.encoding, row.scale, row.values, out); !decoded.ok()) {
      return refuse("undecodable", decoded.message());
    }
    // One NaN in a mean is a NaN in every parameter the optimizer touches next;
    // and finite values past kLargestGradient sum, over workers and
    // iterations, to an infinity (found by tests/fuzz/row_push_fuzzer).
    if (MagnitudeBound(out) <= kLargestGradient) {  // every value sound: one fast pass
      at += out.size();
      continue;
    }
    for (float v : out) {
      if (!std::isfinite(v)) {
        return refuse("not_finite", "row " + std::to_string(row.id) + " carries a NaN or an infinity");
      }
      if (std::fabs(v) > kLargestGradient) {
        static_assert(kLargestGradient == 1e15f, "the words below name it");
        // What to do, said: a team diverging was told only of the row (a
        // new user's trial; a job of one says to lower the rate).
        return refuse("too_large", "row " + std::to_string(row.id) + " carries a value beyond 1e15, which no "
                                       "gradient of a model that trains holds: the model diverges; lower "
                                       "spec.optimizer.learningRate, or look at the model's forward");
      }
    }
    at += out.size();
  }
  return Status::Ok();
}

void RowAggregator::ForgetPushes(int w) {
  const size_t first = static_cast<size_t>(w) * layout_.size();
  for (size_t i = first; i < std::min(pushed_for_.size(), first + layout_.size()); ++i) {
    if (pushed_for_[i] >= 0) pushed_for_[i] = EarlierStream(pushed_for_[i]);
  }
}

StatusOr<bool> RowAggregator::ApplyPush(int w, int64_t iteration, std::span<const PushedRow> rows,
                                        StalenessLedger& ledger) {
  EDGETRAIN_RETURN_IF_ERROR(CheckIteration(w, iteration, ledger));
  EDGETRAIN_RETURN_IF_ERROR(DecodePush(w, iteration, rows));
  bool stepped = false;
  size_t at = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const PushedRow& row = rows[i];
    const RowSpan& span = layout_.row(row.id);
    std::span<const float> values(decoded_.data() + at, static_cast<size_t>(span.length));
    at += values.size();
    if (rounds_ && iteration <= applied_clock_[row.id]) {
      // Rounds: for round `iteration`, computed on the row at clock
      // iteration - 1, which has stepped already: late.
      ++late_rows_;
    } else if (again_[i]) {
      // Pushed for this iteration on the worker's earlier stream, and still
      // gathered: its gradient counts once. Gathered again, a worker back
      // before its teammates had pushed weighed twice in the mean; and one
      // two or more iterations ahead under a bound of S, its pushes of every
      // iteration but the last of them (found in review).
    } else {
      float* gradient = gathered_.data() + span.offset;
      for (size_t i = 0; i < values.size(); ++i) gradient[i] += values[i];
      ++gathered_count_[row.id];
      InSum& in_sum = in_sum_[static_cast<size_t>(w) * layout_.size() + row.id];
      in_sum.first = in_sum.first < 0 ? iteration : std::min(in_sum.first, iteration);
      in_sum.last = std::max(in_sum.last, iteration);
    }
    ledger.RecordPush(w, row.id, iteration);
    const int64_t clock = ledger.Clock(row.id);
    if (clock <= applied_clock_[row.id]) continue;
    if (rounds_) {
      StepRound(row.id, clock);  // the mean of what reached it in the round
    } else {
      StepBounded(row.id, clock, ledger);
    }
    stepped = true;
  }
  ledger.RecordIteration(w, iteration);
  return stepped;
}

Status RowAggregator::Resume(std::vector<float> parameters, std::span<const int64_t> clocks) {
  if (parameters.size() != params_.size() || clocks.size() != layout_.size()) {
    return FailedPreconditionError("it holds a different model");
  }
  params_ = std::move(parameters);
  std::fill(gathered_.begin(), gathered_.end(), 0.0f);
  std::fill(gathered_count_.begin(), gathered_count_.end(), 0);
  std::fill(in_sum_.begin(), in_sum_.end(), InSum{});
  for (size_t r = 0; r < layout_.size(); ++r) {
    applied_clock_[r] = clocks[r];
    ++versions_[r];  // new values: whatever was sent of the row before is not them
  }
  return Status::Ok();
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

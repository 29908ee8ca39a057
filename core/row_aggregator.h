#pragma once
// The global model at the coordinator, stepped row by row (ROG's parameter
// server; core/row_optimizer.h says why the optimizer runs there).
//
// Gradient rows gather per row until the row's clock moves — every active
// worker's gradient up to the new clock is in (core/staleness_ledger.h) — and
// the row then steps once, on the mean over workers and iterations of what
// gathered, as one step on a batch of as many iterations as the clock moved (at
// most S, one under BSP; RowOptimizer::Apply). Averaged like BSP however the
// rows arrived: stepping on single arrivals followed each worker's non-IID data
// in turn, and with Adam (whose step does not scale with its gradient) drifted.
//
// Under policy deadline (core/round_deadline.h) a row steps once a round, on
// the mean of the gradients that reached it in the round, however many: a
// round may close without a worker. A gradient for a round the row has
// already stepped is late, and dropped (docs/data-parallelism.md says what
// folding it in measured).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/job_spec.h"
#include "core/row_codec.h"
#include "core/row_layout.h"
#include "core/row_optimizer.h"
#include "core/staleness_ledger.h"
#include "core/status.h"

namespace edgetrain {

// The largest gradient value a push may carry. A model that trains has
// gradients many orders below it; up to 2^30 of them sum within a float, and
// Adam's square of one stays finite.
inline constexpr float kLargestGradient = 1e15f;

// A gradient row as it arrived, still encoded: `values` points into the message.
struct PushedRow {
  size_t id = 0;
  RowEncoding encoding = RowEncoding::kFloat32;
  float scale = 1;
  std::string_view values;
};

class RowAggregator {
 public:
  RowAggregator(const RowLayout& layout, const OptimizerSpec& optimizer, std::span<const float> initial);

  // Rounds of policy deadline: from now on a row steps on the mean of what
  // reached it in its round, and late gradients are dropped.
  void CloseRoundsAtDeadlines();

  // Worker `w`'s push after its iteration `iteration`, or a part of one (a
  // push crosses the link in parts, each applied as it arrives): each row's
  // gradient is gathered and recorded in `ledger`, and the rows whose clock
  // moved step. Returns whether any row stepped. A part is refused whole,
  // before any of it is applied (InvalidArgument, and refusal() says why),
  // when its iteration is beyond what the rows `w` was sent let it compute
  // (ledger.FurthestComputable), or when it has a
  // row that does not exist, that `w` already pushed for `iteration` (in this
  // part or an earlier one), that does not decode or that carries a NaN, an
  // infinity or a value beyond kLargestGradient.
  StatusOr<bool> ApplyPush(int w, int64_t iteration, std::span<const PushedRow> rows, StalenessLedger& ledger);
  // Worker `w` starts over (a new stream, or back after being counted out):
  // what it pushed before may come again, computed afresh, and is no
  // duplicate; where its earlier gradient of the row and iteration is still
  // gathered, or the row's gradients it had gathered span that iteration,
  // that one counts and the new one is not added to it.
  void ForgetPushes(int w);
  // Why the last refused push was: "future_iteration", "no_such_row",
  // "row_twice", "undecodable", "not_finite" or "too_large" (a metric's label).
  const std::string& refusal() const { return refusal_; }

  // Steps every row whose clock moved without a push (a worker excused,
  // counted out or gone, or a restored ledger), on what was gathered for it,
  // as a push that moved it would; with nothing gathered its clock moves
  // alone. Returns whether any did. Under every policy: without rounds a row
  // whose clock a departed worker held went out at its new clock with its
  // old values, and its gathered gradient waited for the next push, summed
  // into it (found in review).
  bool StepMovedRows(const StalenessLedger& ledger);
  // The least clock a row's last step reached: the team's round is this + 1.
  int64_t least_applied_clock() const;
  // The clock row `r`'s last step reached.
  int64_t applied_clock(size_t r) const { return applied_clock_[r]; }
  // Rounds: gradient rows dropped for coming after their round had closed.
  int64_t late_rows() const { return late_rows_; }

  std::span<const float> parameters() const { return params_; }
  std::span<const float> row_values(size_t r) const;
  // Steps applied to row `r`: a worker whose copy has fewer misses updates.
  int64_t version(size_t r) const { return versions_[r]; }
  const RowLayout& layout() const { return layout_; }

  // The model a finished job keeps, when it is not the latest (the one that
  // reached the target, say).
  void SetParameters(std::span<const float> values) { params_.assign(values.begin(), values.end()); }

  // What a checkpoint keeps.
  struct State {
    std::vector<float> parameters;
    OptimizerState optimizer;
    std::vector<int64_t> versions;
  };
  State Snapshot() const;
  // Trains on from `parameters` (a worker's copy, core/model_takeover.h), each
  // row's last step at its clock in `clocks`, nothing gathered toward the next
  // and the optimizer's state kept. FailedPrecondition for another model's:
  // nothing changed.
  Status Resume(std::vector<float> parameters, std::span<const int64_t> clocks);
  // FailedPrecondition when `state` is of another model or optimizer.
  Status Restore(State state);

 private:
  const RowLayout& layout_;
  std::vector<float> params_;
  RowOptimizer optimizer_;
  std::vector<float> gathered_;         // gradients awaiting their row's clock
  std::vector<int64_t> applied_clock_;  // per row: the clock its last step reached
  std::vector<int64_t> versions_;       // per row: steps applied
  // Row r's gathered gradient over `divisor` (0: nothing gathered, the clock
  // moves alone) stepped as `moved` steps, its clock set to `clock`.
  void Step(size_t r, int64_t clock, int64_t divisor, double moved);
  // Rounds: the mean of what reached the row in its round.
  void StepRound(size_t r, int64_t clock);
  // Without rounds: what was gathered over the active workers, as `moved`
  // steps for a clock that moved several (the staleness bound at most).
  void StepBounded(size_t r, int64_t clock, const StalenessLedger& ledger);
  bool rounds_ = false;
  std::vector<int> gathered_count_;  // per row: the gradients gathered since its last step
  int64_t late_rows_ = 0;
  // A push decoded whole, row after row, before any of it is applied.
  std::vector<float> decoded_;
  // Per worker and row (w * rows + r): the iteration it was last pushed
  // for, -1 before; grown as workers show up.
  std::vector<int64_t> pushed_for_;
  std::vector<std::pair<size_t, int64_t>> marked_;  // the part being decoded's rows, and their marks before
  // Per worker and row (w * rows + r): the first and last iteration of its
  // gradients of the row in what is gathered since the row last stepped, -1
  // for none. A push of the row on a new stream within them is in the sum
  // already: the same batch on the same row values, or, where the worker held
  // the row back a few iterations, part of the residual of a push in it. One
  // below them, gathered, stretches them down: the first of them may carry
  // the residual of the iterations between, which a push of those again
  // would count twice.
  struct InSum {
    int64_t first = -1, last = -1;
  };
  std::vector<InSum> in_sum_;
  // Per row of the part being decoded: its gradient for the iteration is in
  // the sum already, pushed on the worker's earlier stream (ForgetPushes).
  std::vector<bool> again_;
  // A mark of `iteration` pushed on an earlier stream: below -1, which is
  // "never pushed", so that a new stream may push it again.
  static int64_t EarlierStream(int64_t iteration) { return -2 - iteration; }
  std::string refusal_;
  // Whether `w` can have computed `iteration`, or why the part is refused.
  Status CheckIteration(int w, int64_t iteration, const StalenessLedger& ledger);
  // Decodes `rows` into decoded_, or says why the part is refused.
  Status DecodePush(int w, int64_t iteration, std::span<const PushedRow> rows);
};

}  // namespace edgetrain

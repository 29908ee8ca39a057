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

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/job_spec.h"
#include "core/row_codec.h"
#include "core/row_layout.h"
#include "core/row_optimizer.h"
#include "core/staleness_ledger.h"
#include "core/status.h"

namespace edgetrain {

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

  // Rounds that close at a deadline (policy deadline, core/round_deadline.h)
  // for a team of `workers`: a row steps on the mean of the gradients that
  // reached it in its round, however many that was; a gradient computed on a
  // row the round has already stepped is late, and `late` says what becomes
  // of it. With `absent` = kMemory, a worker absent from a row's round is
  // counted with the last gradient it gave the row.
  // `each_push`: every push is one gradient of the round's mean, a worker's
  // second batch on the same model too; otherwise a worker's pushes to a
  // round add up to one contribution.
  // `ahead`: how many rounds past the open one a push may be for (a
  // pipelined team's stalenessBound), gathered apart until their round.
  void CloseRoundsAtDeadlines(int workers, LateGradients late, AbsentWorkers absent, bool each_push = true,
                              int ahead = 0);
  // With rounds, workers that take local steps: what a push carries is how
  // far a worker moved, and a row steps by the mean of that times
  // `outer_learning_rate`, with Nesterov momentum `outer_momentum` (the job's
  // optimizer runs on the workers).
  void MoveByMeanOfPushes(double outer_learning_rate, double outer_momentum);

  // Worker `w`'s push after its iteration `iteration`: each row's gradient is
  // gathered and recorded in `ledger`, and the rows whose clock moved step.
  // Returns whether any row stepped. InvalidArgument for a row that does not
  // exist or does not decode; rows before it are applied.
  // `skipped` (rounds): rows w leaves out of the round, counted as pushed
  // with nothing, so that they do not wait for it.
  StatusOr<bool> ApplyPush(int w, int64_t iteration, std::span<const PushedRow> rows, StalenessLedger& ledger,
                           std::span<const size_t> skipped = {});
  // Steps every row whose clock moved without a push (a worker excused or
  // counted out). Returns whether any did.
  bool StepMovedRows(const StalenessLedger& ledger);
  // The least clock a row's last step reached: the round the team is in is this + 1.
  int64_t least_applied_clock() const;
  // Gradient rows dropped, or folded in, for coming after their round (rounds only).
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
  // FailedPrecondition when `state` is of another model or optimizer.
  Status Restore(State state);

 private:
  const RowLayout& layout_;
  std::vector<float> params_;
  RowOptimizer optimizer_;
  std::vector<float> gathered_;         // gradients awaiting their row's clock
  std::vector<int64_t> applied_clock_;  // per row: the clock its last step reached
  std::vector<int64_t> versions_;       // per row: steps applied
  // Rounds only.
  void Step(size_t r, int64_t clock, const StalenessLedger& ledger);
  bool rounds_ = false;
  bool each_push_ = true;
  int workers_ = 0;
  LateGradients late_ = LateGradients::kDrop;
  AbsentWorkers absent_ = AbsentWorkers::kLeaveOut;
  // What gathers for one round: gradients, how many, and from whom ([w * rows + r]).
  struct RoundSlot {
    std::vector<float> gathered;
    std::vector<double> weight;
    std::vector<bool> gave;
  };
  std::vector<RoundSlot> slots_;  // round q's at q % size
  RoundSlot& Slot(int64_t round) { return slots_[static_cast<size_t>(round) % slots_.size()]; }
  std::vector<std::vector<float>> memory_;  // per worker, its last gradient of every row (kMemory)
  std::vector<bool> remembered_;         // [w * rows + r]
  std::vector<float> scratch_;
  int64_t late_rows_ = 0;
  bool outer_ = false;
  double outer_lr_ = 1, outer_momentum_ = 0;
  std::vector<float> velocity_;  // the outer step's momentum
};

}  // namespace edgetrain

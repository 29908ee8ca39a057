#pragma once
// A worker's copy of the model, as the coordinator's rows reach it.
//
// Rows arrive while the worker computes, so they are staged and enter the
// model between steps. The staging area always holds the newest copy of every
// row, so a compressed difference adds to it (core/replica_record.h). Each row
// carries its clock (core/staleness_ledger.h); iteration t may start only when
// every row of the model has a clock of at least t - 1 - S: no row is used
// more than S iterations stale.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/row_codec.h"
#include "core/row_layout.h"
#include "core/status.h"

namespace edgetrain {

class ModelCopy {
 public:
  explicit ModelCopy(const RowLayout& layout);

  // Row `id` at `clock`: its values, or (`delta`) a difference from what is
  // staged. InvalidArgument for a row that does not exist or does not decode.
  Status Stage(size_t id, int64_t clock, bool delta, RowEncoding encoding, float scale, std::string_view values);
  // Between steps: the staged rows enter `model`.
  void ApplyStaged(std::span<float> model);

  // Whether iteration `t` may start on the model as it is.
  bool ReadyFor(int64_t t, int staleness_bound) const { return AllAtLeast(applied_clock_, t - 1 - staleness_bound); }
  // Whether it may once the staged rows are applied.
  bool ReadyOnceAppliedFor(int64_t t, int staleness_bound) const {
    return AllAtLeast(staged_clock_, t - 1 - staleness_bound);
  }
  // The least clock of a row in the model: the newest iteration it is fresh
  // for (with S = 0) is this + 1.
  int64_t LeastClock() const;
  // Each row's clock in the model, in row order.
  std::span<const int64_t> clocks() const { return applied_clock_; }

 private:
  static bool AllAtLeast(const std::vector<int64_t>& clocks, int64_t need);

  const RowLayout& layout_;
  std::vector<float> staged_;
  std::vector<bool> staged_dirty_;
  std::vector<int64_t> staged_clock_;   // never behind applied_clock_
  std::vector<int64_t> applied_clock_;
};

}  // namespace edgetrain

#pragma once
// What a worker pushes: ROG's worker-to-coordinator half.
//
// Each step's gradient joins a residual per row (error feedback: what the
// worker has computed and not yet sent). A push after iteration t carries, for
// each row in it, the whole residual, so the coordinator's record of that
// worker's row is complete up to t (core/staleness_ledger.h). Rows go in the
// order of core/row_scheduler.h, within what the uplink carries during one of
// the worker's steps (ROG; SSP and BSP push every row every time), so pushing
// overlaps the next computation. A compressed row leaves in the residual what
// compression dropped, to go with a later push.

#include <cstdint>
#include <span>
#include <vector>

#include "core/encoding_choice.h"
#include "core/job_spec.h"
#include "core/row_codec.h"
#include "core/row_layout.h"

namespace edgetrain {

struct OutgoingRow {
  size_t id = 0;
  EncodedRow encoded;
};

class PushComposer {
 public:
  // `budgeted`: pushes are sized to the uplink (ROG); otherwise every row goes.
  // Rows are encoded as `compression` says (adaptive: as the worker chooses
  // interval by interval, core/encoding_choice.h).
  PushComposer(const RowLayout& layout, Compression compression, bool budgeted, RowOrder order);

  // A step's gradient, flat in the layout's order, joins the residual.
  void Accumulate(std::span<const float> gradient);
  // The coordinator asked for row `r` next: a teammate waits on it.
  void Demand(size_t r);
  // The push after `iteration`: the rows that must go, then the most
  // important within `budget_bytes` (ignored unless budgeted). What goes leaves
  // the residual, but for what its compression dropped.
  std::vector<OutgoingRow> Compose(int64_t iteration, int staleness_bound, int64_t budget_bytes);
  // A Welcome replaced the model at `iteration`: what was computed and not
  // sent belongs to a model that is gone.
  void Restart(int64_t iteration);
  // The team closed rounds up to `iteration` without this worker, its pushes
  // all sent: no row is owed for them. What compression left in the
  // residual stays, for the next push. (Owed, every row had gone again as a
  // push of nothing but that residual, late for every round, over the link
  // in a dip that had left it out: found in review.)
  void SkipTo(int64_t iteration);

  // How pushes encode their rows now, and (adaptive) the last measure that
  // chose it.
  const EncodingChoice& encoding() const { return choice_; }

 private:
  const RowLayout& layout_;
  EncodingChoice choice_;
  const bool budgeted_;
  const RowOrder order_;
  std::vector<float> residual_;
  std::vector<int64_t> last_pushed_;  // per row: the iteration of its last push
  std::vector<bool> demanded_;        // per row
  std::vector<float> decoded_;        // scratch
};

}  // namespace edgetrain

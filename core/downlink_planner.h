#pragma once
// What goes down to each worker: ROG's coordinator-to-worker half.
//
// An update carries the rows the worker needs before its next iteration
// (mandatory), then the rows whose copy misses the most updates, within what
// its downlink carries during one of its steps, so an update is through before
// the next is due and optional rows never hold up mandatory ones behind them
// (ROG; SSP and BSP send every fresh row). It also names the rows the worker
// must push next because a teammate waits on them (demands).
//
// A compressed job sends a row the worker already holds as the compressed
// difference from its copy (core/replica_record.h); a row whose copy is unknown
// goes whole, as float32.

#include <cstdint>
#include <optional>
#include <vector>

#include "core/replica_record.h"
#include "core/row_aggregator.h"
#include "core/row_codec.h"
#include "core/row_layout.h"
#include "core/staleness_ledger.h"
#include "core/time.h"

namespace edgetrain {

struct DownlinkRow {
  size_t id = 0;
  int64_t clock = 0;   // the row's clock at the coordinator
  bool delta = false;  // added to the worker's copy rather than replacing it
  EncodedRow encoded;
};

struct DownlinkUpdate {
  std::vector<DownlinkRow> rows;
  std::vector<size_t> demanded;
  bool empty() const { return rows.empty() && demanded.empty(); }
};

class DownlinkPlanner {
 public:
  // `budgeted`: updates are sized to the worker's link (ROG); otherwise every
  // fresh row goes (SSP, BSP). `encoding`: the job's compression.
  DownlinkPlanner(const RowLayout& layout, int workers, RowEncoding encoding, bool budgeted);

  // A new stream from `w`, or `w` back in the team after it was counted out
  // (its Welcome clears the demands it had heard): nothing is demanded of it
  // yet, so that what teammates wait on is asked of it again.
  void StreamOpened(int w);
  // The rows of a Welcome to `w`: the whole model for a worker that lost its
  // copy; else what it must have before its next iteration. An update lost with
  // an old stream may have left the worker's copy of any other row unknown:
  // until such a row goes whole again, it gets no differences.
  std::vector<DownlinkRow> Welcome(int w, bool whole_model, StalenessLedger& ledger, const RowAggregator& model);
  // Whether an update to `w` would carry anything.
  bool HasWork(int w, const StalenessLedger& ledger, const RowAggregator& model) const;
  // The next update to `w`: `downlink_mbps` and `step` (its iteration time)
  // size it when budgeted.
  DownlinkUpdate Update(int w, double downlink_mbps, Duration step, StalenessLedger& ledger,
                        const RowAggregator& model);
  // `w` pushed row `r`: a demand of it is met.
  void Pushed(int w, size_t r) { demanded_[Index(w, r)] = false; }

 private:
  size_t Index(int w, size_t r) const { return static_cast<size_t>(w) * layout_.size() + r; }
  DownlinkRow Whole(int w, size_t r, const StalenessLedger& ledger, const RowAggregator& model);
  DownlinkRow Difference(int w, size_t r, const StalenessLedger& ledger, const RowAggregator& model);
  void Sent(int w, size_t r, StalenessLedger& ledger, const RowAggregator& model);

  const RowLayout& layout_;
  const RowEncoding encoding_;
  const bool budgeted_;
  std::vector<int64_t> sent_version_;  // [w * rows + r]: the model version the worker's copy will hold
  std::vector<bool> demanded_;         // [w * rows + r]: asked of it since its last push of the row
  // Per worker, what it holds of each row: kept only for a compressed job.
  std::vector<std::optional<ReplicaRecord>> replicas_;
};

}  // namespace edgetrain

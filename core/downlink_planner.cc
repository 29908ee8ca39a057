#include "core/downlink_planner.h"

#include <limits>

#include "core/row_scheduler.h"

namespace edgetrain {

DownlinkPlanner::DownlinkPlanner(const RowLayout& layout, int workers, RowEncoding encoding, bool budgeted)
    : layout_(layout), encoding_(encoding), budgeted_(budgeted),
      sent_version_(static_cast<size_t>(workers) * layout.size(), 0),
      demanded_(static_cast<size_t>(workers) * layout.size(), false), replicas_(static_cast<size_t>(workers)) {
  if (encoding != RowEncoding::kFloat32) {
    for (auto& r : replicas_) r.emplace(layout);
  }
}

void DownlinkPlanner::StreamOpened(int w) {
  std::fill_n(demanded_.begin() + static_cast<ptrdiff_t>(Index(w, 0)), layout_.size(), false);
}

void DownlinkPlanner::Sent(int w, size_t r, StalenessLedger& ledger, const RowAggregator& model) {
  ledger.RecordSent(w, r);
  sent_version_[Index(w, r)] = model.version(r);
}

DownlinkRow DownlinkPlanner::Whole(int w, size_t r, const StalenessLedger& ledger, const RowAggregator& model) {
  const std::span<const float> values = model.row_values(r);
  if (replicas_[w]) replicas_[w]->RecordWhole(r, values);
  return {r, ledger.Clock(r), false, EncodeRow(values, RowEncoding::kFloat32)};
}

DownlinkRow DownlinkPlanner::Difference(int w, size_t r, const StalenessLedger& ledger, const RowAggregator& model) {
  return {r, ledger.Clock(r), true, replicas_[w]->Difference(r, model.row_values(r), encoding_)};
}

std::vector<DownlinkRow> DownlinkPlanner::Welcome(int w, bool whole_model, StalenessLedger& ledger,
                                                  const RowAggregator& model) {
  std::vector<bool> needed(layout_.size(), whole_model);
  for (size_t r : ledger.SendableMandatory(w)) needed[r] = true;
  std::vector<DownlinkRow> rows;
  for (size_t r = 0; r < layout_.size(); ++r) {
    if (!needed[r]) {
      if (replicas_[w]) replicas_[w]->Forget(r);
      continue;
    }
    rows.push_back(Whole(w, r, ledger, model));
    Sent(w, r, ledger, model);
  }
  return rows;
}

bool DownlinkPlanner::HasWork(int w, const StalenessLedger& ledger, const RowAggregator& model) const {
  // A row's clock can rise without its values changing (a teammate counted
  // out): what the worker now may have, it must be sent.
  if (!ledger.SendableMandatory(w).empty()) return true;
  for (size_t r = 0; r < layout_.size(); ++r) {
    if (model.version(r) > sent_version_[Index(w, r)]) return true;
  }
  for (size_t r : ledger.DemandFrom(w)) {
    if (!demanded_[Index(w, r)]) return true;
  }
  return false;
}

DownlinkUpdate DownlinkPlanner::Update(int w, double downlink_mbps, Duration step, StalenessLedger& ledger,
                                       const RowAggregator& model) {
  std::vector<bool> mandatory(layout_.size(), false);
  for (size_t r : ledger.SendableMandatory(w)) mandatory[r] = true;
  std::vector<PullCandidate> candidates;
  candidates.reserve(layout_.size());
  const ReplicaRecord* replica = replicas_[w] ? &*replicas_[w] : nullptr;
  for (size_t r = 0; r < layout_.size(); ++r) {
    const int64_t length = layout_.row(r).length;
    const int64_t bytes = replica && replica->Known(r) ? EncodedBytes(encoding_, length) : 4 * length;
    candidates.push_back({r, model.version(r) - sent_version_[Index(w, r)], bytes, mandatory[r]});
  }
  const int64_t budget = budgeted_ ? static_cast<int64_t>(downlink_mbps * 1e6 / 8 * ToSeconds(step))
                                   : std::numeric_limits<int64_t>::max() / 2;
  DownlinkUpdate update;
  for (size_t r : SelectPullRows(candidates, budget)) {
    update.rows.push_back(replica && replica->Known(r) ? Difference(w, r, ledger, model) : Whole(w, r, ledger, model));
    Sent(w, r, ledger, model);
  }
  for (size_t r : ledger.DemandFrom(w)) {
    if (demanded_[Index(w, r)]) continue;
    demanded_[Index(w, r)] = true;
    update.demanded.push_back(r);
  }
  return update;
}

}  // namespace edgetrain

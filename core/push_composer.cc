#include "core/push_composer.h"

#include <algorithm>
#include <limits>

#include "core/float_sums.h"
#include "core/row_scheduler.h"

namespace edgetrain {

PushComposer::PushComposer(const RowLayout& layout, Compression compression, bool budgeted, RowOrder order)
    : layout_(layout), choice_(compression), budgeted_(budgeted), order_(order),
      residual_(static_cast<size_t>(layout.total_floats()), 0.0f), last_pushed_(layout.size(), 0),
      demanded_(layout.size(), false) {}

void PushComposer::Accumulate(std::span<const float> gradient) {
  for (size_t i = 0; i < residual_.size(); ++i) residual_[i] += gradient[i];
}

void PushComposer::Demand(size_t r) {
  if (r < demanded_.size()) demanded_[r] = true;
}

std::vector<OutgoingRow> PushComposer::Compose(int64_t iteration, int staleness_bound, int64_t budget_bytes) {
  if (choice_.Due()) choice_.Choose(TopKNormShare(layout_, residual_));
  choice_.Composed();
  const RowEncoding encoding = choice_.encoding();
  std::vector<PushCandidate> candidates;
  candidates.reserve(layout_.size());
  for (size_t r = 0; r < layout_.size(); ++r) {
    const RowSpan& span = layout_.row(r);
    const double energy =
        SquaredNorm(std::span<const float>(residual_.data() + span.offset, static_cast<size_t>(span.length)));
    candidates.push_back({r, energy, EncodedBytes(encoding, span.length), last_pushed_[r], demanded_[r]});
  }
  const int64_t budget = budgeted_ ? budget_bytes : std::numeric_limits<int64_t>::max() / 2;
  std::vector<OutgoingRow> rows;
  for (size_t r : SelectPushRows(candidates, iteration, staleness_bound, budget, order_)) {
    const RowSpan& span = layout_.row(r);
    std::span<float> residual(residual_.data() + span.offset, static_cast<size_t>(span.length));
    EncodedRow encoded = EncodeRow(residual, encoding);
    // Error feedback: keep what the coordinator will not receive.
    if (encoding == RowEncoding::kFloat32) {
      std::fill(residual.begin(), residual.end(), 0.0f);
    } else {
      decoded_.resize(residual.size());
      (void)DecodeRow(encoded.encoding, encoded.scale, encoded.bytes, decoded_);
      for (size_t i = 0; i < residual.size(); ++i) residual[i] -= decoded_[i];
    }
    last_pushed_[r] = iteration;
    demanded_[r] = false;
    rows.push_back({r, std::move(encoded)});
  }
  return rows;
}

void PushComposer::SkipTo(int64_t iteration) {
  for (int64_t& last : last_pushed_) last = std::max(last, iteration);
  std::fill(demanded_.begin(), demanded_.end(), false);  // asked of rounds closed without it
}

void PushComposer::Restart(int64_t iteration) {
  std::fill(residual_.begin(), residual_.end(), 0.0f);
  std::fill(last_pushed_.begin(), last_pushed_.end(), iteration);
  std::fill(demanded_.begin(), demanded_.end(), false);
}

}  // namespace edgetrain

#include "core/model_copy.h"

#include <algorithm>
#include <string>

namespace edgetrain {

ModelCopy::ModelCopy(const RowLayout& layout)
    : layout_(layout), staged_(static_cast<size_t>(layout.total_floats()), 0.0f), staged_dirty_(layout.size(), false),
      staged_clock_(layout.size(), 0), applied_clock_(layout.size(), 0) {}

Status ModelCopy::Stage(size_t id, int64_t clock, bool delta, RowEncoding encoding, float scale,
                        std::string_view values) {
  if (id >= layout_.size()) return InvalidArgumentError("row " + std::to_string(id) + " does not exist");
  const RowSpan& span = layout_.row(id);
  std::span<float> out(staged_.data() + span.offset, static_cast<size_t>(span.length));
  EDGETRAIN_RETURN_IF_ERROR(delta ? AddDecodedRow(encoding, scale, values, out)
                                  : DecodeRow(encoding, scale, values, out));
  staged_dirty_[id] = true;
  staged_clock_[id] = clock;
  return Status::Ok();
}

void ModelCopy::ApplyStaged(std::span<float> model) {
  for (size_t r = 0; r < layout_.size(); ++r) {
    if (!staged_dirty_[r]) continue;
    const RowSpan& span = layout_.row(r);
    std::copy_n(staged_.begin() + span.offset, span.length, model.begin() + span.offset);
    applied_clock_[r] = staged_clock_[r];
    staged_dirty_[r] = false;
  }
}

int64_t ModelCopy::LeastClock() const {
  return applied_clock_.empty() ? 0 : *std::min_element(applied_clock_.begin(), applied_clock_.end());
}

bool ModelCopy::AllAtLeast(const std::vector<int64_t>& clocks, int64_t need) {
  return std::all_of(clocks.begin(), clocks.end(), [&](int64_t c) { return c >= need; });
}

}  // namespace edgetrain

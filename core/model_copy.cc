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

void ModelCopy::ApplyStaged(std::span<float> model, std::span<const float> offset, float scale, float lookahead) {
  if (lookahead != 0 && previous_.empty()) previous_ = staged_;
  for (size_t r = 0; r < layout_.size(); ++r) {
    if (!staged_dirty_[r]) continue;
    const RowSpan& span = layout_.row(r);
    if (lookahead != 0) {
      const int64_t moved = staged_clock_[r] - applied_clock_[r];
      const float per = moved > 0 && applied_clock_[r] > 0 ? lookahead / static_cast<float>(moved) : 0.0f;
      for (int64_t i = span.offset; i < span.offset + span.length; ++i) {
        model[i] = staged_[i] - scale * offset[i] + per * (staged_[i] - previous_[i]);
        previous_[i] = staged_[i];
      }
    } else {
      for (int64_t i = span.offset; i < span.offset + span.length; ++i) model[i] = staged_[i] - scale * offset[i];
    }
    applied_clock_[r] = staged_clock_[r];
    staged_dirty_[r] = false;
  }
}

void ModelCopy::ApplyPredicted(std::span<float> model, int64_t target) {
  if (last_step_.empty()) {
    last_step_.assign(staged_.size(), 0.0f);
    previous_ = staged_;
  }
  for (size_t r = 0; r < layout_.size(); ++r) {
    const RowSpan& span = layout_.row(r);
    if (staged_dirty_[r]) {
      const int64_t moved = staged_clock_[r] - applied_clock_[r];
      const float per = moved > 0 && applied_clock_[r] > 0 ? 1.0f / static_cast<float>(moved) : 0.0f;
      for (int64_t i = span.offset; i < span.offset + span.length; ++i) {
        last_step_[i] = per * (staged_[i] - previous_[i]);
        previous_[i] = staged_[i];
      }
      applied_clock_[r] = staged_clock_[r];
      staged_dirty_[r] = false;
    }
    const float ahead = static_cast<float>(std::max<int64_t>(0, target - applied_clock_[r]));
    for (int64_t i = span.offset; i < span.offset + span.length; ++i) model[i] = staged_[i] + ahead * last_step_[i];
  }
}

int64_t ModelCopy::LeastStagedClock() const {
  return staged_clock_.empty() ? 0 : *std::min_element(staged_clock_.begin(), staged_clock_.end());
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

#include "core/row_layout.h"

namespace edgetrain {

RowLayout::RowLayout(const std::vector<std::vector<int64_t>>& tensor_shapes, SyncGranularity granularity,
                     int64_t min_row_floats)
    : tensor_count_(tensor_shapes.size()) {
  for (uint32_t t = 0; t < tensor_shapes.size(); ++t) {
    const auto& shape = tensor_shapes[t];
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    int64_t rows = 1;
    if (granularity == SyncGranularity::kRow && shape.size() >= 2 && shape[0] > 0 && numel / shape[0] >= min_row_floats) {
      rows = shape[0];
    }
    int64_t length = rows > 0 ? numel / rows : 0;
    for (int64_t r = 0; r < rows; ++r) rows_.push_back({t, total_floats_ + r * length, length});
    total_floats_ += numel;
  }
  if (granularity == SyncGranularity::kModel) rows_ = {{0, 0, total_floats_}};
}

}  // namespace edgetrain

#pragma once
// How a model's parameters are cut into rows, the unit of transmission and of
// synchronisation in row-granular data parallelism (ROG). All parameters live in
// one flat float vector, tensor after tensor; a row is a contiguous range of it.
// Workers and coordinator derive the same layout from the tensor shapes and the
// granularity, so a row is named on the wire by its index alone.

#include <cstdint>
#include <vector>

#include "core/job_spec.h"

namespace edgetrain {

struct RowSpan {
  uint32_t tensor = 0;   // first tensor the row belongs to
  int64_t offset = 0;    // into the flat parameter vector
  int64_t length = 0;    // floats
};

class RowLayout {
 public:
  // Rows along dim 0 of every tensor of two or more dimensions whose rows are
  // at least `min_row_floats` long; 1-D and tiny tensors are one row each.
  // `layer` makes every tensor one row; `model` makes the whole model one row.
  RowLayout(const std::vector<std::vector<int64_t>>& tensor_shapes, SyncGranularity granularity,
            int64_t min_row_floats = 16);

  size_t size() const { return rows_.size(); }
  const RowSpan& row(size_t i) const { return rows_[i]; }
  const std::vector<RowSpan>& rows() const { return rows_; }
  int64_t total_floats() const { return total_floats_; }
  size_t tensors() const { return tensor_count_; }

 private:
  std::vector<RowSpan> rows_;
  int64_t total_floats_ = 0;
  size_t tensor_count_ = 0;
};

}  // namespace edgetrain

#pragma once
// What one worker holds of the model, as the coordinator records it, so that
// parameters can go down a slow link as compressed differences from the
// worker's copy rather than whole. Both ends add the same decoded values, so
// the record and the copy stay bit-identical; what compression drops from one
// difference is part of the next (error feedback), so the copy follows the
// parameters instead of drifting from them.

#include <span>
#include <vector>

#include "core/row_codec.h"
#include "core/row_layout.h"
#include "core/status.h"

namespace edgetrain {

class ReplicaRecord {
 public:
  explicit ReplicaRecord(const RowLayout& layout);

  // Rows whose copy is unknown (a new stream: what was in flight on the old
  // one may be lost) must next go whole.
  bool Known(size_t row) const { return known_[row]; }
  void Forget(size_t row) { known_[row] = false; }

  // The row went whole: the worker will hold `values`.
  void RecordWhole(size_t row, std::span<const float> values);

  // The difference from the worker's copy of a known row to `target`, encoded;
  // records what the worker will hold once it has added it.
  EncodedRow Difference(size_t row, std::span<const float> target, RowEncoding encoding);

 private:
  const RowLayout& layout_;
  std::vector<float> held_;
  std::vector<bool> known_;
  std::vector<float> scratch_;
};

}  // namespace edgetrain

#include "core/replica_record.h"

#include <algorithm>

namespace edgetrain {

ReplicaRecord::ReplicaRecord(const RowLayout& layout)
    : layout_(layout), held_(static_cast<size_t>(layout.total_floats()), 0.0f), known_(layout.size(), false) {}

void ReplicaRecord::RecordWhole(size_t row, std::span<const float> values) {
  std::copy(values.begin(), values.end(), held_.begin() + layout_.row(row).offset);
  known_[row] = true;
}

EncodedRow ReplicaRecord::Difference(size_t row, std::span<const float> target, RowEncoding encoding) {
  std::span<float> held(held_.data() + layout_.row(row).offset, target.size());
  scratch_.resize(target.size());
  for (size_t i = 0; i < target.size(); ++i) scratch_[i] = target[i] - held[i];
  EncodedRow encoded = EncodeRow(scratch_, encoding);
  // Exactly what the worker will decode and add (AddDecodedRow).
  (void)AddDecodedRow(encoded.encoding, encoded.scale, encoded.bytes, held);
  return encoded;
}

}  // namespace edgetrain

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
  // Exactly what the worker will decode and add (AddDifference).
  (void)AddDifference(encoded.encoding, encoded.scale, encoded.bytes, held, scratch_);
  return encoded;
}

Status AddDifference(RowEncoding encoding, float scale, std::string_view bytes, std::span<float> row,
                     std::vector<float>& scratch) {
  scratch.resize(row.size());
  EDGETRAIN_RETURN_IF_ERROR(DecodeRow(encoding, scale, bytes, scratch));
  for (size_t i = 0; i < row.size(); ++i) row[i] += scratch[i];
  return Status::Ok();
}

}  // namespace edgetrain

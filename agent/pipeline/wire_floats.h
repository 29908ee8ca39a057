#pragma once
// Activations, gradients and state as they cross the wire between stages and
// head: float32 values as bytes, through the row codec the data-parallel
// engine sends its rows with (core/row_codec.h).

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/row_codec.h"

namespace edgetrain::agent {

inline std::string FloatBytes(std::span<const float> values) {
  return EncodeRow(values, RowEncoding::kFloat32).bytes;
}

// InvalidArgument when the bytes are not whole floats.
inline StatusOr<std::vector<float>> FloatsOf(std::string_view bytes) {
  if (bytes.size() % sizeof(float) != 0) {
    return InvalidArgumentError(std::to_string(bytes.size()) + " bytes are not whole float32 values");
  }
  std::vector<float> values(bytes.size() / sizeof(float));
  EDGETRAIN_RETURN_IF_ERROR(DecodeRow(RowEncoding::kFloat32, 1, bytes, values));
  return values;
}

}  // namespace edgetrain::agent

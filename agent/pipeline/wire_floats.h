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

// Decodes `bytes` onto the end of `into`, with no copy in between (the head
// gathers the stages' state slices so). InvalidArgument when the bytes are
// not whole floats.
inline Status AppendFloats(std::string_view bytes, std::vector<float>& into) {
  if (bytes.size() % sizeof(float) != 0) {
    return InvalidArgumentError(std::to_string(bytes.size()) + " bytes are not whole float32 values");
  }
  const size_t at = into.size();
  into.resize(at + bytes.size() / sizeof(float));
  return DecodeRow(RowEncoding::kFloat32, 1, bytes, std::span<float>(into).subspan(at));
}

inline StatusOr<std::vector<float>> FloatsOf(std::string_view bytes) {
  std::vector<float> values;
  EDGETRAIN_RETURN_IF_ERROR(AppendFloats(bytes, values));
  return values;
}

}  // namespace edgetrain::agent

#pragma once
// Activations, gradients and state as they cross the wire between stages and
// head: float32 values as bytes, through the row codec the data-parallel
// engine sends its rows with (core/row_codec.h).

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/row_codec.h"
#include "edgetrain/v1/training.pb.h"

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

// The state of two runs of layers, `front` just before `back`, as one:
// tensor after tensor, one optimizer row a tensor (a stage taking a lost
// neighbour's layers; the head joining them to layers moved the same step).
inline v1::StageState JoinStates(const v1::StageState& front, const v1::StageState& back) {
  v1::StageState whole;
  whole.set_parameters(front.parameters() + back.parameters());
  whole.set_first_moment(front.first_moment() + back.first_moment());
  whole.set_second_moment(front.second_moment() + back.second_moment());
  whole.mutable_row_steps()->Add(front.row_steps().begin(), front.row_steps().end());
  whole.mutable_row_steps()->Add(back.row_steps().begin(), back.row_steps().end());
  return whole;
}

}  // namespace edgetrain::agent

#pragma once
// A stage's replica crosses the wire in parts (ReplicaPart), each sent only
// when the stage has nothing else to send; the head puts a stage's parts
// back together, and so does a stage for each neighbour whose replicas the
// head relays to it. One assembly takes one sender's parts, in order.

#include <cstdint>
#include <optional>
#include <string>

#include "core/bfloat16.h"
#include "core/status.h"
#include "edgetrain/v1/training.pb.h"

namespace edgetrain::agent {

class ReplicaAssembly {
 public:
  // The replica, once `part` completes it; none before, nor when a part
  // was missed (a stream that ended mid-replica: that replica is given up)
  // or what came does not parse.
  std::optional<v1::StageReplica> Add(const v1::ReplicaPart& part) {
    if (part.offset() == 0) {
      step_ = part.step();
      bytes_.clear();
    } else if (part.step() != step_ || part.offset() != static_cast<int64_t>(bytes_.size())) {
      step_ = -1;
      bytes_.clear();
      return std::nullopt;
    }
    bytes_ += part.data();
    if (static_cast<int64_t>(bytes_.size()) < part.total()) return std::nullopt;
    v1::StageReplica replica;
    const bool whole = static_cast<int64_t>(bytes_.size()) == part.total() && replica.ParseFromString(bytes_);
    step_ = -1;
    bytes_.clear();
    if (!whole) return std::nullopt;
    return replica;
  }

 private:
  int64_t step_ = -1;  // of the replica coming; -1: none
  std::string bytes_;
};

// `state`'s optimizer moments as float32, as a stage installs state (a
// replica carries them as bfloat16 by default).
inline Status MomentsToFloat32(v1::StageState& state) {
  if (!state.moments_bfloat16()) return Status::Ok();
  EDGETRAIN_ASSIGN_OR_RETURN(std::string first, Bfloat16ToFloat32Bytes(state.first_moment()));
  EDGETRAIN_ASSIGN_OR_RETURN(std::string second, Bfloat16ToFloat32Bytes(state.second_moment()));
  state.set_first_moment(std::move(first));
  state.set_second_moment(std::move(second));
  state.set_moments_bfloat16(false);
  return Status::Ok();
}

}  // namespace edgetrain::agent

#pragma once
// Which of a pipeline stage's replicas the head relays on to the devices of
// the neighbouring stage, which rebuild the stage should the head be lost
// with its devices: step 1's, then the first at or after each multiple of
// replicateEvery. The head keeps every replica the stage sends, its own
// copies made in between included (replicateCentralEvery, or paced by
// their cost); only these go on. The stage makes one due at a multiple as
// soon as the copy before it is out, so a late one is still relayed, and
// a copy made between multiples never takes its place: both ends agree on
// which is relayed without a word on the wire for it.

#include <cstdint>

namespace edgetrain {

class ReplicaRelay {
 public:
  // The replica of `step`, as its first part comes in: relayed on, or kept
  // at the head alone.
  bool Relays(int64_t step, int every) {
    const int64_t period = every > 0 ? step / every : 0;
    if (step != 1 && !(every > 0 && period > period_)) return false;
    period_ = period;
    return true;
  }

 private:
  int64_t period_ = -1;  // of the last relayed, counted in replicateEvery
};

}  // namespace edgetrain

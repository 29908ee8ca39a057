#pragma once
// The head's account of one attempt at a step, for covering a device of a
// group lost mid-step (docs/pipeline.md, "A device lost from a stage of
// several"): the shares dealt to each device of a group, which a device
// covering a lost one is sent again; the parts each device has sent on, so
// that its cover's of the same part are dropped; and who covers whom.
//
// A group sums its gradients once a step, so a device lost mid-step takes
// with it the gradient of every share it computed: another of its group
// computes them again, from what was dealt to it, while the rest of the
// pipeline goes on. Without this account the whole step ran again on every
// stage.

#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "edgetrain/v1/training.pb.h"

namespace edgetrain::agent {

class StepCovers {
 public:
  // A new attempt: nothing dealt, sent or covered yet.
  void Clear() {
    dealt_.clear();
    sent_.clear();
    cover_of_.clear();
    done_of_.clear();
    summed_.clear();
  }

  // `share`, dealt to member `member` of stage `stage`'s group (forward: an
  // activation; backward: a gradient of its output), kept for a cover.
  void Dealt(bool forward, int micro_batch, int stage, size_t member, const v1::MicroBatch& share) {
    dealt_[{stage, member}][{forward, micro_batch}] = share;
  }
  // What member `member` of stage `stage` was dealt so far: each share, and
  // whether it went forward.
  std::vector<std::pair<bool, v1::MicroBatch>> DealtTo(int stage, size_t member) const {
    std::vector<std::pair<bool, v1::MicroBatch>> shares;
    if (const auto found = dealt_.find({stage, member}); found != dealt_.end()) {
      for (const auto& [key, share] : found->second) shares.emplace_back(key.first, share);
    }
    return shares;
  }

  // Member `member` of stage `stage` sent its part of `micro_batch` on (or
  // its cover did): true the first time, false for the same part again.
  bool FirstSent(bool forward, int micro_batch, int stage, size_t member) {
    return sent_.insert({forward, micro_batch, stage, member}).second;
  }
  // Whether it has: a part its cover computes again was computed before.
  bool WasSent(bool forward, int micro_batch, int stage, size_t member) const {
    return sent_.count({forward, micro_batch, stage, member}) > 0;
  }

  // `by` computes `lost`'s shares from now on in this attempt, but those of
  // the micro-batches `done` (their gradient came in `lost`'s parts).
  void Cover(int lost, int by, std::set<int> done = {}) {
    cover_of_[lost] = by;
    done_of_[lost] = std::move(done);
  }
  // The micro-batches whose shares a covered device computed itself.
  bool DoneBy(int rank, int micro_batch) const {
    const auto found = done_of_.find(rank);
    return found != done_of_.end() && found->second.count(micro_batch) > 0;
  }
  // Who computes `rank`'s shares, if it was lost and is covered.
  std::optional<int> CoverOf(int rank) const {
    const auto found = cover_of_.find(rank);
    if (found == cover_of_.end()) return std::nullopt;
    return found->second;
  }
  // Whether `rank` covers a lost device: its own loss would take that one's
  // shares with it too.
  bool Covers(int rank) const {
    for (const auto& [lost, by] : cover_of_) {
      if (by == rank) return true;
    }
    return false;
  }

  // Stage `stage`'s group summed its gradient in this attempt: each of its
  // devices had sent its own, and every share was computed.
  void Summed(int stage) { summed_.insert(stage); }
  bool WasSummed(int stage) const { return summed_.count(stage) > 0; }

 private:
  // By (stage, member), each share by (forward, micro-batch).
  std::map<std::pair<int, size_t>, std::map<std::pair<bool, int>, v1::MicroBatch>> dealt_;
  std::set<std::tuple<bool, int, int, size_t>> sent_;  // (forward, micro-batch, from stage, member)
  std::map<int, int> cover_of_;                         // lost rank -> the rank that covers it
  std::map<int, std::set<int>> done_of_;                // lost rank -> micro-batches it computed itself
  std::set<int> summed_;
};

}  // namespace edgetrain::agent

#pragma once
// When a round of the `deadline` policy closes (docs/data-parallelism.md,
// "Rounds that close at a deadline").
//
// Round t is the team's t-th step: every worker computes its gradient on the
// model of step t - 1, fresh, and the round closes when every worker counted
// in it has pushed its rows — or at the round's deadline. The deadline is set
// once a quorum of the counted workers have pushed the whole round: it is
// then `slack` times what the quorum took after the round opened, from the
// moment the quorum was complete. A link in a dip or an outage therefore holds
// the team at most (1 + slack) times what the others' links took, whatever
// the bandwidth of the others, and the team never waits for a link that is
// out: with no outage, every worker makes every round.
//
// Workers still out at the deadline are excused from the round
// (StalenessLedger::Excuse): the rows step on what arrived, their rows that
// arrived included. They are counted again from the round whose model they
// compute on.

#include <cstdint>
#include <optional>

#include "core/clock.h"

namespace edgetrain {

class RoundDeadline {
 public:
  // `quorum`: the share of the round's counted workers, in (0, 1]; `slack` >= 0.
  RoundDeadline(double quorum, double slack);

  // Round `round` opened at `at`: the model of step round - 1 is complete.
  void Opened(int64_t round, TimePoint at);
  int64_t round() const { return round_; }
  TimePoint opened_at() const { return opened_; }
  // The number of workers that must have pushed the whole round before its
  // deadline is set, of `counted` the round waits on: at least one.
  int QuorumOf(int counted) const;
  // `complete` of the `counted` workers have pushed the whole of this round,
  // the last of them at `at`. Sets the deadline when they are a quorum.
  void Completed(int complete, int counted, TimePoint at);
  // Unset until the quorum is in.
  std::optional<TimePoint> deadline() const { return deadline_; }
  bool Due(TimePoint now) const { return deadline_ && now >= *deadline_; }

 private:
  const double quorum_;
  const double slack_;
  int64_t round_ = 0;
  TimePoint opened_{};
  std::optional<TimePoint> deadline_;
};

}  // namespace edgetrain

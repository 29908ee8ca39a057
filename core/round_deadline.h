#pragma once
// When a round of the `deadline` policy closes (docs/data-parallelism.md,
// "Rounds that close at a deadline").
//
// Round t is the team's t-th step: every worker computes its gradient on the
// model of step t - 1, fresh, as under bsp, and the round closes when every
// worker counted in it has pushed its rows — or at the round's deadline. The
// deadline is set once a quorum of the counted workers have pushed the whole
// round: the rest get `slack` times what the quorum took since the round
// opened. A link in a dip therefore holds the team at most (1 + slack) times
// what the quorum's links took, whatever that is (no fixed timeout to tune
// per cluster), and a link that keeps up, even a slow one, makes every round:
// on links that do not fade the policy is bsp.
//
// Workers still out at the deadline are excused from the round
// (StalenessLedger::Excuse): the rows step on the mean of what arrived, the
// rows of theirs that arrived included; what comes after is late, and
// dropped. They count again from the first round they push for while it is
// open.

#include <cstdint>
#include <optional>

#include "core/time.h"

namespace edgetrain {

// The defaults the CRD documents (crds/trainingjob.yaml, spec.sync).
inline constexpr double kDefaultQuorum = 0.75;
inline constexpr double kDefaultDeadlineSlack = 1.0;

class RoundDeadline {
 public:
  // `quorum`: the share of the round's counted workers, in (0, 1]; `slack` >= 0.
  RoundDeadline(double quorum, double slack);

  // Round `round` opened at `at`: the model of step round - 1 is complete.
  void Opened(int64_t round, TimePoint at);
  int64_t round() const { return round_; }
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

#pragma once
// The coordinator's book of who has contributed what to every row, and how fresh
// each worker's copy of every row is: bounded staleness, row by row (ROG).
//
// Iterations count from 1. A worker's push after its iteration t carries, for
// each row in it, everything that worker computed for that row up to t (its
// residual, with error feedback). So:
//   pushed(w, r) = the last iteration of w whose gradient of row r is applied;
//   clock(r)     = min over active workers of pushed(w, r): every active
//                  worker's contribution up to clock(r) is in row r;
//   copy(w, r)   = clock(r) when row r was last sent to w.
// The bound: a worker may compute iteration t only when copy(w, r) >= t - 1 - S
// for every row r — no row is ever used more than S iterations stale. S = 0 is
// bulk synchronous (BSP); whole-model rows give stale synchronous (SSP).
//
// Workers whose link has died are set inactive and leave the minimum, so one
// robot behind a wall does not stop the team; on rejoining they resume at the
// team's iteration (their missed gradients are dropped, their copy resent).
//
// Policy deadline (core/round_deadline.h) closes a round without the workers
// still out at its deadline: they are excused, and stay active — sent rows,
// their pushes read — but leave the clocks' minimum, as if counted out, until
// they push for the round the team is in (Readmit).
//
// The bound tolerates lag between teammates; it buys nothing against oneself.
// A worker that is the only one active has every row's clock at its own
// pushes, and S > 0 would only have it compute on its own delayed updates:
// with momentum that overshoots (measured in docs/data-parallelism.md, "A
// team of one"). So while at most one worker is active the bound in force is 0,
// and it is S again once a teammate is back.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace edgetrain {

class StalenessLedger {
 public:
  StalenessLedger(int workers, size_t rows, int staleness_bound);

  int workers() const { return static_cast<int>(iteration_.size()); }
  size_t rows() const { return rows_; }
  // The bound the job asked for.
  int bound() const { return bound_; }
  // The bound in force now: S, or 0 while at most one worker is active.
  int BoundInForce() const { return active_count() <= 1 ? 0 : bound_; }

  // A push of `w` after iteration `iteration` carrying row `r`.
  void RecordPush(int w, size_t r, int64_t iteration);
  // `w` finished `iteration` (whether or not it pushed every row).
  void RecordIteration(int w, int64_t iteration);
  // Row `r` was sent to `w` with the clock it has now.
  void RecordSent(int w, size_t r) { copy_[Index(w, r)] = Clock(r); }

  int64_t Clock(size_t r) const;
  int64_t pushed(int w, size_t r) const { return pushed_[Index(w, r)]; }
  int64_t copy(int w, size_t r) const { return copy_[Index(w, r)]; }
  int64_t iteration(int w) const { return iteration_[w]; }
  // The least clock a copy must have for iteration `t`: t - 1 - S, with the
  // bound in force.
  int64_t Need(int64_t t) const { return t - 1 - BoundInForce(); }

  // The furthest iteration `w` can have computed from what it was sent: the
  // largest t with copy(w, r) >= t - 1 - S for every row r. A worker that keeps
  // the bound pushes nothing beyond it.
  int64_t FurthestComputable(int w) const;

  // Rows `w` must receive before it can compute its next iteration and that the
  // coordinator can already send (clock(r) is high enough).
  std::vector<size_t> SendableMandatory(int w) const;
  // Rows `w` waits for that no send can satisfy yet, because active worker `lagging`
  // has not pushed them far enough: what to demand from `lagging`.
  std::vector<size_t> DemandFrom(int lagging) const;

  // Whether an active teammate's next iteration needs what only active worker
  // `w` can give: rows pushed further than the coordinator has them from it.
  // Its compute or its link may be the cause; from here the two look alike,
  // since what a worker computed is known only once its push arrives.
  bool HoldsTeam(int w) const;

  bool active(int w) const { return active_[w]; }
  int active_count() const;
  // Policy deadline: `w` leaves the rows' clocks until Readmit.
  void Excuse(int w) { excused_[w] = true; }
  bool excused(int w) const { return excused_[w]; }
  // Back in the rows' clocks: credited with a push of every row at the clock
  // the row has without it, so that no clock drops; the rows that have not
  // stepped for the round it pushes for then wait for its push.
  void Readmit(int w);
  // Whose pushes the rows' clocks wait for: active and not excused.
  bool counted(int w) const { return active_[w] && !excused_[w]; }
  void Deactivate(int w) { active_[w] = false; }
  // Brings `w` back: its iteration set to the slowest active teammate's, credited
  // with a push of every row at that iteration (its missed gradients are
  // dropped). A restarted worker has lost its copy (`copy_lost`): everything is
  // resent; one whose link came back keeps what it holds, and gets only what it
  // lacks. Returns the iteration it resumes after.
  int64_t Rejoin(int w, bool copy_lost = true);

  // The team trains on from a copy of the model whose rows are at `clocks`
  // (core/model_takeover.h): every worker is credited with every row up to its
  // clock and is at the least of them, and nothing has been sent to anyone.
  void Resume(const std::vector<int64_t>& clocks);

  // The slowest active worker's iteration (the team's progress), or the slowest
  // of all when none is active.
  int64_t MinActiveIteration() const;

 private:
  size_t Index(int w, size_t r) const { return static_cast<size_t>(w) * rows_ + r; }

  size_t rows_;
  int bound_;
  std::vector<int64_t> pushed_;     // [w * rows + r]
  std::vector<int64_t> copy_;       // [w * rows + r]
  std::vector<int64_t> iteration_;  // [w]
  std::vector<bool> active_;        // [w]
  std::vector<bool> excused_;       // [w]
};

}  // namespace edgetrain

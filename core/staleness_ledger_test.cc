#include "core/staleness_ledger.h"

#include <random>

#include <gtest/gtest.h>

#include "core/row_scheduler.h"

namespace edgetrain {
namespace {

TEST(StalenessLedgerTest, ClockIsTheSlowestActiveContribution) {
  StalenessLedger l(3, 2, 4);
  l.RecordPush(0, 0, 5);
  l.RecordPush(1, 0, 3);
  l.RecordPush(2, 0, 7);
  EXPECT_EQ(l.Clock(0), 3);
  EXPECT_EQ(l.Clock(1), 0);
  l.Deactivate(1);
  EXPECT_EQ(l.Clock(0), 5);
  EXPECT_EQ(l.active_count(), 2);
  l.RecordPush(0, 0, 2);  // an older push never lowers what was recorded
  EXPECT_EQ(l.pushed(0, 0), 5);
}

TEST(StalenessLedgerTest, MandatoryRowsAreThoseTheNextIterationNeedsAndCanHave) {
  StalenessLedger l(2, 3, 2);  // S = 2
  for (size_t r = 0; r < 3; ++r) {
    l.RecordPush(0, r, 4);
    l.RecordPush(1, r, 4);
  }
  l.RecordSent(0, 0);  // worker 0's copy of row 0 has clock 4; rows 1, 2 clock 0
  l.RecordIteration(0, 4);
  // Iteration 5 needs clock >= 5 - 1 - 2 = 2: rows 1 and 2, which are at 4 already.
  EXPECT_EQ(l.Need(5), 2);
  EXPECT_EQ(l.SendableMandatory(0), (std::vector<size_t>{1, 2}));
  l.RecordSent(0, 1);
  l.RecordSent(0, 2);
  EXPECT_TRUE(l.SendableMandatory(0).empty());
}

TEST(StalenessLedgerTest, DemandsExactlyTheRowsALaggingWorkerHolds) {
  StalenessLedger l(2, 4, 1);  // S = 1
  // Worker 0 is at iteration 6 and pushed everything; worker 1 reached 6 too but
  // its link let only rows 0 and 1 through since iteration 3.
  for (size_t r = 0; r < 4; ++r) l.RecordPush(0, r, 6);
  l.RecordPush(1, 0, 6);
  l.RecordPush(1, 1, 6);
  l.RecordPush(1, 2, 3);
  l.RecordPush(1, 3, 3);
  // Worker 0's iteration 7 needs clock >= 5; rows 2 and 3 are at 3 because of worker 1.
  EXPECT_EQ(l.DemandFrom(1), (std::vector<size_t>{2, 3}));
  EXPECT_TRUE(l.DemandFrom(0).empty());
  l.Deactivate(1);
  EXPECT_TRUE(l.DemandFrom(1).empty()) << "nothing is demanded of a worker counted out";
}

TEST(StalenessLedgerTest, TellsWhichWorkersTheTeamWaitsOn) {
  StalenessLedger l(3, 2, 1);  // S = 1
  for (size_t r = 0; r < 2; ++r) {
    l.RecordPush(0, r, 6);
    l.RecordPush(1, r, 3);  // behind: at iteration 3
  }
  l.RecordPush(2, 0, 6);    // computed 6, but only row 0 came through
  l.RecordPush(2, 1, 3);
  // Worker 0's iteration 7 needs clocks >= 5.
  EXPECT_TRUE(l.HoldsTeam(1));
  EXPECT_TRUE(l.HoldsTeam(2));
  EXPECT_FALSE(l.HoldsTeam(0));
  l.Deactivate(1);
  EXPECT_FALSE(l.HoldsTeam(1)) << "a worker counted out holds nobody";
}

TEST(StalenessLedgerTest, ARejoiningWorkerResumesAtTheTeamsIteration) {
  StalenessLedger l(3, 2, 4);
  for (int w = 0; w < 3; ++w)
    for (size_t r = 0; r < 2; ++r) l.RecordPush(w, r, 2);
  l.RecordSent(2, 0);
  l.Deactivate(2);
  for (int w = 0; w < 2; ++w)
    for (size_t r = 0; r < 2; ++r) l.RecordPush(w, r, w == 0 ? 20 : 18);
  EXPECT_EQ(l.Clock(0), 18);
  EXPECT_EQ(l.Rejoin(2), 18);
  EXPECT_TRUE(l.active(2));
  EXPECT_EQ(l.iteration(2), 18);
  EXPECT_EQ(l.Clock(0), 18) << "the rejoin must not pull the clocks back";
  EXPECT_EQ(l.pushed(2, 1), 18) << "credited as it will believe of itself";
  EXPECT_EQ(l.copy(2, 0), 0) << "its whole copy is resent";
  l.RecordSent(2, 0);
  l.Deactivate(2);
  EXPECT_EQ(l.Rejoin(2, /*copy_lost=*/false), 18);
  EXPECT_EQ(l.copy(2, 0), 18) << "a worker whose link came back keeps its copy";
}

// A worker counted out ahead of the team and set back by its rejoin keeps
// the pushes it made: the rows' clocks then stand past the slowest
// teammate's iteration, and another worker back meanwhile must not pull them
// back, or the rows next sent a teammate lower the copy it is known to hold
// below what it computed on, and its honest push is refused as
// future_iteration.
TEST(StalenessLedgerTest, ARejoinBehindATeammateSetBackPullsNoClockBack) {
  StalenessLedger l(4, 2, 4);  // S = 4
  for (int w = 0; w < 4; ++w)
    for (size_t r = 0; r < 2; ++r) l.RecordPush(w, r, 10);
  l.Deactivate(3);  // counted out: a long dip
  for (size_t r = 0; r < 2; ++r) {
    l.RecordPush(1, r, 14);
    l.RecordPush(2, r, 14);
    l.RecordPush(0, r, 19);  // S + 1 ahead of the clocks, as it may be
  }
  l.Deactivate(0);  // a short blip
  ASSERT_EQ(l.Rejoin(0, /*copy_lost=*/false), 14) << "back at the slowest teammate's iteration, below its own pushes";
  for (size_t r = 0; r < 2; ++r) {
    l.RecordPush(1, r, 18);
    l.RecordPush(2, r, 18);
    l.RecordSent(1, r);
  }
  ASSERT_EQ(l.FurthestComputable(1), 23);
  // Worker 3 is back before worker 0's next push: the team's iteration, 14,
  // is below every row's clock.
  EXPECT_EQ(l.Rejoin(3, /*copy_lost=*/false), 14);
  EXPECT_EQ(l.Clock(0), 18) << "the rejoin must not pull the clocks back";
  EXPECT_EQ(l.Clock(1), 18);
  EXPECT_EQ(l.pushed(3, 0), 18) << "credited at the row's clock, further than its iteration";
  l.RecordSent(1, 1);  // a row sent again, as the downlink does once it has stepped
  EXPECT_EQ(l.FurthestComputable(1), 23) << "worker 1's honest push of 23 stays within its bound";
}

// A team of workers driven through the ledger and the row scheduler on a
// simulated timeline: uneven compute, links of a few rows per tick, one link cut
// for a while. The invariants: no row is ever used more than S iterations stale;
// the others keep training while a worker is cut off; it rejoins afterwards.
struct TeamSimulation {
  static constexpr int kWorkers = 4;
  static constexpr size_t kRows = 40;
  int bound;
  StalenessLedger ledger;
  std::mt19937_64 rng{42};
  struct Worker {
    int64_t iteration = 0;
    std::vector<int64_t> last_pushed = std::vector<int64_t>(kRows, 0);
    std::vector<double> residual = std::vector<double>(kRows, 0);
    std::vector<bool> demanded = std::vector<bool>(kRows, false);
    int compute_ticks = 1;
    int busy_until = 0;
    int rows_per_tick = 12;
    bool link_up = true;
    int silent_ticks = 0;
  };
  std::vector<Worker> workers = std::vector<Worker>(kWorkers);
  int64_t max_staleness_used = 0;

  explicit TeamSimulation(int s) : bound(s), ledger(kWorkers, kRows, s) {
    workers[1].compute_ticks = 3;  // a slower device
    workers[3].rows_per_tick = 6;  // a weaker link
  }

  void Tick(int now) {
    for (int w = 0; w < kWorkers; ++w) {
      Worker& k = workers[w];
      // The coordinator's downlink: what the worker needs, then what it misses.
      if (k.link_up && ledger.active(w)) {
        for (size_t r : ledger.SendableMandatory(w)) ledger.RecordSent(w, r);
        int budget = k.rows_per_tick;
        for (size_t r = 0; r < kRows && budget > 0; ++r) {
          if (ledger.copy(w, r) < ledger.Clock(r)) {
            ledger.RecordSent(w, r);
            --budget;
          }
        }
      }
      if (now < k.busy_until) continue;
      int64_t t = k.iteration + 1;
      bool fresh = true;
      for (size_t r = 0; r < kRows; ++r) fresh &= ledger.copy(w, r) >= t - 1 - bound;
      if (!fresh) continue;  // stalls: waits for rows
      for (size_t r = 0; r < kRows; ++r) max_staleness_used = std::max(max_staleness_used, (t - 1) - ledger.copy(w, r));
      k.iteration = t;
      k.busy_until = now + k.compute_ticks;
      for (size_t r = 0; r < kRows; ++r) k.residual[r] += std::uniform_real_distribution<double>(0, 1)(rng);
      if (!k.link_up) continue;  // computed, nothing gets out
      std::vector<PushCandidate> candidates;
      for (size_t r = 0; r < kRows; ++r) candidates.push_back({r, k.residual[r], 1, k.last_pushed[r], k.demanded[r]});
      for (size_t r : SelectPushRows(candidates, t, bound, k.rows_per_tick, RowOrder::kImportance)) {
        ledger.RecordPush(w, r, t);
        k.last_pushed[r] = t;
        k.residual[r] = 0;
        k.demanded[r] = false;
      }
      ledger.RecordIteration(w, t);
    }
    // Coordinator: demands, and counting out workers silent past a deadline.
    for (int w = 0; w < kWorkers; ++w) {
      Worker& k = workers[w];
      k.silent_ticks = k.link_up ? 0 : k.silent_ticks + 1;
      if (k.silent_ticks > 5 && ledger.active(w)) ledger.Deactivate(w);
      if (k.link_up && !ledger.active(w)) {
        k.iteration = ledger.Rejoin(w);
        for (size_t r = 0; r < kRows; ++r) {
          k.last_pushed[r] = ledger.pushed(w, r);
          k.residual[r] = 0;
        }
      }
      if (k.link_up) {
        for (size_t r : ledger.DemandFrom(w)) k.demanded[r] = true;
      }
    }
  }
};

TEST(StalenessLedgerTest, ATeamNeverUsesARowMoreThanSStaleAndSurvivesACutLink) {
  for (int bound : {0, 1, 4, 20}) {
    SCOPED_TRACE("S = " + std::to_string(bound));
    TeamSimulation sim(bound);
    for (int now = 0; now < 200; ++now) sim.Tick(now);
    int64_t before_cut = sim.workers[0].iteration;
    EXPECT_GT(before_cut, 20);
    sim.workers[2].link_up = false;
    int64_t cut_at = sim.workers[2].iteration;
    for (int now = 200; now < 400; ++now) sim.Tick(now);
    EXPECT_FALSE(sim.ledger.active(2));
    EXPECT_GT(sim.workers[0].iteration, before_cut + bound + 20) << "the team stopped for one lost robot";
    EXPECT_LE(sim.workers[2].iteration, cut_at + bound + 1) << "a cut-off worker ran past its bound";
    sim.workers[2].link_up = true;
    for (int now = 400; now < 600; ++now) sim.Tick(now);
    EXPECT_TRUE(sim.ledger.active(2));
    EXPECT_GT(sim.workers[2].iteration, sim.workers[0].iteration - bound - 5) << "did not rejoin the team";
    EXPECT_LE(sim.max_staleness_used, bound);
  }
}

// A team trains on from a worker's copy of the model (core/model_takeover.h):
// its rows' clocks are the copy's, every worker at the least of them, and
// nothing is sent yet, so every row is mandatory for everyone.
TEST(StalenessLedgerTest, ATeamResumedFromACopyHasItsClocksAndNothingSent) {
  StalenessLedger l(2, 3, 1);
  l.Resume({12, 10, 11});
  for (size_t r = 0; r < 3; ++r) EXPECT_EQ(l.Clock(r), std::vector<int64_t>({12, 10, 11})[r]);
  EXPECT_EQ(l.iteration(0), 10);
  EXPECT_EQ(l.iteration(1), 10);
  EXPECT_EQ(l.FurthestComputable(0), 0 + 1 + 1) << "nothing sent: only what the initial model allows";
  EXPECT_EQ(l.SendableMandatory(0).size(), 3u);
  for (size_t r = 0; r < 3; ++r) l.RecordSent(0, r);
  EXPECT_EQ(l.FurthestComputable(0), 10 + 1 + 1);
}

// Policy deadline: a worker still out when its round's deadline passes is
// excused, and the rows step without it; back, it never lowers a clock.
TEST(StalenessLedgerTest, AnExcusedWorkerLeavesTheClocksUntilItIsReadmitted) {
  StalenessLedger l(3, 2, 0);
  for (int w = 0; w < 3; ++w) {
    for (size_t r = 0; r < 2; ++r) l.RecordPush(w, r, 4);
  }
  // Round 5: workers 0 and 1 are in; worker 2 pushed only row 0.
  for (int w = 0; w < 2; ++w) {
    for (size_t r = 0; r < 2; ++r) l.RecordPush(w, r, 5);
  }
  l.RecordPush(2, 0, 5);
  EXPECT_EQ(l.Clock(1), 4) << "row 1 waits for worker 2";
  EXPECT_TRUE(l.HoldsTeam(2));
  l.Excuse(2);
  EXPECT_TRUE(l.excused(2));
  EXPECT_TRUE(l.active(2)) << "excused, it is still sent rows and heard";
  EXPECT_FALSE(l.counted(2));
  EXPECT_EQ(l.Clock(1), 5);
  EXPECT_FALSE(l.HoldsTeam(2));
  EXPECT_TRUE(l.DemandFrom(2).empty()) << "nothing is demanded of an excused worker";
  // The team goes on: row 0 through round 7, row 1 through round 6.
  for (int w = 0; w < 2; ++w) {
    l.RecordPush(w, 0, 7);
    l.RecordPush(w, 1, 6);
  }
  l.Readmit(2);
  EXPECT_TRUE(l.counted(2));
  EXPECT_EQ(l.Clock(0), 7) << "credited with the clock each row had: no clock drops";
  EXPECT_EQ(l.Clock(1), 6);
  // Its push for round 7 is what row 1 now waits for, with the others'.
  for (int w = 0; w < 2; ++w) l.RecordPush(w, 1, 7);
  EXPECT_EQ(l.Clock(1), 6);
  l.RecordPush(2, 1, 7);
  EXPECT_EQ(l.Clock(1), 7);
}

TEST(StalenessLedgerTest, AWorkerCountedOutAndBackIsNoLongerExcused) {
  StalenessLedger l(2, 1, 0);
  l.RecordPush(0, 0, 3);
  l.RecordPush(1, 0, 2);
  l.Excuse(1);
  l.Deactivate(1);
  l.Rejoin(1, /*copy_lost=*/false);
  EXPECT_TRUE(l.counted(1));
  EXPECT_FALSE(l.excused(1));
  EXPECT_EQ(l.Clock(0), 3) << "it resumes at the team's iteration";
}

}  // namespace
}  // namespace edgetrain

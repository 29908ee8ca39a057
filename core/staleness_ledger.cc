#include "core/staleness_ledger.h"

#include <algorithm>
#include <limits>

namespace edgetrain {

StalenessLedger::StalenessLedger(int workers, size_t rows, int staleness_bound)
    : rows_(rows), bound_(staleness_bound), pushed_(static_cast<size_t>(workers) * rows, 0),
      copy_(static_cast<size_t>(workers) * rows, 0), iteration_(static_cast<size_t>(workers), 0),
      active_(static_cast<size_t>(workers), true), excused_(static_cast<size_t>(workers), false) {}

void StalenessLedger::Readmit(int w) {
  if (!excused_[w]) return;
  std::vector<int64_t> clocks(rows_);
  for (size_t r = 0; r < rows_; ++r) clocks[r] = Clock(r);
  excused_[w] = false;
  for (size_t r = 0; r < rows_; ++r) pushed_[Index(w, r)] = std::max(pushed_[Index(w, r)], clocks[r]);
}

void StalenessLedger::RecordPush(int w, size_t r, int64_t iteration) {
  int64_t& p = pushed_[Index(w, r)];
  p = std::max(p, iteration);
  RecordIteration(w, iteration);
}

void StalenessLedger::RecordIteration(int w, int64_t iteration) {
  iteration_[w] = std::max(iteration_[w], iteration);
}

int64_t StalenessLedger::Clock(size_t r) const {
  int64_t clock = std::numeric_limits<int64_t>::max();
  bool any = false;
  for (int w = 0; w < workers(); ++w) {
    if (!counted(w)) continue;
    clock = std::min(clock, pushed_[Index(w, r)]);
    any = true;
  }
  if (any) return clock;
  // Nobody active: the row holds whatever anyone pushed.
  int64_t most = 0;
  for (int w = 0; w < workers(); ++w) most = std::max(most, pushed_[Index(w, r)]);
  return most;
}

int64_t StalenessLedger::FurthestComputable(int w) const {
  int64_t least = std::numeric_limits<int64_t>::max();
  for (size_t r = 0; r < rows_; ++r) least = std::min(least, copy_[Index(w, r)]);
  return least + 1 + bound_;  // the job's bound: the one in force is never more
}

std::vector<size_t> StalenessLedger::SendableMandatory(int w) const {
  std::vector<size_t> rows;
  const int64_t need = Need(iteration_[w] + 1);
  for (size_t r = 0; r < rows_; ++r) {
    int64_t c = copy_[Index(w, r)];
    if (c < need && Clock(r) > c) rows.push_back(r);
  }
  return rows;
}

bool StalenessLedger::HoldsTeam(int w) const {
  if (!counted(w)) return false;
  int64_t need = std::numeric_limits<int64_t>::min();
  for (int o = 0; o < workers(); ++o) {
    if (o != w && counted(o)) need = std::max(need, Need(iteration_[o] + 1));
  }
  for (size_t r = 0; r < rows_; ++r) {
    if (pushed_[Index(w, r)] < need) return true;
  }
  return false;
}

std::vector<size_t> StalenessLedger::DemandFrom(int lagging) const {
  std::vector<size_t> rows;
  if (!counted(lagging)) return rows;
  // The highest need among the other active workers.
  int64_t need = std::numeric_limits<int64_t>::min();
  for (int w = 0; w < workers(); ++w) {
    if (w != lagging && counted(w)) need = std::max(need, Need(iteration_[w] + 1));
  }
  // Only what the lagging worker has computed can be demanded of it.
  need = std::min(need, iteration_[lagging]);
  for (size_t r = 0; r < rows_; ++r) {
    if (pushed_[Index(lagging, r)] < need) rows.push_back(r);
  }
  return rows;
}

int StalenessLedger::active_count() const {
  return static_cast<int>(std::count(active_.begin(), active_.end(), true));
}

int64_t StalenessLedger::MinActiveIteration() const {
  int64_t least = std::numeric_limits<int64_t>::max(), least_any = least;
  for (int w = 0; w < workers(); ++w) {
    least_any = std::min(least_any, iteration_[w]);
    if (active_[w]) least = std::min(least, iteration_[w]);
  }
  return active_count() > 0 ? least : least_any;
}

void StalenessLedger::Resume(const std::vector<int64_t>& clocks) {
  const int64_t least = clocks.empty() ? 0 : *std::min_element(clocks.begin(), clocks.end());
  for (int w = 0; w < workers(); ++w) {
    for (size_t r = 0; r < rows_; ++r) {
      pushed_[Index(w, r)] = clocks[r];
      copy_[Index(w, r)] = 0;
    }
    iteration_[w] = least;
  }
}

int64_t StalenessLedger::Rejoin(int w, bool copy_lost) {
  int64_t team = 0;
  bool any = false;
  for (int o = 0; o < workers(); ++o) {
    if (o == w || !counted(o)) continue;
    team = any ? std::min(team, iteration_[o]) : iteration_[o];
    any = true;
  }
  // The rows' clocks without w, which its return must not pull back. They can
  // stand past the slowest teammate's iteration: a teammate counted out ahead
  // of the team, and set back by its own return, keeps the pushes it had
  // made. A worker back meanwhile, credited at that iteration alone, pulled
  // every clock back; the rows then sent a teammate lowered the copy it was
  // known to hold below what it had computed on, and its honest pushes were
  // refused as future_iteration (found by reading, looking for the cause of
  // a run's "iteration 209 beyond 201"; a model of the ledger gave such
  // refusals under bounds of 4 and more).
  // With no teammate counted there is no clock of theirs to keep.
  active_[w] = false;
  excused_[w] = false;
  std::vector<int64_t> clocks(rows_, 0);
  for (size_t r = 0; any && r < rows_; ++r) clocks[r] = Clock(r);
  // Resuming at the slowest teammate's iteration keeps w within the bound at once.
  iteration_[w] = any ? team : iteration_[w];
  active_[w] = true;
  // Credited as if it had pushed every row at that iteration, which is what it
  // will believe of itself, or at the row's clock where that is further: no
  // row's clock drops, and w is never blocked on a push it did not make.
  for (size_t r = 0; r < rows_; ++r) {
    pushed_[Index(w, r)] = std::max({pushed_[Index(w, r)], iteration_[w], clocks[r]});
    if (copy_lost) copy_[Index(w, r)] = 0;
  }
  return iteration_[w];
}
}  // namespace edgetrain

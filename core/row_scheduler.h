#pragma once
// Which rows go out, in what order, within a time budget (ROG's core decision).
//
// Worker -> coordinator (gradients): rows not pushed for S - 1 iterations, and
// rows the coordinator demanded, are mandatory (MandatoryAfter says why S - 1);
// the rest go in order of
//
//     importance(r) = |e_r|^2 / b_r * (1 + s_r / max(S, 1))
//
// where e_r is the row's accumulated residual (error feedback: what was computed
// and not yet sent), b_r its size on the wire and s_r the iterations since it was
// last pushed — the most gradient energy per byte first, with old rows rising so
// they are sent before they turn mandatory. ROG as published orders by staleness
// alone (RowOrder::kStaleness), kept for comparison.
//
// Coordinator -> worker (parameters): rows the worker needs for its next
// iteration are mandatory; the rest go in order of how many updates the worker's
// copy misses.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/job_spec.h"

namespace edgetrain {


// A row must be pushed at least every m iterations for no teammate to wait on
// it: with the bound S, a push made after iteration q must come back from the
// coordinator before iteration q + S + 2 - m, leaving S + 1 - m iterations for
// the round trip. m = S leaves one, which on a slow link means waiting every
// iteration; m = S - 1 leaves two for 1/(S-1) more traffic — the balance point
// when a round trip is about two one-way transfers (docs/data-parallelism.md).
int MandatoryAfter(int staleness_bound);

struct PushCandidate {
  size_t row = 0;
  double residual_energy = 0;  // |e_r|^2
  int64_t bytes = 0;           // on the wire
  int64_t last_pushed = 0;     // iteration
  bool demanded = false;       // asked for by the coordinator
};

// Rows to push after `iteration`: mandatory ones first (in any case), then by
// priority while the total stays within `byte_budget`. Rows with nothing
// accumulated are skipped unless mandatory, and rows already pushed at
// `iteration` are skipped: their residual is only compression error.
std::vector<size_t> SelectPushRows(std::span<const PushCandidate> candidates, int64_t iteration, int staleness_bound,
                                   int64_t byte_budget, RowOrder order);

struct PullCandidate {
  size_t row = 0;
  int64_t missed_updates = 0;  // coordinator's version minus the worker copy's
  int64_t bytes = 0;
  bool mandatory = false;
};

// Rows to send a worker: mandatory ones, then the most out of date within the
// budget (at least one, if any is out of date).
std::vector<size_t> SelectPullRows(std::span<const PullCandidate> candidates, int64_t byte_budget);

}  // namespace edgetrain

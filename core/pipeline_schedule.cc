#include "core/pipeline_schedule.h"

#include <algorithm>
#include <limits>

namespace edgetrain {

std::vector<Pass> OneForwardOneBackward(int stage, int stages, int micro_batches) {
  std::vector<Pass> passes;
  passes.reserve(2 * static_cast<size_t>(micro_batches));
  // The last stage turns each micro-batch around at once; the one before it
  // must have one more in flight to keep it busy, and so on up the pipeline.
  const int warm_up = std::min(stages - stage - 1, micro_batches);
  int forward = 0, backward = 0;
  for (; forward < warm_up; ++forward) passes.push_back({PassKind::kForward, forward});
  for (; forward < micro_batches; ++forward, ++backward) {
    passes.push_back({PassKind::kForward, forward});
    passes.push_back({PassKind::kBackward, backward});
  }
  for (; backward < micro_batches; ++backward) passes.push_back({PassKind::kBackward, backward});
  return passes;
}

double SimulatedStepSeconds(const std::vector<double>& forward_s, const std::vector<double>& backward_s,
                            const std::vector<double>& transfer_s, int micro_batches) {
  const int stages = static_cast<int>(forward_s.size());
  const double never = std::numeric_limits<double>::infinity();
  // When each micro-batch's forward and backward ended at each stage.
  std::vector<std::vector<double>> forward_done(stages, std::vector<double>(micro_batches, never));
  std::vector<std::vector<double>> backward_done(stages, std::vector<double>(micro_batches, never));
  std::vector<std::vector<Pass>> schedule;
  for (int s = 0; s < stages; ++s) schedule.push_back(OneForwardOneBackward(s, stages, micro_batches));
  std::vector<size_t> next(stages, 0);
  std::vector<double> free_at(stages, 0);
  // Run whichever stage can: its next pass's inputs are done. A schedule that
  // deadlocks leaves passes no stage can run; 1F1B never does (tests check).
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int s = 0; s < stages; ++s) {
      while (next[s] < schedule[s].size()) {
        const Pass p = schedule[s][next[s]];
        double ready = 0;
        if (p.kind == PassKind::kForward) {
          if (s > 0) ready = forward_done[s - 1][p.micro_batch] + transfer_s[s - 1];
        } else {
          ready = s + 1 < stages ? backward_done[s + 1][p.micro_batch] + transfer_s[s] : forward_done[s][p.micro_batch];
        }
        if (ready == never) break;
        const double start = std::max(ready, free_at[s]);
        free_at[s] = start + (p.kind == PassKind::kForward ? forward_s[s] : backward_s[s]);
        (p.kind == PassKind::kForward ? forward_done : backward_done)[s][p.micro_batch] = free_at[s];
        ++next[s];
        progressed = true;
      }
    }
  }
  double end = 0;
  for (int s = 0; s < stages; ++s) {
    if (next[s] < schedule[s].size()) return never;
    end = std::max(end, free_at[s]);
  }
  return end;
}

}  // namespace edgetrain

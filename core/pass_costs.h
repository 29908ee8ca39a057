#pragma once
// What a pass costs this machine with the machine to itself, as an emulated
// device of its own would have it (core/emulated_pass.h multiplies it by the
// device's slowdown).
//
// A pass's CPU time is not that: every emulated device of a team shares this
// machine's two cores, their caches and memory, and a pass computed while
// other agents computed beside it used more CPU for the same work. In a team
// of four on bench/dp-links' MLP, whose workers all compute at once after each
// round, a step's CPU time was bimodal, about 2.8 ms alone and 4.5 ms beside
// the others, and the slowdown (8.2) made that 23 against 37 ms of emulated
// compute: the team's round waited on whichever worker had been crowded
// (compute 24-41 ms from the 10th to the 90th percentile, the round's
// stall 13.6 ms a step with links unshaped). Costed at the lower quartile of
// its recent like passes, a step took 22.5-25.3 ms, as its device would,
// and the stall was 10.0 ms (docs/benchmarks.md).
//
// Like passes are those of one kind of work over about as many samples (within
// a ninth of an octave: a batch the team re-deals to a worker's pace, or a
// stream's, changes by a few samples every round, and keyed by its exact size
// hardly a size would be seen often enough to be costed so), compared a
// sample; an optimizer's step, over no samples, as a whole. A workload seen
// fewer than kLeastKnown times is costed at what it measured. The owner
// forgets them when the work itself changes (a stage's layers: Forget).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>

namespace edgetrain {

enum class PassWork { kStep, kForward, kBackwardFromLoss, kBackward, kOptimizerStep };

struct PassWorkload {
  PassWork work = PassWork::kStep;
  int64_t samples = 0;
};

class PassCosts {
 public:
  static constexpr std::size_t kRemembered = 16;
  static constexpr std::size_t kLeastKnown = 4;
  static constexpr double kSizesAnOctave = 9;

  // Remembers `measured_s`, this pass's cost on this machine, and returns
  // what it is costed at: the lower quartile of the last kRemembered like
  // passes, this one among them, a sample, times its samples.
  double Uncontended(PassWorkload workload, double measured_s);
  // The work changed: what passes cost before says nothing of it.
  void Forget() { recent_.clear(); }

 private:
  std::map<std::pair<PassWork, int64_t>, std::deque<double>> recent_;  // by work and size band, a sample
};

}  // namespace edgetrain

#pragma once
// How each pipeline device runs its own part of a step in this run, against
// what the cost model predicts for it from the profile. The profile times the
// layers' passes and the optimizer's step on their own; in a run a stage also
// reads its samples, copies activations in and out of the trainer, computes
// the loss and serialises what it sends, and shares its cores with whatever
// else the device runs. The MLP's stage held each step 1.34-1.40 ms against
// 1.15 ms predicted (docs/pipeline.md, "The cost model"), which left the
// head's re-plan after a loss promising a quarter more than the devices left
// then trained. The head learns each device's pace from its steps (the work
// its answer reports, StepDone.work_seconds, over the prediction for the
// layers and samples it had), and its re-plan divides each survivor's speed
// by it: a device is planned as it has run, whatever layers it takes next.

#include <cstddef>
#include <map>

#include "core/recent_median.h"

namespace edgetrain {

class DevicePace {
 public:
  // Steps observed of a device before its pace is given: fewer say too little.
  static constexpr size_t kMinSteps = 8;

  explicit DevicePace(size_t window = 64) : window_(window) {}

  // A step of `device`'s (a rank): what it worked, and what the cost model
  // predicted for its layers and its share of the step's samples. A
  // prediction of nothing (a device dealt no sample, no optimizer) says
  // nothing of its pace.
  void Observe(int device, double worked_s, double predicted_s);
  // The median of its last steps' worked over predicted (1.2: a fifth slower
  // than predicted), or 1 before kMinSteps: the profile stands.
  double Of(int device) const;
  // Whether its pace is learned (kMinSteps steps seen).
  bool Learned(int device) const;
  // What was learned of `device`: it comes back from a fault (a restart, a
  // hang) that may have changed it, and is learned afresh.
  void Forget(int device) {
    devices_.erase(device);
    carried_.erase(device);
  }
  // `device` takes other layers, predicted at `after_s` a step where its pace
  // was learned of a prediction of `before_s`. What it worked beyond its
  // prediction is taken to be its own a step (its samples read, activations
  // copied, the loss, its messages), which stays as it was, not to grow
  // with its layers: a device of one small layer at 15 times its prediction
  // was planned at 15 times the whole model's, its re-plan 5 times too slow
  // (a user's trial). Its pace is then 1 + (pace - 1) * before_s / after_s,
  // until it is learned afresh on its new layers.
  void Carry(int device, double before_s, double after_s);

 private:
  size_t window_;
  std::map<int, RecentMedian> devices_;
  std::map<int, double> carried_;  // a pace carried to other layers, until learned on them
};

}  // namespace edgetrain

#pragma once
// The coordinator's side of data injection (spec.data.injection, ScaDLES;
// core/injection.h says which labels and samples): it keeps the pool, hears
// from each worker's pushes how many injected samples it would hold more
// of, and puts that many into the worker's next update, so that they cross
// the worker's downlink like every other byte the coordinator sends it.

#include <cstdint>
#include <mutex>
#include <vector>

#include "agent/data/dataset.h"
#include "core/injection.h"
#include "core/job_plan.h"
#include "edgetrain/v1/training.pb.h"

namespace edgetrain::agent {

class InjectionSender {
 public:
  // The most samples one update carries: a worker short of more gets the
  // rest with the next.
  static constexpr int64_t kMostPerUpdate = 256;

  // `train` outlives this: the pool's samples are read from it.
  InjectionSender(const JobPlan& plan, const Dataset& train);

  // What worker `w`'s last push said it would hold more of.
  void Wanted(int w, int64_t samples);
  // The samples `w` is owed, into `update`; false when it is owed none.
  bool Fill(int w, v1::Update& update);

 private:
  const Dataset& train_;
  std::mutex mu_;
  InjectionPool pool_;           // guarded by mu_
  std::vector<int64_t> wanted_;  // guarded by mu_
};

}  // namespace edgetrain::agent

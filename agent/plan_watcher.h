#pragma once
// How a running coordinator hears of a new plan generation: its plan file
// changes (the operator updates the ConfigMap it is mounted from; the local
// runner rewrites it atomically). The watcher reads the file every `every`
// and hands a plan of a newer generation to `adopt` once
// (docs/launch-contract.md, "Plans that change while a job runs").

#include <atomic>
#include <functional>
#include <mutex>
#include <ostream>
#include <string>

#include "core/clock.h"
#include "core/job_plan.h"

namespace edgetrain::agent {

class PlanWatcher {
 public:
  PlanWatcher(std::string path, int64_t generation, Clock& clock, Duration every,
              std::function<Status(const JobPlan&)> adopt, std::ostream& log);
  ~PlanWatcher();  // stops watching

 private:
  void Watch();

  const std::string path_;
  int64_t generation_;
  Clock& clock_;
  const Duration every_;
  std::function<Status(const JobPlan&)> adopt_;
  std::ostream& log_;
  std::mutex mu_;
  ClockCondition stopped_;
  bool stop_ = false;  // guarded by mu_
  ClockThread thread_;
};

}  // namespace edgetrain::agent

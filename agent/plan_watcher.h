#pragma once
// How a running coordinator hears of a new plan generation: its plan file
// changes (the operator updates the ConfigMap it is mounted from; the local
// runner rewrites it atomically). The watcher reads the file every `every`
// and hands a plan of a newer generation to `adopt` once
// (docs/launch-contract.md, "Plans that change while a job runs").

#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "agent/periodic_look.h"
#include "core/clock.h"
#include "core/job_plan.h"

namespace edgetrain::agent {

class PlanWatcher {
 public:
  PlanWatcher(std::string path, int64_t generation, Clock& clock, Duration every,
              std::function<Status(const JobPlan&)> adopt, std::ostream& log);

 private:
  void Look();

  const std::string path_;
  int64_t generation_;
  std::function<Status(const JobPlan&)> adopt_;
  std::ostream& log_;
  std::string seen_;  // the file as last read: only a change is decoded
  std::optional<PeriodicLook> looks_;  // last: stopped before what it looks with goes
};

}  // namespace edgetrain::agent

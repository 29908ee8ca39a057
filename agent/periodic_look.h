#pragma once
// A look repeated at an interval on a thread of a clock, until destroyed: what
// the agent's watchers of files that change under it share (its plan file,
// plan_watcher.h; its credentials, credentials_watch.h). The first look is one
// interval in; destruction waits for a look under way to end.

#include <functional>
#include <mutex>
#include <string>

#include "core/clock.h"

namespace edgetrain::agent {

class PeriodicLook {
 public:
  PeriodicLook(Clock& clock, const std::string& name, Duration every, std::function<void()> look);
  ~PeriodicLook();
  PeriodicLook(const PeriodicLook&) = delete;
  PeriodicLook& operator=(const PeriodicLook&) = delete;

 private:
  const Duration every_;
  const std::function<void()> look_;
  std::mutex mu_;
  ClockCondition stopped_;
  bool stop_ = false;  // guarded by mu_
  ClockThread thread_;
};

}  // namespace edgetrain::agent

#include "agent/plan_watcher.h"

#include "agent/storage/atomic_file.h"

namespace edgetrain::agent {

PlanWatcher::PlanWatcher(std::string path, int64_t generation, Clock& clock, Duration every,
                         std::function<Status(const JobPlan&)> adopt, std::ostream& log)
    : path_(std::move(path)), generation_(generation), clock_(clock), every_(every), adopt_(std::move(adopt)),
      log_(log), stopped_(clock) {
  thread_ = clock_.StartThread("plan watcher", [this] { Watch(); });
}

PlanWatcher::~PlanWatcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    stopped_.NotifyAll();
  }
  thread_.Join();
}

void PlanWatcher::Watch() {
  std::string seen;
  std::unique_lock lock(mu_);
  while (!stopped_.WaitFor(lock, every_, [&] { return stop_; })) {
    lock.unlock();
    auto text = ReadWholeFile(path_);
    if (text.ok() && *text != seen) {
      seen = *text;
      auto plan = DecodeJobPlan(*text);
      if (!plan.ok()) {
        // Half-written by someone who does not rename into place: read again next time.
        log_ << "plan watcher: " << path_ << ": " << plan.status().message() << "\n";
        seen.clear();
      } else if (plan->generation > generation_) {
        if (Status adopted = adopt_(*plan); adopted.ok()) {
          generation_ = plan->generation;
        } else {
          log_ << "plan watcher: plan generation " << plan->generation << " not adopted: " << adopted.message()
               << "\n";
        }
      }
    }
    lock.lock();
  }
}

}  // namespace edgetrain::agent

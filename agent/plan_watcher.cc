#include "agent/plan_watcher.h"

#include "agent/storage/atomic_file.h"

namespace edgetrain::agent {

PlanWatcher::PlanWatcher(std::string path, int64_t generation, Clock& clock, Duration every,
                         std::function<Status(const JobPlan&)> adopt, std::ostream& log)
    : path_(std::move(path)), generation_(generation), adopt_(std::move(adopt)), log_(log) {
  looks_.emplace(clock, "plan watcher", every, [this] { Look(); });
}

void PlanWatcher::Look() {
  auto text = ReadWholeFile(path_);
  if (!text.ok() || *text == seen_) return;
  seen_ = *text;
  auto plan = DecodeJobPlan(*text);
  if (!plan.ok()) {
    // Said once: half-written by someone who does not rename into place, the
    // next look reads other text and decodes it; the same bad text was
    // decoded and said again at every look, 3,600 lines an hour (found in
    // review).
    log_ << "plan watcher: " << path_ << ": " << plan.status().message() << "\n";
  } else if (plan->generation > generation_) {
    if (Status adopted = adopt_(*plan); adopted.ok()) {
      generation_ = plan->generation;
    } else {
      log_ << "plan watcher: plan generation " << plan->generation << " not adopted: " << adopted.message() << "\n";
    }
  }
}

}  // namespace edgetrain::agent

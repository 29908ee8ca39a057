#pragma once
// The job's progress, written by the training loop and read by the HTTP thread
// that serves GET /progress. Copies in and out under one lock; never held long.

#include <functional>
#include <mutex>

#include "core/job_progress.h"

namespace edgetrain::agent {

class ProgressBoard {
 public:
  void Update(const std::function<void(JobProgress&)>& change) {
    std::lock_guard lock(mu_);
    change(progress_);
  }
  JobProgress Snapshot() const {
    std::lock_guard lock(mu_);
    return progress_;
  }

 private:
  mutable std::mutex mu_;
  JobProgress progress_;  // guarded by mu_
};

}  // namespace edgetrain::agent

#pragma once
// The operator's log: one line per decision, whole, with when, the job and
// the reason in every line ("time=2026-11-30T12:25:09.123Z
// job=default/digits reason=Placed coordinator on gateway ..."), so that
// `grep job=default/digits` gives one job's story, and when each step of it
// came (without the time, a new user could not tell when a standby began
// leading, nor how long a decision took). Lines from several reconcile
// workers never interleave.

#include <chrono>
#include <mutex>
#include <ostream>
#include <string>

#include "core/utc_time_text.h"

namespace edgetrain::operator_ {

class LineLog {
 public:
  explicit LineLog(std::ostream& out) : out_(out) {}
  void Job(const std::string& key, const std::string& reason, const std::string& message) {
    Write("job=" + key + " reason=" + reason + " " + message);
  }
  void Write(const std::string& line) {
    const std::string stamp = LogLineStamp(std::chrono::system_clock::now());
    std::lock_guard<std::mutex> lock(mu_);
    out_ << stamp << line << "\n";
    out_.flush();
  }

 private:
  std::mutex mu_;
  std::ostream& out_;
};

}  // namespace edgetrain::operator_

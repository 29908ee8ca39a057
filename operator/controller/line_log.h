#pragma once
// The operator's log: one line per decision, whole, with the job and the
// reason in every line ("job=default/digits reason=Placed coordinator on
// gateway ..."), so that `grep job=default/digits` gives one job's story. Lines
// from several reconcile workers never interleave.

#include <mutex>
#include <ostream>
#include <string>

namespace edgetrain::operator_ {

class LineLog {
 public:
  explicit LineLog(std::ostream& out) : out_(out) {}
  void Job(const std::string& key, const std::string& reason, const std::string& message) {
    Write("job=" + key + " reason=" + reason + " " + message);
  }
  void Write(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    out_ << line << "\n";
    out_.flush();
  }

 private:
  std::mutex mu_;
  std::ostream& out_;
};

}  // namespace edgetrain::operator_

#pragma once
// The operator's log: one line per decision, whole, with when, the job and
// the reason in every line ("time=2026-11-30T12:25:09.123Z
// job=default/digits reason=Placed coordinator on gateway ..."), so that
// `grep job=default/digits` gives one job's story, and when each step of it
// came (without the time, a new user could not tell when a standby began
// leading, nor how long a decision took). Lines from several reconcile
// workers never interleave.

#include <chrono>
#include <cstdio>
#include <ctime>
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
    const std::string stamp = Now();
    std::lock_guard<std::mutex> lock(mu_);
    out_ << "time=" << stamp << " " << line << "\n";
    out_.flush();
  }

 private:
  // The wall clock in UTC to the millisecond, as RFC 3339 writes it.
  static std::string Now() {
    const auto now = std::chrono::system_clock::now();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char text[40];
    const size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
    std::snprintf(text + n, sizeof text - n, ".%03dZ", static_cast<int>(ms));
    return text;
  }

  std::mutex mu_;
  std::ostream& out_;
};

}  // namespace edgetrain::operator_

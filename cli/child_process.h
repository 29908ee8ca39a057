#pragma once
// An agent process started by the local runner: its stdout read line by line
// (the launch contract's `http ...` and `result ...` lines), its stderr in a log
// file. It dies with the runner: the kernel sends it SIGKILL when the runner's
// thread that spawned it exits (PR_SET_PDEATHSIG), so no child outlives even a
// runner killed with SIGKILL. It runs in a process group of its own, so the
// signals a terminal sends its foreground group reach the runner only.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"

namespace edgetrain::cli {

// Milliseconds from now to `deadline` for poll(2): never negative.
int MillisUntil(const Clock& clock, TimePoint deadline);
// A deadline `d` from now that does not overflow for "forever".
TimePoint After(const Clock& clock, Duration d);

// A started process as the runner watches it: ChildProcess is the real one;
// tests script others on a simulated clock.
class WatchedProcess {
 public:
  virtual ~WatchedProcess() = default;
  // The next complete stdout line, waiting at most `timeout`; nullopt on timeout
  // or once stdout is closed (then exited() tells whether it ended).
  virtual std::optional<std::string> ReadLine(Duration timeout) = 0;
  virtual bool stdout_closed() const = 0;
  // Non-blocking: the exit status once the process has ended (128+N if killed
  // by signal N), else nullopt.
  virtual std::optional<int> Poll() = 0;
  // Blocks until the process ends; SIGKILL after `grace` if it has not.
  virtual int Wait(Duration grace) = 0;
  // Whether the process ends within `timeout` (it is left running if not).
  virtual bool ExitsWithin(Duration timeout) = 0;
  virtual void Signal(int signo) = 0;
  // Held by a stop signal (SIGSTOP, or Ctrl-Z's SIGTSTP): it neither runs nor
  // ends, and heeds no signal but SIGKILL until it is continued.
  virtual bool Stopped() { return false; }
  // The operating system's id for it, for a person to name it; 0: none.
  virtual int ProcessId() const { return 0; }
};

class ChildProcess final : public WatchedProcess {
 public:
  // Starts `argv[0]` with `argv`, stdin from /dev/null, stderr appended to
  // `log_path`, and `env` added to the runner's environment.
  static StatusOr<ChildProcess> Spawn(const std::vector<std::string>& argv, const std::string& log_path,
                                      const std::map<std::string, std::string>& env = {});
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ~ChildProcess() override;  // kills and reaps a child still running

  std::optional<std::string> ReadLine(Duration timeout) override;
  bool stdout_closed() const override { return stdout_fd_ < 0; }
  // Stops reading the child's stdout: its further writes there fail (EPIPE).
  void CloseStdout();

  std::optional<int> Poll() override;
  int Wait(Duration grace) override;
  bool ExitsWithin(Duration timeout) override;
  void Signal(int signo) override;
  bool Stopped() override;
  int ProcessId() const override { return pid_; }
  pid_t pid() const { return pid_; }

 private:
  ChildProcess(pid_t pid, int stdout_fd, int exit_fd) : pid_(pid), stdout_fd_(stdout_fd), exit_fd_(exit_fd) {}
  // Waits until the child has ended or `deadline` has passed.
  bool EndsBy(TimePoint deadline);

  RealClock clock_;  // deadlines; the waits themselves are poll(2) on the pipes
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int exit_fd_ = -1;  // a pidfd: readable once the child has ended
  std::string pending_;  // stdout bytes read past the last complete line
  std::optional<int> exit_status_;
};

// What an exit status, as Poll and Wait give it, means to a person: "exit 1",
// or "killed by SIGKILL" for 137 (128 + 9).
std::string DescribeExitStatus(int status);

}  // namespace edgetrain::cli

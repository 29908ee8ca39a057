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

#include "core/status.h"

namespace edgetrain::cli {

class ChildProcess {
 public:
  // Starts `argv[0]` with `argv`, stdin from /dev/null, stderr appended to
  // `log_path`, and `env` added to the runner's environment.
  static StatusOr<ChildProcess> Spawn(const std::vector<std::string>& argv, const std::string& log_path,
                                      const std::map<std::string, std::string>& env = {});
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ~ChildProcess();  // kills and reaps a child still running

  // The next complete stdout line, waiting at most `timeout`; nullopt on timeout
  // or once stdout is closed (then exited() tells whether it ended).
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout);
  bool stdout_closed() const { return stdout_fd_ < 0; }
  // Stops reading the child's stdout: its further writes there fail (EPIPE).
  void CloseStdout();

  // Non-blocking: the exit status once the child has ended (128+N if killed by
  // signal N), else nullopt.
  std::optional<int> Poll();
  // Blocks until the child ends; SIGKILL after `grace` if it has not.
  int Wait(std::chrono::milliseconds grace);
  // Whether the child ends within `timeout` (it is left running if not).
  bool ExitsWithin(std::chrono::milliseconds timeout);
  void Signal(int signo);
  pid_t pid() const { return pid_; }

 private:
  ChildProcess(pid_t pid, int stdout_fd) : pid_(pid), stdout_fd_(stdout_fd) {}

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string pending_;  // stdout bytes read past the last complete line
  std::optional<int> exit_status_;
};

}  // namespace edgetrain::cli

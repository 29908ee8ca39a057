#include "cli/kernel_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "cli/child_process.h"
#include "core/duration_text.h"

namespace edgetrain::cli {
namespace {

std::string Joined(const std::vector<std::string>& argv) {
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
  return command;
}

}  // namespace

// The command runs in a process group of its own: a Ctrl-C at the terminal,
// or a benchmark's SIGINT to the run's group, is the run's to act on, and
// killed with it a `tc` that was changing a rate made the run end "the links
// stopped following their traces" (exit 130, a benchmark's run counted as
// failed), an `ip netns del` on its way out, a namespace left behind. Out of
// the signal's reach, it is the time limit that ends one that hangs.
Status RunKernelCommand(const std::vector<std::string>& argv, Duration timeout, const std::string& limit_flag) {
  RealClock clock;
  const TimePoint deadline = After(clock, timeout);
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) return InternalError("pipe failed");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int fork_errno = errno;
    ::close(err[0]);
    ::close(err[1]);
    return InternalError("could not start `" + argv[0] + "`: " + std::strerror(fork_errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, STDIN_FILENO);
    ::dup2(devnull, STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::close_range(3, ~0U, 0);  // none of the runner's files (cli/child_process.cc)
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that the group is there to kill at once
  ::close(err[1]);
  std::string message;
  char buf[512];
  bool timed_out = false;
  // Its stderr to its end, and then its exit, each by the deadline. A signal's
  // handler may interrupt a wait (one installed without SA_RESTART): it is
  // waited out, not taken for the command's end.
  for (;;) {
    pollfd p{err[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, MillisUntil(clock, deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      timed_out = true;
      break;
    }
    const ssize_t n = ::read(err[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    message.append(buf, static_cast<size_t>(n));
  }
  ::close(err[0]);
  // Killed, a command may still not end: one held in the kernel (waiting on
  // its network lock, the hang this limit is for) heeds SIGKILL only once it
  // has the lock, and a wait without a bound hung the runner as before
  // (found in review). It is given as long again, then left behind.
  std::optional<TimePoint> left_at;
  const auto kill_it = [&] {
    timed_out = true;
    ::kill(-pid, SIGKILL);  // with whatever it started
    left_at = After(clock, timeout);
  };
  if (timed_out) kill_it();
  const std::string command = Joined(argv);
  int status = 0;
  for (;;) {
    const pid_t waited = ::waitpid(pid, &status, WNOHANG);
    if (waited == pid) break;
    if (waited < 0) {
      if (errno == EINTR) continue;
      // Not taken for the command's end either: a status never filled in
      // reads as exit 0.
      return InternalError("could not wait for `" + argv[0] + "`: " + std::strerror(errno));
    }
    // Its stderr closed and it still running: its exit is moments away, or it
    // closed its stderr and hangs.
    if (!left_at && clock.Now() >= deadline) kill_it();
    if (left_at && clock.Now() >= *left_at) {
      return DeadlineExceededError("`" + command + "` did not finish within " + FormatDuration(timeout) +
                                   ", and had not ended " + FormatDuration(timeout) +
                                   " after it was killed (held in the kernel?): left behind (" + limit_flag +
                                   " sets the limit)");
    }
    ::poll(nullptr, 0, std::min(5, MillisUntil(clock, left_at ? *left_at : deadline)));
  }
  if (timed_out) {
    return DeadlineExceededError("`" + command + "` did not finish within " + FormatDuration(timeout) +
                                 " and was killed (" + limit_flag + " sets the limit)");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  while (!message.empty() && message.back() == '\n') message.pop_back();
  if (WIFSIGNALED(status)) {
    return FailedPreconditionError("`" + command + "` was killed by signal " + std::to_string(WTERMSIG(status)));
  }
  return FailedPreconditionError("`" + command + "` failed: " +
                                 (message.empty() ? "exit status " + std::to_string(WEXITSTATUS(status)) : message));
}

}  // namespace edgetrain::cli

#include "cli/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>

namespace edgetrain::cli {

int MillisUntil(const Clock& clock, TimePoint deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock.Now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, std::numeric_limits<int>::max()));
}

TimePoint After(const Clock& clock, Duration d) {
  const TimePoint now = clock.Now();
  return d >= TimePoint::max() - now ? TimePoint::max() : now + d;
}

namespace {

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

std::string DescribeExitStatus(int status) {
  if (status > 128 && status < 128 + NSIG) {
    const char* name = sigabbrev_np(status - 128);
    return "killed by " + (name ? "SIG" + std::string(name) : "signal " + std::to_string(status - 128));
  }
  return "exit " + std::to_string(status);
}

StatusOr<ChildProcess> ChildProcess::Spawn(const std::vector<std::string>& argv, const std::string& log_path,
                                           const std::map<std::string, std::string>& env) {
  if (argv.empty()) return InvalidArgumentError("no command to start");
  if (::access(argv[0].c_str(), X_OK) != 0) return NotFoundError("cannot execute " + argv[0] + ": " + std::strerror(errno));
  int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return InternalError("cannot open " + log_path + ": " + std::strerror(errno));
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(log_fd);
    return InternalError(std::string("pipe: ") + std::strerror(errno));
  }
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    if (!env.count(entry.substr(0, entry.find('=')))) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(log_fd);
    ::close(out[0]);
    ::close(out[1]);
    return InternalError(std::string("fork: ") + std::strerror(error));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the runner died before prctl took effect
    // Its own process group: a terminal's Ctrl-C (SIGINT to the foreground
    // group) reaches the runner alone, which then stops the agents in order. An
    // agent that heard it too would stop by itself and race the runner's report.
    ::setpgid(0, 0);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    // Nothing else of the runner's: every agent held the --progress-log
    // writable, and a stray /dev/null, and with --observe Prometheus kept the
    // log open until Ctrl-C, so that a reader of it saw no end (found in
    // review); the output folder's lock would outlive the runner in a child.
    ::close_range(3, ~0U, 0);
    ::signal(SIGPIPE, SIG_DFL);  // the runner ignores it; the child gets the default back
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that it holds once Spawn returns
  ::close(out[1]);
  ::close(log_fd);
  const int exit_fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  return ChildProcess(pid, out[0], exit_fd);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), stdout_fd_(other.stdout_fd_), exit_fd_(other.exit_fd_), pending_(std::move(other.pending_)),
      exit_status_(other.exit_status_) {
  other.pid_ = -1;
  other.stdout_fd_ = -1;
  other.exit_fd_ = -1;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !Poll()) {
    ::kill(pid_, SIGKILL);
    Wait(Duration::zero());
  }
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  if (exit_fd_ >= 0) ::close(exit_fd_);
}

void ChildProcess::CloseStdout() {
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stdout_fd_ = -1;
}

std::optional<std::string> ChildProcess::ReadLine(Duration timeout) {
  const TimePoint deadline = After(clock_, timeout);
  for (;;) {
    size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    if (stdout_fd_ < 0) return std::nullopt;
    pollfd p{stdout_fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, MillisUntil(clock_, deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    char buffer[4096];
    ssize_t n = ::read(stdout_fd_, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(stdout_fd_);
      stdout_fd_ = -1;
      if (!pending_.empty()) {  // a last line without its newline
        std::string line = std::move(pending_);
        pending_.clear();
        return line;
      }
      return std::nullopt;
    }
    pending_.append(buffer, static_cast<size_t>(n));
  }
}

std::optional<int> ChildProcess::Poll() {
  if (exit_status_ || pid_ <= 0) return exit_status_;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) exit_status_ = DecodeWaitStatus(status);
  return exit_status_;
}

bool ChildProcess::EndsBy(TimePoint deadline) {
  while (!Poll()) {
    if (clock_.Now() >= deadline) return false;
    pollfd p{exit_fd_, POLLIN, 0};
    // Without a pidfd (an old kernel), look again every 10 ms.
    const int wait_ms = exit_fd_ >= 0 ? MillisUntil(clock_, deadline) : std::min(10, MillisUntil(clock_, deadline));
    if (::poll(&p, exit_fd_ >= 0 ? 1 : 0, wait_ms) < 0 && errno != EINTR) return Poll().has_value();
  }
  return true;
}

int ChildProcess::Wait(Duration grace) {
  if (!EndsBy(After(clock_, grace))) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    exit_status_ = DecodeWaitStatus(status);
  }
  return *exit_status_;
}

bool ChildProcess::ExitsWithin(Duration timeout) { return EndsBy(After(clock_, timeout)); }

void ChildProcess::Signal(int signo) {
  if (pid_ > 0 && !Poll()) ::kill(pid_, signo);
}

bool ChildProcess::Stopped() {
  if (pid_ <= 0 || Poll()) return false;
  // /proc/PID/stat: "PID (COMMAND) STATE ...", where COMMAND may hold ')'.
  std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t end = stat.rfind(')');
  return end != std::string::npos && end + 2 < stat.size() && (stat[end + 2] == 'T' || stat[end + 2] == 't');
}

}  // namespace edgetrain::cli

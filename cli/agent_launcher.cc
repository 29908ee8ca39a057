#include "cli/agent_launcher.h"

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <optional>

#include "agent/storage/atomic_file.h"
#include "cli/log_tail.h"
#include "cli/run_report.h"
#include "core/duration_text.h"
#include "core/exit_codes.h"

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::chrono::milliseconds kPollEvery{200};
// How long an agent that closed its stdout has to end, for its exit code.
constexpr std::chrono::seconds kExitGrace{5};

}  // namespace

std::string BinaryBeside(const std::string& name) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return (exe.parent_path() / name).string();
}

AgentLauncher::AgentLauncher(std::string agent_binary, fs::path run_dir, const LocalRunPlan& plan,
                             const NetnsLinks* links, int http_port, std::vector<std::string> transport, Clock& clock)
    : agent_binary_(std::move(agent_binary)), run_dir_(std::move(run_dir)), plan_(plan), links_(links),
      http_port_(http_port), transport_(std::move(transport)), clock_(clock), plan_path_((run_dir_ / "plan.json").string()),
      coordinator_log_(plan.team ? "coordinator.log" : "agent-0.log") {}

std::string AgentLauncher::HttpFlag(int port_offset) const {
  return "--http=127.0.0.1:" + std::to_string(http_port_ > 0 ? http_port_ + port_offset : 0);
}

std::map<std::string, std::string> AgentThreadsEnv(int threads) {
  const std::string n = std::to_string(threads);
  return {{"OPENBLAS_NUM_THREADS", n}, {"OMP_NUM_THREADS", n}};
}

StatusOr<AgentAnswer> AskAgent(const std::vector<std::string>& command, const std::map<std::string, std::string>& env,
                               const std::atomic<bool>* interrupted) {
  EDGETRAIN_ASSIGN_OR_RETURN(ChildProcess agent, ChildProcess::Spawn(command, "/dev/null", env));
  std::optional<std::string> result;
  // Read in short waits, to hear an interrupt: `edgetrain run` measuring a
  // pipeline's layers heard Ctrl-C only once they were measured, seconds
  // later, and printed the plan it would no longer run first.
  constexpr Duration kHeardWithin = std::chrono::milliseconds(100);
  constexpr Duration kSilenceAllowed = std::chrono::minutes(5);
  Duration silent{0};
  while (!agent.stdout_closed() && silent < kSilenceAllowed) {
    if (interrupted && interrupted->load()) {
      agent.Signal(SIGKILL);  // a one-shot command: nothing of it to keep
      agent.Wait(std::chrono::seconds(5));
      return CancelledError("interrupted while " + command[1] + " ran");
    }
    auto line = agent.ReadLine(kHeardWithin);
    silent = line ? Duration{0} : silent + kHeardWithin;
    if (line && line->rfind("result ", 0) == 0) result = line->substr(7);
  }
  AgentAnswer answer;
  answer.exit = agent.Wait(std::chrono::seconds(15));
  if (result) answer.result = nlohmann::json::parse(*result, nullptr, /*allow_exceptions=*/false);
  if (answer.result.is_discarded()) answer.result = nullptr;
  return answer;
}

StatusOr<ChildProcess> AgentLauncher::StartCoordinator() {
  // Written whole or not at all: on a full disk an empty plan.json had been
  // left, which the agent refused as bad input (exit 2, its logs removed)
  // where the machine was at fault (found in review).
  if (Status written = agent::WriteFileAtomically(plan_path_, EncodeJobPlan(plan_.job)); !written.ok()) {
    return UnavailableError("cannot write the agents' plan: " + written.message());
  }
  const JobPlan& plan = plan_.job;
  std::vector<std::string> flags = {"--role=coordinator", "--job=" + plan.job, "--rank=0",
                                    "--world=" + std::to_string(plan.spec.parallelism.workers), "--plan=" + plan_path_,
                                    links_ ? "--listen=0.0.0.0:0" : "--listen=127.0.0.1:0", HttpFlag(0)};
  if (progress_every_) flags.push_back("--progress-every=" + FormatDuration(*progress_every_));
  EDGETRAIN_ASSIGN_OR_RETURN(ChildProcess coordinator, Start(flags, coordinator_log_, -1));
  EDGETRAIN_ASSIGN_OR_RETURN(std::string http, Await(coordinator, "http", coordinator_log_));
  endpoints_.push_back({"coordinator", http, links_ ? links_->hub() : ""});
  if (plan_.team) {
    EDGETRAIN_ASSIGN_OR_RETURN(std::string listening, Await(coordinator, "listening", coordinator_log_));
    coordinator_port_ = listening.substr(listening.rfind(':') + 1);
  }
  return coordinator;
}

StatusOr<ChildProcess> AgentLauncher::SpawnWorker(int rank) {
  const JobPlan& plan = plan_.job;
  // Through its namespace's link, a worker reaches the coordinator at the hub.
  const std::string coordinator = (links_ ? links_->HubAddress(rank) : "127.0.0.1") + ":" + coordinator_port_;
  return Start({plan.pipeline ? "--role=stage" : "--role=worker", "--job=" + plan.job, "--rank=" + std::to_string(rank),
                "--world=" + std::to_string(plan.spec.parallelism.workers), "--plan=" + plan_path_,
                "--coordinator=" + coordinator, HttpFlag(1 + rank)},
               WorkerLog(rank), rank);
}

Status AgentLauncher::AwaitWorker(ChildProcess& worker, int rank) {
  StatusOr<std::string> http = Await(worker, "http", WorkerLog(rank));
  // Interrupted: the run stops the team as it is, this worker with it.
  if (!http.ok() && http.status().code() == StatusCode::kCancelled) return Status::Ok();
  if (!http.ok()) {
    // Killed is not failed: a worker SIGKILLed as it loaded its data (the
    // OOM killer's way) failed the whole team's run, where one lost a second
    // later is trained on without, as the docs promise of both. A worker
    // that ended by itself (its inputs, a port taken) would end so again:
    // that fails the run.
    const std::optional<int> status = worker.Poll();
    if (!plan_.job.pipeline && status && *status > 128) return Status::Ok();
    return http.status();
  }
  endpoints_.push_back({"worker " + std::to_string(rank), *http, links_ ? links_->WorkerNamespace(rank) : "", rank});
  return Status::Ok();
}

StatusOr<ChildProcess> AgentLauncher::Start(const std::vector<std::string>& flags, const std::string& log, int rank) {
  std::vector<std::string> argv = {agent_binary_};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), transport_.begin(), transport_.end());
  if (links_) argv = rank < 0 ? links_->InHub(argv) : links_->InWorker(rank, argv);
  // BLAS threads on top of LibTorch's own would oversubscribe the cores.
  return ChildProcess::Spawn(argv, (run_dir_ / log).string(), AgentThreadsEnv(plan_.job.intra_op_threads));
}

StatusOr<std::string> AgentLauncher::Await(ChildProcess& agent, const std::string& what, const std::string& log) {
  // Named as the run names its agents ("worker 2", "coordinator"), and what
  // it was waited for in the run's words, not the launch contract's: "the
  // agent exited before it printed `http`" named a line of its stdout, and
  // read as the runner's own trouble (new users' trials).
  std::string agent_name = std::filesystem::path(log).stem().string();
  std::replace(agent_name.begin(), agent_name.end(), '-', ' ');
  const std::string awaited = what == "http"        ? "served its HTTP port"
                              : what == "listening" ? "listened for its team"
                                                    : "said `" + what + "`";
  const TimePoint deadline = clock_.Now() + start_timeout_;
  while (clock_.Now() < deadline) {
    if (interrupted_ && interrupted_->load()) return CancelledError("interrupted while " + agent_name + " started");
    auto line = agent.ReadLine(kPollEvery);
    if (line && line->rfind(what + " ", 0) == 0) return line->substr(what.size() + 1);
    if (!line && agent.stdout_closed()) {
      // An agent that refused its inputs (a data file, a model, a checkpoint)
      // says so by its exit code: the run is then invalid, not failed, and
      // running it again fails the same way (a team's coordinator loads its
      // data before it listens).
      // With its last words: a port taken (--http-port) read only "exited
      // before it printed `http`", the cause in the log's tail below it (a
      // new user's trial), and in no --json error.
      const std::string words = LastWords((run_dir_ / log).string());
      if (agent.ExitsWithin(kExitGrace) && agent.Poll() == kExitInvalid) {
        return InvalidArgumentError(agent_name + " refused its inputs (exit " + std::to_string(kExitInvalid) + ")" +
                                    (words.empty() ? "" : ": " + words));
      }
      std::string ended = agent_name + " ended as it started, before it " + awaited;
      // How it ended: a worker killed as it started read only the line above
      // (a user's trial).
      if (const std::optional<int> status = agent.Poll()) ended += " (" + DescribeExitStatus(*status) + ")";
      if (!words.empty()) ended += " (its log's last line: " + words + ")";
      // The one cause a person mends with a flag of this command.
      if (words.find("Address already in use") != std::string::npos) {
        ended += ": another process holds the port: give --http-port another base, or leave it out for ports the OS "
                 "chooses";
      }
      return UnavailableError(ended);
    }
  }
  return DeadlineExceededError(agent_name + " had not " + awaited + " within " + FormatDuration(start_timeout_) +
                               " of its start (--start-timeout sets the limit)");
}

std::string DescribeEndpoints(const std::vector<AgentEndpoint>& endpoints, bool pipeline) {
  // A stage agent's /metrics is empty: listing it as metrics sent a new user
  // to empty pages and empty dashboard panels.
  std::string out = pipeline ? "metrics: GET /metrics and /progress of the head, which serves every stage's"
                             : "metrics: GET /metrics of every agent, /progress of the coordinator";
  const bool namespaced = !endpoints.empty() && !endpoints.front().netns.empty();
  // The agents' loopback is their namespace's own: reached from inside it.
  out += namespaced ? ", each from inside its network namespace:\n" : ":\n";
  for (const auto& e : endpoints) {
    if (pipeline && e.agent != "coordinator") continue;
    std::string agent = e.agent;
    agent.resize(std::max<size_t>(agent.size(), 12), ' ');
    std::vector<std::string> paths = {e.agent == "coordinator" ? "/progress" : "/metrics"};
    if (pipeline) paths.push_back("/metrics");
    for (const std::string& path : paths) {
      const std::string url = "http://" + e.http + path;
      out += "  " + agent + " " + (e.netns.empty() ? url : "ip netns exec " + e.netns + " curl -s " + url) + "\n";
    }
  }
  return out;
}

}  // namespace edgetrain::cli

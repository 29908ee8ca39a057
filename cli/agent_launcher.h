#pragma once
// Starts the agents of a local run through the launch contract
// (docs/launch-contract.md) — the coordinator first, then a worker per rank,
// each inside its network namespace under --links netns — and reads what each
// announces: where it serves HTTP, where the coordinator listens.

#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/child_process.h"
#include "cli/netns_links.h"
#include "cli/run_plan.h"
#include "core/clock.h"
#include "core/status.h"

namespace edgetrain::cli {

// A program installed beside this edgetrain (edgetrain-agent, edgetrain-plot-run).
std::string BinaryBeside(const std::string& name);
inline std::string AgentBeside() { return BinaryBeside("edgetrain-agent"); }

// What a one-shot agent command (`evaluate`, `profile-layers`) answered: its
// exit code and its `result` line's JSON (null when it printed none). Why it
// fails comes back in that line, so its log is not kept. An error only when
// the agent could not be started.
struct AgentAnswer {
  int exit = 0;
  nlohmann::json result;
};
// The environment that holds an agent's BLAS and OpenMP to `threads`, as
// LibTorch is held by --threads: OpenBLAS reads its count from there and
// otherwise takes every core.
std::map<std::string, std::string> AgentThreadsEnv(int threads);

// `env` is set in its environment besides this one's. Cancelled, the agent
// killed, once `interrupted` is set: it runs in its own process group, which
// a terminal's Ctrl-C does not reach.
StatusOr<AgentAnswer> AskAgent(const std::vector<std::string>& command,
                               const std::map<std::string, std::string>& env = {},
                               const std::atomic<bool>* interrupted = nullptr);

// Where a person finds one agent's GET /metrics (and the coordinator's /progress).
struct AgentEndpoint {
  std::string agent;    // "coordinator", "worker 2"
  std::string http;     // HOST:PORT
  std::string netns;    // the network namespace it is reached in; empty: this one
  int rank = -1;        // a worker's (or stage agent's); -1: the coordinator
};

class AgentLauncher {
 public:
  // `http_port` 0: ports the OS chooses; else the coordinator's, and worker r's
  // is http_port + 1 + r. `links` is null unless the kernel shapes the links.
  // `transport`: how a team's agents talk, the flags each is given
  // (--tls-dir=DIR, or --insecure); none for a job of one.
  AgentLauncher(std::string agent_binary, std::filesystem::path run_dir, const LocalRunPlan& plan,
                const NetnsLinks* links, int http_port, std::vector<std::string> transport, Clock& clock);

  // Writes the plan file, starts the coordinator (for a job of one, the one
  // agent) and waits until it serves HTTP and, for a team, accepts workers.
  StatusOr<ChildProcess> StartCoordinator();
  // How often the coordinator refreshes /progress; unset: the agent's default.
  void SetProgressEvery(std::optional<Duration> every) { progress_every_ = every; }
  // Set by a Ctrl-C (or SIGTERM, SIGHUP): a wait for an agent's start then
  // ends at once, Cancelled. Each wait had run to its 60 s, the interrupt
  // unheard, then blamed the agent (found in review).
  void SetInterrupt(const std::atomic<bool>* interrupted) { interrupted_ = interrupted; }
  // How long an agent has to start (load LibTorch and its data, serve HTTP,
  // listen for its team): a data set that took longer to load failed the
  // run, with nothing to give it longer (found in review).
  void SetStartTimeout(Duration timeout) { start_timeout_ = timeout; }
  // Starts worker `rank`: a data-parallel worker, or a pipeline's stage
  // agent when the plan has a pipeline. The team's workers are all started
  // before any is waited for: each loads LibTorch and its data for seconds,
  // and one after another a team of 3 took 8-18 s to start on a busy 2-core
  // machine, for a few seconds of training (a new user's trial).
  StatusOr<ChildProcess> SpawnWorker(int rank);
  // Waits until worker `rank` serves HTTP. One killed by a signal as it
  // started is no error, and has no endpoint: a device lost at the start,
  // which its team starts without (docs/data-parallelism.md, "A team starts
  // together"), and the runner's supervision says so as of a device lost later.
  Status AwaitWorker(ChildProcess& worker, int rank);

  // Every agent started so far, the coordinator first.
  const std::vector<AgentEndpoint>& endpoints() const { return endpoints_; }
  // The coordinator's HTTP address (in the hub's namespace under --links netns).
  const std::string& coordinator_http() const { return endpoints_.front().http; }
  const std::string& coordinator_log() const { return coordinator_log_; }

 private:
  StatusOr<ChildProcess> Start(const std::vector<std::string>& flags, const std::string& log, int rank);
  static std::string WorkerLog(int rank) { return "worker-" + std::to_string(rank) + ".log"; }
  // Waits for the launch contract's line starting with `what ` from `agent`.
  // `log`: the agent's log in the run folder, whose last line says why it
  // exited, if it did.
  StatusOr<std::string> Await(ChildProcess& agent, const std::string& what, const std::string& log);
  std::string HttpFlag(int port_offset) const;

  std::string agent_binary_;
  std::filesystem::path run_dir_;
  const LocalRunPlan& plan_;
  const NetnsLinks* links_;
  int http_port_;
  std::vector<std::string> transport_;
  std::optional<Duration> progress_every_;
  const std::atomic<bool>* interrupted_ = nullptr;
  Duration start_timeout_ = kDefaultStartTimeout;
  Clock& clock_;
  std::string plan_path_;
  std::string coordinator_log_;
  std::string coordinator_port_;  // where workers reach the coordinator
  std::vector<AgentEndpoint> endpoints_;
};

// "metrics: GET /metrics of every agent, /progress of the coordinator", and a
// line per agent; under --links netns, how to reach them with `ip netns exec`.
// A pipeline's: its head serves every stage's metrics, its stage agents
// nothing of their own yet.
std::string DescribeEndpoints(const std::vector<AgentEndpoint>& endpoints, bool pipeline = false);

}  // namespace edgetrain::cli

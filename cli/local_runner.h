#pragma once
// `edgetrain run JOB.yaml [--nodes PROFILE.yaml]`: the same TrainingJob a cluster
// would run, trained on this machine. The runner validates the manifest against
// the CRD, writes the plan, starts agents as local processes through the launch
// contract (docs/launch-contract.md) — one agent for a job of one worker, else a
// coordinator and a worker per rank, each emulating its device from the cluster
// profile — shows the job's progress from GET /progress, and reports. It never
// trains itself: what runs here is what runs in a pod.

#include <atomic>
#include <ostream>
#include <string>
#include <vector>

namespace edgetrain::cli {

// Exit codes of `edgetrain run` (and of `edgetrain validate`).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;       // training could not be done
inline constexpr int kExitInvalid = 2;      // the manifest or the command line is wrong
inline constexpr int kExitInterrupted = 130;

struct RunOptions {
  std::string manifest_path;
  std::string nodes_path;     // a cluster profile: emulate its devices (compute, links)
  // How links are emulated: "process" (a token bucket in each agent's transport)
  // or "netns" (network namespaces and tbf qdiscs; root).
  std::string links = "process";
  bool json = false;          // one final JSON line on `out`
  std::string output_dir;     // overrides spec.output.path
  int threads = 0;            // LibTorch threads per agent; 0: one
  std::string agent_binary;   // edgetrain-agent; found beside the runner when empty
  bool terminal = false;      // draw a progress bar (stderr is a terminal)
  bool keep_logs = false;     // keep the run folder (plan, agents' logs) after success
  // Every progress snapshot, one JSON line each with the seconds since the links
  // started following their traces (benchmarks attribute stalls to outages).
  std::string progress_log;
};

// Progress and diagnostics go to `err`, the summary (and JSON line) to `out`.
// `interrupted` is set by the caller's SIGINT/SIGTERM handler.
int RunLocal(const RunOptions& options, std::ostream& out, std::ostream& err, const std::atomic<bool>& interrupted);

// `edgetrain validate JOB.yaml [--defaulted]`: the same checks as run, without
// training; with `defaulted`, the manifest as the API server would store it
// (the CRD's defaults applied), as JSON.
int ValidateManifest(const std::string& manifest_path, bool defaulted, std::ostream& out, std::ostream& err);

// `edgetrain partition JOB.yaml`: the training-sample indices each worker of the
// job gets, as JSON — so another framework (a benchmark's DDP peer) trains on
// exactly the same parts.
int PrintPartition(const std::string& manifest_path, std::ostream& out, std::ostream& err);

// `edgetrain netns-run --nodes PROFILE --workers N -- COMMAND...`: the kernel-
// shaped links of `run --links netns`, for any program: COMMAND runs once per
// worker in that worker's namespace with RANK, WORLD_SIZE, MASTER_ADDR (worker
// 0's address), MASTER_PORT and GLOO_SOCKET_IFNAME set; rank 0's stdout passes
// through, every rank's stderr goes to LOG_DIR/rank-N.log.
struct NetnsRunOptions {
  std::string nodes_path;
  int workers = 0;
  std::string log_dir = ".";
  std::vector<std::string> command;
};
int RunInNamespaces(const NetnsRunOptions& options, std::ostream& out, std::ostream& err,
                    const std::atomic<bool>& interrupted);

}  // namespace edgetrain::cli

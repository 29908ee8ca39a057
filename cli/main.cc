// edgetrain: the command a person uses first. Thin: arguments in, cli/ out.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/local_runner.h"
#include "cli/netns_run.h"
#include "cli/partition_command.h"

namespace {

std::atomic<bool> g_interrupted{false};
void OnSignal(int) { g_interrupted.store(true); }

constexpr const char* kUsage = R"(usage:
  edgetrain run JOB.yaml [--nodes PROFILE.yaml [--links process|netns]] [--json] [--output DIR]
                         [--threads N] [--keep-logs]
      Train a TrainingJob manifest on this machine: the same YAML `kubectl apply`
      takes. --nodes emulates a cluster profile's devices: each worker gets a
      node's compute slowdown and its link's bandwidth trace, shaped in the
      agents (--links process, the default) or, as root, by the kernel: each
      agent in its own network namespace behind tbf qdiscs (--links netns). --json adds one final JSON line; --output overrides spec.output.path
      (default ./edgetrain-output/NAME); --threads sets LibTorch threads per agent
      (default 1: small models run fastest on one); --keep-logs keeps the run
      folder with the plan and every agent's log; --progress-log FILE records
      every progress snapshot as a JSON line; --agent PATH names the agent.
  edgetrain validate JOB.yaml [--defaulted]
      Check a manifest against the TrainingJob CRD without training; with
      --defaulted, print it as JSON with the CRD's defaults applied.
  edgetrain partition JOB.yaml
      Print the training samples each worker of the job gets, as JSON.
  edgetrain netns-run --nodes PROFILE.yaml --workers N [--log-dir DIR] -- COMMAND...
      As root: run COMMAND once per worker, each in its own network namespace
      behind the profile's kernel-shaped links (RANK, WORLD_SIZE, MASTER_ADDR,
      MASTER_PORT, GLOO_SOCKET_IFNAME set), for another framework to compare.
  edgetrain version

exit codes: 0 success (also when the budget ends before the target; see
reached_target), 1 runtime failure, 2 invalid manifest or command line,
130 interrupted.
)";

int Usage(const std::string& problem) {
  std::cerr << "edgetrain: " << problem << "\n\n" << kUsage;
  return edgetrain::cli::kExitInvalid;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace edgetrain::cli;
  // A reader of our output that goes away (a closed pipe) must not kill the
  // runner before it has stopped its agents, saved the model and removed its
  // network namespaces: writes then fail with EPIPE instead.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  auto asks_help = [](const std::string& a) { return a == "help" || a == "--help" || a == "-h"; };
  // `edgetrain run --help` is how most people ask about a command (what follows
  // netns-run's `--` is another program's).
  if (args.empty() || std::any_of(args.begin(), std::find(args.begin(), args.end(), "--"), asks_help)) {
    std::cout << kUsage;
    return args.empty() ? kExitInvalid : kExitOk;
  }
  const std::string command = args[0];
  if (command == "version" || command == "--version") {
    std::cout << "edgetrain " << EDGETRAIN_VERSION << "\n";
    return kExitOk;
  }
  if (command == "netns-run") {
    NetnsRunOptions netns;
    size_t i = 1;
    for (; i < args.size() && args[i] != "--"; ++i) {
      if (i + 1 >= args.size()) return Usage(args[i] + " needs a value");
      if (args[i] == "--nodes") netns.nodes_path = args[++i];
      else if (args[i] == "--log-dir") netns.log_dir = args[++i];
      else if (args[i] == "--workers") netns.workers = std::atoi(args[++i].c_str());
      else return Usage("unknown option " + args[i]);
    }
    if (i < args.size()) netns.command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
    return RunInNamespaces(netns, std::cout, std::cerr, g_interrupted);
  }
  if (command != "run" && command != "validate" && command != "partition") {
    return Usage("unknown command \"" + command + "\"");
  }

  RunOptions options;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    if (a == "--json" || (command == "validate" && a == "--defaulted")) {
      options.json = true;
    } else if (a == "--keep-logs") {
      options.keep_logs = true;
    } else if (a == "--output" || a == "--threads" || a == "--agent" || a == "--nodes" || a == "--links" ||
               a == "--progress-log") {
      const std::string* v = value();
      if (!v) return Usage(a + " needs a value");
      if (a == "--output") options.output_dir = *v;
      if (a == "--agent") options.agent_binary = *v;
      if (a == "--nodes") options.nodes_path = *v;
      if (a == "--links") options.links = *v;
      if (a == "--progress-log") options.progress_log = *v;
      if (a == "--threads") {
        char* end = nullptr;
        long n = std::strtol(v->c_str(), &end, 10);
        if (*end || n < 1 || n > 256) return Usage("--threads: expected 1..256, got \"" + *v + "\"");
        options.threads = static_cast<int>(n);
      }
    } else if (a.rfind("--", 0) == 0) {
      return Usage("unknown option " + a);
    } else if (options.manifest_path.empty()) {
      options.manifest_path = a;
    } else {
      return Usage("one manifest at a time (got \"" + options.manifest_path + "\" and \"" + a + "\")");
    }
  }
  if (options.manifest_path.empty()) return Usage(command + " needs a manifest: edgetrain " + command + " JOB.yaml");
  if (command == "validate") return ValidateManifest(options.manifest_path, options.json, std::cout, std::cerr);
  if (command == "partition") return PrintPartition(options.manifest_path, std::cout, std::cerr);

  options.terminal = ::isatty(STDERR_FILENO);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  return RunLocal(options, std::cout, std::cerr, g_interrupted);
}

// edgetrain: the command a person uses first. Thin: arguments in, cli/ out.
#include <unistd.h>

#include <csignal>
#include <iostream>

#include "cli/command_line.h"
#include "cli/local_runner.h"
#include "cli/netns_run.h"
#include "cli/node_links_command.h"
#include "cli/partition_command.h"

namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<bool> g_forced{false};  // asked twice: the agents are not waited for
std::atomic<int> g_signal{0};  // the first stop asked for
void OnSignal(int signal) {
  int none = 0;
  g_signal.compare_exchange_strong(none, signal);
  if (g_interrupted.exchange(true)) g_forced.store(true);
}

// An interrupted run ends as a shell reports the signal that stopped it:
// 130 for Ctrl-C, 143 for SIGTERM (a supervisor's, a container runtime's),
// 129 for SIGHUP.
int EndedBy(int code) {
  if (code != edgetrain::kExitInterrupted) return code;
  if (g_signal.load() == SIGTERM) return edgetrain::kExitTerminated;
  return g_signal.load() == SIGHUP ? edgetrain::kExitHungUp : code;
}

// The signals that stop a run as Ctrl-C does. SIGHUP among them: a closed
// terminal or a dropped ssh session killed the runner outright, its agents
// with it (they die with their parent), the model trained since the last
// checkpoint lost and the run's network namespaces and qdiscs left behind.
// A SIGHUP ignored when the runner started is left ignored: under nohup, the
// run was to outlive its terminal, and stopped with it (found in review).
void StopOnSignals() {
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  struct sigaction hangup {};
  if (::sigaction(SIGHUP, nullptr, &hangup) != 0 || hangup.sa_handler != SIG_IGN) std::signal(SIGHUP, OnSignal);
}

int Main(int argc, char** argv) {
  using namespace edgetrain;
  using namespace edgetrain::cli;
  // A reader of our output that goes away (a closed pipe) must not kill the
  // runner before it has stopped its agents, saved the model and removed its
  // network namespaces: writes then fail with EPIPE instead.
  std::signal(SIGPIPE, SIG_IGN);
  // A parent that ignored SIGCHLD passes that on, and the kernel then reaps
  // the agents itself: waitpid fails, every exit read as unknown, a run of
  // half a second took 15 and exited 1 for a refusal (found in review). The
  // default back, and no signal left blocked.
  std::signal(SIGCHLD, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  auto parsed = ParseCommandLine(argc, argv, std::cout, std::cerr);
  if (const int* exit = std::get_if<int>(&parsed)) return *exit;
  CommandLine& line = std::get<CommandLine>(parsed);
  switch (line.command) {
    case Command::kVersion:
      std::cout << "edgetrain " << EDGETRAIN_VERSION << "\n";
      return kExitOk;
    case Command::kValidate:
      return ValidateManifest(line.run, line.defaulted, std::cout, std::cerr);
    case Command::kPartition:
      return PrintPartition(line.run.manifest_path, line.run.json, std::cout, std::cerr);
    case Command::kPlan:
      return PrintPlan(line.plan, std::cout, std::cerr);
    case Command::kEvaluate:
      return EvaluateModel(line.evaluate, std::cout, std::cerr);
    case Command::kCredentials:
      return MakeCredentials(line.credentials, std::cout, std::cerr);
    case Command::kNetnsRun:
      StopOnSignals();
      return EndedBy(RunInNamespaces(line.netns, std::cout, std::cerr, g_interrupted));
    case Command::kNodeLinks:
      StopOnSignals();
      return ServeNodeLinks(line.node_links, STDIN_FILENO, std::cout, std::cerr, g_interrupted);
    case Command::kRun:
      line.run.terminal = ::isatty(STDERR_FILENO);
      StopOnSignals();
      return EndedBy(RunLocal(line.run, std::cout, std::cerr, g_interrupted, &g_forced));
  }
  return edgetrain::kExitInvalid;
}

}  // namespace

// An exception nothing below caught ended the runner in std::terminate,
// which does not unwind: its agents were killed with it, but the model was
// not saved, and the run's network namespaces and qdiscs were left behind.
// Caught here, the stack unwinds, each process, namespace and lock is
// released by its owner, and the run ends as a failure that says why.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "edgetrain: internal error: " << e.what() << "\n";
    return edgetrain::kExitFailed;
  }
}

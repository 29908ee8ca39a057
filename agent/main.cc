// edgetrain-agent: the training runtime on every node. Thin: flags in, RunAgent out.
#include <malloc.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <iostream>

#include "agent/agent.h"
#include "agent/check_model_command.h"
#include "agent/data/dataset.h"
#include "agent/evaluate_model.h"
#include "agent/failure_report.h"
#include "agent/profile_layers_command.h"
#include "agent/stamped_log.h"
#include "agent/subnormal_floats.h"
#include "agent/termination_log.h"

namespace {
std::atomic<bool> g_cancel{false};
volatile std::sig_atomic_t g_signal = 0;
void OnSignal(int signal) {
  g_signal = signal;
  g_cancel.store(true);
}
// A worker or stage stopped by a signal exits 143 (RunAgent); Ctrl-C's is 130, a closed terminal's 129.
// By the signal, whichever the stop's way out said: a stage whose send the
// stop abandoned ended cancelled, 130, and SIGTERM read as SIGINT (a new
// user's trial).
int ForSignal(int code) {
  if (code != edgetrain::kExitTerminated && code != edgetrain::kExitInterrupted) return code;
  if (g_signal == SIGINT) return edgetrain::kExitInterrupted;
  if (g_signal == SIGTERM) return edgetrain::kExitTerminated;
  return g_signal == SIGHUP ? edgetrain::kExitHungUp : code;
}

// An exception no layer below caught (a LibTorch error outside a trainer's
// guard, memory exhausted), on any thread, ended the agent in std::terminate:
// SIGABRT, no `result` line for the runner or the kubelet, the termination
// log empty. It is said as every other failure is, and the process ends at
// once, as it did: unwound instead, threads the exception skipped the
// closing of (a worker's sender, a stage's heartbeats) would hold the
// process alive and its peers waiting on it (found in review).
std::string g_termination_log;  // set once the flags are read
[[noreturn]] void FailOnTerminate() {
  std::string what = "std::terminate called without an exception";
  if (const std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = x.what();
    } catch (...) {
      what = "an exception of an unknown type";
    }
  }
  // The result line read back as main reads it at the end (ResultCapture);
  // flushing the capture flushes std::cout under it.
  edgetrain::agent::ResultCapture capture(std::cout);
  edgetrain::agent::ReportFailure(edgetrain::InternalError("internal error: " + what), capture.stream(), std::cerr);
  if (g_termination_log.empty()) {
    capture.stream().flush();
  } else {
    capture.WriteTerminationLogTo(g_termination_log, std::cerr);
  }
  std::cerr << std::flush;
  std::_Exit(edgetrain::kExitFailed);
}

// Every pass allocates its activations and gradients afresh, hundreds of kB
// to MBs each. glibc serves blocks that large with mmap and returns them to
// the kernel on free, so every pass paid for zeroed pages again: the vgg of
// examples/vgg-pipeline.yaml took 100-135 ms a pass of 64 samples and
// 41-51 ms with freed blocks kept for the next (profile-layers, four runs
// each), and its time swung run to run with where glibc's adaptive threshold
// had got to. Blocks up to 32 MiB now come from the heap, which keeps up to
// 128 MiB of free memory instead of trimming it.
void KeepFreedTensorMemory() {
  // 32 MiB is the most glibc takes on 64-bit; it refuses more (returning 0)
  // and, the trim threshold set, would leave mmap at its 128 KiB default.
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 || mallopt(M_TRIM_THRESHOLD, 128 << 20) != 1) {
    std::cerr << "edgetrain-agent: warning: glibc refused the allocator's thresholds; passes will be slower\n";
  }
}
}  // namespace

int main(int argc, char** argv) {
  using namespace edgetrain::agent;
  KeepFreedTensorMemory();
  // Before any thread starts, so that every one of them computes so
  // (agent/subnormal_floats.h says why).
  FlushSubnormalsToZero();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "evaluate") return RunEvaluateModel({args.begin() + 1, args.end()}, std::cout, std::cerr);
  if (!args.empty() && args[0] == "profile-layers") {
    return RunProfileLayers({args.begin() + 1, args.end()}, std::cout, std::cerr);
  }
  if (!args.empty() && args[0] == "check-model") {
    return RunCheckModel({args.begin() + 1, args.end()}, std::cout, std::cerr);
  }
  // --help among the flags is what a person asked for, not a failure to parse.
  if (std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; })) {
    std::cout << AgentUsage();
    return edgetrain::kExitOk;
  }
  auto flags = ParseAgentFlags(args);
  if (!flags.ok()) {
    std::cerr << "edgetrain-agent: " << flags.status().message() << "\n\n" << AgentUsage();
    return edgetrain::ExitCodeFor(flags.status());
  }
  if (flags->data_dir.empty()) flags->data_dir = DefaultDataDir();
  // SIGTERM (the runner, the kubelet), SIGINT and SIGHUP (an agent started
  // by hand whose terminal closed) end training at the next step: the model
  // trained so far is still evaluated and saved.
  // Under nohup, SIGHUP stays ignored: the agent was to outlive its terminal.
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  struct sigaction hangup {};
  if (::sigaction(SIGHUP, nullptr, &hangup) != 0 || hangup.sa_handler != SIG_IGN) std::signal(SIGHUP, OnSignal);
  // The log's lines stamped with their time; the result's line on stdout,
  // which `edgetrain run`, the kubelet and benches read, as it is.
  const edgetrain::agent::StampedStderr stamped;
  g_termination_log = flags->termination_log;
  std::set_terminate(FailOnTerminate);
  if (flags->termination_log.empty()) return ForSignal(RunAgent(*flags, std::cout, std::cerr, g_cancel));
  ResultCapture capture(std::cout);
  const int code = ForSignal(RunAgent(*flags, capture.stream(), std::cerr, g_cancel));
  capture.WriteTerminationLogTo(flags->termination_log, std::cerr);
  return code;
}

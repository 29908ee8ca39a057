// edgetrain-agent: the training runtime on every node. Thin: flags in, RunAgent out.
#include <csignal>
#include <iostream>

#include "agent/agent.h"
#include "agent/data/dataset.h"
#include "agent/evaluate_model.h"
#include "agent/profile_layers_command.h"
#include "agent/termination_log.h"

namespace {
std::atomic<bool> g_cancel{false};
void OnSignal(int) { g_cancel.store(true); }
}  // namespace

int main(int argc, char** argv) {
  using namespace edgetrain::agent;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "evaluate") return RunEvaluateModel({args.begin() + 1, args.end()}, std::cout, std::cerr);
  if (!args.empty() && args[0] == "profile-layers") {
    return RunProfileLayers({args.begin() + 1, args.end()}, std::cout, std::cerr);
  }
  auto flags = ParseAgentFlags(args);
  if (!flags.ok()) {
    std::cerr << "edgetrain-agent: " << flags.status().message() << "\n\n" << AgentUsage();
    return edgetrain::ExitCodeFor(flags.status());
  }
  if (flags->data_dir.empty()) flags->data_dir = DefaultDataDir();
  // SIGTERM (the runner, the kubelet) and SIGINT end training at the next step:
  // the model trained so far is still evaluated and saved.
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  if (flags->termination_log.empty()) return RunAgent(*flags, std::cout, std::cerr, g_cancel);
  ResultCapture capture(std::cout);
  const int code = RunAgent(*flags, capture.stream(), std::cerr, g_cancel);
  capture.stream().flush();
  if (!capture.result().empty()) WriteTerminationLog(flags->termination_log, FitTerminationMessage(capture.result()), std::cerr);
  return code;
}

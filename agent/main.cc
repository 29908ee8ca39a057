// edgetrain-agent: the training runtime on every node. Thin: flags in, RunAgent out.
#include <csignal>
#include <iostream>

#include "agent/agent.h"

namespace {
std::atomic<bool> g_cancel{false};
void OnSignal(int) { g_cancel.store(true); }
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto flags = edgetrain::agent::ParseAgentFlags(args);
  if (!flags.ok()) {
    std::cerr << "edgetrain-agent: " << flags.status().message() << "\n"
              << "usage: edgetrain-agent --role=coordinator|worker|stage --job=NAME --rank=N --world=N\n"
                 "         --plan=FILE [--coordinator=HOST:PORT] [--listen=HOST:PORT] [--http=HOST:PORT]\n";
    return edgetrain::agent::kExitInvalid;
  }
  // SIGTERM (the runner, the kubelet) and SIGINT end training at the next step:
  // the model trained so far is still evaluated and saved.
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  return edgetrain::agent::RunAgent(*flags, std::cout, std::cerr, g_cancel);
}

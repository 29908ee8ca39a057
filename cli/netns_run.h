#pragma once

#include <atomic>
#include <ostream>
#include <string>
#include <vector>

#include "cli/kernel_command.h"
#include "core/clock.h"

namespace edgetrain::cli {

// `edgetrain netns-run --nodes PROFILE --workers N -- COMMAND...`: the kernel-
// shaped links of `run --links netns`, for any program: COMMAND runs once per
// worker in that worker's namespace with RANK, WORLD_SIZE, MASTER_ADDR (worker
// 0's address), MASTER_PORT and GLOO_SOCKET_IFNAME set. Every rank's stdout
// passes through, line by line: rank 0's as it is (the rank that reports, for
// scripts to read), the others' after "rank N: ". Every rank's stderr goes to
// LOG_DIR/rank-N.log; LOG_DIR is created if need be.
struct NetnsRunOptions {
  std::string nodes_path;
  int workers = 0;
  std::string log_dir = ".";
  std::vector<std::string> command;
  // How long the ranks have once told to stop (SIGTERM), before they and what
  // they started are killed.
  Duration stop_grace = std::chrono::seconds(15);
  // How long each `ip` or `tc` that lays out or shapes the links may take.
  Duration link_command_timeout = kDefaultLinkCommandTimeout;
};
int RunInNamespaces(const NetnsRunOptions& options, std::ostream& out, std::ostream& err,
                    const std::atomic<bool>& interrupted);

}  // namespace edgetrain::cli

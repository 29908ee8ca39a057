#include "cli/netns_run.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cli/child_process.h"
#include "cli/job_loading.h"
#include "cli/local_runner.h"
#include "cli/netns_links.h"
#include "core/placement.h"

namespace edgetrain::cli {

namespace fs = std::filesystem;
namespace {
constexpr std::chrono::milliseconds kPollEvery{200};
}  // namespace

int RunInNamespaces(const NetnsRunOptions& options, std::ostream& out, std::ostream& err,
                    const std::atomic<bool>& interrupted) {
  if (options.command.empty() || options.workers < 1) {
    err << "error: netns-run needs --workers N and a command after --\n";
    return kExitInvalid;
  }
  std::optional<ClusterProfile> profile = LoadProfile(options.nodes_path, err);
  if (!profile) return kExitInvalid;
  auto slots = SlotsInProfileOrder(options.workers, *profile);
  if (!slots.ok()) {
    err << "error: " << slots.status().message() << "\n";
    return kExitInvalid;
  }
  std::error_code ec;
  fs::create_directories(options.log_dir, ec);
  if (ec) {
    err << "error: --log-dir " << options.log_dir << ": " << ec.message() << "\n";
    return kExitFailed;
  }
  RemoveLeftovers(err, options.link_command_timeout);
  RealClock clock;
  auto links = NetnsLinks::Create(*slots, clock, {.command_timeout = options.link_command_timeout});
  if (!links.ok()) {
    err << "error: " << links.status().message() << "\n";
    return ExitCodeFor(links.status());
  }
  (*links)->StartShaping();
  // When the traces' time 0 was, in seconds on CLOCK_MONOTONIC (which
  // steady_clock is here, and Python's time.monotonic()): a rank that
  // records what it waited for, and when, can tell which of its waits fell
  // in its link's outages (bench/ddp_worker.py).
  char links_started[32];
  std::snprintf(links_started, sizeof links_started, "%.6f",
                std::chrono::duration<double>((*links)->started().time_since_epoch()).count());
  std::vector<ChildProcess> ranks;
  for (int rank = 0; rank < options.workers; ++rank) {
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "RANK=" + std::to_string(rank),
                                     "WORLD_SIZE=" + std::to_string(options.workers),
                                     "MASTER_ADDR=" + (*links)->WorkerAddress(0),
                                     "MASTER_PORT=29500",
                                     "GLOO_SOCKET_IFNAME=" + (*links)->WorkerInterface(rank),
                                     std::string("EDGETRAIN_LINKS_STARTED=") + links_started};
    argv.insert(argv.end(), options.command.begin(), options.command.end());
    auto child = ChildProcess::Spawn((*links)->InWorker(rank, argv),
                                     (fs::path(options.log_dir) / ("rank-" + std::to_string(rank) + ".log")).string());
    if (!child.ok()) {
      err << "error: " << child.status().message() << "\n";
      // The ranks started, with whatever they started: their destructors
      // kill each rank alone, and a launcher's children lived on (found in
      // review).
      for (auto& r : ranks) ::kill(-r.pid(), SIGKILL);
      return kExitFailed;
    }
    ranks.push_back(std::move(*child));
  }
  bool signalled = false, killed = false;
  TimePoint signalled_at{};
  for (;;) {
    if (interrupted.load() && !signalled) {
      for (auto& r : ranks) r.Signal(SIGTERM);
      signalled = true;
      signalled_at = clock.Now();
    }
    // A rank that ignores SIGTERM, or waits in a collective for a peer that
    // is gone, is killed once the grace has passed, with whatever it
    // started: netns-run had waited for it for ever, deaf to more Ctrl-Cs
    // (found in review).
    if (signalled && !killed && clock.Now() - signalled_at > options.stop_grace) {
      // Each rank's whole process group, whether the rank itself has ended
      // or not: a shell that ended on the signal left the program it had
      // started in the background running (the test saw one).
      for (auto& r : ranks) ::kill(-r.pid(), SIGKILL);
      killed = true;
    }
    // Each rank's turn waits a share of the poll interval for its next line.
    const Duration turn = kPollEvery / static_cast<int>(ranks.size());
    for (size_t rank = 0; rank < ranks.size(); ++rank) {
      for (auto line = ranks[rank].ReadLine(turn); line; line = ranks[rank].ReadLine(Duration::zero())) {
        out << (rank == 0 ? "" : "rank " + std::to_string(rank) + ": ") << *line << "\n";
      }
    }
    out << std::flush;
    // Killed, a rank is over once reaped, whoever else still holds its stdout.
    const auto ended = [&](ChildProcess& r) { return (r.stdout_closed() || killed) && r.Poll().has_value(); };
    if (std::all_of(ranks.begin(), ranks.end(), ended)) break;
  }
  // Interrupted, what the ranks started goes with them, though a rank ended
  // on the signal within the grace: a shell whose `wait` the signal ended had
  // left its background program running (the test saw one).
  if (signalled) {
    // A kill that failed otherwise than on a group already gone is said: a
    // test once found a rank's shell and its `sleep` alive after netns-run
    // ended, its group not killed, for no reason reading showed. (Said of
    // every group, it printed "No such process" at every Ctrl-C: found in
    // review.)
    for (auto& r : ranks) {
      if (::kill(-r.pid(), SIGKILL) != 0 && errno != ESRCH) {
        err << "netns-run: could not kill rank process group " << r.pid() << ": " << std::strerror(errno) << "\n";
      }
    }
  }
  // The highest status, and every rank that failed by name: a rank's code
  // alone, another's lost, said nothing of which (a user's trial).
  int worst = 0;
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    const int status = ranks[rank].Wait(options.stop_grace);
    if (status != 0 && !signalled) {
      err << "rank " << rank << " ended: " << DescribeExitStatus(status) << " (its stderr: "
          << (fs::path(options.log_dir) / ("rank-" + std::to_string(rank) + ".log")).string() << ")\n";
    }
    worst = std::max(worst, status);
  }
  return signalled ? kExitInterrupted : worst;
}

}  // namespace edgetrain::cli

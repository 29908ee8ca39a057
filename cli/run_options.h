#pragma once
// What a person asks of `edgetrain run` on its command line.

#include <optional>
#include <string>

#include "cli/kernel_command.h"
#include "core/clock.h"

namespace edgetrain::cli {

// How long an agent has to start unless --start-timeout says otherwise.
inline constexpr Duration kDefaultStartTimeout = std::chrono::seconds(60);

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
  // A team's agents in plaintext, no identity checked: loopback only, said loudly.
  bool insecure = false;
  // Draw report.png at the end (about a second of matplotlib); progress.jsonl
  // is kept either way. Scripts and tests that do not look at it turn it off.
  bool curves = true;
  // Every progress snapshot, one JSON line each with the seconds since the links
  // started following their traces (benchmarks attribute stalls to outages).
  std::string progress_log;
  // How often the coordinator refreshes /progress; unset: the agent's 100 ms.
  std::optional<Duration> progress_every;
  // Start the job over even if its output folder holds a checkpoint it could
  // resume from.
  bool fresh = false;
  // Fixed HTTP ports: the coordinator's here, worker r's at http_port + 1 + r;
  // 0: ports the OS chooses.
  int http_port = 0;
  // A pipeline, hybrid or auto job's stages in place of its
  // spec.parallelism.stages (empty: the spec's): the planner's ("planned"),
  // or one of the plans it is compared with, for benchmarks: "even" (one
  // device a stage, the layers dealt evenly) or "data-parallel" (one stage on
  // every device); or a layout by hand, "0-1:0,1/2:2"
  // (core/parallelism_choice.h).
  std::string stages;
  // The micro-batches a pipeline's step is cut into, in place of the
  // cost model's best for the stages; 0: its best.
  int micro_batches = 0;
  // A local Prometheus scraping every agent (cli/run_observer.h), on this port
  // (0: one the OS gives); after the run it serves the run's series until the
  // person interrupts, or for observe_keep when that is set.
  bool observe = false;
  int observe_port = 9090;
  std::optional<Duration> observe_keep;  // unset: until interrupted
  std::string observe_rules;  // a Prometheus rules file it evaluates (dashboards/alerts.yaml); empty: none
  // How long each `ip` or `tc` of kernel-shaped links may take (--links netns).
  Duration link_command_timeout = kDefaultLinkCommandTimeout;
  // Told to stop (Ctrl-C, a failure), how long the agents have to save and
  // report before they are killed (--interrupt-grace); and, once the job
  // has ended, how long the coordinator, then a team's workers still there,
  // have to exit (--stop-grace). A model that takes longer to save on slow
  // storage was killed half saved, with no way to give it longer (found in
  // review).
  Duration interrupt_grace = std::chrono::seconds(30);
  Duration stop_grace = std::chrono::seconds(15);
  // How long each agent has to start (--start-timeout).
  Duration start_timeout = kDefaultStartTimeout;
};

}  // namespace edgetrain::cli

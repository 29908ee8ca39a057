#pragma once
// The agent's launch contract (docs/launch-contract.md): one command line used
// alike by the local runner, the operator's pods and the node emulator.

#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"

namespace edgetrain::agent {

enum class Role { kCoordinator, kWorker, kStage };

struct AgentFlags {
  Role role = Role::kCoordinator;
  std::string job;
  int rank = 0;
  int world = 1;
  std::string coordinator;           // HOST:PORT of the coordinator's peer endpoint
  std::string plan;                  // path of the plan file
  std::string listen = "127.0.0.1:0";  // peer endpoint (multi-agent roles)
  std::string http = "127.0.0.1:0";    // GET /metrics, /healthz, and the coordinator's /progress
  // Where data sets are looked for before Debian's folders; main fills in
  // DefaultDataDir() when --data-dir is not given.
  std::string data_dir;
  // Where the result line's JSON is also written when the agent ends: a pod's
  // terminationMessagePath, which the kubelet copies into the pod's status for
  // the operator to read how the job ended. Empty: nowhere.
  std::string termination_log;
  // How a team's agents talk: mutual TLS with the job's credentials in
  // tls_dir (ca.crt, tls.crt, tls.key), or plaintext when `insecure` (loopback
  // only). A team's agent needs one of the two; a job of one neither.
  std::string tls_dir;
  bool insecure = false;
  Duration tls_reload = std::chrono::seconds(60);  // how often tls_dir is read again (a rotation)
  // The agent's own waits, long in production and short in tests.
  Duration first_worker_timeout = std::chrono::seconds(120);  // a coordinator with no worker fails then
  // A team worker silent this long before its pace is learned is counted out.
  Duration first_push_deadline = std::chrono::seconds(10);
  Duration stop_grace = std::chrono::seconds(3);              // workers' time to hear Stop
  Duration plan_poll = std::chrono::seconds(1);               // how often the plan file is looked at
  Duration connect_attempt = std::chrono::seconds(1);         // one try to reach the coordinator
  Duration heartbeat = std::chrono::milliseconds(250);        // a pipeline stage's word that its link is alive
  // A pipeline head's: the steps over which it measures its stages before it
  // may move layers between them (0: it never does).
  int rebalance_every = 100;
  // ... or over this long, whichever ends first (at least two steps): a
  // device slowed eightfold stretched 100 steps past the rest of a run.
  Duration rebalance_within = std::chrono::seconds(20);
  // How long a pipeline stage whose head went away (its stream broken after
  // the head took it in) keeps trying to reach it again: a head restarted in
  // its pod comes back after the kubelet's back-off, 10 s and more, and
  // stages that gave up after reachGrace crash-looped out of step with it.
  Duration head_return_grace = std::chrono::minutes(2);
  // A pipeline head takes a stage whose pass has run this many times what
  // its passes have taken, and at least hung_pass_floor, for hung: its
  // compute stuck while its heartbeats still come (core/pass_deadline.h).
  double hung_pass_factor = 8;
  Duration hung_pass_floor = std::chrono::seconds(10);
  // A pipeline head lets go of a device of a group that runs its share this
  // many times slower than the group's fastest, in two steps running (this
  // squared in one); it, or one taken for hung, may rejoin after
  // straggler_rejoin_after, twice that the next time.
  double straggler_factor = 8;
  Duration straggler_rejoin_after = std::chrono::minutes(1);
  // How long a stream to the coordinator (or head) may go without a word
  // before it is pinged, and as long again for the answer: a node that dies
  // or drops off the network without closing its connections ends them then,
  // where TCP would wait about 15 minutes.
  Duration keepalive = std::chrono::seconds(10);
  // How often a coordinator (a job of one's agent, a pipeline's head)
  // refreshes /progress: often enough for a progress bar; a benchmark that
  // times recovery from /progress reads no finer than this.
  Duration progress_every = std::chrono::milliseconds(100);
  // How much longer than nodeLossGrace a pipeline head that starts again
  // (a checkpoint to resume, or placed anew) waits for its stages; none:
  // RestartGather().
  std::optional<Duration> restart_gather;

  // Its stages hear of their old head's end when keepalive gives up on the
  // stream, two keepalives after the last word, then reach the new head:
  // those and 10 s more unless told (30 s at the default keepalive).
  Duration RestartGather() const { return restart_gather.value_or(2 * keepalive + std::chrono::seconds(10)); }
};

// Parses the launch contract's `--name=value` (or `--name value`) flags; errors
// say which flag and why.
StatusOr<AgentFlags> ParseAgentFlags(const std::vector<std::string>& args);

// The usage, for a person who got the flags wrong.
std::string AgentUsage();

}  // namespace edgetrain::agent

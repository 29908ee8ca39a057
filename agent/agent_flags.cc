#include "agent/agent_flags.h"

#include <cmath>
#include <functional>
#include <map>

#include <CLI/CLI.hpp>

#include "core/duration_text.h"
#include "http/socket_address.h"

namespace edgetrain::agent {
namespace {

const std::map<std::string, Role> kRoles = {
    {"coordinator", Role::kCoordinator}, {"worker", Role::kWorker}, {"stage", Role::kStage}};

// The app that reads the flags into `flags`; `role` takes --role's word.
std::unique_ptr<CLI::App> MakeApp(AgentFlags& flags, std::string& role) {
  auto app = std::make_unique<CLI::App>("edgetrain-agent: the training runtime on every node", "edgetrain-agent");
  // The subcommands are read before these flags (agent/main.cc); named here,
  // or nothing the binary prints finds them (a new user's trial).
  app->footer(
      "Also: edgetrain-agent evaluate (a saved model on a test set), profile-layers (a model's layers timed on "
      "this machine), check-model (a TorchScript module checked and its step timed); each takes --help. "
      "docs/launch-contract.md");
  app->add_option("--role", role, "coordinator (the parameter server, source of progress), worker or stage")
      ->required()
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            return kRoles.count(value) ? "" : "must be coordinator, worker or stage, got \"" + value + "\"";
          },
          "", ""))
      ->option_text("coordinator|worker|stage");
  app->add_option("--job", flags.job, "the TrainingJob's name; must equal the plan's")->required()->option_text("NAME");
  // Ranges, not CLI11's NonNegativeNumber and PositiveNumber, whose message
  // gave the largest double in all its 309 digits as the bound.
  app->add_option("--rank", flags.rank, "this agent's index")->check(CLI::Range(0, 1'000'000))->option_text("N");
  app->add_option("--world", flags.world, "the job's workers (spec.parallelism.workers), the coordinator not counted")
      ->check(CLI::Range(1, 1'000'000))
      ->option_text("N");
  app->add_option("--plan", flags.plan, "the plan file")->required()->option_text("FILE");
  app->add_option("--rebalance-every", flags.rebalance_every,
                  "a pipeline head measures its stages' compute over this many steps, and moves layers between "
                  "them when another cut would pace the slowest stage 15% faster (default 100; 0: never)")
      ->check(CLI::Range(0, 1'000'000'000))
      ->option_text("STEPS");
  // CLI::Range compares, and NaN passes every comparison it fails: a NaN
  // factor took every pass for hung at the floor, or no straggler ever for
  // one (found in review).
  const CLI::Validator finite(
      [](std::string& text) -> std::string {
        double x = 0;
        return CLI::detail::lexical_cast(text, x) && std::isfinite(x) ? "" : "must be a finite number, got " + text;
      },
      "");
  app->add_option("--hung-pass-factor", flags.hung_pass_factor,
                  "a pipeline head takes a stage for hung when the pass its heartbeats say is under way has run "
                  "this many times what its passes have taken (default 8), and at least --hung-pass-floor")
      ->check(finite & CLI::Range(1.0, 1e6))
      ->option_text("X");
  app->add_option("--straggler-factor", flags.straggler_factor,
                  "a pipeline head lets go of a device of a group that runs its share this many times slower than "
                  "the group's fastest, for the speeds the shares are dealt by, in two steps running (default 8)")
      ->check(finite & CLI::Range(1.0, 1e6))
      ->option_text("X");
  app->add_option("--coordinator", flags.coordinator, "where peers reach the coordinator")->option_text("HOST:PORT");
  app->add_option("--listen", flags.listen,
                  "where this agent accepts peers (port 0: the OS chooses; host 0.0.0.0: every interface)")
      ->option_text("HOST:PORT");
  app->add_option("--http", flags.http, "where it serves HTTP, HOST:PORT as --listen (default 127.0.0.1:0)")
      ->option_text("HOST:PORT");
  app->add_option("--data-dir", flags.data_dir,
                  "where data sets are looked for first (default $EDGETRAIN_DATA_DIR, else "
                  "$XDG_CACHE_HOME/edgetrain/datasets)")
      ->option_text("DIR");
  app->add_option("--termination-log", flags.termination_log,
                  "also write the result's JSON there at the end (a pod's terminationMessagePath)")
      ->option_text("FILE");
  app->add_option("--tls-dir", flags.tls_dir,
                  "the job's TLS credentials for mutual TLS between its agents: ca.crt (the job's authority), "
                  "tls.crt and tls.key (this agent's), as a kubernetes.io/tls Secret mounts them")
      ->option_text("DIR");
  app->add_flag("--insecure", flags.insecure,
                "plaintext between the team's agents, with no identity checked: for a run on loopback only");
  // A positive duration, into `set`.
  auto wait_into = [&](const char* name, std::function<void(Duration)> set, const char* what) {
    app->add_option_function<std::string>(
           name,
           [set = std::move(set), name](const std::string& text) {
             auto d = ParseDuration(text);
             if (!d.ok() || *d <= Duration::zero()) {
               throw CLI::ValidationError(name, "expected a duration such as 500ms or 2m, got \"" + text + "\"");
             }
             set(*d);
           },
           what)
        ->option_text("DURATION");
  };
  auto wait = [&](const char* name, Duration& into, const char* what) {
    wait_into(name, [&into](Duration d) { into = d; }, what);
  };
  wait("--first-worker-timeout", flags.first_worker_timeout,
       "a coordinator that no worker reaches within this fails (default 120s)");
  wait("--first-push-deadline", flags.first_push_deadline,
       "a team worker silent this long before the coordinator has learned its pace from the gaps between its "
       "pushes is counted out (default 10s: its first step, a whole model over a slow link, may take seconds; "
       "never under 200ms)");
  wait("--stop-grace", flags.stop_grace, "how long a coordinator gives its workers to hear Stop (default 3s)");
  wait("--plan-poll", flags.plan_poll, "how often a coordinator looks at its plan file for a new generation (default 1s)");
  wait("--tls-reload", flags.tls_reload, "how often --tls-dir is read again for rotated credentials (default 60s, at least 1s)");
  wait("--connect-attempt", flags.connect_attempt, "how long one try of a worker to reach its coordinator (or a stage its head) lasts (default 1s)");
  wait("--rebalance-within", flags.rebalance_within,
       "a pipeline head's measurement of its stages also ends after this long, if its --rebalance-every steps take "
       "longer (default 20s; at least two steps)");
  wait("--head-return-grace", flags.head_return_grace,
       "how long a pipeline stage whose head went away keeps trying to reach it again (default 2m; at least "
       "twice spec.faultTolerance.nodeLossGrace (2m unset) plus two minutes, as long as a team's worker waits for its "
       "coordinator: a head lost with its node is placed anew)");
  wait("--hung-pass-floor", flags.hung_pass_floor,
       "the least a pipeline stage's pass runs before its head may take it for hung (default 10s); before the "
       "stage's first step, spec.faultTolerance.nodeLossGrace (2m unset) if longer");
  wait("--straggler-rejoin-after", flags.straggler_rejoin_after,
       "how long a pipeline device let go of as a straggler, or taken for hung, waits before it may rejoin "
       "(default 1m; twice that each time after)");
  wait_into("--restart-gather", [&flags](Duration d) { flags.restart_gather = d; },
       "how much longer than spec.faultTolerance.nodeLossGrace a pipeline head that starts again (a checkpoint "
       "to resume, or placed anew) waits for its stages, which hear of their old head's end when --keepalive "
       "gives up on their streams (default twice --keepalive and 10s: 30s)");
  wait("--keepalive", flags.keepalive,
       "how long a stream to the coordinator (or a stage's to its head, either way) goes without a word before "
       "it is pinged, and as long for the answer: a peer whose node died without closing the connection is "
       "found gone after twice this (default 10s)");
  wait("--progress-every", flags.progress_every,
       "how often a coordinator refreshes /progress (and its metrics of the job's progress); default 100ms");
  wait("--heartbeat", flags.heartbeat,
       "how often a pipeline stage with nothing else to send tells its head it is there (default 250ms); "
       "the head takes a stage silent for four of them, or past the gaps it has shown, for lost");
  return app;
}

}  // namespace

StatusOr<AgentFlags> ParseAgentFlags(const std::vector<std::string>& args) {
  // An empty `--coordinator=` took the next argument, a flag itself, as its
  // value (a user's trial): nothing after the = is said as such.
  for (const std::string& arg : args) {
    if (arg.size() > 3 && arg.rfind("--", 0) == 0 && arg.back() == '=' && arg.find('=') == arg.size() - 1) {
      return InvalidArgumentError(arg.substr(0, arg.size() - 1) + ": expected a value after the =, got none");
    }
  }
  AgentFlags flags;
  std::string role;
  auto app = MakeApp(flags, role);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app->parse(reversed);
  } catch (const CLI::ParseError& e) {
    const std::string what = e.what();
    // CLI11 calls an unknown flag an extra argument.
    if (dynamic_cast<const CLI::ExtrasError*>(&e)) return InvalidArgumentError("unknown flag: " + what.substr(what.find(':') + 2));
    return InvalidArgumentError(what);
  }
  flags.role = kRoles.at(role);
  if (!flags.coordinator.empty()) {
    // Checked as given: "127.0.0.1:99999", ":" or " " were each dialled for
    // the whole grace, "cannot reach the coordinator ... yet" (a user's trial).
    // Split as the transport dials it (http::SplitHostPort, [v6] included).
    const StatusOr<http::HostPort> at = http::SplitHostPort(flags.coordinator);
    const StatusOr<int> port = at.ok() ? http::ParsePort(at->port) : at.status();
    if (!port.ok() || *port == 0 || at->host.empty() || at->host.find_first_of(" \t") != std::string::npos) {
      return InvalidArgumentError("--coordinator: expected HOST:PORT, a port from 1 to 65535, got \"" +
                                  flags.coordinator + "\"");
    }
  }
  // Checked before the data and the model are loaded, and by flag: a port
  // past 65535 was listened on modulo 65536 (70000 as 4464) where peers
  // dialled the one asked for, and ":0" or "foo" failed after the loading,
  // exit 1, which the operator restarts (found in review). A host is asked
  // for: 0.0.0.0 for every interface, which ":0" meant to one server and
  // not to the other.
  for (const auto& [name, address] : {std::pair<const char*, const std::string&>{"--listen", flags.listen},
                                      {"--http", flags.http}}) {
    if (address.empty()) continue;
    const StatusOr<http::HostPort> at = http::SplitHostPort(address);
    const StatusOr<int> port = at.ok() ? http::ParsePort(at->port) : at.status();
    if (!port.ok() || at->host.empty() || at->host.find_first_of(" \t") != std::string::npos) {
      return InvalidArgumentError(std::string(name) +
                                  ": expected HOST:PORT, a port from 0 to 65535 (0: the system chooses) and a host "
                                  "(0.0.0.0: every interface), got \"" + address + "\"");
    }
  }
  // gRPC reads the files again in whole seconds, at least one: 100ms had the
  // watch read them ten times a second for gRPC's one (found in review).
  if (flags.tls_reload < std::chrono::seconds(1)) {
    return InvalidArgumentError("--tls-reload: at least 1s, as often as gRPC reads credentials again, got " +
                                FormatDuration(flags.tls_reload));
  }
  if (flags.rank >= flags.world) {
    return InvalidArgumentError("--rank must be below --world (" + std::to_string(flags.rank) +
                                " >= " + std::to_string(flags.world) + ")");
  }
  if (flags.insecure && !flags.tls_dir.empty()) {
    return InvalidArgumentError("--insecure and --tls-dir exclude each other: plaintext, or mutual TLS with the files");
  }
  return flags;
}

std::string AgentUsage() {
  AgentFlags flags;
  std::string role;
  return MakeApp(flags, role)->help();
}

}  // namespace edgetrain::agent

// edgetrain-operator: watches TrainingJobs and places, starts, follows and ends
// their agents' pods (docs/operator.md). Thin: flags in, the controller out.
#include <unistd.h>

#include <csignal>
#include <random>
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>

#include "http/http_client.h"
#include "http/http_server.h"
#include "core/duration_text.h"
#include "core/exit_codes.h"
#include "core/object_names.h"
#include "core/quoted_text.h"
#include "operator/controller/controller.h"
#include "operator/kube/kube_config.h"
#include "operator/kube/leader_election.h"
#include "operator/kube/observed_kube_client.h"
#include "operator/kube/rest_kube_client.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

using namespace edgetrain;

// The coordinator's GET /progress, over HTTP.
// A coordinator on a dead node holds each read for the whole timeout, and
// the job's status writes with it (--progress-timeout).
class HttpProgress final : public operator_::ProgressSource {
 public:
  explicit HttpProgress(Duration timeout) : timeout_(std::chrono::duration_cast<std::chrono::milliseconds>(timeout)) {}
  StatusOr<nlohmann::json> Progress(const std::string& pod_ip, int port) override {
    StatusOr<http::HttpReply> reply = http::HttpGet(pod_ip + ":" + std::to_string(port), "/progress", timeout_);
    if (!reply.ok()) return reply.status();
    if (reply->status != 200) return UnavailableError("/progress answered " + std::to_string(reply->status));
    nlohmann::json j = nlohmann::json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return UnavailableError("/progress is not a JSON object");
    return j;
  }

 private:
  std::chrono::milliseconds timeout_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"edgetrain-operator: places, runs and reports TrainingJobs on a Kubernetes cluster (docs/operator.md)",
               "edgetrain-operator"};
  std::string kubeconfig, http = "0.0.0.0:8081";
  operator_::ControllerOptions options;
  kube::RestOptions rest;
  bool leader_elect = true;
  kube::LeaderElectionOptions election;
  election.namespace_.clear();  // the kubeconfig's namespace, or the pod's
  Duration progress_timeout = http::kHttpGetTimeout;
  // Every wait is a flag: long by default, short in tests.
  std::map<std::string, Duration*> waits = {
      {"--status-interval", &options.reconciler.status_interval},
      {"--unschedulable-retry", &options.reconciler.unschedulable_retry},
      {"--recheck-after", &options.reconciler.recheck_after},
      {"--watch-timeout", &options.informers.min_watch_timeout},
      {"--relist-backoff", &options.informers.backoff_initial},
      {"--relist-backoff-max", &options.informers.backoff_max},
      {"--retry-backoff", &options.queue.item_initial},
      {"--retry-backoff-max", &options.queue.item_max},
      {"--measurement-interval", &options.reconciler.measurement_interval},
      {"--measurement-max-age", &options.reconciler.measurement_max_age},
      {"--lease-duration", &election.lease_duration},
      {"--renew-deadline", &election.renew_deadline},
      {"--retry-period", &election.retry_period},
      {"--certificate-validity", &options.reconciler.credentials.certificate_validity},
      {"--link-down-after", &options.reconciler.links.link_down_after},
      {"--stalled-after", &options.reconciler.links.stalled_after},
      {"--agent-keepalive", &options.reconciler.pods.agent_keepalive},
      {"--progress-timeout", &progress_timeout},
  };
  app.add_option("--kubeconfig", kubeconfig,
                 "the kubeconfig to use; default $KUBECONFIG, else the pod's service account, else ~/.kube/config")
      ->option_text("FILE");
  app.add_option("--namespace", options.namespace_, "watch TrainingJobs in this namespace only (default: all)")
      ->option_text("NS");
  // Ranges, not CLI11's PositiveNumber: its message for 0 read "not in range
  // 0.000000 to " the largest double in all its 309 digits.
  app.add_option("--workers", options.workers, "reconciles at once (default 2)")->check(CLI::Range(1, 1024));
  app.add_option("--http", http, "where /metrics, /healthz and /readyz are served (default 0.0.0.0:8081)")
      ->option_text("HOST:PORT");
  CLI::Option* qps = app.add_option("--qps", rest.qps,
                                     "client-side limit on API requests a second; unset, 20 until the API server shows "
                                     "it does priority and fairness (APF, on since Kubernetes 1.20), then none")
                          ->check(CLI::Range(0.01, 1e6));
  app.add_option("--burst", rest.burst, "requests allowed at once above --qps (default 40)")
      ->check(CLI::Range(1, 1'000'000));
  // The agent of this operator's own version, as docs/images.md tags it:
  // ":dev", which no build makes, left pods of an operator run without
  // the chart unable to pull (a new user's trial).
  options.reconciler.pods.default_image = "edgetrain/agent:" EDGETRAIN_VERSION;
  app.add_option("--default-image", options.reconciler.pods.default_image,
                 "the agent's image when spec.template.image names none (default edgetrain/agent:" EDGETRAIN_VERSION
                 ", this operator's version)");
  app.add_option("--leader-elect", leader_elect,
                 "only the replica holding the Lease reconciles; true by default, for more than one replica")
      ->option_text("BOOL");
  app.add_option("--leader-election-namespace", election.namespace_,
                 "where the Lease lives (default: the kubeconfig's or the pod's namespace)")
      ->option_text("NS");
  // Two operators in one namespace, each watching a namespace of its own,
  // shared the one Lease, and one of them never reconciled (found in review).
  app.add_option("--leader-election-id", election.name,
                 "the Lease's name; operators that watch different jobs need one each (default edgetrain-operator)")
      ->option_text("NAME")
      ->check(CLI::Validator(
          [](const std::string& name) {
            return name.size() <= 253 && IsDnsSubdomain(name)
                       ? std::string()
                       : "must be lower-case letters, digits, '-' and '.', at most 253 characters, got " +
                             QuotedExcerpt(name);
          },
          "NAME"));
  app.add_option("--termination-grace", options.reconciler.pods.termination_grace_seconds,
                 "seconds an agent has to save its model when its pod is deleted (default 30)");
  const std::map<std::string, const char*> help = {
      {"--status-interval", "how often a running job's progress is read (default 5s)"},
      {"--unschedulable-retry", "how often a job that does not fit looks again; any Node change also wakes it (default 30s)"},
      {"--recheck-after",
       "how soon a job whose pods are ending, whose gang timed out or whose pipeline lost a stage is looked at "
       "again; a pod's change wakes it sooner (default 1s)"},
      {"--watch-timeout", "the shortest watch before it is renewed; the longest is twice it (default 5m)"},
      {"--relist-backoff", "the first wait before listing again after a failed watch (default 800ms)"},
      {"--relist-backoff-max", "the longest such wait (default 30s)"},
      {"--retry-backoff", "the first wait before a failed reconcile of a job is retried (default 5ms)"},
      {"--retry-backoff-max", "the longest such wait (default 1000s)"},
      {"--measurement-interval", "how often a node's measured link is published on it, at most (default 1m)"},
      {"--measurement-max-age", "how long placement trusts a measured link over the declared one (default 10m)"},
      {"--lease-duration", "how long a standby waits on a leader it has not seen renew (default 15s)"},
      {"--renew-deadline", "how long the leader keeps trying to renew before it stops leading (default 10s)"},
      {"--retry-period", "how often the lease is renewed or tried for (default 2s)"},
      {"--certificate-validity",
       "how long a team's agent certificate lasts; it is replaced two thirds into its life (default 720h)"},
      {"--link-down-after",
       "a worker silent this long, counted out of its team or not yet, has its link down: BandwidthDegraded, "
       "LinkDown (default 10s)"},
      {"--stalled-after",
       "a team whose iteration has not moved this long is Stalled, naming the workers it waits on (default 30s)"},
      {"--agent-keepalive",
       "how long a team's agent lets its stream to the coordinator go silent before pinging it, and as long for "
       "the answer (its --keepalive): a node that dies is heard of after twice this (default 10s)"},
      {"--progress-timeout",
       "how long a read of a coordinator's /progress may take to connect, or to answer, before it is said "
       "unanswered (default 3s)"},
  };
  for (auto& [name, into] : waits) {
    Duration* target = into;
    const std::string flag = name;
    app.add_option_function<std::string>(
           name,
           [target, flag](const std::string& text) {
             auto d = ParseDuration(text);
             if (d.ok() && *d <= Duration::zero()) {
               throw CLI::ValidationError(flag, "must be longer than 0, got \"" + text + "\"");
             }
             if (!d.ok()) {
               throw CLI::ValidationError(flag, "expected a duration such as 500ms or 2m, got \"" + text + "\"");
             }
             *target = *d;
           },
           help.at(name))
        ->option_text("DURATION");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11's own exit codes (105, 109, ...) mean nothing to a pod's restart
    // policy or a script: a bad flag is a usage error, as everywhere else.
    std::cerr << "edgetrain-operator: " << e.what() << "\n";
    return kExitInvalid;
  }
  options.informers.max_watch_timeout = 2 * options.informers.min_watch_timeout;
  rest.lift_under_flow_control = qps->count() == 0;
  options.reconciler.pods.tls_reload = operator_::TlsReloadFor(options.reconciler.credentials.certificate_validity);

  // The agents read it in milliseconds at the finest; a pod given "0s" would
  // refuse it and crash-loop.
  if (options.reconciler.pods.agent_keepalive < std::chrono::milliseconds(1)) {
    std::cerr << "edgetrain-operator: --agent-keepalive must be at least 1ms\n";
    return kExitInvalid;
  }
  // A read is timed in milliseconds: under one, it would give up at once.
  if (progress_timeout < std::chrono::milliseconds(1)) {
    std::cerr << "edgetrain-operator: --progress-timeout must be at least 1ms\n";
    return kExitInvalid;
  }

  // The Lease records its duration in whole seconds (leaseDurationSeconds),
  // which standbys read: 1500ms was written as 1, and a standby took the
  // Lease while the leader, 1.2 s from its last renewal, still led (found
  // in review). And the lease client's requests give up within the margin
  // between the renew deadline and the lease, which they cannot below 100 ms.
  if (leader_elect && election.lease_duration % std::chrono::seconds(1) != Duration::zero()) {
    std::cerr << "edgetrain-operator: --lease-duration (" << FormatDuration(election.lease_duration)
              << ") must be whole seconds: the Lease records it in seconds, as standbys read it\n";
    return kExitInvalid;
  }
  if (leader_elect && election.lease_duration > election.renew_deadline &&
      election.lease_duration - election.renew_deadline < std::chrono::milliseconds(100)) {
    std::cerr << "edgetrain-operator: --lease-duration (" << FormatDuration(election.lease_duration)
              << ") must be at least 100ms longer than --renew-deadline (" << FormatDuration(election.renew_deadline)
              << "): a renewal must end within the margin, and cannot in less\n";
    return kExitInvalid;
  }
  // As client-go insists: a leader must stop leading (renew deadline) before
  // a standby may take the Lease (lease duration), and try more than once in
  // between; else two replicas can lead at once.
  if (leader_elect && !(election.lease_duration > election.renew_deadline &&
                        election.renew_deadline > election.retry_period)) {
    std::cerr << "edgetrain-operator: --lease-duration (" << FormatDuration(election.lease_duration)
              << ") must be longer than --renew-deadline (" << FormatDuration(election.renew_deadline)
              << "), and that longer than --retry-period (" << FormatDuration(election.retry_period)
              << "): else a standby may take the Lease while the leader still leads\n";
    return kExitInvalid;
  }
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  StatusOr<kube::KubeConfig> config = kube::LoadKubeConfig(kubeconfig, env);
  if (!config.ok()) {
    // No kubeconfig to read, or one that says nothing usable, is the input's to
    // mend (2), as `edgetrain plan --kubeconfig` says; a server that does not
    // answer comes later, and is the moment's (1).
    std::cerr << "edgetrain-operator: " << (kubeconfig.empty() ? "" : "--kubeconfig " + kubeconfig + ": ")
              << config.status().message() << "\n";
    return kExitInvalid;
  }
  RealClock clock;
  operator_::OperatorMetrics metrics;
  operator_::LineLog log(std::cerr);
  kube::RestOptions controller_rest = rest;
  controller_rest.on_limit = [&](double limit) {
    metrics.SetClientQpsLimit(limit);
    if (limit == 0) {
      log.Write("the API server does priority and fairness: requests go without a client-side limit (--qps sets one)");
    }
  };
  StatusOr<std::unique_ptr<kube::KubeClient>> rest_client = kube::MakeRestKubeClient(*config, controller_rest, clock);
  if (!rest_client.ok()) {
    std::cerr << "edgetrain-operator: " << rest_client.status().message() << "\n";
    return ExitCodeFor(rest_client.status());
  }
  kube::ObservedKubeClient client(
      **rest_client, [&](const std::string& verb, StatusCode code) { metrics.CountApiError(verb, code); },
      [&](const std::string& verb) { metrics.CountApiRequest(verb); });
  HttpProgress progress(progress_timeout);
  operator_::Controller controller(client, clock, progress, metrics, log, [] { return std::chrono::system_clock::now(); },
                                   options);

  StatusOr<std::unique_ptr<http::HttpServer>> server = http::HttpServer::Start(http);
  if (!server.ok()) {
    std::cerr << "edgetrain-operator: --http " << http << ": " << server.status().message() << "\n";
    return ExitCodeFor(server.status());
  }
  (*server)->Handle("/metrics", [&] { return http::HttpResponse{200, "text/plain; version=0.0.4", metrics.Render()}; });
  (*server)->Handle("/healthz", [] { return http::HttpResponse{200, "text/plain", "ok\n"}; });
  // A standby's caches are filled once it leads: until then it says so
  // (it said "caches are being filled", for ever: a new user's trial).
  std::atomic<bool> leads{!leader_elect};
  (*server)->Handle("/readyz", [&] {
    if (!leads.load()) return http::HttpResponse{503, "text/plain", "standing by: another replica leads\n"};
    const std::string waiting = controller.Waiting();
    if (controller.Synced() && waiting.empty()) return http::HttpResponse{200, "text/plain", "ok\n"};
    return http::HttpResponse{503, "text/plain", (waiting.empty() ? "caches are being filled" : waiting) + "\n"};
  });
  std::cout << "http " << (*server)->address() << std::endl;
  log.Write("watching TrainingJobs" + (options.namespace_.empty() ? std::string(" in every namespace")
                                                                  : " in namespace " + options.namespace_) +
            " at " + config->server + " (" + config->source + ")");

  // SIGHUP too, as the CLI and the agent take it: an operator run by hand from
  // a terminal that closes would otherwise die holding its Lease, and a
  // standby wait out the Lease's duration before leading.
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGHUP, OnSignal);
  if (!leader_elect) {
    metrics.SetLeader(true);
    controller.Run(g_stop);
    log.Write("stopped");
    return 0;
  }
  if (election.namespace_.empty()) election.namespace_ = config->namespace_;
  char host[256] = "edgetrain-operator";
  gethostname(host, sizeof host - 1);
  election.identity = std::string(host) + "_" + std::to_string(std::random_device{}());
  // The Lease on a client of its own: its requests wait behind none of the
  // controller's in the rate limiter, and each gives up within the margin
  // between the renew deadline and the lease (or a retry period, if less),
  // so that a renewal hung on an unresponsive API server ends before another
  // replica may take the Lease. With the controller's client (30 s a request)
  // a 3 s pause of the API went unnoticed while the 2 s Lease expired.
  kube::RestOptions lease_rest = rest;
  lease_rest.max_throttled_retries = 0;
  const Duration margin = election.lease_duration - election.renew_deadline;
  lease_rest.request_timeout =
      std::max<Duration>(std::chrono::milliseconds(100),
                         margin > Duration::zero() ? std::min(margin, election.retry_period) : election.retry_period);
  StatusOr<std::unique_ptr<kube::KubeClient>> lease_rest_client = kube::MakeRestKubeClient(*config, lease_rest, clock);
  if (!lease_rest_client.ok()) {
    std::cerr << "edgetrain-operator: " << lease_rest_client.status().message() << "\n";
    return ExitCodeFor(lease_rest_client.status());
  }
  kube::ObservedKubeClient lease_client(
      **lease_rest_client, [&](const std::string& verb, StatusCode code) { metrics.CountApiError(verb, code); },
      [&](const std::string& verb) { metrics.CountApiRequest(verb); });
  election.note = [&](const std::string& why) { log.Write("campaigning: " + why); };
  kube::LeaderElector elector(lease_client, clock, [] { return std::chrono::system_clock::now(); }, election);
  log.Write("campaigning for the Lease " + election.namespace_ + "/" + election.name + " as " + election.identity);
  std::atomic<bool> stop_leading{false};
  std::atomic<bool> controller_ended{false};
  ClockThread leading;
  const bool stepped_down = elector.Run(
      g_stop,
      [&] {
        log.Write("leading: this replica reconciles");
        metrics.SetLeader(true);
        leads = true;
        leading = clock.StartThread("controller", [&] {
          controller.Run(stop_leading);
          controller_ended = true;
        });
      },
      [&] {
        if (!g_stop.load()) {
          // The Lease is lost: another replica may lead already. Waiting for
          // the controller's requests in flight (30 s each) would let their
          // writes land under it, so stop now, as client-go's controllers do.
          log.Write("lost the Lease (" + (elector.not_taken().empty() ? std::string("no renewal within the deadline")
                                                                       : elector.not_taken()) +
                    "): stopping, so that another replica leads alone");
          std::cerr.flush();
          std::_Exit(1);
        }
        stop_leading = true;
        // Its reconciles in flight end first, while the Lease is renewed no
        // more: on an API server in trouble (30 s a request, 429s waited
        // out) they had run past the point where a standby may lead, and
        // their writes landed under it (found in review). Not past the renew
        // deadline, then: the process ends there without releasing the
        // Lease, which a standby takes once it runs out.
        const TimePoint must_end = elector.renewed() + election.renew_deadline;
        while (leading.joinable() && !controller_ended.load() && clock.Now() < must_end) {
          clock.SleepFor(std::chrono::milliseconds(20));
        }
        if (leading.joinable() && !controller_ended.load()) {
          log.Write("stopping: the reconciles in flight outlasted the renew deadline (" +
                    FormatDuration(election.renew_deadline) + "); ending without releasing the Lease, which a "
                    "standby takes once it runs out");
          std::cerr.flush();
          std::_Exit(1);
        }
        if (leading.joinable()) leading.Join();
        metrics.SetLeader(false);
        leads = false;
      });
  // A Lease lost while leading has ended the process already (above).
  // Said as it went: "released" was logged of a release the API refused.
  if (!stepped_down) {
    log.Write("stopped");
  } else if (elector.released().ok()) {
    log.Write("stopped; the Lease is released");
  } else {
    log.Write("stopped; the Lease could not be released (" + elector.released().message() +
              "): a standby leads once it expires, " + FormatDuration(election.lease_duration) + " after its last renewal");
  }
  return 0;
}

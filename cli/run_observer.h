#pragma once
// `edgetrain run --observe`: a local Prometheus (Debian's) scraping every agent
// of a run each second, for a person without a cluster. Each target carries
// the labels the chart's pod relabelling gives in a cluster (namespace, pod),
// so the dashboards of dashboards/ and their queries work on it as they do on
// a cluster. It starts before the agents, so that a missing prometheus or a
// port in use fails the run before it trains; the agents join it through a
// file_sd targets file once their ports are known. Its data stays in the
// output folder's prometheus/ for a later look.

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli/child_process.h"
#include "core/clock.h"
#include "core/status.h"

namespace edgetrain::cli {

// An agent to scrape: its HTTP address and the pod it would be in a cluster.
struct ScrapeTarget {
  std::string address;  // HOST:PORT
  std::string pod;      // "NAME-coordinator", "NAME-worker-R"
};

class RunObserver {
 public:
  // Starts `prometheus` serving on 127.0.0.1:`port` (0: a port the OS gives)
  // with its data under `dir`, evaluating the alerting rules of `rules` (a
  // Prometheus rules file such as dashboards/alerts.yaml; empty: none); waits
  // at most `ready_timeout` for it to be ready, or until `interrupted`
  // (Cancelled, the server stopped): a Ctrl-C as it started waited out its 30 s.
  static StatusOr<RunObserver> Start(const std::string& prometheus, const std::filesystem::path& dir, int port,
                                     const std::string& rules, Clock& clock, Duration ready_timeout,
                                     const std::atomic<bool>* interrupted = nullptr);
  // A moved-from observer stops nothing: its server is the new one's.
  RunObserver(RunObserver&& other) noexcept
      : dir_(std::move(other.dir_)),
        address_(std::move(other.address_)),
        server_(std::move(other.server_)),
        started_(other.started_) {
    other.server_.reset();
  }
  RunObserver& operator=(RunObserver&&) = delete;
  ~RunObserver();

  std::string url() const { return "http://" + address_; }
  const std::filesystem::path& dir() const { return dir_; }
  // The agents to scrape, all of them, labelled with the job's `namespace_name`.
  Status Scrape(const std::vector<ScrapeTarget>& targets, const std::string& namespace_name);
  // Whether Prometheus holds any sample of `metric` (a name, no selector)
  // scraped since it started: a run over within its first scrapes leaves
  // none. Not over the last hour: its data folder is the output folder's,
  // and an earlier run's series there were taken for this one's (found in
  // review).
  StatusOr<bool> Holds(const std::string& metric) const;
  // How Prometheus ended, if it has, before Stop ("killed by SIGKILL"); else
  // nullopt. A server killed during a run left the run saying it served the
  // series, and waiting for a Ctrl-C with nothing listening (a new user's trial).
  std::optional<std::string> Ended();
  // Stops Prometheus (SIGTERM: it flushes its data), SIGKILL past `grace`,
  // and leaves it nothing to scrape: its config then serves the data again
  // (ServeAgainCommand).
  void Stop(Duration grace);
  // The command that serves the data again as this run's server did: on
  // loopback, with its rules, scraping nothing (prometheus alone read
  // Debian's config and listened on every address: a new user's trial).
  std::string ServeAgainCommand() const;

 private:
  RunObserver(std::filesystem::path dir, std::string address, ChildProcess server)
      : dir_(std::move(dir)), address_(std::move(address)), server_(std::move(server)) {}

  std::filesystem::path dir_;
  std::string address_;
  std::optional<ChildProcess> server_;
  // On Prometheus's clock, the machine's: what Holds looks back to.
  std::chrono::system_clock::time_point started_ = std::chrono::system_clock::now();
};

}  // namespace edgetrain::cli

#pragma once
// Kernel-shaped links for emulated devices (`edgetrain run --links netns`, as
// root): every worker in its own network namespace, joined in a star through a
// hub namespace — the access point, where the coordinator runs — by a veth pair
// each, with a tbf qdisc on both ends whose rate follows that worker's trace
// (`tc qdisc change`, as the trace moves). Anything speaking TCP through these
// links, our agents or another framework, sees the same links. The hub forwards
// between workers, so peer-to-peer traffic (a DDP ring) crosses the sender's
// uplink and the receiver's downlink, as through a real access point.
//
// Namespaces are named after the runner's pid; they, and with them the veths and
// qdiscs, are removed when this object goes; a runner killed without warning
// leaves them to the next one, which removes them (RemoveStale).
//
// The node emulator (tests/kube, through `edgetrain node-links`) lays the same
// links out for a K3s site: each node is a worker namespace, its pods hold
// addresses in the worker's /24, which the hub routes to it, and a host link
// lets the host (the API server, the operator) reach every pod.

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/kernel_command.h"
#include "core/bandwidth_trace.h"
#include "core/clock.h"
#include "core/job_plan.h"
#include "core/status.h"

namespace edgetrain::cli {

// Where the links' addresses come from, and how long their commands may take.
// Worker r's link is 10.<subnet>.r.0/30 (the hub .1, the worker .2) and the
// hub routes all of 10.<subnet>.r.0/24 to the worker. Namespaces are private, so runners may share a subnet; a host
// link is not, so emulators that run at once need subnets of their own.
struct NetnsOptions {
  int subnet = 77;
  // A veth from the calling namespace (the host) to the hub, 10.<subnet>.254.1
  // on the host's end, with a route to 10.<subnet>.0.0/16 through it; the hub's
  // default route points back.
  bool host_link = false;
  // How long each `ip` or `tc` that lays out or shapes the links may take
  // (cli/kernel_command.h).
  Duration command_timeout = kDefaultLinkCommandTimeout;
};

class NetnsLinks {
 public:
  // One namespace per slot; a slot without a link gets an unshaped one. The
  // rates follow the traces on `clock`.
  static StatusOr<std::unique_ptr<NetnsLinks>> Create(const std::vector<WorkerSlot>& slots, Clock& clock,
                                                      NetnsOptions options = {});
  ~NetnsLinks();
  NetnsLinks(const NetnsLinks&) = delete;
  NetnsLinks& operator=(const NetnsLinks&) = delete;

  // Starts following the traces, with the traces' time 0 now.
  void StartShaping();
  // The traces' time 0, on the links' clock (StartShaping).
  TimePoint started() const { return start_; }
  // OK while every rate change has taken; else the first that failed, after
  // which the links stop following their traces (a run on links other than
  // the ones it asked for measures nothing).
  Status health() const;

  // `argv` run inside worker `rank`'s namespace, or the hub's.
  std::vector<std::string> InWorker(int rank, const std::vector<std::string>& argv) const;
  std::vector<std::string> InHub(const std::vector<std::string>& argv) const;
  // The hub's address as worker `rank` reaches it, and the worker's own.
  std::string HubAddress(int rank) const;
  std::string WorkerAddress(int rank) const;
  // The interface worker `rank` reaches the hub through, in its namespace.
  std::string WorkerInterface(int rank) const;
  const std::string& hub() const { return hub_; }
  std::string WorkerNamespace(int rank) const;
  // Runs `fn` on a thread inside the hub's namespace (e.g. to poll the
  // coordinator's HTTP endpoint there); nullopt if the namespace is gone.
  template <typename Fn>
  auto InHubThread(Fn fn) const -> std::optional<decltype(fn())>;

  // Multiplies worker `rank`'s trace by `factor` from now on (a fault: 0 cuts
  // the link down to the trickle of a trace at 0, 1 restores it). A link
  // without a trace can only be cut and restored.
  Status SetScale(int rank, double factor);
  // The host's address on the host link ("" without one).
  std::string HostAddress() const;

  // The rate each direction of worker `rank`'s link is set to now, Mbit/s;
  // -1 while it is unshaped.
  double UplinkMbps(int rank) const;
  double DownlinkMbps(int rank) const;
  // Namespaces this run created, for tests.
  std::vector<std::string> Namespaces() const;

  // Removes namespaces left by runners that no longer exist; returns their names.
  static std::vector<std::string> RemoveStale(Duration command_timeout = kDefaultLinkCommandTimeout);

 private:
  struct Link;
  NetnsLinks(Clock& clock, Duration command_timeout);
  Status Build(const std::vector<WorkerSlot>& slots, const NetnsOptions& options);
  Status BuildHostLink(const NetnsOptions& options);
  // `argv` (an `ip` or `tc`) run to completion within command_timeout_.
  Status Run(const std::vector<std::string>& argv) const;
  void Shape();
  // Puts link `l`'s qdiscs at `mbps` (nullopt: none, unshaped).
  Status SetRate(Link& l, std::optional<double> mbps);
  // What link `l` should carry `t` seconds into its trace (nullopt: unshaped).
  static std::optional<double> WantedMbps(const Link& l, double t);
  bool EnterHub() const;

  Clock& clock_;
  const Duration command_timeout_;
  std::string prefix_;  // "et<pid>"
  std::string hub_;
  std::vector<std::unique_ptr<Link>> links_;
  std::thread shaper_;
  std::atomic<bool> stop_{false};
  TimePoint start_{};      // the traces' time 0
  std::string host_if_;    // the host's end of the host link, if any
  std::string host_addr_;
  mutable std::mutex health_mu_;
  Status health_;  // guarded by health_mu_
};

template <typename Fn>
auto NetnsLinks::InHubThread(Fn fn) const -> std::optional<decltype(fn())> {
  std::optional<decltype(fn())> result;
  std::thread t([&] {
    if (EnterHub()) result.emplace(fn());
  });
  t.join();
  return result;
}

}  // namespace edgetrain::cli

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

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/bandwidth_trace.h"
#include "core/clock.h"
#include "core/job_plan.h"
#include "core/status.h"

namespace edgetrain::cli {

class NetnsLinks {
 public:
  // One namespace per slot; a slot without a link gets an unshaped one. The
  // rates follow the traces on `clock`.
  static StatusOr<std::unique_ptr<NetnsLinks>> Create(const std::vector<WorkerSlot>& slots, Clock& clock);
  ~NetnsLinks();
  NetnsLinks(const NetnsLinks&) = delete;
  NetnsLinks& operator=(const NetnsLinks&) = delete;

  // Starts following the traces, with the traces' time 0 now.
  void StartShaping();
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

  // The rate each direction of worker `rank`'s link is set to now, Mbit/s.
  double UplinkMbps(int rank) const;
  double DownlinkMbps(int rank) const;
  // Namespaces this run created, for tests.
  std::vector<std::string> Namespaces() const;

  // Removes namespaces left by runners that no longer exist; returns their names.
  static std::vector<std::string> RemoveStale();

 private:
  struct Link;
  explicit NetnsLinks(Clock& clock);
  Status Build(const std::vector<WorkerSlot>& slots);
  void Shape();
  bool EnterHub() const;

  Clock& clock_;
  std::string prefix_;  // "et<pid>"
  std::string hub_;
  std::vector<std::unique_ptr<Link>> links_;
  std::thread shaper_;
  std::atomic<bool> stop_{false};
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

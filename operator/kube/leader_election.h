#pragma once
// One leader among the operator's replicas, as client-go's leaderelection
// elects one: a Lease (coordination.k8s.io/v1) names its holder, who renews it
// every `retry_period`; a candidate takes it once it has seen no renewal for
// `lease_duration` (judged by its own clock from when it last saw the record
// change, never by the timestamps another machine wrote), and a leader that
// could not renew within `renew_deadline` stops leading. A leader that stops
// gracefully releases the lease, so a standby takes over at once.

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "core/clock.h"
#include "operator/kube/kube_client.h"
#include "operator/kube/kube_time.h"

namespace edgetrain::kube {

struct LeaderElectionOptions {
  std::string namespace_ = "default";
  std::string name = "edgetrain-operator";
  std::string identity;  // this replica's: hostname and a random part
  // Told why the campaign goes on, each time that changes: the API's error
  // (an operator on a server it could not reach campaigned in silence, its
  // log ending at "campaigning", a new user's trial), or who holds the Lease.
  std::function<void(const std::string&)> note = {};
  // client-go's defaults.
  Duration lease_duration = std::chrono::seconds(15);
  Duration renew_deadline = std::chrono::seconds(10);
  Duration retry_period = std::chrono::seconds(2);
};

class LeaderElector {
 public:
  LeaderElector(KubeClient& client, Clock& clock, std::function<WallTime()> wall_now, LeaderElectionOptions options);

  // Campaigns until this replica leads, then renews until `stop` (releasing the
  // lease) or until leadership is lost. Returns true if it led and stopped on
  // `stop`; false if it lost the lease or never got it before `stop`.
  // `on_leading` runs once the lease is held and must return promptly;
  // `on_stopping` runs when leading ends, before the lease is released, and
  // returns once the leader's work has stopped - so two replicas never work at
  // once.
  bool Run(const std::atomic<bool>& stop, const std::function<void()>& on_leading,
           const std::function<void()>& on_stopping = [] {});

  bool leading() const { return leading_.load(); }
  // After Run returned true: whether the lease was released, or why not (the
  // API refused: a chart uninstalled takes the ServiceAccount first, and the
  // Lease stays held until it expires).
  const Status& released() const { return released_; }
  const std::string& identity() const { return options_.identity; }
  // Why the last try did not take or renew the lease: after leading ends by
  // losing it, why the last renewal failed. Empty when the last try held it.
  const std::string& not_taken() const { return not_taken_; }
  // When the lease was last taken or renewed, by this replica's clock: when
  // the try that did it began, since its write may have landed any time
  // after. A standby may take the lease `lease_duration` after it saw that
  // write; `on_stopping` must have stopped the leader's work by this and
  // `renew_deadline`, which is shorter (read from `on_stopping`).
  TimePoint renewed() const { return renewed_; }

 private:
  // Whether identities `a` and `b` are of one host.
  static bool SameHost(const std::string& a, const std::string& b);
  // One try to take or renew the lease; true while this replica holds it. A
  // renewal is abandoned rather than written once `give_up_at` has passed
  // (the renew deadline: leading after it risks two leaders).
  bool TryAcquireOrRenew(std::optional<TimePoint> give_up_at = std::nullopt);
  Status Release();
  // Why the last try did not take the lease, for `note`: empty when it did.
  std::string not_taken_;

  Status released_ = Status::Ok();
  KubeClient& client_;
  Clock& clock_;
  std::function<WallTime()> wall_now_;
  const LeaderElectionOptions options_;
  std::atomic<bool> leading_{false};
  Json observed_;           // the lease record as last seen
  TimePoint observed_at_{}; // when it last changed, by this replica's clock
  TimePoint attempt_began_{};   // when the last try began
  bool held_by_another_ = false;  // the last try read another holder's lease
  TimePoint renewed_{};
};

}  // namespace edgetrain::kube

#include "operator/kube/leader_election.h"

#include <algorithm>
#include <cmath>

namespace edgetrain::kube {

namespace {

// Lease timestamps are MicroTime: RFC 3339 with microseconds.
std::string MicroTime(WallTime t) {
  const std::string seconds = FormatKubeTime(t);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count() % 1000000;
  char fraction[16];
  std::snprintf(fraction, sizeof fraction, ".%06lld", static_cast<long long>(micros));
  return seconds.substr(0, seconds.size() - 1) + fraction + "Z";
}

}  // namespace

LeaderElector::LeaderElector(KubeClient& client, Clock& clock, std::function<WallTime()> wall_now,
                             LeaderElectionOptions options)
    : client_(client), clock_(clock), wall_now_(std::move(wall_now)), options_(std::move(options)) {}

bool LeaderElector::TryAcquireOrRenew(std::optional<TimePoint> give_up_at) {
  const TimePoint now = clock_.Now();
  attempt_began_ = now;
  held_by_another_ = false;
  const std::string stamp = MicroTime(wall_now_());
  const int64_t seconds = std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(options_.lease_duration).count());
  not_taken_.clear();
  StatusOr<Json> lease = client_.Get(kLeases, options_.namespace_, options_.name);
  if (!lease.ok()) {
    if (lease.status().code() != StatusCode::kNotFound) {
      not_taken_ = "cannot read the Lease: " + lease.status().message();
      return false;
    }
    Json fresh = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", options_.name}, {"namespace", options_.namespace_}}},
                  {"spec",
                   {{"holderIdentity", options_.identity},
                    {"leaseDurationSeconds", seconds},
                    {"acquireTime", stamp},
                    {"renewTime", stamp},
                    {"leaseTransitions", 0}}}};
    StatusOr<Json> made = client_.Create(kLeases, options_.namespace_, fresh);
    if (!made.ok()) {
      not_taken_ = "cannot make the Lease: " + made.status().message();
      return false;
    }
    observed_ = (*made)["spec"];
    observed_at_ = now;
    return true;
  }
  const Json spec = lease->value("spec", Json::object());
  if (spec != observed_) {
    // Seen now, once read, not when the read began: stamped before a read
    // that took long, a standby counted another's renewal as older than it
    // was, and took the lease early (found in review).
    observed_ = spec;
    observed_at_ = clock_.Now();
  }
  const std::string holder = spec.value("holderIdentity", "");
  const Duration held_for =
      std::chrono::seconds(spec.value("leaseDurationSeconds", seconds));
  // Another holder's lease is good until we have seen it unrenewed that long.
  if (!holder.empty() && holder != options_.identity && clock_.Now() < observed_at_ + held_for) {
    // Said with when it is taken over: a replica started after one killed
    // (no Release) stood by for its lease's time with nothing to say why,
    // and a user went looking for another replica (a new user's trial).
    not_taken_ = "the Lease is held by " + holder + ": standing by; taken over once it has gone " +
                 std::to_string(std::chrono::duration_cast<std::chrono::seconds>(held_for).count()) +
                 " s unrenewed" +
                 (SameHost(holder, options_.identity) ? " (a replica of this host's: one that ended without giving "
                                                        "it up, killed say, holds it that long)"
                                                      : "");
    held_by_another_ = true;
    return false;
  }

  Json next = *lease;
  next["spec"]["holderIdentity"] = options_.identity;
  next["spec"]["leaseDurationSeconds"] = seconds;
  next["spec"]["renewTime"] = stamp;
  if (holder != options_.identity) {
    next["spec"]["acquireTime"] = stamp;
    next["spec"]["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  // The Get may have taken a while on an API in trouble.
  if (give_up_at && clock_.Now() >= *give_up_at) {
    not_taken_ = "the renewal's read of the Lease outlasted the renew deadline";
    return false;
  }
  StatusOr<Json> updated = client_.Update(kLeases, options_.namespace_, next);
  if (!updated.ok()) {  // a conflict: someone else wrote first; or the API's refusal
    not_taken_ = "cannot take the Lease: " + updated.status().message();
    return false;
  }
  observed_ = (*updated)["spec"];
  observed_at_ = now;
  return true;
}

bool LeaderElector::SameHost(const std::string& a, const std::string& b) {
  // Identities are HOST_RANDOM (operator/main.cc).
  const size_t at = a.rfind('_');
  return at != std::string::npos && at > 0 && b.size() > at && b.compare(0, at + 1, a, 0, at + 1) == 0;
}

Status LeaderElector::Release() {
  StatusOr<Json> lease = client_.Get(kLeases, options_.namespace_, options_.name);
  if (!lease.ok()) return lease.status();
  // Another replica's already: nothing of ours to release.
  if (lease->value("/spec/holderIdentity"_json_pointer, std::string()) != options_.identity) return Status::Ok();
  Json released = *lease;
  released["spec"]["holderIdentity"] = "";
  released["spec"]["leaseDurationSeconds"] = 1;
  released["spec"]["renewTime"] = MicroTime(wall_now_());
  return client_.Update(kLeases, options_.namespace_, released).status();
}

bool LeaderElector::Run(const std::atomic<bool>& stop, const std::function<void()>& on_leading,
                        const std::function<void()>& on_stopping) {
  // Campaign.
  std::string said;
  while (!stop.load()) {
    if (TryAcquireOrRenew()) break;
    if (options_.note && not_taken_ != said) options_.note(not_taken_);
    said = not_taken_;
    clock_.SleepFor(options_.retry_period);
  }
  if (stop.load()) return false;
  renewed_ = attempt_began_;
  leading_ = true;
  on_leading();
  // Renew; give up once a renewal has not succeeded within the deadline, and
  // no later: after a failed try only what is left of it is slept (a full
  // retry period and another read had run past it by both), and no try
  // begins past it. A lease another replica holds (it was deleted, and made
  // anew) is lost at once.
  while (!stop.load()) {
    const TimePoint deadline = renewed_ + options_.renew_deadline;
    clock_.SleepFor(std::clamp<Duration>(deadline - clock_.Now(), Duration::zero(), options_.retry_period));
    if (stop.load()) break;
    const bool renewed = clock_.Now() < deadline && TryAcquireOrRenew(deadline);
    if (renewed) {
      renewed_ = attempt_began_;
    } else if (held_by_another_ || clock_.Now() >= deadline) {
      leading_ = false;
      on_stopping();
      return false;
    }
  }
  leading_ = false;
  on_stopping();
  released_ = Release();
  return true;
}

}  // namespace edgetrain::kube

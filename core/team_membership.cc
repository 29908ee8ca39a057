#include "core/team_membership.h"

#include <algorithm>

namespace edgetrain {

const char* NameOf(PushFate fate) {
  switch (fate) {
    case PushFate::kApplied: return "applied";
    case PushFate::kStaleStream: return "stale stream";
    case PushFate::kStaleWelcome: return "stale welcome";
    case PushFate::kCountedOut: return "counted out";
    case PushFate::kJobOver: return "job over";
    case PushFate::kRefused: return "refused";
  }
  return "?";
}

TeamMembership::TeamMembership(int workers, Duration gather_window, Duration first_deadline)
    : members_(static_cast<size_t>(workers)), gather_window_(gather_window) {
  // Never under the floor a learned deadline keeps: a worker is heard from
  // every 20 ms at best.
  for (Member& m : members_) m.deadline = ArrivalDeadline(std::max(first_deadline, kDeadlineFloor), kDeadlineFloor);
}

uint64_t TeamMembership::Open(int w, TimePoint now, StalenessLedger& ledger) {
  Member& m = members_[w];
  ++m.stream;
  m.connected = true;
  m.counted_out = false;
  m.owes_welcome = false;  // the Welcome that opens the stream is the one it is owed
  m.pushed = false;
  ++m.welcome;
  m.resume_after = ledger.Rejoin(w);
  m.deadline.Restart(now);
  if (!first_arrival_) first_arrival_ = now;
  return m.stream;
}

bool TeamMembership::Close(int w, uint64_t stream, StalenessLedger& ledger) {
  Member& m = members_[w];
  if (m.stream != stream) return false;
  m.connected = false;
  ledger.Deactivate(w);
  return true;
}

PushFate TeamMembership::Push(int w, int64_t welcome, TimePoint now, StalenessLedger& ledger) {
  Member& m = members_[w];
  if (m.counted_out) {
    // Its link is back; the silence before was an outage, not its pace.
    m.counted_out = false;
    m.owes_welcome = true;
    m.pushed = false;
    ++m.welcome;
    m.resume_after = ledger.Rejoin(w, /*copy_lost=*/false);
    m.deadline.Restart(now);
    return PushFate::kCountedOut;
  }
  m.pushed = true;
  m.deadline.Arrived(now);  // alive, whatever becomes of what it sent
  return welcome == m.welcome ? PushFate::kApplied : PushFate::kStaleWelcome;
}

void TeamMembership::Welcomed(int w, TimePoint now) { members_[w].deadline.Restart(now); }

void TeamMembership::UplinkMeasured(int w, double mbps, int64_t least_message_bytes) {
  if (mbps <= 0) return;
  const Duration message = FromSeconds(static_cast<double>(least_message_bytes) * 8 / (mbps * 1e6));
  members_[w].deadline.set_floor(std::clamp<Duration>(2 * message, kDeadlineFloor, kMostDeadlineFloor));
}

std::vector<CountedOut> TeamMembership::CountOutOverdue(TimePoint now, StalenessLedger& ledger) {
  std::vector<CountedOut> out;
  for (int w = 0; w < static_cast<int>(members_.size()); ++w) {
    Member& m = members_[w];
    if (!m.connected || m.counted_out || !ledger.active(w) || !m.deadline.Overdue(now)) continue;
    m.counted_out = true;
    ledger.Deactivate(w);
    out.push_back({w, now - m.deadline.last_arrival(), m.deadline.Deadline()});
  }
  return out;
}

void TeamMembership::ResumeAll(int64_t iteration) {
  for (Member& m : members_) {
    if (m.connected) m.resume_after = iteration;
  }
}

Duration TeamMembership::SilentFor(int w, TimePoint now) const {
  const Member& m = members_[w];
  if (m.stream > 0) return now - m.deadline.last_arrival();
  return first_arrival_ ? now - *first_arrival_ : Duration::zero();
}

int TeamMembership::connected_count() const {
  return static_cast<int>(std::count_if(members_.begin(), members_.end(), [](const Member& m) { return m.connected; }));
}

bool TeamMembership::StartsNow(TimePoint now) {
  if (started_) return true;
  if (!first_arrival_) return false;
  started_ = connected_count() == static_cast<int>(members_.size()) || now - *first_arrival_ >= gather_window_;
  // The wait at the rendezvous is not silence: the first worker in, after a
  // window of 120 s for one that had died, was counted out at the start for
  // "no push for 120 s", before its Welcome went (a user's trial).
  if (started_) {
    for (Member& m : members_) {
      if (m.connected) m.deadline.Restart(now);
    }
  }
  return started_;
}

}  // namespace edgetrain

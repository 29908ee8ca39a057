#pragma once
// Who is in a data-parallel team, and from which iteration: the coordinator's
// book of its workers' streams.
//
// Three counters tell incarnations apart, each with one meaning:
//   - a worker's *stream*: bumped by every stream it opens (a restart, a
//     reconnect); what an older stream still says is ignored;
//   - a worker's *welcome*: the Welcomes it has been sent, each replacing its
//     model; its pushes echo the welcome they build on, so what it computed
//     before a resynchronisation, and arrives after, is dropped;
//   - the *plan generation* (core/job_plan.h): bumped by every re-plan of the
//     whole job; a hello of another generation is refused (hello.cc).
//
// The team starts together, as a rendezvous does: a worker that trained alone
// while its teammates' pods were still starting would learn from its own
// partition only (under a skewed split, a few classes) and set the pace the
// others then join at. One not there within `gather_window` of the first is
// treated as a node lost at the start: the team goes on without it, and it
// joins where the team is when it comes.
//
// A worker whose pushes stop past its learned deadline (core/arrival_deadline.h)
// is counted out: it leaves the rows' clocks (core/staleness_ledger.h), so one
// robot behind a wall does not hold the team. Its next push takes it back: what
// it pushed was computed on a model the team has left, so it is dropped, and it
// resumes with the team from a Welcome of what it lacks.

#include <cstdint>
#include <optional>
#include <vector>

#include "core/arrival_deadline.h"
#include "core/staleness_ledger.h"
#include "core/time.h"

namespace edgetrain {

// What becomes of a push, and why one is not applied.
enum class PushFate {
  kApplied,
  kStaleStream,    // from a stream the worker has since replaced
  kStaleWelcome,   // built on a model a later Welcome replaced
  kCountedOut,     // the first push of a worker counted out: its link is back
  kJobOver,        // arrived once the job had ended
  kRefused,        // a row that does not exist, comes twice, does not decode or is not finite: none applied
};
inline constexpr int kPushFates = 6;
const char* NameOf(PushFate fate);

// The deadline's floor: what a worker's silence must last to count it out
// whatever its link (UplinkMeasured), and the most a slow link raises it to.
inline constexpr Duration kDeadlineFloor = std::chrono::milliseconds(200);
inline constexpr Duration kMostDeadlineFloor = std::chrono::seconds(2);

// A worker's arrival deadline until its pace is learned (TeamMembership).
inline constexpr Duration kFirstArrivalDeadline = std::chrono::seconds(10);

struct CountedOut {
  int worker = 0;
  Duration silent = {};    // since its last push
  Duration deadline = {};  // what it had
};

class TeamMembership {
 public:
  // `gather_window`: how long the team waits for the rest after its first
  // worker. `first_deadline`: a worker's arrival deadline until the gaps
  // between its pushes are learned (its first step, a whole model on a slow
  // link, may take seconds).
  TeamMembership(int workers, Duration gather_window, Duration first_deadline = kFirstArrivalDeadline);

  // A new stream from `w` at `now`: it joins at the team's iteration (the
  // ledger credits it there) and will be sent the whole model. Returns its
  // stream number.
  uint64_t Open(int w, TimePoint now, StalenessLedger& ledger);
  // Stream `stream` of `w` ended. False when a newer one had replaced it.
  bool Close(int w, uint64_t stream, StalenessLedger& ledger);
  bool Current(int w, uint64_t stream) const { return members_[w].stream == stream; }
  // The number of `w`'s latest stream.
  uint64_t stream(int w) const { return members_[w].stream; }

  // A push of `w` on its current stream, building on welcome `welcome`.
  PushFate Push(int w, int64_t welcome, TimePoint now, StalenessLedger& ledger);
  // A Welcome to `w` is being sent (or has gone through, `now`): its deadline
  // counts from here, since a whole model can take seconds on a slow link.
  void Welcomed(int w, TimePoint now);
  // `w`'s uplink was measured at `mbps`, and the least message it sends is
  // `least_message_bytes`. Between two pushes it sends small ones every
  // 20 ms, and its deadline learns that pace; the first message of the next
  // push takes what its link gives it. On a link so slow that this is past
  // the 200 ms floor, every push would count the worker out and take it back
  // in a loop (at 0.5 Mbit/s a 16 kB message takes 0.26 s): the floor is
  // then twice that message's time, up to kMostDeadlineFloor.
  void UplinkMeasured(int w, double mbps, int64_t least_message_bytes);

  // Workers past their deadline at `now`, counted out.
  std::vector<CountedOut> CountOutOverdue(TimePoint now, StalenessLedger& ledger);
  // How long `w` has not been heard from at `now`: since its last push, (re)join
  // or Welcome; one never seen, since the team's first worker came. What tells
  // a link down (seconds) from a deadline's blip (a fraction of one).
  Duration SilentFor(int w, TimePoint now) const;

  // The team's model was replaced by a copy taken over at `iteration`
  // (core/model_takeover.h): every worker here resumes after it.
  void ResumeAll(int64_t iteration);

  // The rendezvous: whether the team starts at `now` (every worker is here,
  // or the window since the first has passed). Once true, stays true.
  bool StartsNow(TimePoint now);
  bool started() const { return started_; }
  // When the first worker came; none yet: nullopt.
  std::optional<TimePoint> first_arrival() const { return first_arrival_; }
  int connected_count() const;

  bool connected(int w) const { return members_[w].connected; }
  bool counted_out(int w) const { return members_[w].counted_out; }
  // Whether `w` has pushed on its stream since it opened (or since it was
  // taken back after being counted out).
  bool pushed(int w) const { return members_[w].pushed; }
  // Its next message must be a Welcome (it was taken back after being counted out).
  bool owes_welcome(int w) const { return members_[w].owes_welcome; }
  void WelcomeSent(int w) { members_[w].owes_welcome = false; }
  int64_t welcome(int w) const { return members_[w].welcome; }
  // The iteration its last Welcome told it to resume after.
  int64_t resume_after(int w) const { return members_[w].resume_after; }

 private:
  struct Member {
    uint64_t stream = 0;
    bool connected = false;
    bool counted_out = false;
    bool owes_welcome = false;
    bool pushed = false;
    int64_t welcome = 0;
    int64_t resume_after = 0;
    // Workers push at least every 20 ms (worker.cc), so a link is judged dead
    // only after 200 ms of silence, whatever the learned pace; more on a link
    // too slow to carry a message in that time (UplinkMeasured).
    ArrivalDeadline deadline{kFirstArrivalDeadline, kDeadlineFloor};
  };

  std::vector<Member> members_;
  const Duration gather_window_;
  std::optional<TimePoint> first_arrival_;
  bool started_ = false;
};

}  // namespace edgetrain

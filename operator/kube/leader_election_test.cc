#include "operator/kube/leader_election.h"

#include <functional>

#include <gtest/gtest.h>

#include "core/deterministic_clock.h"
#include "operator/kube/testing/fake_kube_client.h"

namespace edgetrain::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// The fake API, which can be made unreachable.
class Reachable final : public KubeClient {
 public:
  explicit Reachable(KubeClient& inner, Clock* clock = nullptr) : inner_(inner), clock_(clock) {}
  std::atomic<bool> down{false};
  std::atomic<int64_t> get_takes_ms{0};  // on clock_: an API that answers, slowly
  StatusOr<Json> Get(const ResourceType& t, const std::string& ns, const std::string& n) override {
    if (down) return UnavailableError("the API is down");
    if (clock_ && get_takes_ms > 0) clock_->SleepFor(milliseconds(get_takes_ms.load()));
    return inner_.Get(t, ns, n);
  }
  StatusOr<Json> List(const ResourceType& t, const std::string& ns, const ListOptions& o) override {
    return inner_.List(t, ns, o);
  }
  StatusOr<Json> Create(const ResourceType& t, const std::string& ns, const Json& o) override {
    if (down) return UnavailableError("the API is down");
    return inner_.Create(t, ns, o);
  }
  StatusOr<Json> Update(const ResourceType& t, const std::string& ns, const Json& o) override {
    if (down) return UnavailableError("the API is down");
    return inner_.Update(t, ns, o);
  }
  StatusOr<Json> UpdateStatus(const ResourceType& t, const std::string& ns, const Json& o) override {
    return inner_.UpdateStatus(t, ns, o);
  }
  StatusOr<Json> MergePatch(const ResourceType& t, const std::string& ns, const std::string& n, const Json& p) override {
    return inner_.MergePatch(t, ns, n, p);
  }
  Status Delete(const ResourceType& t, const std::string& ns, const std::string& n) override {
    return inner_.Delete(t, ns, n);
  }
  Status DeleteUid(const ResourceType& t, const std::string& ns, const std::string& n, const std::string& u) override {
    return inner_.DeleteUid(t, ns, n, u);
  }
  Status Watch(const ResourceType& t, const std::string& ns, const WatchOptions& o,
               const std::function<void(WatchEvent)>& e, const std::atomic<bool>& s) override {
    return inner_.Watch(t, ns, o, e, s);
  }

 private:
  KubeClient& inner_;
  Clock* clock_;
};

LeaderElectionOptions As(const std::string& identity) {
  LeaderElectionOptions o;
  o.identity = identity;
  return o;  // client-go's timings: 15 s lease, 10 s renew deadline, 2 s retry
}

// Wall time that moves with the simulated clock, as renewals' timestamps do.
std::function<WallTime()> WallOf(Clock& clock) {
  const TimePoint start = clock.Now();
  return [&clock, start] {
    return std::chrono::system_clock::from_time_t(1795374113) +
           std::chrono::duration_cast<std::chrono::system_clock::duration>(clock.Now() - start);
  };
}

Json LeaseOf(testing::FakeKubeClient& api) { return *api.Get(kLeases, "default", "edgetrain-operator"); }

TEST(LeaderElectionTest, OneLeadsTheOtherWaitsAndTakesOverAtOnceWhenTheLeaderStepsDown) {
  testing::FakeKubeClient api;
  DeterministicClock clock;
  LeaderElector a(api, clock, WallOf(clock), As("a")), b(api, clock, WallOf(clock), As("b"));
  std::atomic<bool> stop_a{false}, stop_b{false};
  TimePoint a_led{}, b_led{}, a_stepped_down{};
  clock.Run("test", [&] {
    ClockThread ta = clock.StartThread("a", [&] { EXPECT_TRUE(a.Run(stop_a, [&] { a_led = clock.Now(); })); });
    clock.SleepFor(milliseconds(500));
    ClockThread tb = clock.StartThread("b", [&] { b.Run(stop_b, [&] { b_led = clock.Now(); }); });
    clock.SleepFor(seconds(60));  // four lease durations: a renews, b waits
    EXPECT_TRUE(a.leading());
    EXPECT_FALSE(b.leading());
    EXPECT_EQ(LeaseOf(api)["spec"]["holderIdentity"], "a");
    stop_a = true;
    a_stepped_down = clock.Now();
    ta.Join();
    clock.SleepFor(seconds(5));
    EXPECT_TRUE(b.leading());
    stop_b = true;
    tb.Join();
  });
  EXPECT_NE(a_led, TimePoint{}) << "a took a lease no one held at once";
  EXPECT_LE(b_led - a_stepped_down, seconds(2) + milliseconds(1))
      << "a released the lease: b took it at its next try, not a lease duration later";
  EXPECT_EQ(LeaseOf(api)["spec"]["leaseTransitions"], 1);
  EXPECT_EQ(LeaseOf(api)["spec"]["holderIdentity"], "") << "b released it too, when it stopped";
  EXPECT_TRUE(a.released().ok()) << a.released().ToString();
}

// A release the API refuses says so: the operator had logged "the Lease is
// released" of one its uninstalled ServiceAccount could no longer write.
TEST(LeaderElectionTest, AReleaseThatFailsSaysWhy) {
  testing::FakeKubeClient api;
  DeterministicClock clock;
  LeaderElector a(api, clock, WallOf(clock), As("a"));
  std::atomic<bool> stop{false};
  clock.Run("test", [&] {
    ClockThread ta = clock.StartThread("a", [&] { EXPECT_TRUE(a.Run(stop, [] {})); });
    clock.SleepFor(seconds(5));
    ASSERT_TRUE(a.leading());
    ASSERT_TRUE(api.Delete(kLeases, "default", "edgetrain-operator").ok());
    stop = true;
    ta.Join();
  });
  EXPECT_FALSE(a.released().ok());
}

// A candidate says why it does not lead, each time that changes: an
// operator on an API it could not reach campaigned in silence (a new user's
// trial), and a standby did not say whose Lease it waits on.
TEST(LeaderElectionTest, ACandidateSaysWhyItDoesNotLeadYet) {
  testing::FakeKubeClient api;
  Reachable flaky(api);
  DeterministicClock clock;
  std::vector<std::string> a_said, b_said;
  LeaderElectionOptions a_options = As("a"), b_options = As("b");
  a_options.note = [&](const std::string& why) { a_said.push_back(why); };
  b_options.note = [&](const std::string& why) { b_said.push_back(why); };
  LeaderElector a(flaky, clock, WallOf(clock), a_options), b(api, clock, WallOf(clock), b_options);
  std::atomic<bool> stop_a{false}, stop_b{false};
  flaky.down = true;
  clock.Run("test", [&] {
    ClockThread ta = clock.StartThread("a", [&] { a.Run(stop_a, [] {}); });
    clock.SleepFor(seconds(10));  // five tries, one note
    EXPECT_FALSE(a.leading());
    flaky.down = false;
    clock.SleepFor(seconds(3));
    EXPECT_TRUE(a.leading());
    ClockThread tb = clock.StartThread("b", [&] { b.Run(stop_b, [] {}); });
    clock.SleepFor(seconds(10));
    EXPECT_FALSE(b.leading());
    stop_b = true;
    tb.Join();
    stop_a = true;
    ta.Join();
  });
  EXPECT_EQ(a_said, std::vector<std::string>{"cannot read the Lease: the API is down"});
  EXPECT_EQ(b_said, std::vector<std::string>{"the Lease is held by a: standing by; taken over once it has gone 15 s "
                                             "unrenewed"});
}

// A replica started after one of its host's was killed (it never gave the
// Lease up) says whose the Lease may be: a new user's trial went looking for
// another replica for the lease's 15 s.
TEST(LeaderElectionTest, ALeaseHeldByAReplicaOfTheSameHostIsSaidToBeMaybeOneThatEnded) {
  testing::FakeKubeClient api;
  DeterministicClock clock;
  std::vector<std::string> said;
  LeaderElectionOptions options = As("gateway_2");
  options.note = [&](const std::string& why) { said.push_back(why); };
  LeaderElector killed(api, clock, WallOf(clock), As("gateway_1")), next(api, clock, WallOf(clock), options);
  std::atomic<bool> stop_killed{false}, stop_next{false};
  clock.Run("test", [&] {
    ClockThread tk = clock.StartThread("killed", [&] { killed.Run(stop_killed, [] {}); });
    clock.SleepFor(seconds(3));
    ASSERT_TRUE(killed.leading());
    ClockThread tn = clock.StartThread("next", [&] { next.Run(stop_next, [] {}); });
    clock.SleepFor(seconds(3));
    EXPECT_FALSE(next.leading());
    stop_next = true;
    tn.Join();
    stop_killed = true;
    tk.Join();
  });
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0], "the Lease is held by gateway_1: standing by; taken over once it has gone 15 s unrenewed (a "
                     "replica of this host's: one that ended without giving it up, killed say, holds it that long)");
}

TEST(LeaderElectionTest, ALeaderThatVanishesIsReplacedOnceItsLeaseRunsOutByTheCandidatesOwnClock) {
  testing::FakeKubeClient api;
  ASSERT_TRUE(api.Create(kLeases, "default",
                         {{"metadata", {{"name", "edgetrain-operator"}}},
                          {"spec",
                           {{"holderIdentity", "crashed"},
                            {"leaseDurationSeconds", 15},
                            // Written by another machine's clock, far in the future: not trusted.
                            {"renewTime", "2099-01-01T00:00:00.000000Z"},
                            {"leaseTransitions", 3}}}})
                  .ok());
  DeterministicClock clock;
  LeaderElector b(api, clock, WallOf(clock), As("b"));
  std::atomic<bool> stop{false};
  TimePoint started{}, led{};
  clock.Run("test", [&] {
    started = clock.Now();
    ClockThread tb = clock.StartThread("b", [&] { b.Run(stop, [&] { led = clock.Now(); }); });
    clock.SleepFor(seconds(30));
    stop = true;
    tb.Join();
  });
  ASSERT_NE(led, TimePoint{});
  EXPECT_GE(led - started, seconds(15)) << "not before the lease ran out unrenewed";
  EXPECT_LE(led - started, seconds(17)) << "within a retry period of it";
}

// `a` leads for 5 s, then `trouble` befalls its API; it runs until it stops
// leading. Whether it stopped on its own (asked to), and how long after the trouble.
struct Loss {
  bool stopped_on_its_own = true;
  Duration after{};
};
Loss LeadThenLose(LeaderElector& a, DeterministicClock& clock, const std::function<void()>& trouble) {
  std::atomic<bool> stop{false};
  Loss loss;
  TimePoint began{}, lost{};
  clock.Run("test", [&] {
    ClockThread ta = clock.StartThread("a", [&] {
      loss.stopped_on_its_own = a.Run(stop, [] {});
      lost = clock.Now();
    });
    clock.SleepFor(seconds(5));
    ASSERT_TRUE(a.leading());
    trouble();
    began = clock.Now();
    ta.Join();
  });
  loss.after = lost - began;
  return loss;
}

TEST(LeaderElectionTest, ALeaderThatCannotRenewWithinItsDeadlineStopsLeading) {
  testing::FakeKubeClient api;
  Reachable flaky(api);
  DeterministicClock clock;
  LeaderElector a(flaky, clock, WallOf(clock), As("a"));
  const Loss loss = LeadThenLose(a, clock, [&] { flaky.down = true; });
  EXPECT_FALSE(loss.stopped_on_its_own) << "it lost the lease";
  EXPECT_FALSE(a.leading());
  EXPECT_GE(loss.after, seconds(8)) << "the last renewal was at most a retry period before the cut";
  // Never past its deadline: a try failed just before it had slept a retry
  // period more and read again, leading up to 12 s (found in review).
  EXPECT_LE(loss.after, seconds(10));
  EXPECT_EQ(a.not_taken(), "cannot read the Lease: the API is down") << "why, for the log";
}

// A Lease another replica holds (deleted, and made anew by a standby) is
// lost at the renewal that reads it, not at the renew deadline: two replicas
// had led meanwhile (found in review).
TEST(LeaderElectionTest, ALeaderThatReadsAnothersLeaseStopsAtOnce) {
  testing::FakeKubeClient api;
  DeterministicClock clock;
  LeaderElector a(api, clock, WallOf(clock), As("a"));
  const Loss loss = LeadThenLose(a, clock, [&] {
    Json lease = LeaseOf(api);
    ASSERT_TRUE(api.Delete(kLeases, "default", "edgetrain-operator").ok());
    lease["metadata"].erase("resourceVersion");
    lease["spec"]["holderIdentity"] = "b";
    ASSERT_TRUE(api.Create(kLeases, "default", lease).ok());
  });
  EXPECT_FALSE(loss.stopped_on_its_own) << "it lost the lease";
  EXPECT_LE(loss.after, seconds(2)) << "within a retry period";
  EXPECT_EQ(a.not_taken(), "the Lease is held by b: standing by; taken over once it has gone 15 s unrenewed");
}

// A renewal whose read of the Lease outlasts the renew deadline is not
// written: the leader stops leading at the deadline's next check, never
// renewing a Lease another may have taken meanwhile.
TEST(LeaderElectionTest, ARenewalWhoseReadOutlastsTheDeadlineIsNotWritten) {
  testing::FakeKubeClient api;
  DeterministicClock clock;
  Reachable slow(api, &clock);
  LeaderElector a(slow, clock, WallOf(clock), As("a"));
  std::string renewed_before;
  const Loss loss = LeadThenLose(a, clock, [&] {
    renewed_before = LeaseOf(api)["spec"]["renewTime"];
    slow.get_takes_ms = 11000;  // past the 10 s deadline
  });
  EXPECT_FALSE(loss.stopped_on_its_own) << "it lost the lease";
  EXPECT_EQ(LeaseOf(api)["spec"]["renewTime"], renewed_before) << "nothing written after the deadline";
  EXPECT_LE(loss.after, seconds(2) + seconds(11)) << "it stopped once its one slow read came back";
}

}  // namespace
}  // namespace edgetrain::kube

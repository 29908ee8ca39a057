#include "agent/transport/shaped_stream.h"

#include "core/deterministic_clock.h"

#include <thread>

#include <gtest/gtest.h>

#include "agent/transport/link_gate.h"

namespace edgetrain::agent {
namespace {

using std::chrono::milliseconds;

// A stream that records when each message reached it.
class RecordingStream final : public CoordinatorStream {
 public:
  explicit RecordingStream(Clock& clock, std::vector<TimePoint>& arrivals) : clock_(clock), arrivals_(arrivals) {}
  Status Send(const v1::WorkerMessage&) override {
    arrivals_.push_back(clock_.Now());
    return Status::Ok();
  }
  StatusOr<v1::CoordinatorMessage> Receive() override { return CancelledError("none"); }
  void Close() override {}

 private:
  Clock& clock_;
  std::vector<TimePoint>& arrivals_;
};

v1::WorkerMessage MessageOf(size_t bytes) {
  v1::WorkerMessage m;
  m.mutable_push()->add_rows()->set_values(std::string(bytes, 'x'));
  return m;
}

TEST(ShapedStreamTest, SendsTakeAsLongAsTheTraceSays) {
  SimulatedClock clock;
  const TimePoint t0 = clock.Now();
  // 8 Mbit/s = 1 MB/s, then down for a second, then back.
  auto trace = BandwidthTrace::Parse("seconds,mbps\n0,8\n1,0\n2,8\n", "t.csv");
  ASSERT_TRUE(trace.ok());
  TraceShaper uplink(*trace, t0, 0);
  std::vector<TimePoint> arrivals;
  ShapedCoordinatorStream stream(std::make_unique<RecordingStream>(clock, arrivals), uplink, clock);
  v1::WorkerMessage big = MessageOf(499'990);  // ~500 kB on the wire
  const double size = static_cast<double>(big.ByteSizeLong());
  std::thread sender([&] {
    ASSERT_TRUE(stream.Send(big).ok());
    ASSERT_TRUE(stream.Send(big).ok());  // crosses the outage
  });
  // Drive simulated time from deadline to deadline until both sends are through.
  while (arrivals.size() < 2) {
    if (!clock.AdvanceToNextDeadline()) std::this_thread::yield();
  }
  sender.join();
  EXPECT_NEAR(ToSeconds(arrivals[0] - t0), size / 1e6, 1e-6);
  // The second half-megabyte: 0.5 s left before the outage, then 1 s of nothing.
  EXPECT_NEAR(ToSeconds(arrivals[1] - t0), 1.0 + 1.0 + (2 * size / 1e6 - 1.0), 1e-6);
}

// A wait on a dead link ends when the stream closes, and when the agent is
// told to stop (SIGTERM) without its stream closed first: a stage agent's
// sender, joined before its stream closed, held the agent 15 s past the job's
// end (a new user's trial).
TEST(ShapedStreamTest, ClosingOrBeingToldToStopEndsAWaitOnADeadLink) {
  for (const bool by_closing : {true, false}) {
    SimulatedClock clock;
    auto trace = BandwidthTrace::Parse("seconds,mbps\n0,0\n", "dead.csv");
    ASSERT_TRUE(trace.ok());
    TraceShaper uplink(*trace, clock.Now(), 0);
    std::vector<TimePoint> arrivals;
    std::atomic<bool> told{false};
    ShapedCoordinatorStream stream(std::make_unique<RecordingStream>(clock, arrivals), uplink, clock,
                                   [&] { return told.load(); });
    Status sent;
    std::thread sender([&] { sent = stream.Send(MessageOf(1000)); });
    while (clock.sleepers() == 0) std::this_thread::yield();
    if (by_closing) {
      stream.Close();
    } else {
      told = true;
    }
    clock.Advance(milliseconds(60));
    sender.join();
    EXPECT_EQ(sent.code(), StatusCode::kCancelled) << (by_closing ? "closed" : "told to stop");
    EXPECT_TRUE(arrivals.empty());
  }
}

TEST(ShapedStreamTest, AnAbandonedSendGivesTheLinkBack) {
  SimulatedClock clock;
  auto trace = BandwidthTrace::Parse("seconds,mbps\n0,8\n", "t.csv");  // 1 MB/s
  ASSERT_TRUE(trace.ok());
  TraceShaper link(*trace, clock.Now(), 0);
  std::atomic<bool> abandon{false};
  bool passed = true;
  std::thread sender([&] { passed = PassLink(link, 10'000'000, clock, [&] { return abandon.load(); }); });
  while (clock.sleepers() == 0) std::this_thread::yield();
  abandon = true;
  clock.Advance(milliseconds(60));
  sender.join();
  EXPECT_FALSE(passed);
  // The next 100 kB (a reconnected worker's first message, say) is through in
  // 0.1 s, not behind the ten seconds of bytes that were never sent.
  EXPECT_NEAR(ToSeconds(link.Reserve(100'000, clock.Now()) - clock.Now()), 0.1, 1e-6);
}

TEST(LinkGateTest, ACutGateHoldsSendsUntilRestored) {
  DeterministicClock clock;
  const TimePoint start = clock.Now();
  std::vector<TimePoint> arrivals;
  LinkGate gate(clock);
  GatedCoordinatorStream stream(std::make_unique<RecordingStream>(clock, arrivals), gate);
  clock.Run("test", [&] {
    ASSERT_TRUE(stream.Send(MessageOf(10)).ok());
    gate.Cut();
    ClockThread sender = clock.StartThread("sender", [&] { ASSERT_TRUE(stream.Send(MessageOf(10)).ok()); });
    clock.SleepFor(std::chrono::seconds(30));
    EXPECT_EQ(arrivals.size(), 1u) << "a cut link let a message through";
    gate.Restore();
    sender.Join();
  });
  ASSERT_EQ(arrivals.size(), 2u);
  EXPECT_EQ(arrivals[1] - start, std::chrono::seconds(30));
}

}  // namespace
}  // namespace edgetrain::agent

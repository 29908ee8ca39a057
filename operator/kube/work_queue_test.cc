#include "operator/kube/work_queue.h"

#include <gtest/gtest.h>

#include "core/deterministic_clock.h"

namespace edgetrain::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(WorkQueueTest, AKeyIsQueuedOnceAndAgainIfAddedWhileProcessed) {
  DeterministicClock clock;
  clock.Run("test", [&] {
    WorkQueue q(clock);
    q.Add("default/a");
    q.Add("default/b");
    q.Add("default/a");
    EXPECT_EQ(q.Length(), 2u);
    EXPECT_EQ(q.Get(), "default/a");
    q.Add("default/a");  // changed while a worker reconciles it
    EXPECT_EQ(q.Get(), "default/b") << "never handed to a second worker meanwhile";
    EXPECT_EQ(q.Length(), 0u);
    q.Done("default/a");
    EXPECT_EQ(q.Length(), 1u) << "queued again once its worker is done";
    EXPECT_EQ(q.Get(), "default/a");
  });
}

TEST(WorkQueueTest, ADelayedKeyComesWhenItsTimeHasComeEvenIfAnEarlierOneIsAddedMeanwhile) {
  DeterministicClock clock;
  const TimePoint start = clock.Now();
  clock.Run("test", [&] {
    WorkQueue q(clock);
    q.AddAfter("late", seconds(10));
    ClockThread adder = clock.StartThread("adder", [&] {
      clock.SleepFor(seconds(1));
      q.AddAfter("early", seconds(2));
    });
    EXPECT_EQ(q.Get(), "early");
    EXPECT_EQ(clock.Now() - start, seconds(3));
    EXPECT_EQ(q.Get(), "late");
    EXPECT_EQ(clock.Now() - start, seconds(10));
    adder.Join();
  });
}

// A key waits once, for the earliest time asked: a running job's requeue
// after every extra reconcile (a pod's change) made chains of reconciles
// that never merged, a job read every 2-3 s against an interval of 5 s.
TEST(WorkQueueTest, AKeyDelayedTwiceComesOnceAtTheEarlierTime) {
  DeterministicClock clock;
  const TimePoint start = clock.Now();
  clock.Run("test", [&] {
    WorkQueue q(clock);
    q.AddAfter("job", seconds(5));
    q.AddAfter("job", seconds(8));  // later: the earlier stands
    q.AddAfter("job", seconds(3));  // sooner: it moves up
    q.AddAfter("other", seconds(6));
    EXPECT_EQ(q.Get(), "job");
    EXPECT_EQ(clock.Now() - start, seconds(3));
    q.Done("job");
    EXPECT_EQ(q.Get(), "other") << "the job's other delays are gone, not due at 5 s and 8 s";
    EXPECT_EQ(clock.Now() - start, seconds(6));
    q.Done("other");
    q.AddAfter("job", seconds(1));
    EXPECT_EQ(q.Get(), "job") << "delayed again once its wait was over";
    EXPECT_EQ(clock.Now() - start, seconds(7));
  });
}

TEST(WorkQueueTest, AFailingKeyBacksOffOnItsOwnUntilForgotten) {
  DeterministicClock clock;
  clock.Run("test", [&] {
    WorkQueue q(clock, {milliseconds(5), seconds(1000), 1000, 1000});
    std::vector<Duration> waits;
    for (int i = 0; i < 5; ++i) {
      const TimePoint before = clock.Now();
      q.AddRateLimited("bad");
      EXPECT_EQ(q.Get(), "bad");
      waits.push_back(clock.Now() - before);
      q.Done("bad");
    }
    EXPECT_EQ(waits, (std::vector<Duration>{milliseconds(5), milliseconds(10), milliseconds(20), milliseconds(40),
                                            milliseconds(80)}));
    EXPECT_EQ(q.Retries("bad"), 5);
    q.Forget("bad");
    const TimePoint before = clock.Now();
    q.AddRateLimited("bad");
    EXPECT_EQ(q.Get(), "bad");
    EXPECT_EQ(clock.Now() - before, milliseconds(5));
  });
}

TEST(WorkQueueTest, TheQueueWideRateHoldsManyFailingKeys) {
  DeterministicClock clock;
  const TimePoint start = clock.Now();
  clock.Run("test", [&] {
    WorkQueue q(clock, {milliseconds(5), seconds(1000), 10, 2});
    for (int i = 0; i < 4; ++i) q.AddRateLimited("k" + std::to_string(i));
    for (int i = 0; i < 4; ++i) q.Get();
    // Two go at once (the burst, after their own 5 ms), then one every 100 ms.
    EXPECT_EQ(clock.Now() - start, milliseconds(200));
  });
}

TEST(WorkQueueTest, ShuttingDownWakesEveryWorker) {
  DeterministicClock clock;
  clock.Run("test", [&] {
    WorkQueue q(clock);
    std::vector<std::optional<std::string>> got(2);
    std::vector<ClockThread> workers;
    for (int w = 0; w < 2; ++w) workers.push_back(clock.StartThread("worker", [&, w] { got[w] = q.Get(); }));
    clock.SleepFor(seconds(1));
    q.ShutDown();
    for (auto& t : workers) t.Join();
    EXPECT_FALSE(got[0].has_value());
    EXPECT_FALSE(got[1].has_value());
  });
}

}  // namespace
}  // namespace edgetrain::kube

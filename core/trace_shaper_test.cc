#include "core/trace_shaper.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

BandwidthTrace Trace(const char* csv) {
  auto t = BandwidthTrace::Parse(csv, "t.csv");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return *t;
}

// 8 Mbit/s = 1 MB/s for 2 s, down for 1 s, 16 Mbit/s for 1 s; repeats every 4 s.
constexpr const char* kTrace = "seconds,mbps\n0,8\n2,0\n3,16\n";

TEST(TraceShaperTest, BurstPassesAtOnceThenTheRateApplies) {
  TimePoint t0{};
  TraceShaper link(Trace(kTrace), t0, 10'000);
  EXPECT_EQ(link.Reserve(10'000, t0), t0);
  // The bucket is empty: 500 kB at 1 MB/s.
  EXPECT_NEAR(ToSeconds(link.Reserve(500'000, t0) - t0), 0.5, 1e-9);
  // Queued behind the previous send: another 500 kB ends at 1.0 s.
  EXPECT_NEAR(ToSeconds(link.Reserve(500'000, t0) - t0), 1.0, 1e-9);
}

TEST(TraceShaperTest, ADeadLinkHoldsTrafficUntilItComesBack) {
  TimePoint t0{};
  TraceShaper link(Trace(kTrace), t0, 0);
  // From 1.5 s: 0.5 MB until 2 s, nothing until 3 s, then 2 MB/s: 1 MB ends at 3.25 s.
  TimePoint start = t0 + FromSeconds(1.5);
  EXPECT_NEAR(ToSeconds(link.Reserve(1'000'000, start) - t0), 3.25, 1e-9);
  EXPECT_DOUBLE_EQ(link.MbpsAt(t0 + FromSeconds(2.5)), 0);
  EXPECT_DOUBLE_EQ(link.MbpsAt(t0 + FromSeconds(6.5)), 0);  // the trace repeats
}

TEST(TraceShaperTest, AnAbandonedSendLeavesTheLink) {
  TimePoint t0{};
  TraceShaper link(Trace(kTrace), t0, 0);
  // 1 MB from 1.5 s would hold the link until 3.25 s (the outage in between);
  // abandoned at 1.75 s, the next 250 kB passes by 2 s instead of after 3.25 s.
  TimePoint through = link.Reserve(1'000'000, t0 + FromSeconds(1.5));
  link.Release(through, t0 + FromSeconds(1.75));
  EXPECT_NEAR(ToSeconds(link.Reserve(250'000, t0 + FromSeconds(1.75)) - t0), 2.0, 1e-9);
}

TEST(TraceShaperTest, AnAbandonedSendWithOthersBehindItKeepsTheirPlaces) {
  TimePoint t0{};
  TraceShaper link(Trace(kTrace), t0, 0);
  TimePoint first = link.Reserve(500'000, t0);   // through at 0.5 s
  TimePoint second = link.Reserve(500'000, t0);  // queued behind it: 1.0 s
  link.Release(first, t0 + FromSeconds(0.25));
  EXPECT_NEAR(ToSeconds(second - t0), 1.0, 1e-9);
  EXPECT_NEAR(ToSeconds(link.Reserve(100'000, t0 + FromSeconds(0.25)) - t0), 1.1, 1e-9);
}

TEST(TraceShaperTest, AnIdleLinkRefillsItsBucketAtTheTracesRate) {
  TimePoint t0{};
  TraceShaper link(Trace(kTrace), t0, 100'000);
  EXPECT_EQ(link.Reserve(100'000, t0), t0);
  // 50 ms idle at 1 MB/s refill 50 kB; 80 kB then needs 30 ms more.
  TimePoint later = t0 + FromSeconds(0.05);
  EXPECT_NEAR(ToSeconds(link.Reserve(80'000, later) - t0), 0.08, 1e-9);
  // Full again long before the outage, the bucket lets a burst through in it...
  TimePoint in_outage = t0 + FromSeconds(2.9);
  EXPECT_EQ(link.Reserve(100'000, in_outage), in_outage);
  // ... but nothing refills it there: the next 100 kB waits for 3 s, then 2 MB/s.
  EXPECT_NEAR(ToSeconds(link.Reserve(100'000, in_outage) - t0), 3.05, 1e-9);
}

TEST(TraceShaperTest, ShiftedAndScaledTracesShapeAsConfigured) {
  TimePoint t0{};
  TraceShaper link(Trace(kTrace).Shifted(2).Scaled(0.5), t0, 0);
  // Starts in the outage (trace time 2..3), then 1 MB/s: 100 kB at 1.1 s.
  EXPECT_NEAR(ToSeconds(link.Reserve(100'000, t0) - t0), 1.1, 1e-9);
}

}  // namespace
}  // namespace edgetrain

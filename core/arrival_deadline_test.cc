#include "core/arrival_deadline.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

using std::chrono::milliseconds;

TEST(ArrivalDeadlineTest, LearnsEachWorkersOwnPace) {
  TimePoint t{};
  ArrivalDeadline fast(std::chrono::seconds(10)), slow(std::chrono::seconds(10));
  EXPECT_FALSE(fast.Overdue(t + std::chrono::hours(1))) << "never heard from: no deadline yet";
  for (int i = 0; i < 20; ++i) {
    fast.Arrived(t + milliseconds(100 * i));
    slow.Arrived(t + milliseconds(1000 * i));
  }
  // Steady gaps: the deviation decays, twice the mean remains.
  EXPECT_NEAR(ToSeconds(fast.Deadline()), 0.2, 0.05);
  EXPECT_NEAR(ToSeconds(slow.Deadline()), 2.0, 0.5);
  TimePoint last_fast = t + milliseconds(1900);
  EXPECT_FALSE(fast.Overdue(last_fast + milliseconds(150)));
  EXPECT_TRUE(fast.Overdue(last_fast + milliseconds(400)));
  TimePoint last_slow = t + milliseconds(19000);
  EXPECT_FALSE(slow.Overdue(last_slow + milliseconds(1500)));
  EXPECT_TRUE(slow.Overdue(last_slow + milliseconds(3000)));
}

TEST(ArrivalDeadlineTest, JitterWidensTheDeadline) {
  TimePoint t{};
  ArrivalDeadline steady, jittery;
  int64_t at = 0;
  for (int i = 0; i < 40; ++i) {
    steady.Arrived(t + milliseconds(100 * i));
    at += i % 2 ? 20 : 180;  // same mean gap, 100 ms
    jittery.Arrived(t + milliseconds(at));
  }
  EXPECT_GT(jittery.Deadline(), steady.Deadline() + milliseconds(150));
}

TEST(ArrivalDeadlineTest, AWorkerSilentSinceItJoinedIsOverdueToo) {
  TimePoint t{};
  ArrivalDeadline d(milliseconds(500));
  d.Restart(t);
  EXPECT_FALSE(d.Overdue(t + milliseconds(400)));
  EXPECT_TRUE(d.Overdue(t + milliseconds(600)));
}

TEST(ArrivalDeadlineTest, InitialDeadlineUntilAGapIsSeenAndAFloorAfter) {
  TimePoint t{};
  ArrivalDeadline d(milliseconds(500), milliseconds(50));
  d.Arrived(t);
  EXPECT_EQ(d.Deadline(), milliseconds(500));
  EXPECT_TRUE(d.Overdue(t + milliseconds(501)));
  d.Arrived(t + milliseconds(1));
  EXPECT_EQ(d.Deadline(), milliseconds(50));
}

}  // namespace
}  // namespace edgetrain

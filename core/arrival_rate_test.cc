#include "core/arrival_rate.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

using std::chrono::milliseconds;

TEST(ArrivalRateMeterTest, MeasuresABurstFromItsSecondMessageOn) {
  TimePoint t{};
  ArrivalRateMeter m(32 * 1024);
  EXPECT_EQ(m.Mbps(), 0) << "nothing measured yet";
  // 16 kB messages every 16 ms: 1 MB/s, 8 Mbit/s.
  m.Begin(t);
  for (int i = 1; i <= 4; ++i) m.Continue(t + milliseconds(16 * i), 16'000);
  EXPECT_EQ(m.Mbps(), 0) << "a burst counts when it is over";
  m.Begin(t + milliseconds(1000));
  EXPECT_DOUBLE_EQ(m.Mbps(), 8.0);
}

// Messages that waited in the socket while the reader was not scheduled are
// read back to back: one such burst does not move the rate, which is the
// lower median of the last five bursts'.
TEST(ArrivalRateMeterTest, ABurstReadLateDoesNotMoveTheRate) {
  TimePoint t{};
  ArrivalRateMeter m(32 * 1024);
  auto burst = [&](int gap_ms) {
    m.Begin(t);
    for (int i = 1; i <= 4; ++i) m.Continue(t + milliseconds(gap_ms * i), 16'000);
    t += milliseconds(1000);
  };
  burst(16);  // 8 Mbit/s
  burst(1);   // read late: 128 Mbit/s
  m.Begin(t);
  EXPECT_DOUBLE_EQ(m.Mbps(), 8.0) << "of two, the slower";
  burst(16);
  burst(16);
  burst(1);
  m.Begin(t);
  EXPECT_DOUBLE_EQ(m.Mbps(), 8.0);
  // A link that slows for good is followed within three bursts.
  for (int i = 0; i < 3; ++i) burst(32);
  m.Begin(t);
  EXPECT_DOUBLE_EQ(m.Mbps(), 4.0);
}

TEST(ArrivalRateMeterTest, ShortBurstsAndStrayMessagesAreNotMeasured) {
  TimePoint t{};
  ArrivalRateMeter m(32 * 1024);
  m.Continue(t, 100'000);  // no burst open
  m.Begin(t);
  m.Continue(t + milliseconds(1), 10'000);  // too few bytes to tell
  m.Begin(t + milliseconds(10));
  m.Begin(t + milliseconds(20));  // a single message: nothing after its first
  m.Begin(t + milliseconds(30));
  EXPECT_EQ(m.Mbps(), 0);
}

}  // namespace
}  // namespace edgetrain

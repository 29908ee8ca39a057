#include "core/energy_model.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(EnergyMeterTest, ChargesEachStateAtItsWatts) {
  TimePoint t0{};
  EnergyMeter m(PowerProfile{}, t0);  // 15 W compute, 7 W communicate, 5 W idle
  m.BeginCompute(t0 + seconds(1));    // 1 s idle
  m.BeginSend(t0 + seconds(2));       // sending while computing: still compute
  m.EndCompute(t0 + seconds(3));      // 2 s compute
  m.EndSend(t0 + seconds(5));         // 2 s sending alone
  EnergySplit e = m.Split(t0 + seconds(6));  // 1 s idle more
  EXPECT_DOUBLE_EQ(e.compute_s, 2);
  EXPECT_DOUBLE_EQ(e.communicate_s, 2);
  EXPECT_DOUBLE_EQ(e.idle_s, 2);
  EXPECT_DOUBLE_EQ(e.compute_j, 30);
  EXPECT_DOUBLE_EQ(e.communicate_j, 14);
  EXPECT_DOUBLE_EQ(e.idle_j, 10);
  EXPECT_DOUBLE_EQ(e.total_j(), 54);
}

TEST(EnergyMeterTest, ReceivingIsTakenFromIdleTimeOnly) {
  TimePoint t0{};
  EnergyMeter m(PowerProfile{20, 8, 4}, t0);
  m.BeginCompute(t0);
  m.EndCompute(t0 + seconds(3));
  m.AddReceive(0.5);
  EnergySplit e = m.Split(t0 + seconds(4));
  EXPECT_DOUBLE_EQ(e.communicate_s, 0.5);
  EXPECT_DOUBLE_EQ(e.idle_s, 0.5);
  m.AddReceive(10);  // more than the idle time since: the rest waits for idle time to come
  e = m.Split(t0 + seconds(4));
  EXPECT_DOUBLE_EQ(e.communicate_s, 0.5);
  EXPECT_DOUBLE_EQ(e.idle_s, 0.5) << "idle time already counted is not taken back";
  m.BeginCompute(t0 + seconds(4));
  m.EndCompute(t0 + seconds(5));  // computing pays none of it
  e = m.Split(t0 + seconds(7));
  EXPECT_DOUBLE_EQ(e.communicate_s, 2.5);
  EXPECT_DOUBLE_EQ(e.idle_s, 0.5);
  EXPECT_DOUBLE_EQ(e.total_j(), 4 * 20 + 2.5 * 8 + 0.5 * 4);
}

// Each state's figures only grow, as the Prometheus counters fed with them
// must: taken back from idle, received time left those counters summing to
// more than the device drew.
TEST(EnergyMeterTest, EachStatesFiguresOnlyGrow) {
  TimePoint t0{};
  EnergyMeter m(PowerProfile{20, 8, 4}, t0);
  EnergySplit before = m.Split(t0);
  for (int s = 1; s <= 20; ++s) {
    if (s % 3 == 0) m.AddReceive(1.7);
    if (s % 5 == 0) m.BeginCompute(t0 + seconds(s));
    if (s % 5 == 1 && s > 1) m.EndCompute(t0 + seconds(s));
    const EnergySplit e = m.Split(t0 + seconds(s));
    EXPECT_GE(e.idle_j, before.idle_j) << s;
    EXPECT_GE(e.communicate_j, before.communicate_j) << s;
    EXPECT_GE(e.compute_j, before.compute_j) << s;
    EXPECT_DOUBLE_EQ(e.compute_s + e.communicate_s + e.idle_s, s);
    before = e;
  }
}

TEST(EnergyMeterTest, NestedStatesFromSeveralThreadsBalance) {
  TimePoint t0{};
  EnergyMeter m(PowerProfile{}, t0);
  m.BeginSend(t0);
  m.BeginSend(t0 + milliseconds(100));
  m.EndSend(t0 + milliseconds(200));
  EXPECT_NEAR(m.Split(t0 + milliseconds(300)).communicate_s, 0.3, 1e-12) << "still one send running";
  m.EndSend(t0 + milliseconds(400));
  m.EndSend(t0 + milliseconds(500));  // an extra end is ignored
  EXPECT_NEAR(m.Split(t0 + seconds(1)).idle_s, 0.6, 1e-12);
}

}  // namespace
}  // namespace edgetrain

#include "agent/subnormal_floats.h"

#include <gtest/gtest.h>

#include <limits>
#include <thread>

namespace edgetrain::agent {
namespace {

// A product into the subnormal range, computed where the compiler cannot
// fold it.
float SubnormalProduct() {
  volatile float smallest_normal = std::numeric_limits<float>::min();
  volatile float tenth = 0.1f;
  return smallest_normal * tenth;
}

TEST(SubnormalFloatsTest, AreZeroOnTheThreadThatAskedAndOnThreadsItStartsAfter) {
  // Its own thread: what a test runner's other tests compute stays as it was.
  std::thread asker([] {
    ASSERT_NE(SubnormalProduct(), 0.0f) << "subnormals are computed before";
    if (!FlushSubnormalsToZero()) GTEST_SKIP() << "no flush-to-zero mode on this processor";
    EXPECT_EQ(SubnormalProduct(), 0.0f);
    float on_a_thread_started_after = 1;
    std::thread([&] { on_a_thread_started_after = SubnormalProduct(); }).join();
    EXPECT_EQ(on_a_thread_started_after, 0.0f) << "a thread takes its creator's mode";
    volatile float subnormal_input = std::numeric_limits<float>::denorm_min();
    volatile float one = 1.0f;
    EXPECT_EQ(subnormal_input * one, 0.0f) << "a subnormal already in memory reads as 0";
  });
  asker.join();
  EXPECT_NE(SubnormalProduct(), 0.0f) << "other threads as they were";
}

}  // namespace
}  // namespace edgetrain::agent

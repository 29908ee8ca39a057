#include "core/peer_figures.h"

#include <limits>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

// What a peer says is summed into the job's: a figure that cannot be is none.
TEST(PeerFiguresTest, AFigureThatCannotBeIsNone) {
  EXPECT_EQ(Measure(1.5, 10), 1.5);
  EXPECT_EQ(Measure(10, 10), 10);
  EXPECT_EQ(Measure(10.5, 10), 0);
  EXPECT_EQ(Measure(-1, 10), 0);
  EXPECT_EQ(Measure(std::numeric_limits<double>::quiet_NaN(), 10), 0);
  EXPECT_EQ(Measure(std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()), 0);
  // A heartbeat of 1e10 s is none; the longest a peer may give, four times
  // over and twice that (a pipeline stage's silence), is still a duration.
  EXPECT_EQ(Measure(1e10, kLongestSeconds), 0);
  EXPECT_LT(8 * kLongestSeconds, ToSeconds(Duration::max()));
  EXPECT_EQ(Count(-3, 64), 0);
  EXPECT_EQ(Count(int64_t{1} << 62, 64), 64);
  EXPECT_EQ(Count(17, 64), 17);
}

}  // namespace
}  // namespace edgetrain

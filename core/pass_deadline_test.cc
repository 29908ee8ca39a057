#include "core/pass_deadline.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

using std::chrono::seconds;

TEST(PassDeadlineTest, TheGraceUntilAStepIsLearnedThenFactorTimesItsPace) {
  PassDeadline d(seconds(120), seconds(10), 8);
  EXPECT_EQ(d.Deadline(), seconds(120));
  d.Observed(0);  // a step of no pass here teaches nothing
  EXPECT_FALSE(d.learned());
  for (int i = 0; i < 30; ++i) d.Observed(2.0);
  // Steady 2 s passes: twice the mean, 8 times.
  EXPECT_NEAR(ToSeconds(d.Deadline()), 32.0, 0.5);
}

TEST(PassDeadlineTest, NeverUnderItsFloorAndTheGraceNeverUnderIt) {
  PassDeadline quick(seconds(2), seconds(10), 8);
  EXPECT_EQ(quick.Deadline(), seconds(10)) << "a grace below the floor is the floor";
  for (int i = 0; i < 30; ++i) quick.Observed(0.005);
  EXPECT_EQ(quick.Deadline(), seconds(10)) << "5 ms passes: the floor, not 80 ms";
}

// A device slowed tenfold at once is not taken for hung at its next pass:
// the deadline it had is above ten of its passes; one slowed a thousandfold is.
TEST(PassDeadlineTest, ATenfoldDriftIsWithinItAThousandfoldIsNot) {
  PassDeadline d(seconds(120), seconds(1), 8);
  for (int i = 0; i < 30; ++i) d.Observed(0.5);
  EXPECT_GT(ToSeconds(d.Deadline()), 10 * 0.5);
  EXPECT_LT(ToSeconds(d.Deadline()), 1000 * 0.5);
  // Once the slower passes are seen, the deadline follows them.
  for (int i = 0; i < 30; ++i) d.Observed(5.0);
  EXPECT_GT(ToSeconds(d.Deadline()), 10 * 5.0);
}

}  // namespace
}  // namespace edgetrain

#include "core/round_deadline.h"

#include <gtest/gtest.h>

#include "core/clock.h"

namespace edgetrain {
namespace {

using std::chrono::milliseconds;

// Round `round` of `d` opens now, and `complete` of `counted` workers are in `took` later.
void RoundWith(RoundDeadline& d, SimulatedClock& clock, int64_t round, Duration took, int complete, int counted) {
  d.Opened(round, clock.Now());
  clock.Advance(took);
  d.Completed(complete, counted, clock.Now());
}

TEST(RoundDeadlineTest, AQuorumIsAShareOfTheCountedWorkersAndAtLeastOne) {
  RoundDeadline half(0.5, 1.0), three_quarters(0.75, 1.0), all(1.0, 1.0), none(0.0, 1.0);
  EXPECT_EQ(half.QuorumOf(4), 2);
  EXPECT_EQ(half.QuorumOf(3), 2);
  EXPECT_EQ(three_quarters.QuorumOf(4), 3);
  EXPECT_EQ(three_quarters.QuorumOf(2), 2);
  EXPECT_EQ(all.QuorumOf(4), 4);
  EXPECT_EQ(none.QuorumOf(4), 1) << "a round never closes on nobody's gradient";
  EXPECT_EQ(half.QuorumOf(1), 1);
}

TEST(RoundDeadlineTest, NoDeadlineUntilTheQuorumIsIn) {
  SimulatedClock clock;
  RoundDeadline d(0.75, 1.0);
  RoundWith(d, clock, 7, milliseconds(40), 2, 4);
  EXPECT_EQ(d.round(), 7);
  EXPECT_FALSE(d.deadline()) << "two of four are not three quarters";
  clock.Advance(std::chrono::seconds(30));
  EXPECT_FALSE(d.Due(clock.Now())) << "without its quorum a round waits as long as it takes";
}

TEST(RoundDeadlineTest, TheRestGetSlackTimesWhatTheQuorumTook) {
  SimulatedClock clock;
  RoundDeadline d(0.75, 0.5);
  const TimePoint opened = clock.Now();
  d.Opened(3, opened);
  clock.Advance(milliseconds(60));
  d.Completed(3, 4, clock.Now());  // the quorum took 60 ms
  ASSERT_TRUE(d.deadline());
  EXPECT_EQ(*d.deadline(), opened + milliseconds(60 + 30));
  clock.Advance(milliseconds(29));
  EXPECT_FALSE(d.Due(clock.Now()));
  clock.Advance(milliseconds(1));
  EXPECT_TRUE(d.Due(clock.Now()));
  // A later completion does not move a deadline once set.
  clock.Advance(milliseconds(5));
  d.Completed(4, 4, clock.Now());
  EXPECT_EQ(*d.deadline(), opened + milliseconds(90));
}

TEST(RoundDeadlineTest, ADeadlineFollowsTheLinksOfItsRound) {
  // Fast links, a short deadline; the same quorum on slow links, a long one:
  // no fixed timeout to tune per cluster.
  SimulatedClock clock;
  RoundDeadline d(0.5, 1.0);
  RoundWith(d, clock, 1, milliseconds(50), 2, 4);
  EXPECT_EQ(*d.deadline() - clock.Now(), milliseconds(50));
  d.Opened(2, clock.Now());
  EXPECT_FALSE(d.deadline()) << "a new round starts without one";
  RoundWith(d, clock, 2, milliseconds(800), 2, 4);
  EXPECT_EQ(*d.deadline() - clock.Now(), milliseconds(800));
}

TEST(RoundDeadlineTest, NoSlackClosesTheRoundWhenTheQuorumIsIn) {
  SimulatedClock clock;
  RoundDeadline d(0.5, 0.0);
  RoundWith(d, clock, 1, milliseconds(70), 2, 4);
  EXPECT_TRUE(d.Due(clock.Now()));
}

}  // namespace
}  // namespace edgetrain

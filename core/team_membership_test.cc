#include "core/team_membership.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const TimePoint t0 = TimePoint{} + std::chrono::hours(1);

struct TeamMembershipTest : testing::Test {
  StalenessLedger ledger{3, 2, 4};
  TeamMembership team{3, seconds(10)};
  void SetUp() override {
    for (int w = 0; w < 3; ++w) ledger.Deactivate(w);  // as the coordinator starts
  }
};

TEST_F(TeamMembershipTest, TheTeamStartsWhenAllAreInOrTheWindowAfterTheFirstHasPassed) {
  struct Case {
    int arrive;           // workers that come at t0
    Duration looked_at;   // after t0
    bool starts;
  } cases[] = {
      {0, seconds(60), false},  // nobody yet: the coordinator's own timeout decides
      {1, seconds(9), false},
      {1, seconds(10), true},
      {3, milliseconds(0), true},
  };
  for (const auto& c : cases) {
    StalenessLedger l(3, 2, 4);
    TeamMembership m(3, seconds(10));
    for (int w = 0; w < c.arrive; ++w) m.Open(w, t0, l);
    EXPECT_EQ(m.StartsNow(t0 + c.looked_at), c.starts) << c.arrive << " in, at +" << ToSeconds(c.looked_at) << " s";
  }
}

// A team that waited its window for a worker that never came starts with the
// others' deadlines counting from its start, not from when they joined.
TEST_F(TeamMembershipTest, WaitingForTheRestIsNotSilence) {
  team.Open(0, t0, ledger);
  team.Open(1, t0 + seconds(2), ledger);
  ASSERT_TRUE(team.StartsNow(t0 + seconds(10)));
  EXPECT_TRUE(team.CountOutOverdue(t0 + seconds(10) + milliseconds(100), ledger).empty())
      << "worker 0 joined 10 s before the start, and was counted out for it";
  EXPECT_EQ(team.SilentFor(0, t0 + seconds(10)), Duration::zero());
}

// Before a worker's pace is learned its deadline is the first one given: a
// link out from the team's start counts it out after that, not the 10 s
// default (a flag, short where a deployment's first steps are).
TEST_F(TeamMembershipTest, AWorkerSilentFromTheStartIsCountedOutAfterTheFirstDeadline) {
  TeamMembership quick(3, seconds(10), seconds(2));
  for (int w = 0; w < 3; ++w) quick.Open(w, t0, ledger);
  ASSERT_TRUE(quick.StartsNow(t0));
  // Workers 0 and 1 push every 20 ms; 2 says nothing.
  auto push_until = [&](int from, int to_ms) {
    for (int k = from; 20 * k <= to_ms; ++k) {
      for (int w = 0; w < 2; ++w) quick.Push(w, quick.welcome(w), t0 + milliseconds(20 * k), ledger);
    }
  };
  push_until(1, 1900);
  EXPECT_TRUE(quick.CountOutOverdue(t0 + milliseconds(1900), ledger).empty());
  push_until(96, 2100);
  const auto out = quick.CountOutOverdue(t0 + milliseconds(2100), ledger);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].worker, 2);
  EXPECT_EQ(out[0].deadline, seconds(2));
}

TEST_F(TeamMembershipTest, EachNewStreamIsNumberedAndAnOldOneIsNoLongerCurrent) {
  const uint64_t first = team.Open(1, t0, ledger);
  const uint64_t second = team.Open(1, t0 + seconds(1), ledger);
  EXPECT_EQ(second, first + 1);
  EXPECT_FALSE(team.Current(1, first));
  EXPECT_FALSE(team.Close(1, first, ledger)) << "the old stream's end changes nothing";
  EXPECT_TRUE(team.connected(1));
  EXPECT_TRUE(team.Close(1, second, ledger));
  EXPECT_FALSE(team.connected(1));
  EXPECT_FALSE(ledger.active(1));
}

TEST_F(TeamMembershipTest, APushBuildingOnAnOlderWelcomeIsNotApplied) {
  team.Open(0, t0, ledger);
  const int64_t welcome = team.welcome(0);
  EXPECT_EQ(team.Push(0, welcome, t0 + milliseconds(10), ledger), PushFate::kApplied);
  EXPECT_EQ(team.Push(0, welcome - 1, t0 + milliseconds(20), ledger), PushFate::kStaleWelcome);
}

TEST_F(TeamMembershipTest, ASilentWorkerIsCountedOutAndItsNextPushTakesItBackWithAWelcome) {
  for (int w = 0; w < 3; ++w) team.Open(w, t0, ledger);
  // Workers 0 and 1 push every 20 ms; worker 2 goes silent after its first.
  for (int k = 1; k <= 40; ++k) {
    const TimePoint at = t0 + milliseconds(20 * k);
    for (int w = 0; w < 2; ++w) team.Push(w, team.welcome(w), at, ledger);
    if (k == 1) team.Push(2, team.welcome(2), at, ledger);
  }
  auto out = team.CountOutOverdue(t0 + milliseconds(800), ledger);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].worker, 2);
  EXPECT_GE(out[0].silent, milliseconds(760));
  EXPECT_FALSE(ledger.active(2));
  EXPECT_TRUE(team.CountOutOverdue(t0 + milliseconds(900), ledger).empty()) << "counted out once";

  const int64_t before = team.welcome(2);
  EXPECT_EQ(team.Push(2, before, t0 + seconds(5), ledger), PushFate::kCountedOut);
  EXPECT_TRUE(ledger.active(2));
  EXPECT_TRUE(team.owes_welcome(2));
  EXPECT_EQ(team.welcome(2), before + 1);
  EXPECT_EQ(team.Push(2, before, t0 + seconds(5), ledger), PushFate::kStaleWelcome)
      << "what it sent before its Welcome was computed on the old model";
  team.WelcomeSent(2);
  EXPECT_FALSE(team.owes_welcome(2));
}

// Whether a worker counted out had pushed on its stream: one counted out
// before its first (its Welcome on the wire past its deadline) joined and
// never left, and is no rejoin (found in review).
TEST_F(TeamMembershipTest, AWorkerCountedOutBeforeItsFirstPushIsToldFromOneThatHadPushed) {
  for (int w = 0; w < 2; ++w) team.Open(w, t0, ledger);
  EXPECT_FALSE(team.pushed(0));
  EXPECT_EQ(team.Push(0, team.welcome(0), t0 + milliseconds(20), ledger), PushFate::kApplied);
  EXPECT_TRUE(team.pushed(0));
  ASSERT_EQ(team.CountOutOverdue(t0 + seconds(11), ledger).size(), 2u);
  EXPECT_TRUE(team.pushed(0));
  EXPECT_FALSE(team.pushed(1)) << "its Welcome still on the wire";
  EXPECT_EQ(team.Push(1, team.welcome(1), t0 + seconds(12), ledger), PushFate::kCountedOut);
  EXPECT_FALSE(team.pushed(1)) << "taken back: its next push is its first on the Welcome it is owed";
  EXPECT_EQ(team.Push(1, team.welcome(1), t0 + seconds(13), ledger), PushFate::kApplied);
  EXPECT_TRUE(team.pushed(1));
  team.Open(1, t0 + seconds(14), ledger);
  EXPECT_FALSE(team.pushed(1)) << "a new stream";
}

TEST_F(TeamMembershipTest, OnALinkTooSlowForAMessageIn200MsTheDeadlineWaitsForOne) {
  // Every worker pushes every 20 ms (small pushes between steps), then each
  // starts a large one whose first 16 kB message takes what its link gives:
  // 0.26 s at 0.5 Mbit/s. Measured at 0.5 Mbit/s, worker 0's deadline waits
  // twice that; worker 1's link (50 Mbit/s) carries it in 2.6 ms, and its
  // deadline stays 200 ms; worker 2's (0.01 Mbit/s) would wait 26 s, and
  // waits 2: a link that slow is as good as down.
  for (int w = 0; w < 3; ++w) team.Open(w, t0, ledger);
  const double mbps[] = {0.5, 50, 0.01};
  TimePoint at = t0;
  for (int k = 1; k <= 40; ++k) {
    at = t0 + milliseconds(20 * k);
    for (int w = 0; w < 3; ++w) {
      team.Push(w, team.welcome(w), at, ledger);
      team.UplinkMeasured(w, mbps[w], 16 * 1024);
    }
  }
  auto out = team.CountOutOverdue(at + milliseconds(300), ledger);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].worker, 1);
  EXPECT_EQ(out[0].deadline, kDeadlineFloor);
  out = team.CountOutOverdue(at + milliseconds(600), ledger);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].worker, 0);
  EXPECT_NEAR(ToSeconds(out[0].deadline), 2 * 16 * 1024 * 8 / 0.5e6, 1e-6);
  out = team.CountOutOverdue(at + milliseconds(2100), ledger);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].worker, 2);
  EXPECT_EQ(out[0].deadline, kMostDeadlineFloor);
}

// Silence counts from the last thing heard: a push, a (re)join, a Welcome; a
// worker never seen is silent since the team's first came.
TEST_F(TeamMembershipTest, AWorkerIsSilentSinceItWasLastHeardFrom) {
  EXPECT_EQ(team.SilentFor(1, t0), Duration::zero()) << "no team yet";
  team.Open(0, t0, ledger);
  team.Open(1, t0, ledger);
  team.Push(1, team.welcome(1), t0 + seconds(2), ledger);
  EXPECT_EQ(team.SilentFor(1, t0 + seconds(14)), seconds(12));
  EXPECT_EQ(team.SilentFor(2, t0 + seconds(14)), seconds(14)) << "never seen";
  team.Welcomed(1, t0 + seconds(13));
  EXPECT_EQ(team.SilentFor(1, t0 + seconds(14)), seconds(1));
  EXPECT_TRUE(team.Close(1, team.stream(1), ledger));
  EXPECT_EQ(team.SilentFor(1, t0 + seconds(20)), seconds(7)) << "a closed stream is silent too";
}

TEST_F(TeamMembershipTest, AModelTakenOverSetsWhereEveryWorkerHereResumes) {
  team.Open(0, t0, ledger);
  team.Open(2, t0, ledger);
  team.ResumeAll(340);
  EXPECT_EQ(team.resume_after(0), 340);
  EXPECT_EQ(team.resume_after(2), 340);
  EXPECT_EQ(team.resume_after(1), 0) << "not here: it joins where the ledger has the team when it comes";
}

TEST_F(TeamMembershipTest, AWorkerJoinsAtTheTeamsIteration) {
  team.Open(0, t0, ledger);
  team.Open(1, t0, ledger);
  ledger.RecordIteration(0, 40);
  ledger.RecordIteration(1, 38);
  team.Open(2, t0 + seconds(30), ledger);
  EXPECT_EQ(team.resume_after(2), 38);
}

}  // namespace
}  // namespace edgetrain

#include "operator/controller/job_status.h"

#include <gtest/gtest.h>

#include "operator/controller/testing/cluster_fixtures.h"

namespace edgetrain::operator_ {
namespace {

using testing::APod;

TEST(JobStatusTest, AConditionKeepsItsTransitionTimeUntilItFlips) {
  Json status = Json::object();
  SetCondition(status, {"Running", false, "Starting", "0/3 pods running"}, "2026-11-22T10:00:00Z", 1);
  SetCondition(status, {"Running", false, "Starting", "2/3 pods running"}, "2026-11-22T10:00:05Z", 1);
  const Json* running = FindCondition(status, "Running");
  ASSERT_NE(running, nullptr);
  EXPECT_EQ((*running)["lastTransitionTime"], "2026-11-22T10:00:00Z") << "same status: the time stays";
  EXPECT_EQ((*running)["message"], "2/3 pods running") << "the message follows";
  SetCondition(status, {"Running", true, "Training", "every agent runs"}, "2026-11-22T10:00:09Z", 2);
  running = FindCondition(status, "Running");
  EXPECT_EQ((*running)["lastTransitionTime"], "2026-11-22T10:00:09Z");
  EXPECT_EQ((*running)["status"], "True");
  EXPECT_EQ((*running)["observedGeneration"], 2);
  EXPECT_TRUE(ConditionIs(status, "Running", true));
  EXPECT_FALSE(ConditionIs(status, "Placed", false)) << "absent is neither";
  EXPECT_EQ(status["conditions"].size(), 1u);
}

TEST(JobStatusTest, ProgressIsTheCoordinatorsWithoutWhatItDoesNotHaveYet) {
  const Json progress = {{"iteration", 1200}, {"samples", 76800}, {"loss", 0.41}, {"accuracy", nullptr},
                         {"energyJoules", 212.5}, {"etaSeconds", 65.4}, {"state", "training"}};
  const Json status = ProgressStatusOf(progress);
  EXPECT_EQ(status, (Json{{"iteration", 1200}, {"samples", 76800}, {"loss", 0.41}, {"energyJoules", 212.5},
                          {"eta", "1m5s"}}));
}

TEST(JobStatusTest, EachAgentIsShownWithItsNodeAndWorkersWithTheirLink) {
  const Json progress = {{"workers",
                          {{{"rank", 0}, {"batchSize", 64}, {"bandwidthMbps", 41.5}, {"stallFraction", 0.12}},
                           {{"rank", 1}, {"batchSize", 64}, {"bandwidthMbps", 0.0}, {"stallFraction", 0.5}}}}};
  const Json workers = WorkersStatusOf({APod("t-coordinator").OfJob("t").Coordinator().On("gateway"),
                                        APod("t-worker-0").OfJob("t").Worker(0).On("robot-1"),
                                        APod("t-worker-1").OfJob("t").Worker(1).On("robot-2")},
                                       progress);
  ASSERT_EQ(workers.size(), 3u);
  EXPECT_EQ(workers[0], (Json{{"name", "t-coordinator"}, {"node", "gateway"}, {"role", "coordinator"}}));
  EXPECT_EQ(workers[1], (Json{{"name", "t-worker-0"}, {"node", "robot-1"}, {"role", "worker"}, {"batchSize", 64},
                              {"bandwidthMbps", 41.5}, {"stallFraction", 0.12}}));
  EXPECT_FALSE(workers[2].contains("bandwidthMbps")) << "no estimate yet";
}

TEST(JobStatusTest, TheTeamIsStalledWhenItWaitsOnLinksAndDegradedWhenALinkFallsFarBelowPlan) {
  struct Case {
    const char* story;
    Json workers;
    bool stalled, degraded;
  } cases[] = {
      {"healthy", Json{{{"rank", 0}, {"stallFraction", 0.1}, {"bandwidthMbps", 30.0}}}, false, false},
      {"waiting on rows most of the time",
       Json{{{"rank", 0}, {"stallFraction", 0.7}, {"bandwidthMbps", 30.0}},
            {{"rank", 1}, {"stallFraction", 0.4}, {"bandwidthMbps", 30.0}}},
       true, false},
      {"a worker counted out does not count", Json{{{"rank", 0}, {"stallFraction", 0.1}},
                                                   {{"rank", 1}, {"stallFraction", 1.0}, {"active", false}}},
       false, false},
      {"a link at a third of its plan", Json{{{"rank", 1}, {"stallFraction", 0.1}, {"bandwidthMbps", 10.0}}}, false,
       true},
      {"a link not measured yet (pushes too small to time)",
       Json{{{"rank", 1}, {"stallFraction", 0.1}, {"bandwidthMbps", 0.0}}}, false, false},
  };
  for (const Case& c : cases) {
    const LinkHealth health = LinkHealthOf({{"workers", c.workers}}, {30.0, 30.0}, std::chrono::seconds(10));
    EXPECT_EQ(health.stalled, c.stalled) << c.story;
    EXPECT_EQ(health.degraded, c.degraded) << c.story;
  }
  EXPECT_EQ(LinkHealthOf({{"workers", {{{"rank", 1}, {"bandwidthMbps", 10.0}}}}}, {30.0, 30.0}, std::chrono::seconds(10))
                .degraded_message,
            "worker 1 at 10.0 Mbit/s of 30.0 planned");
}

// A worker out of the team and silent long enough has its link down: a deadline's blips of a
// fraction of a second are not, nor is a worker quarantined; with every worker
// out the team is stalled.
TEST(JobStatusTest, AWorkerOutOfTheTeamLongEnoughIsALinkDownAndNoneLeftIsStalled) {
  const auto after = std::chrono::seconds(10);
  const Json in = {{"rank", 0}, {"stallFraction", 0.1}, {"bandwidthMbps", 30.0}};
  const Json blip = {{"rank", 1}, {"active", false}, {"silentSeconds", 0.3}};
  const Json down = {{"rank", 1}, {"active", false}, {"silentSeconds", 12.0}};
  const Json quarantined = {{"rank", 1}, {"active", false}, {"silentSeconds", 60.0}, {"quarantined", "3 pushes"}};

  EXPECT_FALSE(LinkHealthOf({{"workers", {in, blip}}}, {30.0, 30.0}, after).degraded);
  EXPECT_FALSE(LinkHealthOf({{"workers", {in, quarantined}}}, {30.0, 30.0}, after).degraded)
      << "the Event says that one";
  LinkHealth one = LinkHealthOf({{"workers", {in, down}}}, {30.0, 30.0}, after);
  EXPECT_TRUE(one.degraded);
  EXPECT_STREQ(one.degraded_reason, "LinkDown");
  EXPECT_EQ(one.degraded_message, "worker 1 silent for 12 s: its link is down or it is gone");
  EXPECT_FALSE(one.stalled) << "the team goes on without it";

  const Json down0 = {{"rank", 0}, {"active", false}, {"silentSeconds", 11.0}};
  LinkHealth all = LinkHealthOf({{"workers", {down0, down}}}, {30.0, 30.0}, after);
  EXPECT_TRUE(all.stalled);
  EXPECT_EQ(all.stall_message, "every worker is out of the team, silent for up to 12 s: the team waits for their links");
  EXPECT_TRUE(all.degraded);
  EXPECT_EQ(all.degraded_message, "worker 0 silent for 11 s, worker 1 silent for 12 s: their links are down or they are gone");
}

}  // namespace
}  // namespace edgetrain::operator_

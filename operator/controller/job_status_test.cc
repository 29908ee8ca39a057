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
                           {{"rank", 1}, {"batchSize", 64}, {"bandwidthMbps", nullptr}, {"stallFraction", 0.5}}}}};
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
  };
  for (const Case& c : cases) {
    const LinkHealth health = LinkHealthOf({{"workers", c.workers}}, {30.0, 30.0});
    EXPECT_EQ(health.stalled, c.stalled) << c.story;
    EXPECT_EQ(health.degraded, c.degraded) << c.story;
  }
  EXPECT_EQ(LinkHealthOf({{"workers", {{{"rank", 1}, {"bandwidthMbps", 10.0}}}}}, {30.0, 30.0}).degraded_message,
            "worker 1 at 10.0 Mbit/s of 30.0 planned");
}

}  // namespace
}  // namespace edgetrain::operator_

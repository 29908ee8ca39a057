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

// kubectl get tj's Reason column: the condition that says why the job is
// in its phase (a new user's trial had only the phase to go by).
// What a worker was in at the last read (silent, quarantined) is kept while
// no read says otherwise, and not past the job's result, which says how it
// ended; its figures are kept either way.
TEST(JobStatusTest, AWorkersStateIsKeptFromTheLastReadButNotIntoTheResult) {
  const Json stored = Json::parse(R"([{"name": "w-0", "samples": 640, "silentSince": "2026-11-22T10:00:00Z",
                                       "quarantined": "its rows were not finite"}])");
  Json unread = Json::parse(R"([{"name": "w-0"}])");
  KeepWhatWasRead(unread, stored);
  EXPECT_EQ(unread[0].value("silentSince", ""), "2026-11-22T10:00:00Z");
  EXPECT_EQ(unread[0].value("quarantined", ""), "its rows were not finite");
  Json ended = Json::parse(R"([{"name": "w-0"}])");
  KeepWhatWasRead(ended, stored, /*with_states=*/false);
  EXPECT_EQ(ended[0].value("samples", 0), 640);
  EXPECT_FALSE(ended[0].contains("silentSince"));
  EXPECT_FALSE(ended[0].contains("quarantined"));
}

TEST(JobStatusTest, ThePhasesReasonIsTheConditionThatExplainsIt) {
  const std::string now = "2026-11-30T10:00:00Z";
  Json status = {{"phase", "Pending"}};
  SetCondition(status, {"Placed", false, "Unschedulable", "0/5 nodes fit: insufficient memory"}, now, 1);
  SetPhaseReason(status);
  EXPECT_EQ(status["reason"], "Unschedulable");
  EXPECT_EQ(status["message"], "0/5 nodes fit: insufficient memory");

  // An invalid spec says more than not being placed.
  SetCondition(status, {"Invalid", true, "NoMatchingNode", "spec.placement.nodeSelector matches none"}, now, 1);
  SetPhaseReason(status);
  EXPECT_EQ(status["reason"], "NoMatchingNode");

  status["phase"] = "Running";
  SetCondition(status, {"Invalid", false, "Valid", ""}, now, 1);
  SetCondition(status, {"Placed", true, "Placed", "on robot-1, robot-2"}, now, 1);
  SetCondition(status, {"Running", true, "Training", "every agent runs"}, now, 1);
  SetCondition(status, {"BandwidthDegraded", false, "LinksHealthy", ""}, now, 1);
  SetPhaseReason(status);
  EXPECT_EQ(status["reason"], "Training");
  // An agent restarted in place: the pod runs, the phase stays Running.
  SetCondition(status, {"Running", false, "Restarting", "restarting in place: team-coordinator: CrashLoopBackOff"},
               now, 1);
  SetPhaseReason(status);
  EXPECT_EQ(status["reason"], "Restarting");
  SetCondition(status, {"Running", true, "Training", "every agent runs"}, now, 1);
  SetCondition(status, {"BandwidthDegraded", true, "LinkDown", "worker 1 silent 12 s"}, now, 1);
  SetPhaseReason(status);
  EXPECT_EQ(status["reason"], "LinkDown") << "a link down says more than training";
  EXPECT_EQ(status["message"], "worker 1 silent 12 s");
  SetCondition(status, {"Stalled", true, "WaitingOnLinks", "no step for 31 s"}, now, 1);
  SetPhaseReason(status);
  EXPECT_EQ(status["reason"], "WaitingOnLinks") << "a team that does not step, before a link that fails";

  status["phase"] = "Recovering";
  SetCondition(status, {"Running", false, "Recovering", "worker 1: its node was lost; replaced: robot-3"}, now, 1);
  SetPhaseReason(status);
  EXPECT_EQ(status["reason"], "Recovering");
  EXPECT_EQ(status["message"], "worker 1: its node was lost; replaced: robot-3");

  status["phase"] = "Succeeded";
  SetCondition(status, {"Complete", true, "TargetReached", "accuracy 0.9139 held"}, now, 1);
  SetPhaseReason(status);
  EXPECT_EQ(status["reason"], "TargetReached");

  status["phase"] = "Failed";
  SetCondition(status, {"Failed", true, "RecoveriesExhausted", "3 losses, 2 allowed"}, now, 1);
  SetPhaseReason(status);
  EXPECT_EQ(status["reason"], "RecoveriesExhausted");

  // No condition says more than the phase: nothing is shown, nothing stale kept.
  Json bare = {{"phase", "Pending"}, {"reason", "Unschedulable"}, {"message", "old"}};
  SetPhaseReason(bare);
  EXPECT_FALSE(bare.contains("reason"));
  EXPECT_FALSE(bare.contains("message"));
}

TEST(JobStatusTest, ProgressIsTheCoordinatorsWithoutWhatItDoesNotHaveYet) {
  const Json progress = {{"iteration", 1200}, {"samples", 76800}, {"loss", 0.41}, {"accuracy", nullptr},
                         {"energyJoules", 212.5}, {"etaSeconds", 65.4}, {"state", "training"}};
  const Json status = ProgressStatusOf(progress);
  EXPECT_EQ(status, (Json{{"iteration", 1200}, {"samples", 76800}, {"loss", 0.41}, {"energyJoules", 212.5},
                          {"eta", "1m5s"}}));
  // To four places, as kubectl shows it (a new user saw 0.9111111111111111).
  EXPECT_EQ(ProgressStatusOf(Json{{"accuracy", 0.9111111111111111}})["accuracy"], 0.9111);
  EXPECT_EQ(ProgressStatusOf(Json{{"energyJoules", 999.4560457439998}})["energyJoules"], 999.5);
  EXPECT_EQ(ProgressStatusOf(Json{{"loss", 0.31234567}})["loss"], 0.3123);
  // A small loss keeps its digits: 0.00077 had read 0.
  EXPECT_DOUBLE_EQ(ProgressStatusOf(Json{{"loss", 0.000771234}})["loss"].get<double>(), 0.0007712);
  EXPECT_DOUBLE_EQ(ProgressStatusOf(Json{{"loss", 12.34567}})["loss"].get<double>(), 12.35);
  EXPECT_EQ(ProgressStatusOf(Json{{"loss", 0.0}})["loss"], 0.0);
  // Why training stopped, once it has: absent while it trains.
  EXPECT_EQ(ProgressStatusOf(Json{{"stopReason", "target"}})["stopReason"], "target");
  EXPECT_FALSE(ProgressStatusOf(Json{{"stopReason", ""}}).contains("stopReason"));
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
  // A stall to four places, as the accuracy (kubectl describe showed 0.7389800848370992).
  const Json long_stall = {{"workers", {{{"rank", 0}, {"stallFraction", 0.7389800848370992}}}}};
  EXPECT_EQ(WorkersStatusOf({APod("t-worker-0").OfJob("t").Worker(0).On("robot-1")}, long_stall)[0]["stallFraction"],
            0.739);
}

// A worker lost and not replaced stays listed, by its plan's name and node,
// with what it trained: the workers' samples add up to the job's (a new
// user's team listed worker 0 alone, 426,112 samples of 430,912).
TEST(JobStatusTest, AWorkerWhosePodIsGoneStaysListedWithWhatItTrained) {
  const Json progress = {{"samples", 430912},
                         {"workers", {{{"rank", 0}, {"samples", 426112}}, {{"rank", 1}, {"samples", 4800}}}}};
  const std::map<int, GoneWorker> plan = {{0, {"t-worker-0", "robot-1"}}, {1, {"t-worker-1-g2", "spot-2"}}};
  const Json workers = WorkersStatusOf({APod("t-coordinator").OfJob("t").Coordinator().On("gateway"),
                                        APod("t-worker-0").OfJob("t").Worker(0).On("robot-1")},
                                       progress, std::nullopt, std::chrono::seconds(10), plan);
  ASSERT_EQ(workers.size(), 3u) << workers.dump();
  EXPECT_EQ(workers[1]["name"], "t-worker-0");
  EXPECT_EQ(workers[2], (Json{{"name", "t-worker-1-g2"}, {"node", "spot-2"}, {"role", "worker"}, {"samples", 4800}}));
  // Without the plan's names (a pipeline's devices), none is made up.
  EXPECT_EQ(WorkersStatusOf({APod("t-worker-0").OfJob("t").Worker(0).On("robot-1")}, progress).size(), 1u);
}

// A worker's samples, injected ones and its stream's counts are in the
// status, as edgetrain run's tables give them (a new user found none).
TEST(JobStatusTest, AWorkerOnAStreamShowsWhatArrivedAndWhatItTrainedOn) {
  const Json progress = {{"workers",
                          {{{"rank", 0},
                            {"samples", 5399},
                            {"injectedSamples", 120},
                            {"stream", {{"arrived", 5420}, {"dropped", 0}, {"backlog", 21}, {"waitSeconds", 0.1}}}}}}};
  const Json workers = WorkersStatusOf({APod("t-worker-0").OfJob("t").Worker(0).On("robot-1")}, progress);
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0]["samples"], 5399);
  EXPECT_EQ(workers[0]["injectedSamples"], 120);
  EXPECT_EQ(workers[0]["stream"], (Json{{"arrived", 5420}, {"dropped", 0}, {"backlog", 21}}));
}

// Stalled is a team that has not stepped for a while, not a slow one: a
// team waiting on its links most of the time that still steps is not; one
// that has not stepped names whom it waits on. A link is degraded far below
// its plan, not when it is merely not measured yet.
TEST(JobStatusTest, TheTeamIsStalledWhenItStopsSteppingAndDegradedWhenALinkFallsFarBelowPlan) {
  const LinkRules rules{std::chrono::seconds(10), std::chrono::seconds(30)};
  struct Case {
    const char* story;
    Json progress;
    bool stalled, degraded;
  } cases[] = {
      {"healthy", {{"secondsSinceStep", 0.1}, {"workers", {{{"rank", 0}, {"bandwidthMbps", 30.0}}}}}, false, false},
      {"waiting on rows most of the time, and stepping",
       {{"secondsSinceStep", 0.4},
        {"workers", {{{"rank", 0}, {"stallFraction", 0.9}, {"bandwidthMbps", 30.0}, {"holdingTeam", true}}}}},
       false, false},
      {"no step for 31 s", {{"secondsSinceStep", 31.0}, {"workers", {{{"rank", 0}, {"bandwidthMbps", 30.0}}}}}, true,
       false},
      {"a link at a third of its plan", {{"workers", {{{"rank", 1}, {"bandwidthMbps", 10.0}}}}}, false, true},
      {"a link not measured yet (pushes too small to time)", {{"workers", {{{"rank", 1}, {"bandwidthMbps", 0.0}}}}},
       false, false},
  };
  for (const Case& c : cases) {
    const LinkHealth health = LinkHealthOf(c.progress, {30.0, 30.0}, rules);
    EXPECT_EQ(health.stalled, c.stalled) << c.story;
    EXPECT_EQ(health.degraded, c.degraded) << c.story;
  }
  EXPECT_EQ(LinkHealthOf({{"workers", {{{"rank", 1}, {"bandwidthMbps", 10.0}}}}}, {30.0, 30.0}, rules).degraded_message,
            "worker 1 at 10.0 Mbit/s of 30.0 planned");
  const Json held = {{"secondsSinceStep", 45.0},
                     {"workers",
                      {{{"rank", 0}, {"bandwidthMbps", 30.0}},
                       {{"rank", 1}, {"bandwidthMbps", 0.4}, {"holdingTeam", true}},
                       {{"rank", 2}, {"holdingTeam", true}}}}};
  EXPECT_EQ(LinkHealthOf(held, {30.0, 30.0, 30.0}, rules).stall_message,
            "no step for 45 s; the team waits on worker 1 (its link at 0.4 Mbit/s), worker 2 (its link not measured)");
  EXPECT_EQ(LinkHealthOf({{"secondsSinceStep", 45.0}, {"workers", Json::array()}}, {}, rules).stall_message,
            "no step for 45 s; no worker holds the team");
}

// A replacement's coordinator reports the silence of the worker it replaced
// until it joins: no worker has been silent longer than its pod has existed
// (LinkDown, "worker 1 silent for 36 s", followed every recovery: new users'
// trials).
TEST(JobStatusTest, NoWorkerIsSilentLongerThanItsPodHasExisted) {
  const LinkRules rules{std::chrono::seconds(10), std::chrono::seconds(30)};
  const Json replaced = {{"workers",
                          {{{"rank", 0}, {"bandwidthMbps", 30.0}},
                           {{"rank", 1}, {"active", false}, {"silentSeconds", 36.0}}}}};
  EXPECT_TRUE(LinkHealthOf(replaced, {30.0, 30.0}, rules).degraded) << "as the coordinator says it";
  EXPECT_FALSE(LinkHealthOf(replaced, {30.0, 30.0}, rules, {{0, 60.0}, {1, 2.0}}).degraded) << "its pod is 2 s old";
  const LinkHealth silent_since = LinkHealthOf(replaced, {30.0, 30.0}, rules, {{0, 60.0}, {1, 12.0}});
  EXPECT_EQ(silent_since.degraded_message, "worker 1 silent for 12 s: its link is down or it is gone")
      << "a replacement silent since it was made";
}

// A worker out of the team and silent long enough has its link down: a
// deadline's blips of a fraction of a second are not, nor is a worker
// quarantined; with every worker out the team stops stepping, and is stalled
// waiting on them.
TEST(JobStatusTest, AWorkerOutOfTheTeamLongEnoughIsALinkDownAndNoneLeftIsStalled) {
  const LinkRules rules{std::chrono::seconds(10), std::chrono::seconds(30)};
  const Json in = {{"rank", 0}, {"bandwidthMbps", 30.0}};
  const Json blip = {{"rank", 1}, {"active", false}, {"silentSeconds", 0.3}};
  const Json down = {{"rank", 1}, {"active", false}, {"silentSeconds", 12.0}};
  const Json quarantined = {{"rank", 1}, {"active", false}, {"silentSeconds", 60.0}, {"quarantined", "3 pushes"}};
  auto of = [&](Json workers, double since_step) {
    return LinkHealthOf({{"secondsSinceStep", since_step}, {"workers", workers}}, {30.0, 30.0}, rules);
  };

  EXPECT_FALSE(of({in, blip}, 0.1).degraded);
  EXPECT_FALSE(of({in, quarantined}, 0.1).degraded) << "the Event says that one";
  LinkHealth one = of({in, down}, 0.1);
  EXPECT_TRUE(one.degraded);
  EXPECT_STREQ(one.degraded_reason, "LinkDown");
  EXPECT_EQ(one.degraded_message, "worker 1 silent for 12 s: its link is down or it is gone");
  EXPECT_FALSE(one.stalled) << "the team goes on without it";
  // Still in the team, not yet counted out, and as silent: as surely down.
  const Json in_but_silent = {{"rank", 1}, {"active", true}, {"silentSeconds", 11.0}, {"holdingTeam", true}};
  const Json in_and_heard = {{"rank", 1}, {"active", true}, {"silentSeconds", 0.02}, {"bandwidthMbps", 30.0}};
  EXPECT_FALSE(of({in, in_and_heard}, 0.1).degraded);
  LinkHealth quiet = of({in, in_but_silent}, 11.0);
  EXPECT_STREQ(quiet.degraded_reason, "LinkDown");
  EXPECT_EQ(quiet.degraded_message, "worker 1 silent for 11 s: its link is down or it is gone");

  const Json down0 = {{"rank", 0}, {"active", false}, {"silentSeconds", 31.0}};
  const Json down1 = {{"rank", 1}, {"active", false}, {"silentSeconds", 32.0}};
  LinkHealth all = of({down0, down1}, 31.0);
  EXPECT_TRUE(all.stalled);
  EXPECT_EQ(all.stall_message,
            "no step for 31 s; the team waits on worker 0 (out of the team, silent for 31 s), worker 1 (out of the "
            "team, silent for 32 s)");
  EXPECT_TRUE(all.degraded);
  EXPECT_EQ(all.degraded_message, "worker 0 silent for 31 s, worker 1 silent for 32 s: their links are down or they are gone");
}

}  // namespace
}  // namespace edgetrain::operator_

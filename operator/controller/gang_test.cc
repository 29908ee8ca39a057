#include "operator/controller/gang.h"

#include <gtest/gtest.h>

#include "api/job_conditions.h"
#include "operator/controller/testing/cluster_fixtures.h"

namespace edgetrain::operator_ {
namespace {

using testing::APod;

const std::vector<std::string> kTeam = {"team-coordinator", "team-worker-0", "team-worker-1"};

// Running is not ready: a team of 53 agents on 2 cores read "every agent
// runs" with every pod 0/1 ready (a new user's trial).
TEST(GangTest, AgentsRunningButNotReadyAreCounted) {
  const std::vector<Json> pods = {APod("team-coordinator").OfJob("team").Coordinator().Running(),
                                  APod("team-worker-0").OfJob("team").Worker(0).Running().NotReady(),
                                  APod("team-worker-1").OfJob("team").Worker(1).Running().NotReady()};
  const Gang gang = ObserveGang(pods, kTeam, GangRules{5, ""});
  EXPECT_EQ(gang.state, GangState::kRunning);
  EXPECT_EQ(gang.running, 3);
  EXPECT_EQ(gang.not_ready, 2);
}

TEST(GangTest, TheGangIsWhatItsPodsShow) {
  const Json succeeded = {{"state", "succeeded"}, {"reachedTarget", true}, {"accuracy", 0.91}};
  struct Case {
    const char* story;
    std::vector<Json> pods;
    GangState state;
    int running;
  } cases[] = {
      {"no pod yet", {}, GangState::kAbsent, 0},
      {"the coordinator runs, the workers are still coming",
       {APod("team-coordinator").OfJob("team").Coordinator().Running(), APod("team-worker-0").OfJob("team").Worker(0)},
       GangState::kStarting, 1},
      {"every pod runs",
       {APod("team-coordinator").OfJob("team").Coordinator().Running(),
        APod("team-worker-0").OfJob("team").Worker(0).Running(), APod("team-worker-1").OfJob("team").Worker(1).Running()},
       GangState::kRunning, 3},
      {"a worker that was told to stop has ended well and still counts",
       {APod("team-coordinator").OfJob("team").Coordinator().Running(),
        APod("team-worker-0").OfJob("team").Worker(0).Ended(0), APod("team-worker-1").OfJob("team").Worker(1).Running()},
       GangState::kRunning, 3},
      {"the coordinator ended well: the job is done",
       {APod("team-coordinator").OfJob("team").Coordinator().Ended(0, succeeded)}, GangState::kSucceeded, 0},
      {"the coordinator refused its input (exit 2): restarting cannot help",
       {APod("team-coordinator").OfJob("team").Coordinator().Restarted(1, 2)}, GangState::kFailed, 0},
      {"the coordinator crashed more often than maxRecoveries allows",
       {APod("team-coordinator").OfJob("team").Coordinator().Restarted(6, 1)}, GangState::kFailed, 0},
      {"the coordinator crashed once and runs again",
       {APod("team-coordinator").OfJob("team").Coordinator().Restarted(1, 1),
        APod("team-worker-0").OfJob("team").Worker(0).Running(), APod("team-worker-1").OfJob("team").Worker(1).Running()},
       GangState::kRunning, 3},
      {"pods being deleted are not the gang's",
       {APod("team-coordinator").OfJob("team").Coordinator().Running().BeingDeleted()}, GangState::kAbsent, 0},
  };
  for (const Case& c : cases) {
    const Gang gang = ObserveGang(c.pods, kTeam, GangRules{5, ""});
    EXPECT_EQ(gang.state, c.state) << c.story;
    EXPECT_EQ(gang.running, c.running) << c.story;
    EXPECT_EQ(gang.expected, 3) << c.story;
  }
}

// A pipeline's head that failed after losing devices that are not replaced
// would wait for them at every restart: its first failure ends the job, with
// the head's own words.
TEST(GangTest, AFailureRestartingCannotMendIsTheJobsAtOnce) {
  const Json failed = {{"state", "failed"}, {"error", "stage 1 lost its only device at step 812 (rank 0)"}};
  GangRules rules{5, "stage device 0 is lost for good (its pod is gone), and pipeline devices are not replaced"};
  const Gang once = ObserveGang({APod("team-coordinator").OfJob("team").Coordinator().Restarted(1, 1, failed)}, kTeam,
                                rules);
  EXPECT_EQ(once.state, GangState::kFailed);
  EXPECT_EQ(once.failure,
            "the coordinator failed, exit code 1 (Error): stage 1 lost its only device at step 812 (rank 0); restarting it "
            "cannot help: stage device 0 is lost for good (its pod is gone), and pipeline devices are not replaced");
  // Without that, a crash is restarted, as any coordinator's.
  EXPECT_NE(ObserveGang({APod("team-coordinator").OfJob("team").Coordinator().Restarted(1, 1, failed)}, kTeam,
                        GangRules{5, ""})
                .state,
            GangState::kFailed);
  // And a head running on is not failed for what it might do.
  EXPECT_NE(ObserveGang({APod("team-coordinator").OfJob("team").Coordinator().Running()}, kTeam, rules).state,
            GangState::kFailed);
}

// A termination message is the image's to write: an error that is not text
// is said as its JSON (its get<std::string>() had thrown, and ended the
// operator: found in review), and a state that is not text is no result.
TEST(GangTest, AResultOfUnexpectedTypesIsSaidAsWrittenNotThrown) {
  const Json odd = {{"state", "failed"}, {"error", {{"code", 1}}}};
  GangRules rules{5, "nothing else can mend it"};
  const Gang once = ObserveGang({APod("team-coordinator").OfJob("team").Coordinator().Restarted(1, 1, odd)}, kTeam,
                                rules);
  EXPECT_EQ(once.state, GangState::kFailed);
  EXPECT_NE(once.failure.find(R"(: {"code":1})"), std::string::npos) << once.failure;
  const Json no_state = {{"state", 3}, {"error", "x"}};
  const Gang crashed = ObserveGang({APod("team-coordinator").OfJob("team").Coordinator().Restarted(1, 1, no_state)},
                                   kTeam, rules);
  EXPECT_EQ(crashed.failure.find(": x"), std::string::npos) << "not a result, so no error of one: " << crashed.failure;
}

// Every worker refused its input (exit 2: its model computes NaN) and
// crash-loops: restarting them cannot help, and the job fails saying why. On
// a cluster they crash-looped while the job was shown running.
TEST(GangTest, EveryWorkerRefusingItsInputFailsTheJob) {
  const Json nan = {{"state", "failed"}, {"error", "the training loss is NaN at step 1: the model diverged"}};
  const Gang refused = ObserveGang({APod("team-coordinator").OfJob("team").Coordinator().Running(),
                                    APod("team-worker-0").OfJob("team").Worker(0).CrashLooping(2, 2, nan),
                                    APod("team-worker-1").OfJob("team").Worker(1).Ended(2, nan)},
                                   kTeam, GangRules{5, ""});
  EXPECT_EQ(refused.state, GangState::kFailed);
  EXPECT_EQ(refused.failure_reason, api::reason::kWorkersRefused);
  EXPECT_NE(refused.failure.find("every worker refused its input (exit 2)"), std::string::npos) << refused.failure;
  EXPECT_NE(refused.failure.find("team-worker-0 exit code 2 (Error): the training loss is NaN at step 1"),
            std::string::npos)
      << refused.failure;
  // One worker still running (its part is sound), or running again: the team trains on.
  for (const Json& other : {Json(APod("team-worker-1").OfJob("team").Worker(1).Running()),
                            Json(APod("team-worker-1").OfJob("team").Worker(1).Restarted(1, 2, nan))}) {
    const Gang on = ObserveGang({APod("team-coordinator").OfJob("team").Coordinator().Running(),
                                 APod("team-worker-0").OfJob("team").Worker(0).CrashLooping(2, 2, nan), other},
                                kTeam, GangRules{5, ""});
    EXPECT_NE(on.state, GangState::kFailed) << other.dump();
  }
}

// A pod that cannot start says why where the kubelet does; the ordinary
// start says nothing.
TEST(GangTest, WhyAPodWaitsIsReadFromItsContainer) {
  Json pulling = APod("team-worker-0").OfJob("team").Worker(0);
  pulling["status"] = {{"phase", "Pending"},
                       {"containerStatuses",
                        {{{"name", "agent"},
                          {"state", {{"waiting", {{"reason", "ImagePullBackOff"},
                                                  {"message", "image nosuch/image:1 not found"}}}}}}}}};
  Json creating = APod("team-worker-1").OfJob("team").Worker(1);
  creating["status"] = {{"phase", "Pending"},
                        {"containerStatuses", {{{"name", "agent"}, {"state", {{"waiting", {{"reason", "ContainerCreating"}}}}}}}}};
  const Gang gang = ObserveGang({APod("team-coordinator").OfJob("team").Coordinator().Running(), pulling, creating},
                                kTeam, {});
  EXPECT_EQ(gang.state, GangState::kStarting);
  EXPECT_EQ(gang.held, (std::vector<std::string>{"team-worker-0: ImagePullBackOff (image nosuch/image:1 not found)"}));
}

// A pod that runs while its agent is restarted in place (its process
// killed, the kubelet backing off) still counts as running, and says why.
TEST(GangTest, ARunningPodWhoseAgentIsRestartedSaysSo) {
  Json looping = APod("team-coordinator").OfJob("team").Coordinator().Running();
  looping["status"]["containerStatuses"] = {
      {{"name", "agent"},
       {"restartCount", 1},
       {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}, {"message", "back-off 10s restarting"}}}}}}};
  const Gang gang = ObserveGang({looping, APod("team-worker-0").OfJob("team").Worker(0).Running(),
                                 APod("team-worker-1").OfJob("team").Worker(1).Running()},
                                kTeam, {});
  EXPECT_EQ(gang.state, GangState::kRunning);
  EXPECT_EQ(gang.restarting,
            (std::vector<std::string>{"team-coordinator: CrashLoopBackOff (back-off 10s restarting)"}));
}

TEST(GangTest, HowItEndedIsReadFromTheCoordinatorsTerminationMessage) {
  const Json result = {{"state", "succeeded"}, {"reachedTarget", true}, {"accuracy", 0.91}, {"modelPath", "/m/model.pt"}};
  Json ended = APod("team-coordinator").OfJob("team").Coordinator().Ended(0, result);
  ended["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = "2026-11-29T11:47:35Z";
  Gang done = ObserveGang({ended}, kTeam, {});
  ASSERT_TRUE(done.result.has_value());
  EXPECT_EQ((*done.result)["modelPath"], "/m/model.pt");
  EXPECT_EQ(done.ended_at, "2026-11-29T11:47:35Z") << "the job's completionTime: when it ended, not when seen";

  Gang refused = ObserveGang({APod("team-coordinator").OfJob("team").Coordinator().Restarted(1, 2)}, kTeam, {});
  EXPECT_EQ(refused.failure_reason, "CoordinatorFailed");
  EXPECT_NE(refused.failure.find("refused its input: exit code 2"), std::string::npos) << refused.failure;

  Gang crashing = ObserveGang({APod("team-coordinator").OfJob("team").Coordinator().Restarted(6, 1)}, kTeam, {});
  EXPECT_NE(crashing.failure.find("failed 6 times, more than spec.faultTolerance.maxRecoveries (5)"), std::string::npos)
      << crashing.failure;
}

TEST(GangTest, PodsThePlanDoesNotNameAreStaleAndMissingOnesAreNamed) {
  // Generation 2 replaced worker 1's slot: its pod is team-worker-1-g2 now.
  const std::vector<std::string> replanned = {"team-coordinator", "team-worker-0", "team-worker-1-g2"};
  Gang gang = ObserveGang({APod("team-coordinator").OfJob("team").Coordinator().Running(),
                           APod("team-worker-1").OfJob("team").Worker(1).Running(),
                           APod("team-worker-7").OfJob("team").Worker(7).Running()},
                          replanned, {});
  EXPECT_EQ(gang.stale, (std::vector<std::string>{"team-worker-1", "team-worker-7"}));
  EXPECT_EQ(gang.missing, (std::vector<std::string>{"team-worker-0", "team-worker-1-g2"}));
  EXPECT_EQ(gang.coordinator_ip, "10.0.0.9");
}

TEST(GangTest, OnlyAGangThatIsNotRunningTimesOut) {
  const TimePoint placed{};
  const Duration timeout = std::chrono::minutes(5);
  Gang starting;
  starting.state = GangState::kStarting;
  EXPECT_FALSE(GangTimedOut(starting, placed, placed + std::chrono::minutes(4), timeout));
  EXPECT_TRUE(GangTimedOut(starting, placed, placed + std::chrono::minutes(5), timeout));
  Gang running;
  running.state = GangState::kRunning;
  EXPECT_FALSE(GangTimedOut(running, placed, placed + std::chrono::hours(1), timeout));
}

}  // namespace
}  // namespace edgetrain::operator_

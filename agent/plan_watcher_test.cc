#include "agent/plan_watcher.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "agent/storage/atomic_file.h"
#include "core/deterministic_clock.h"

namespace edgetrain::agent {
namespace {

using std::chrono::seconds;

std::string PlanText(int64_t generation) {
  JobPlan plan;
  plan.job = "watched";
  plan.generation = generation;
  plan.spec_json = R"({
    "model": {"name": "mlp", "hidden": [8]},
    "data": {"dataset": "digits", "batchSize": 32, "partition": {"kind": "iid"}},
    "parallelism": {"mode": "dataParallel", "workers": 2},
    "sync": {"granularity": "row", "policy": "rog", "stalenessBound": 4, "compression": "none"},
    "optimizer": {"name": "sgd", "learningRate": 0.1, "weightDecay": 0},
    "budget": {"epochs": 3, "energyJoules": 0},
    "evaluation": {"everyIterations": 50},
    "faultTolerance": {"replicateEvery": 100, "replay": true, "checkpointEvery": 0, "maxRecoveries": 5,
                       "nodeLossGrace": "120s"},
    "seed": 7})";
  return EncodeJobPlan(plan);
}

TEST(PlanWatcherTest, HandsOverEachNewerGenerationOnceAndIgnoresTheRest) {
  const std::string path = ::testing::TempDir() + "/watched-plan.json";
  ASSERT_TRUE(WriteFileAtomically(path, PlanText(1)).ok());
  DeterministicClock clock;
  const TimePoint start = clock.Now();
  std::vector<std::pair<int64_t, Duration>> adopted;
  std::ostringstream log;
  clock.Run("test", [&] {
    PlanWatcher watcher(path, 1, clock, seconds(1), [&](const JobPlan& plan) {
      adopted.emplace_back(plan.generation, clock.Now() - start);
      return Status::Ok();
    }, log);
    clock.SleepFor(seconds(3) + std::chrono::milliseconds(500));
    ASSERT_TRUE(WriteFileAtomically(path, PlanText(2)).ok());
    clock.SleepFor(seconds(3));
    ASSERT_TRUE(WriteFileAtomically(path, "{\"job\": ").ok());  // someone wrote it in place, half-way
    clock.SleepFor(seconds(2));
    ASSERT_TRUE(WriteFileAtomically(path, PlanText(1)).ok());  // an older one: not a re-plan
    clock.SleepFor(seconds(2));
    ASSERT_TRUE(WriteFileAtomically(path, PlanText(3)).ok());
    clock.SleepFor(seconds(2));
  });
  ASSERT_EQ(adopted.size(), 2u) << log.str();
  EXPECT_EQ(adopted[0].first, 2);
  EXPECT_EQ(adopted[0].second, seconds(4)) << "seen at the next look, a second at most after it changed";
  EXPECT_EQ(adopted[1].first, 3);
  // Reported once, though it lay there for two looks.
  const std::string said = log.str();
  const size_t first = said.find("watched-plan.json: ");
  EXPECT_NE(first, std::string::npos) << "the half-written file is reported";
  EXPECT_EQ(said.find("watched-plan.json: ", first + 1), std::string::npos) << said;
}

TEST(PlanWatcherTest, APlanTheTeamRefusesIsReportedAndTriedNoMore) {
  const std::string path = ::testing::TempDir() + "/refused-plan.json";
  ASSERT_TRUE(WriteFileAtomically(path, PlanText(1)).ok());
  DeterministicClock clock;
  int tries = 0;
  std::ostringstream log;
  clock.Run("test", [&] {
    PlanWatcher watcher(path, 1, clock, seconds(1), [&](const JobPlan&) {
      ++tries;
      return FailedPreconditionError("changing a team's size needs a restart");
    }, log);
    ASSERT_TRUE(WriteFileAtomically(path, PlanText(2)).ok());
    clock.SleepFor(seconds(5));
  });
  EXPECT_EQ(tries, 1);
  EXPECT_NE(log.str().find("plan generation 2 not adopted: changing a team's size needs a restart"),
            std::string::npos)
      << log.str();
}

}  // namespace
}  // namespace edgetrain::agent

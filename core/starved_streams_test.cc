// A stream too slow for a batch's minimum holds the rounds that wait for its
// worker; said before the run, where the policy makes the team wait.
#include "core/starved_streams.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

JobSpec ATeamOnStreams(int workers) {
  JobSpec spec;
  spec.parallelism.workers = workers;
  spec.data.batch_size = 32;
  spec.data.stream = StreamSpec{};
  return spec;
}

std::vector<std::optional<StreamRate>> Rates(std::vector<double> per_second) {
  std::vector<std::optional<StreamRate>> out;
  for (double r : per_second) out.emplace_back(StreamRate::Constant(r));
  return out;
}

TEST(StarvedStreamsTest, AStreamTooSlowForABatchsLeastHoldsATeamWhoseQuorumIsEveryWorker) {
  const JobSpec spec = ATeamOnStreams(3);  // deadline, quorum 0.75 of 3: all 3
  const auto warnings = StarvedStreamWarnings(spec, Rates({0.0001, 60, 180}), 20);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "worker 0's stream brings its first batch's least of 4 samples (spec.data.stream.minBatchSize) only after "
            "11h6m40s, past the run's 20s, and under spec.sync.policy deadline a quorum of 0.75 of 3 workers is all "
            "3, so no round closes without it (a lower spec.sync.quorum closes rounds without it): the team trains on "
            "nothing until then");
}

TEST(StarvedStreamsTest, NothingIsSaidWhereTheRoundsGoOnWithoutItOrItKeepsUp) {
  JobSpec spec = ATeamOnStreams(3);
  spec.sync.quorum = 0.5;  // 2 of 3 close a round
  EXPECT_TRUE(StarvedStreamWarnings(spec, Rates({0.0001, 60, 180}), 20).empty());
  spec.sync.quorum.reset();
  EXPECT_TRUE(StarvedStreamWarnings(spec, Rates({1, 60, 180}), 20).empty()) << "4 samples in 4 s";
  spec.parallelism.workers = 1;
  EXPECT_TRUE(StarvedStreamWarnings(spec, Rates({0.0001}), 20).empty()) << "a job of one waits for itself";
}

TEST(StarvedStreamsTest, EveryPolicyThatWaitsForTheSlowestSaysHow) {
  JobSpec spec = ATeamOnStreams(4);
  spec.sync.policy = SyncPolicy::kBsp;
  auto warnings = StarvedStreamWarnings(spec, Rates({60, 0.001, 60, 60}), 30);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("worker 1's stream"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("every round waits for every worker's gradient"), std::string::npos) << warnings[0];
  spec.sync.policy = SyncPolicy::kRog;
  warnings = StarvedStreamWarnings(spec, Rates({60, 0.001, 60, 60}), 30);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("under spec.sync.policy rog the others go at most spec.sync.stalenessBound iterations "
                             "ahead of it: then the team trains on nothing until then"),
            std::string::npos)
      << warnings[0];
  // Deadline of 4 at 0.75 is 3: the rounds close without the one.
  spec.sync.policy = SyncPolicy::kDeadline;
  EXPECT_TRUE(StarvedStreamWarnings(spec, Rates({60, 0.001, 60, 60}), 30).empty());
  // A trace that opens with a pause of a minute.
  auto paused = StreamRate::Parse("seconds,samples_per_s\n0,0\n60,50\n", "pause.csv");
  ASSERT_TRUE(paused.ok()) << paused.status().ToString();
  std::vector<std::optional<StreamRate>> rates = Rates({60, 60, 60});
  rates.emplace_back(*paused);
  warnings = StarvedStreamWarnings(spec, rates, 30);
  EXPECT_TRUE(warnings.empty()) << "quorum 3 of 4 leaves it out";
  spec.sync.quorum = 1;
  warnings = StarvedStreamWarnings(spec, rates, 30);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("worker 3's stream brings its first batch's least of 4 samples"), std::string::npos)
      << warnings[0];
}

TEST(StarvedStreamsTest, ARunWithoutAWallClockIsToldOfAnHourAndARateOfNearlyNothingIsSaidSo) {
  const JobSpec spec = ATeamOnStreams(2);
  auto warnings = StarvedStreamWarnings(spec, Rates({1e-12, 60}), std::nullopt);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("only after more than 100000h, past an hour (the run has no wall clock)"),
            std::string::npos)
      << warnings[0];
  EXPECT_TRUE(StarvedStreamWarnings(spec, Rates({0.01, 60}), std::nullopt).empty()) << "4 samples in 400 s";
  warnings = StarvedStreamWarnings(spec, Rates({0, 60}), 10);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("worker 0's stream never brings its first batch's least of 4 samples", 0), 0u)
      << warnings[0];
}

}  // namespace
}  // namespace edgetrain

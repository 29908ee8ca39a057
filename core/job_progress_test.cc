#include "core/job_progress.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace edgetrain {
namespace {

TEST(JobProgressTest, RoundTripsIncludingNulls) {
  JobProgress p;
  p.state = JobState::kTraining;
  p.iteration = 120;
  p.samples = 7680;
  p.epoch = 1;
  p.loss = 0.42;
  p.samples_per_second = 5000;
  p.elapsed_s = 1.5;
  p.fraction = 0.25;
  p.workers.push_back({0, 64, 7680, 48.5, 0.1});
  p.workers[0].downlink_mbps = 37.25;

  auto back = DecodeJobProgress(EncodeJobProgress(p));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->state, JobState::kTraining);
  EXPECT_EQ(back->iteration, 120);
  EXPECT_EQ(back->samples, 7680);
  EXPECT_FALSE(back->accuracy.has_value());
  EXPECT_FALSE(back->eta_s.has_value());
  EXPECT_FALSE(back->energy_joules.has_value());
  EXPECT_FALSE(back->replays.has_value()) << "a team's has none";
  ASSERT_EQ(back->workers.size(), 1u);
  EXPECT_EQ(back->workers[0].batch_size, 64);
  EXPECT_DOUBLE_EQ(back->workers[0].bandwidth_mbps, 48.5);
  EXPECT_DOUBLE_EQ(back->workers[0].downlink_mbps, 37.25);
  EXPECT_EQ(back->workers[0].quarantined, "");
  EXPECT_EQ(EncodeJobProgress(p).find("quarantined"), std::string::npos) << "said only of a worker that is";
  p.workers[0].quarantined = "3 pushes refused, the last not_finite";
  EXPECT_EQ(DecodeJobProgress(EncodeJobProgress(p))->workers[0].quarantined, "3 pushes refused, the last not_finite");
  p.workers[0].quarantined.clear();
  EXPECT_EQ(EncodeJobProgress(p).find("refusedPushes"), std::string::npos) << "said only of a worker refused";
  p.workers[0].refused_pushes = 2;
  p.workers[0].last_refusal = "too_big: 9000000 bytes";
  const StatusOr<JobProgress> refused = DecodeJobProgress(EncodeJobProgress(p));
  EXPECT_EQ(refused->workers[0].refused_pushes, 2);
  EXPECT_EQ(refused->workers[0].last_refusal, "too_big: 9000000 bytes");
  p.workers[0].refused_pushes = 0;
  p.workers[0].last_refusal.clear();
  // A pipeline's: the layers each device holds, and what its recoveries cost.
  EXPECT_EQ(EncodeJobProgress(p).find("layers"), std::string::npos) << "a team's worker holds the whole model";
  p.workers[0].layers = std::pair{2, 5};
  p.replays = JobProgress::Replays{3, 12, 0.5, 1.25, 1, 40, 2, 1, 1, 48000, 4.25e-4};
  p.replays->in_flight_micro_batches = 5;
  p.replays->hung = 1;
  p.replays->stragglers = 2;
  p.replays->left_out = 1;
  p.replays->redealt = 3;
  p.replays->covered = 3;
  p.replays->covered_shares = 11;
  p.replays->replayed_steps = 2;
  p.evaluation_s = 3.5;
  back = DecodeJobProgress(EncodeJobProgress(p));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->workers[0].layers, (std::pair{2, 5}));
  EXPECT_FALSE(back->workers[0].pace.has_value()) << "not learned yet";
  p.workers[0].pace = 1.19;
  EXPECT_DOUBLE_EQ(*DecodeJobProgress(EncodeJobProgress(p))->workers[0].pace, 1.19);
  p.workers[0].pace.reset();
  ASSERT_TRUE(back->replays.has_value());
  EXPECT_EQ(back->replays->restored_stages, 1);
  EXPECT_EQ(back->replays->steps_lost, 40);
  EXPECT_EQ(back->replays->repartitions, 2);
  EXPECT_EQ(back->replays->replanned_micro_batches, 1);
  EXPECT_DOUBLE_EQ(back->replays->replanned_samples_per_s, 48000);
  EXPECT_DOUBLE_EQ(back->replays->replanned_orders_s, 4.25e-4);
  {
    // No re-plan yet: its figures are null, not a prediction of 0 samples/s.
    JobProgress none = p;
    none.replays->replanned_micro_batches = 0;
    none.replays->replanned_samples_per_s = 0;
    const nlohmann::json said = nlohmann::json::parse(EncodeJobProgress(none));
    EXPECT_TRUE(said["replays"]["predictedSamplesPerSecond"].is_null()) << said["replays"];
    EXPECT_TRUE(said["replays"]["replannedMicroBatches"].is_null());
    EXPECT_TRUE(said["replays"]["ordersSeconds"].is_null());
    auto read = DecodeJobProgress(EncodeJobProgress(none));
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(read->replays->replanned_samples_per_s, 0);
  }
  EXPECT_EQ(back->replays->in_flight_micro_batches, 5);
  EXPECT_EQ(back->replays->hung, 1);
  EXPECT_EQ(back->replays->stragglers, 2);
  EXPECT_EQ(back->replays->left_out, 1);
  EXPECT_EQ(back->replays->redealt, 3);
  EXPECT_EQ(back->replays->covered, 3);
  EXPECT_EQ(back->replays->covered_shares, 11);
  EXPECT_EQ(back->replays->replayed_steps, 2);
  EXPECT_DOUBLE_EQ(back->evaluation_s, 3.5);
  EXPECT_TRUE(back->replays->replanned_paces.empty());
  p.replays->replanned_paces = {{0, 1.93}, {2, 1.1}};
  EXPECT_EQ(DecodeJobProgress(EncodeJobProgress(p))->replays->replanned_paces, p.replays->replanned_paces);
  p.workers[0].layers.reset();
  p.replays.reset();
  // A stream from a folder: the files it left out.
  p.workers[0].stream = StreamProgress{100, 0, 4, 1.5};
  EXPECT_EQ(EncodeJobProgress(p).find("refusedFiles"), std::string::npos) << "said only of a worker that left one out";
  p.workers[0].stream->refused_files = 2;
  p.workers[0].stream->last_refused = "b.csv:1: expected 65 values, found 2";
  back = DecodeJobProgress(EncodeJobProgress(p));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->workers[0].stream->refused_files, 2);
  EXPECT_EQ(back->workers[0].stream->last_refused, "b.csv:1: expected 65 values, found 2");
  p.workers[0].stream.reset();

  p.state = JobState::kSucceeded;
  p.accuracy = 0.86;
  p.eta_s = 0;
  p.reached_target = true;
  p.stop_reason = StopReason::kTarget;
  back = DecodeJobProgress(EncodeJobProgress(p));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->accuracy, 0.86);
  EXPECT_TRUE(back->reached_target);
  EXPECT_EQ(back->stop_reason, StopReason::kTarget);
  EXPECT_EQ(NameOf(back->state), "succeeded");
}

TEST(JobProgressTest, AFailureIsAReasonAndAMessageNotAStringToParse) {
  JobProgress p;
  p.state = JobState::kFailed;
  p.stop_reason = StopReason::kFailed;
  p.error = "cannot write /models/m.pt: disk full";
  p.accuracy = 0.5;
  p.evaluated_iteration = 300;
  p.resumed_from_iteration = 200;
  p.replays = JobProgress::Replays{2, 16, 0.25, 0.5};
  auto back = DecodeJobProgress(EncodeJobProgress(p));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->stop_reason, StopReason::kFailed);
  EXPECT_EQ(back->error, "cannot write /models/m.pt: disk full");
  EXPECT_EQ(back->evaluated_iteration, 300);
  EXPECT_EQ(back->resumed_from_iteration, 200);
  ASSERT_TRUE(back->replays.has_value());
  EXPECT_EQ(back->replays->count, 2);
  EXPECT_EQ(back->replays->micro_batches, 16);
  EXPECT_DOUBLE_EQ(back->replays->last_recovery_s, 0.25);
  EXPECT_DOUBLE_EQ(back->replays->recovery_s, 0.5);
  EXPECT_EQ(NameOf(StopReason::kWallClock), "wallClock");
  EXPECT_EQ(StopReasonNamed("wallClock"), StopReason::kWallClock);
  EXPECT_FALSE(StopReasonNamed("tired").has_value());
}

TEST(JobProgressTest, AnErrorQuotingBytesThatAreNotUtf8IsEncodedNotThrown) {
  JobProgress p;
  p.state = JobState::kFailed;
  p.error = "/data/caf\xe9.csv: no such file";  // a Latin-1 file name
  auto back = DecodeJobProgress(EncodeJobProgress(p));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->error, "/data/caf\xEF\xBF\xBD.csv: no such file") << "the byte replaced by U+FFFD";
}

TEST(JobProgressTest, RefusesUnknownStates) {
  auto p = DecodeJobProgress(R"({"state": "dancing"})");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("unknown state \"dancing\""), std::string::npos);
}

}  // namespace
}  // namespace edgetrain

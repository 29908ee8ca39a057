#include "operator/controller/event_recorder.h"

#include <sstream>

#include <gtest/gtest.h>

#include "operator/kube/testing/fake_kube_client.h"

namespace edgetrain::operator_ {
namespace {

using Json = nlohmann::json;

Json AJob(const std::string& name, const std::string& uid) {
  return {{"apiVersion", "edgetrain.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", name}, {"namespace", "site"}, {"uid", uid}}}};
}

class EventRecorderTest : public ::testing::Test {
 protected:
  kube::testing::FakeKubeClient api_;
  kube::WallTime now_ = kube::WallTime(std::chrono::seconds(1'796'000'000));
  std::ostringstream out_;
  LineLog log_{out_};
  EventRecorder events_{api_, [this] { return now_; }, log_};
};

// Said alike again, an event counts on the one written, as client-go's
// recorder does: `kubectl describe` then shows "(x3 over 2m)", not three
// lines (a job waiting for room said Unschedulable once for each change of
// room and back: a new user's trial).
TEST_F(EventRecorderTest, AnEventSaidAgainCountsOnTheOneWritten) {
  const Json job = AJob("team", "uid-1");
  events_.Record(job, "Warning", "Unschedulable", "0/4 nodes fit");
  now_ += std::chrono::minutes(1);
  events_.Record(job, "Warning", "Unschedulable", "0/4 nodes fit");
  now_ += std::chrono::minutes(1);
  events_.Record(job, "Warning", "Unschedulable", "0/4 nodes fit");
  const std::vector<Json> written = api_.All(kube::kEvents);
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written[0]["count"], 3);
  EXPECT_EQ(written[0]["firstTimestamp"], kube::FormatKubeTime(now_ - std::chrono::minutes(2)));
  EXPECT_EQ(written[0]["lastTimestamp"], kube::FormatKubeTime(now_));
  EXPECT_EQ(api_.Writes("create Event"), 1);
  EXPECT_EQ(api_.Writes("patch Event"), 2);
}

// Other words, another type, another job, or the same name made again
// (another uid): each a story of its own.
TEST_F(EventRecorderTest, WhatIsNotAlikeIsWrittenAnew) {
  events_.Record(AJob("team", "uid-1"), "Warning", "Unschedulable", "0/4 nodes fit");
  events_.Record(AJob("team", "uid-1"), "Warning", "Unschedulable", "0/5 nodes fit");
  events_.Record(AJob("team", "uid-1"), "Normal", "Unschedulable", "0/5 nodes fit");
  events_.Record(AJob("other", "uid-2"), "Warning", "Unschedulable", "0/4 nodes fit");
  events_.Record(AJob("team", "uid-3"), "Warning", "Unschedulable", "0/4 nodes fit");
  const std::vector<Json> written = api_.All(kube::kEvents);
  ASSERT_EQ(written.size(), 5u);
  for (const Json& e : written) EXPECT_EQ(e["count"], 1) << e;
}

// Events expire (an hour, by default): one counted on that is gone is
// written anew, and counted on from then.
TEST_F(EventRecorderTest, AnEventGoneIsWrittenAnew) {
  const Json job = AJob("team", "uid-1");
  events_.Record(job, "Warning", "WorkerLost", "worker 2's node went NotReady");
  ASSERT_TRUE(api_.Delete(kube::kEvents, "site", api_.All(kube::kEvents)[0]["metadata"]["name"]).ok());
  events_.Record(job, "Warning", "WorkerLost", "worker 2's node went NotReady");
  events_.Record(job, "Warning", "WorkerLost", "worker 2's node went NotReady");
  const std::vector<Json> written = api_.All(kube::kEvents);
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written[0]["count"], 2);
}

// Only so many are remembered: the least recently said is forgotten first,
// and said again, written anew.
TEST_F(EventRecorderTest, TheLeastRecentlySaidIsForgottenFirst) {
  const Json job = AJob("team", "uid-1");
  events_.Record(job, "Normal", "Placed", "first");
  for (size_t i = 0; i < EventRecorder::kRemembered; ++i) {
    events_.Record(job, "Normal", "Placed", "message " + std::to_string(i));
  }
  events_.Record(job, "Normal", "Placed", "message 0");  // remembered: counted on
  events_.Record(job, "Normal", "Placed", "first");      // forgotten: written anew
  EXPECT_EQ(api_.Writes("create Event"), static_cast<int>(EventRecorder::kRemembered) + 2);
  EXPECT_EQ(api_.Writes("patch Event"), 1);
}

}  // namespace
}  // namespace edgetrain::operator_

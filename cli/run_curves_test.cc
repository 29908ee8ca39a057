// A run's curves: what progress.jsonl keeps, and report.png drawn from it by the
// real plotter beside the binaries.
#include "cli/run_curves.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "cli/child_process_testing.h"
#include "core/job_progress.h"

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

const std::string kPlotter = std::string(EDGETRAIN_BINARY_DIR) + "/bin/edgetrain-plot-run";

std::string Snapshot(double elapsed_s, JobState state = JobState::kTraining,
                     std::optional<int64_t> resumed_from = std::nullopt) {
  JobProgress p;
  p.state = state;
  p.elapsed_s = elapsed_s;
  p.iteration = static_cast<int64_t>(elapsed_s * 10);
  p.samples = p.iteration * 64;
  p.loss = 2.0 / (1.0 + elapsed_s);
  p.accuracy = 0.5 + elapsed_s / 1000;
  p.evaluated_iteration = p.iteration / 20 * 20;
  p.energy_joules = 5 * elapsed_s;
  p.resumed_from_iteration = resumed_from;
  for (int rank = 0; rank < 2; ++rank) {
    WorkerProgress w;
    w.rank = rank;
    w.samples = p.samples / 2;
    w.bandwidth_mbps = 20 + 10 * rank;
    w.downlink_mbps = 25;
    w.stall_s = 0.3 * elapsed_s;
    w.wall_s = elapsed_s;
    w.bytes_sent = static_cast<int64_t>(1e5 * elapsed_s);
    w.bytes_received = static_cast<int64_t>(2e5 * elapsed_s);
    p.workers.push_back(w);
  }
  return EncodeJobProgress(p);
}

// A snapshot as the runner's sink hands it on: served, and decoded.
Status Keep(RunCurves& curves, double t, const std::string& body) {
  StatusOr<JobProgress> progress = DecodeJobProgress(body);
  EXPECT_TRUE(progress.ok());
  return curves.Record(t, *progress, body);
}

int Lines(const fs::path& file) {
  std::ifstream in(file);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

TEST(RunCurvesTest, KeepsASnapshotASecondAndEveryChangeOfState) {
  fs::path dir = FreshTestDir("curves-thinned");
  RunCurves curves(dir / "out");
  EXPECT_TRUE(curves.empty());
  // Polled every 0.2 s for 100 s of training, then the final word.
  for (int i = 0; i <= 500; ++i) ASSERT_TRUE(Keep(curves, i / 5.0, Snapshot(i / 5.0)).ok());
  ASSERT_TRUE(Keep(curves, 100.1, Snapshot(100.1, JobState::kSucceeded)).ok());
  EXPECT_FALSE(curves.empty());
  EXPECT_EQ(Lines(curves.history_path()), 101 + 1);
}

TEST(RunCurvesTest, ALongRunKeepsAboutSixHundredSnapshotsADoubling) {
  fs::path dir = FreshTestDir("curves-long");
  RunCurves curves(dir / "out");
  // A day polled every 2 s would be 43,200 snapshots. What is kept depends on
  // the state and elapsed time only, and the body is written as it comes: a
  // bare one spares encoding and decoding 43,200 of them.
  JobProgress p;
  p.state = JobState::kTraining;
  p.samples = 64;  // trained: kept from the first
  for (double t = 0; t <= 86400; t += 2) {
    p.elapsed_s = t;
    ASSERT_TRUE(curves.Record(t, p, "{}").ok());
  }
  const int kept = Lines(curves.history_path());
  // At most 300 in the first 10 minutes (polled every 2 s), then 600 a
  // doubling, ln(144) = 5.0 of them: 3,282; fewer where an interval rounds up
  // to the next poll.
  EXPECT_GT(kept, 2500);
  EXPECT_LE(kept, 3282);
}

TEST(RunCurvesTest, AResumedRunDrawsOnFromTheEarlierOneAndAFreshOneStartsOver) {
  fs::path dir = FreshTestDir("curves-resumed");
  {
    RunCurves first(dir / "out");
    for (int t = 0; t < 10; ++t) ASSERT_TRUE(Keep(first, t, Snapshot(t)).ok());
  }
  {
    RunCurves resumed(dir / "out");
    // Polled before it trains, the coordinator does not say yet that it resumed.
    ASSERT_TRUE(Keep(resumed, 0, Snapshot(0, JobState::kStarting)).ok());
    for (int t = 10; t < 15; ++t) ASSERT_TRUE(Keep(resumed, t - 10, Snapshot(t, JobState::kTraining, 100)).ok());
  }
  EXPECT_EQ(Lines(dir / "out" / "progress.jsonl"), 15);
  {
    // A fresh run that took no step (a stream that brought nothing) leaves
    // the history, as it leaves the model and the picture drawn from it.
    RunCurves idle(dir / "out");
    for (int t = 0; t < 3; ++t) ASSERT_TRUE(Keep(idle, t, Snapshot(0)).ok());
    ASSERT_TRUE(Keep(idle, 3, Snapshot(0, JobState::kSucceeded)).ok());
    EXPECT_TRUE(idle.empty());
  }
  EXPECT_EQ(Lines(dir / "out" / "progress.jsonl"), 15);
  {
    // One that trains starts it over, with its snapshots from before its first sample.
    RunCurves fresh(dir / "out");
    ASSERT_TRUE(Keep(fresh, 0, Snapshot(0)).ok());
    EXPECT_TRUE(fresh.empty());
    ASSERT_TRUE(Keep(fresh, 1, Snapshot(1)).ok());
    EXPECT_FALSE(fresh.empty());
  }
  EXPECT_EQ(Lines(dir / "out" / "progress.jsonl"), 2);
}

TEST(RunCurvesTest, TheRealPlotterDrawsAPicture) {
  fs::path dir = FreshTestDir("curves-drawn");
  RunCurves curves(dir / "out");
  for (int t = 0; t <= 30; ++t) ASSERT_TRUE(Keep(curves, t, Snapshot(t)).ok());
  Status drawn = DrawRunCurves(curves, kPlotter, "two workers", {"robot-1", "robot-2"}, seconds(120));
  ASSERT_TRUE(drawn.ok()) << drawn.ToString();
  std::ifstream png(curves.picture_path(), std::ios::binary);
  std::string header(8, '\0');
  png.read(header.data(), 8);
  EXPECT_EQ(header, "\x89PNG\r\n\x1a\n");
  EXPECT_GT(fs::file_size(curves.picture_path()), 20'000u) << "six panels with curves, not an empty canvas";
}

TEST(RunCurvesTest, WhatCannotBeDrawnIsSaid) {
  fs::path dir = FreshTestDir("curves-undrawn");
  RunCurves nothing(dir / "none");
  EXPECT_EQ(DrawRunCurves(nothing, kPlotter, "", {}, seconds(60)).message(), "no progress was recorded");

  RunCurves curves(dir / "out");
  ASSERT_TRUE(Keep(curves, 1, Snapshot(1)).ok());
  Status missing = DrawRunCurves(curves, (dir / "absent-plotter").string(), "", {}, seconds(60));
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);

  // A line a crash cut short is drawn around; a history of nothing else is none.
  std::ofstream(curves.history_path(), std::ios::app) << "{\"t\": 2, \"progr\n";
  std::string said;
  Status torn = DrawRunCurves(curves, kPlotter, "", {}, seconds(60), &said);
  EXPECT_TRUE(torn.ok()) << torn.ToString();
  EXPECT_EQ(said, curves.history_path().string() +
                      ": line 2 is not a progress line (one a crash cut short, most likely), and is left out");
  fs::remove(curves.picture_path());
  std::ofstream(curves.history_path(), std::ios::trunc) << "not json\n";
  Status garbled = DrawRunCurves(curves, kPlotter, "", {}, seconds(60));
  EXPECT_FALSE(garbled.ok());
  EXPECT_NE(garbled.message().find("progress.jsonl:1: not a progress line"), std::string::npos) << garbled.ToString();
  EXPECT_FALSE(fs::exists(curves.picture_path()));
}

// A resumed run's first snapshot goes on a line of its own after one the
// run before was killed while writing (a user's trial: every later picture
// failed on the line the two made).
// A run killed after its last checkpoint had written snapshots of the
// iterations the resumed run trains again: they go, as its evaluations do.
TEST(RunCurvesTest, AResumedRunDropsTheSnapshotsPastItsCheckpoint) {
  fs::path dir = FreshTestDir("curves-past");
  {
    RunCurves killed(dir / "out");
    for (int t = 0; t < 10; ++t) ASSERT_TRUE(Keep(killed, t, Snapshot(t)).ok());  // iterations 0-90
  }
  {
    RunCurves resumed(dir / "out");
    for (int t = 6; t < 12; ++t) ASSERT_TRUE(Keep(resumed, t - 6, Snapshot(t, JobState::kTraining, 55)).ok());
  }
  std::ifstream in(dir / "out" / "progress.jsonl");
  std::vector<int64_t> iterations;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("\"progress\": ");
    ASSERT_NE(at, std::string::npos) << line;
    StatusOr<JobProgress> p = DecodeJobProgress(line.substr(at + 12, line.size() - at - 13));
    ASSERT_TRUE(p.ok()) << line;
    iterations.push_back(p->iteration);
  }
  EXPECT_EQ(iterations, (std::vector<int64_t>{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110}))
      << "the killed run's 60-90 dropped, the resumed run's from 60 on kept";
}

TEST(RunCurvesTest, AResumedRunWritesOnAfterALineACrashCutShort) {
  fs::path dir = FreshTestDir("curves-torn");
  {
    RunCurves first(dir / "out");
    ASSERT_TRUE(Keep(first, 1, Snapshot(1)).ok());
  }
  {
    std::ofstream(dir / "out" / "progress.jsonl", std::ios::app) << "{\"t\": 2, \"progr";  // no line's end
  }
  RunCurves resumed(dir / "out");
  ASSERT_TRUE(Keep(resumed, 3, Snapshot(3, JobState::kTraining, /*resumed_from=*/10)).ok());
  std::ifstream in(dir / "out" / "progress.jsonl");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "{\"t\": 2, \"progr");
  EXPECT_EQ(lines[2].rfind("{\"t\": 3, \"progress\": ", 0), 0u) << lines[2];
}

}  // namespace
}  // namespace edgetrain::cli

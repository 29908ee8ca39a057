#include "cli/progress_display.h"

#include <cmath>
#include <limits>
#include <sstream>

#include <gtest/gtest.h>

namespace edgetrain::cli {
namespace {

JobProgress Sample() {
  JobProgress p;
  p.state = JobState::kTraining;
  p.iteration = 1200;
  p.loss = 0.41234;
  p.accuracy = 0.8531;
  p.samples_per_second = 5820.4;
  p.elapsed_s = 12;
  p.eta_s = 18;
  p.fraction = 0.4;
  return p;
}

TEST(ProgressDisplayTest, FormatsBarAndLine) {
  EXPECT_EQ(FormatProgressBar(Sample(), 10),
            "[####------]  40% it 1,200 loss 0.412 acc 0.853 5,820 samples/s 00:12 ETA 00:18");
  EXPECT_EQ(FormatProgressLine(Sample()), "it 1,200 (40%) loss 0.412 acc 0.853 5,820 samples/s elapsed 00:12 eta 00:18");
  JobProgress early = Sample();
  early.accuracy.reset();
  early.eta_s.reset();
  EXPECT_EQ(FormatProgressLine(early), "it 1,200 (40%) loss 0.412 5,820 samples/s elapsed 00:12");
}

// Before the first step there is neither a loss nor a rate; a team of streams
// that has trained on samples short of a full batch from each has stepped
// (a new user's trial saw "it 0 ... no step yet 406 samples/s").
TEST(ProgressDisplayTest, SaysNoStepYetOnlyBeforeAnySampleAndThenNoRate) {
  JobProgress p = Sample();
  p.iteration = 0;
  p.samples = 0;
  p.accuracy.reset();
  p.eta_s.reset();
  EXPECT_EQ(FormatProgressLine(p), "it 0 (40%) no step yet elapsed 00:12");
  p.samples = 20;
  EXPECT_EQ(FormatProgressLine(p), "it 0 (40%) loss 0.412 5,820 samples/s elapsed 00:12");
  // Resumed at its checkpoint's iteration, before a loss of its own (a new user's trial saw "loss 0.000").
  p.iteration = 419;
  p.loss = 0;
  EXPECT_EQ(FormatProgressLine(p), "it 419 (40%) loss - 5,820 samples/s elapsed 00:12");
}

// A team on streams says what has arrived, what waits in its buffers and
// what they dropped (a user's trial: the line said nothing of streams).
TEST(ProgressDisplayTest, SaysWhatAStreamsTeamHasReceived) {
  JobProgress p = Sample();
  p.eta_s.reset();
  p.workers.resize(2);
  p.workers[0].rank = 0;
  p.workers[1].rank = 1;
  p.workers[0].stream = StreamProgress{.arrived = 1200, .backlog = 0};
  p.workers[1].stream = StreamProgress{.arrived = 300, .backlog = 0};
  EXPECT_EQ(FormatProgressLine(p), "it 1,200 (40%) loss 0.412 acc 0.853 5,820 samples/s arrived 1,500 elapsed 00:12");
  p.workers[1].stream->backlog = 40;
  p.workers[0].stream->dropped = 7;
  EXPECT_EQ(FormatProgressLine(p),
            "it 1,200 (40%) loss 0.412 acc 0.853 5,820 samples/s arrived 1,500 (40 buffered, 7 dropped) elapsed 00:12");
}

// Training over, the job finishing (its workers told to stop over a link in
// an outage takes seconds): said, in place of an eta of 0.
TEST(ProgressDisplayTest, SaysTheJobIsFinishingOnceTrainingHasStopped) {
  JobProgress p = Sample();
  p.stop_reason = StopReason::kWallClock;
  p.eta_s = 0.0097;
  EXPECT_EQ(FormatProgressLine(p), "it 1,200 (40%) loss 0.412 acc 0.853 5,820 samples/s elapsed 00:12 - budget spent: "
                                   "finishing");
  p.stop_reason = StopReason::kTarget;
  EXPECT_NE(FormatProgressBar(p, 10).find("00:12 - target reached: finishing"), std::string::npos);
}

// Within the first second, a rate is a few batches over a sliver of time.
TEST(ProgressDisplayTest, ShowsNoRateBeforeASecondOfTraining) {
  JobProgress p = Sample();
  p.elapsed_s = 0.002;
  p.samples_per_second = 13236;
  p.eta_s.reset();
  EXPECT_EQ(FormatProgressLine(p), "it 1,200 (40%) loss 0.412 acc 0.853 elapsed 00:00");
}

// An accuracy older than the iteration shown says which model it was of.
TEST(ProgressDisplayTest, SaysWhichIterationTheAccuracyIsOf) {
  JobProgress p = Sample();
  p.evaluated_iteration = 1000;
  EXPECT_EQ(FormatProgressLine(p),
            "it 1,200 (40%) loss 0.412 acc 0.853 (it 1,000) 5,820 samples/s elapsed 00:12 eta 00:18");
  p.evaluated_iteration = 1200;
  EXPECT_EQ(FormatProgressLine(p), "it 1,200 (40%) loss 0.412 acc 0.853 5,820 samples/s elapsed 00:12 eta 00:18");
}

TEST(ProgressDisplayTest, SaysWhileTheTestSetIsEvaluated) {
  JobProgress p = Sample();
  p.evaluating = true;
  EXPECT_EQ(FormatProgressLine(p),
            "it 1,200 (40%) loss 0.412 acc 0.853 5,820 samples/s elapsed 00:12 - evaluating on the test set");
}

TEST(ProgressDisplayTest, NamesTheWorkersTheTeamWaitsOn) {
  JobProgress p = Sample();
  p.workers.resize(3);
  for (int r = 0; r < 3; ++r) p.workers[r].rank = r;
  p.workers[1].holding_team = true;
  p.workers[2].holding_team = true;
  EXPECT_EQ(FormatProgressLine(p, {"robot-1", "robot-2", "robot-3"}),
            "it 1,200 (40%) loss 0.412 acc 0.853 5,820 samples/s waiting on robot-2, robot-3 elapsed 00:12 eta 00:18");
  EXPECT_NE(FormatProgressLine(p).find("waiting on worker 1, worker 2"), std::string::npos);
  // One still in the team but silent for seconds (its link out): its figures are that old.
  p.workers[2].silent_s = 6.4;
  p.workers[1].silent_s = 0.02;
  EXPECT_NE(FormatProgressLine(p, {"robot-1", "robot-2", "robot-3"})
                .find("waiting on robot-2, robot-3 (silent 6 s) elapsed"),
            std::string::npos)
      << FormatProgressLine(p, {"robot-1", "robot-2", "robot-3"});
  p.workers[2].holding_team = false;
  EXPECT_NE(FormatProgressLine(p, {"robot-1", "robot-2", "robot-3"}).find("waiting on robot-2; robot-3 silent 6 s elapsed"),
            std::string::npos)
      << FormatProgressLine(p, {"robot-1", "robot-2", "robot-3"});
  p.stop_reason = StopReason::kWallClock;  // finishing: every worker falls silent
  EXPECT_EQ(FormatProgressLine(p, {"robot-1", "robot-2", "robot-3"}).find("silent"), std::string::npos);
  p.stop_reason.reset();
  p.workers[2].active = false;  // counted out: the table below the run says so
  EXPECT_EQ(FormatProgressLine(p, {"robot-1", "robot-2", "robot-3"}).find("silent"), std::string::npos);
}

TEST(ProgressDisplayTest, TerminalRedrawsOneLine) {
  std::ostringstream out;
  SimulatedClock clock;
  ProgressDisplay display(out, /*terminal=*/true, clock);
  display.Show(Sample());
  display.Show(Sample());
  display.Finish();
  std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\r'), 2);
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1);
  EXPECT_NE(s.find("\033[K"), std::string::npos);
}

// Within the terminal's width, a column spare: a line that wrapped left a
// row behind at each redraw (found in review). The bar narrows, or goes, by
// the terminal's width, and the measures are cut before the time and what
// the job is doing, which a cut at the line's end took first (a new user's trial).
TEST(ProgressDisplayTest, TerminalKeepsTheLineWithinItsWidth) {
  SimulatedClock clock;
  auto shown = [&](int columns, const JobProgress& p = Sample()) {
    std::ostringstream out;
    ProgressDisplay display(out, /*terminal=*/true, clock, std::chrono::seconds(5), {}, [=] { return columns; });
    display.Show(p);
    std::string s = out.str();
    EXPECT_EQ(s.rfind("\r", 0), 0u);
    EXPECT_EQ(s.substr(s.size() - 3), "\033[K");
    return s.substr(1, s.size() - 4);
  };
  EXPECT_EQ(shown(0), FormatProgressBar(Sample(), 24)) << "width unknown: whole";
  EXPECT_EQ(shown(200), FormatProgressBar(Sample(), 24));
  EXPECT_EQ(shown(80), "[####------]  40% it 1,200 loss 0.412 acc 0.853 5,820 samples/s 00:12 ETA 00:18");
  EXPECT_EQ(shown(70), " 40% it 1,200 loss 0.412 acc 0.853 5,820 samples/s 00:12 ETA 00:18");
  EXPECT_EQ(shown(50), " 40% it 1,200 loss 0.412~ 00:12 ETA 00:18") << "no name without its figure";
  EXPECT_EQ(shown(40), " 40% it 1,200 00:12 ETA 00:18") << "no measure fits whole";
  JobProgress waiting = Sample();
  WorkerProgress held;
  held.rank = 1;
  held.active = true;
  held.holding_team = true;
  waiting.workers = {held};
  EXPECT_EQ(shown(70, waiting), " 40% it 1,200 loss 0.412 acc 0.853 5,820 samples/s~ 00:12 ETA 00:18")
      << "a unit after its figure stays";
  EXPECT_EQ(shown(62), " 40% it 1,200 loss 0.412 acc 0.853~ 00:12 ETA 00:18") << "no rate without its unit";
  JobProgress finishing = Sample();
  finishing.stop_reason = StopReason::kEpochs;
  EXPECT_EQ(shown(50, finishing), " 40% it 1,200 00:12 - budget spent: finishing");
  EXPECT_EQ(shown(60, finishing), " 40% it 1,200 loss 0.412~ 00:12 - budget spent: finishing");
  // With no room for a measure, the measures go, not the time and what the
  // job does (they were kept whole and the tail cut: found in review).
  JobProgress evaluating = Sample();
  evaluating.stop_reason = StopReason::kEpochs;
  evaluating.evaluating = true;
  const std::string final = shown(63, evaluating);
  EXPECT_EQ(final.find("loss"), std::string::npos) << final;
  EXPECT_NE(final.find("00:12 - budget spent: evaluating the final model"), std::string::npos) << final;
  EXPECT_LE(final.size(), 62u) << final;
  EXPECT_EQ(FitToColumns("r\xc3\xb6" "bot-2 waits", 4), "r\xc3\xb6" "bo") << "code points, not bytes";
}

// Figures no coordinator of ours sends, shown without harm: a fraction above
// 1 threw from the bar and ended the run; 1e300 samples/s read -0.
TEST(ProgressDisplayTest, FiguresOutOfRangeAreShownWithoutHarm) {
  JobProgress p = Sample();
  p.fraction = 1.1;
  EXPECT_EQ(FormatProgressBar(p, 10),
            "[##########] 100% it 1,200 loss 0.412 acc 0.853 5,820 samples/s 00:12 ETA 00:18");
  p.fraction = std::nan("");
  p.samples_per_second = 1e300;
  p.eta_s = 1e300;
  p.elapsed_s = std::numeric_limits<double>::infinity();
  EXPECT_EQ(FormatProgressBar(p, 10), "[----------]   0% it 1,200 loss 0.412 acc 0.853 -");
  EXPECT_EQ(FormatProgressLine(p), "it 1,200 (0%) loss 0.412 acc 0.853 elapsed -");
}

TEST(ProgressDisplayTest, LogsPrintALineEveryPeriod) {
  std::ostringstream out;
  SimulatedClock clock;
  ProgressDisplay display(out, /*terminal=*/false, clock, std::chrono::seconds(5));
  JobProgress starting;
  display.Show(starting);  // nothing to show before training starts
  for (int second = 0; second <= 12; ++second) {
    JobProgress p = Sample();
    p.elapsed_s = second;
    display.Show(p);
    clock.Advance(std::chrono::seconds(1));
  }
  display.Finish();
  std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 3);  // at 0, 5 and 10 s
  EXPECT_EQ(s.find('\r'), std::string::npos);
}

// Finishing, the line stands still: it is printed once, not every period.
TEST(ProgressDisplayTest, ALineThatStandsStillIsPrintedOnce) {
  std::ostringstream out;
  SimulatedClock clock;
  ProgressDisplay display(out, /*terminal=*/false, clock, std::chrono::seconds(5));
  JobProgress p = Sample();
  p.stop_reason = StopReason::kWallClock;
  for (int second = 0; second <= 20; ++second) {
    display.Show(p);
    clock.Advance(std::chrono::seconds(1));
  }
  const std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1) << s;
  EXPECT_NE(s.find("budget spent: finishing"), std::string::npos);
  // Once it is the final model's evaluation, which may take long, that is said as it begins.
  p.evaluating = true;
  clock.Advance(std::chrono::seconds(5));
  display.Show(p);
  EXPECT_NE(out.str().substr(s.size()).find("- budget spent: evaluating the final model\n"), std::string::npos)
      << out.str();
}

}  // namespace
}  // namespace edgetrain::cli

// Supervision of a run, with scripted agents on a simulated clock: every case
// runs in microseconds and the same way every time.
#include "cli/run_supervisor.h"

#include <csignal>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

namespace edgetrain::cli {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// An agent whose stdout lines and exit come at set times; signals are recorded
// and may change the script (a coordinator that reports when told to stop).
class ScriptedAgent final : public WatchedProcess {
 public:
  ScriptedAgent(SimulatedClock& clock) : clock_(clock), start_(clock.Now()) {}

  ScriptedAgent& Says(Duration at, std::string line) {
    lines_.emplace(start_ + at, std::move(line));
    return *this;
  }
  ScriptedAgent& ExitsAt(Duration at, int status) {
    exit_ = {start_ + at, status};
    return *this;
  }
  // What it does on `signo`; by default SIGTERM ends it with 0, SIGKILL with 137.
  ScriptedAgent& OnSignal(int signo, std::function<void(ScriptedAgent&)> reaction) {
    reactions_[signo] = std::move(reaction);
    return *this;
  }
  // Now, as the script counts time.
  Duration Elapsed() const { return clock_.Now() - start_; }

  std::optional<std::string> ReadLine(Duration timeout) override {
    const TimePoint deadline = clock_.Now() + timeout;
    if (!lines_.empty() && lines_.begin()->first <= deadline && (!exit_ || lines_.begin()->first <= exit_->first)) {
      AdvanceTo(lines_.begin()->first);
      std::string line = lines_.begin()->second;
      lines_.erase(lines_.begin());
      return line;
    }
    if (exit_ && exit_->first <= deadline) {
      AdvanceTo(exit_->first);
      closed_ = true;
      return std::nullopt;
    }
    AdvanceTo(deadline);
    return std::nullopt;
  }
  bool stdout_closed() const override { return closed_; }
  std::optional<int> Poll() override {
    if (exit_ && exit_->first <= clock_.Now()) return exit_->second;
    return std::nullopt;
  }
  int Wait(Duration grace) override {
    if (!ExitsWithin(grace)) Signal(SIGKILL);
    return *Poll();
  }
  bool ExitsWithin(Duration timeout) override {
    if (Poll()) return true;
    if (exit_ && exit_->first <= clock_.Now() + timeout) {
      AdvanceTo(exit_->first);
      return true;
    }
    AdvanceTo(clock_.Now() + timeout);
    return false;
  }
  bool Stopped() override { return stopped && !Poll(); }
  int ProcessId() const override { return 4242; }
  void Signal(int signo) override {
    if (Poll()) return;
    signals.push_back(signo);
    if (signo == SIGCONT) stopped = false;
    if (auto it = reactions_.find(signo); it != reactions_.end()) return it->second(*this);
    if (signo == SIGTERM || signo == SIGKILL) exit_ = {clock_.Now(), signo == SIGKILL ? 128 + SIGKILL : 0};
  }

  std::vector<int> signals;
  bool stopped = false;  // held by SIGSTOP, until a SIGCONT

 private:
  void AdvanceTo(TimePoint t) {
    if (t > clock_.Now()) clock_.Advance(t - clock_.Now());
  }

  SimulatedClock& clock_;
  TimePoint start_;
  std::multimap<TimePoint, std::string> lines_;
  std::optional<std::pair<TimePoint, int>> exit_;
  std::map<int, std::function<void(ScriptedAgent&)>> reactions_;
  bool closed_ = false;
};

std::string Encoded(JobState state, int64_t iteration, double fraction, std::optional<StopReason> stop_reason) {
  JobProgress p;
  p.state = state;
  p.iteration = iteration;
  p.fraction = fraction;
  p.accuracy = 0.9;
  p.stop_reason = stop_reason;
  return EncodeJobProgress(p);
}
const std::string kResult = "result " + Encoded(JobState::kSucceeded, 40, 1, StopReason::kEpochs);
const std::string kProgress = Encoded(JobState::kTraining, 10, 0.25, std::nullopt);
// What a coordinator stopped mid-training reports.
const std::string kInterruptedResult = "result " + Encoded(JobState::kInterrupted, 10, 0.25, StopReason::kCancelled);

// A team of a coordinator and `workers` workers, watched on a simulated clock.
class RunSupervisorTest : public testing::Test {
 protected:
  RunSupervisorTest() : coordinator_(clock_), display_(display_text_, /*terminal=*/false, clock_) {
    for (int i = 0; i < 2; ++i) workers_.push_back(std::make_unique<ScriptedAgent>(clock_));
    watch_.progress = [this]() -> std::optional<std::string> {
      ++progress_reads_;
      return kProgress;
    };
  }

  Supervision Run(StopOrder order = StopOrder::kAllAtOnce, std::vector<int> ranks = {}) {
    std::vector<WatchedProcess*> team;
    for (auto& w : workers_) team.push_back(w.get());
    RunSupervisor supervisor("robots", coordinator_, team, clock_, err_, {}, order, std::move(ranks));
    return supervisor.Run(interrupted_, display_, watch_);
  }
  // A team that gathers for up to two minutes, its coordinator's /progress
  // saying it starts until `started` (never, by default), then that it trains.
  void GathersUntil(Duration started = Duration::max()) {
    watch_.team_gathers_for = std::chrono::minutes(2);
    watch_.progress = [this, started]() -> std::optional<std::string> {
      return coordinator_.Elapsed() < started ? Encoded(JobState::kStarting, 0, 0, std::nullopt) : kProgress;
    };
  }
  // A fresh pipeline whose stage agent of rank 1 ends 1 s in with `code`,
  // before its head started it; the others stop when told to.
  Supervision AStageEndsBeforeThePipelineStarts(int code) {
    GathersUntil();
    workers_[0]->ExitsAt(seconds(1), code);
    coordinator_.OnSignal(SIGTERM, [](ScriptedAgent& a) { a.ExitsAt(a.Elapsed() + seconds(1), 0); });
    for (auto& w : workers_) w->OnSignal(SIGTERM, [](ScriptedAgent& a) { a.ExitsAt(a.Elapsed(), 0); });
    return Run(StopOrder::kCoordinatorFirst, {1, 2});
  }
  // A coordinator that reports `result` and exits `after` it is told to stop.
  static void ReportsWhenStopped(ScriptedAgent& c, Duration after, const std::string& result = kInterruptedResult) {
    c.OnSignal(SIGTERM, [after, result](ScriptedAgent& self) {
      self.Says(self.Elapsed() + after, result).ExitsAt(self.Elapsed() + after + milliseconds(10), 0);
    });
  }

  SimulatedClock clock_;
  ScriptedAgent coordinator_;
  std::vector<std::unique_ptr<ScriptedAgent>> workers_;
  std::ostringstream display_text_, err_;
  ProgressDisplay display_;
  RunWatch watch_;
  std::atomic<bool> interrupted_{false};
  int progress_reads_ = 0;
};

TEST_F(RunSupervisorTest, TheResultEndsTheRunAndAWorkerBehindADeadLinkIsToldToStop) {
  coordinator_.Says(seconds(3), kResult).ExitsAt(seconds(3) + milliseconds(100), 0);
  workers_[0]->ExitsAt(seconds(3) + milliseconds(500), 0);  // heard Stop
  // workers_[1] never exits by itself: it did not hear Stop.
  Supervision outcome = Run();
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_EQ(outcome.result->stop_reason, StopReason::kEpochs);
  EXPECT_TRUE(outcome.failure.empty()) << outcome.failure;
  EXPECT_FALSE(outcome.interrupted);
  EXPECT_TRUE(coordinator_.signals.empty());
  EXPECT_TRUE(workers_[0]->signals.empty());
  EXPECT_EQ(workers_[1]->signals, std::vector<int>{SIGTERM});
  EXPECT_EQ(err_.str().find("waiting up to"), std::string::npos) << "it stopped as it was told: " << err_.str();
  // Told 2 s after the coordinator's exit, not before.
  EXPECT_EQ(coordinator_.Elapsed(), seconds(3) + milliseconds(100) + seconds(2));
  EXPECT_GE(progress_reads_, 14) << "polled every 200 ms for 3 s";
  EXPECT_NE(display_text_.str().find("it 10 (25%)"), std::string::npos) << display_text_.str();
}

// One that does not heed SIGTERM either (a stage agent whose link is down took
// 15 s, the run silent meanwhile: a new user's trial) is killed as long again
// after: the job is over, nothing of its is wanted.
TEST_F(RunSupervisorTest, AStageAgentThatOutstaysTheEndIsKilledSoonAfter) {
  coordinator_.Says(seconds(3), kResult).ExitsAt(seconds(3) + milliseconds(100), 0);
  workers_[0]->ExitsAt(seconds(3) + milliseconds(500), 0);
  workers_[1]->OnSignal(SIGTERM, [](ScriptedAgent&) {});  // deaf to it
  Supervision outcome = Run(StopOrder::kCoordinatorFirst, {0, 2});
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_TRUE(outcome.failure.empty()) << outcome.failure;
  EXPECT_EQ(workers_[1]->signals, (std::vector<int>{SIGTERM, SIGKILL}));
  EXPECT_EQ(coordinator_.Elapsed(), seconds(3) + milliseconds(100) + seconds(4));
  // Said a second after it was told, before the wait for it ends.
  EXPECT_NE(err_.str().find("waiting up to 1s for the stage agent of rank 2 to stop: it did not hear the head's stop "
                            "(a link down?) and was told to\nkilled the stage agent of rank 2: still running after "
                            "the coordinator had ended, it did not stop when told to"),
            std::string::npos)
      << err_.str();
  EXPECT_EQ(outcome.lost_workers, 1) << "its log is kept";
}

// Asked a second time to stop while the job's end waits on a worker deaf to
// SIGTERM, the runner kills it at once: that wait had held a second Ctrl-C
// for up to 15 s (found in review).
TEST_F(RunSupervisorTest, ASecondInterruptAtTheEndKillsAWorkerThatOutstaysIt) {
  coordinator_.Says(seconds(3), kResult).ExitsAt(seconds(3) + milliseconds(100), 0);
  workers_[0]->ExitsAt(seconds(3) + milliseconds(500), 0);
  workers_[1]->OnSignal(SIGTERM, [](ScriptedAgent&) {});  // deaf to it
  bool forced = false;
  watch_.forced = [&] {
    if (coordinator_.Elapsed() >= seconds(7)) forced = true;  // the second Ctrl-C
    return forced;
  };
  Supervision outcome = Run(StopOrder::kAllAtOnce);
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_EQ(workers_[1]->signals, (std::vector<int>{SIGTERM, SIGKILL}));
  EXPECT_LT(coordinator_.Elapsed(), seconds(7) + milliseconds(200)) << "not its --stop-grace of 15 s";
}

// A team's worker gets --stop-grace once told: it may be finishing a step (at
// a slowdown of 20, seconds), after which it prints its own account of its
// energy, which the summary reads.
TEST_F(RunSupervisorTest, ATeamsWorkerFinishingItsStepIsGivenItsStopGrace) {
  coordinator_.Says(seconds(3), kResult).ExitsAt(seconds(3) + milliseconds(100), 0);
  workers_[0]->ExitsAt(seconds(3) + milliseconds(500), 0);
  workers_[1]->OnSignal(SIGTERM, [](ScriptedAgent& self) { self.ExitsAt(self.Elapsed() + seconds(10), 0); });
  Supervision outcome = Run(StopOrder::kAllAtOnce);
  EXPECT_EQ(workers_[1]->signals, std::vector<int>{SIGTERM}) << "not killed: it stopped within --stop-grace";
  EXPECT_EQ(outcome.lost_workers, 0);
  EXPECT_EQ(err_.str().find("killed"), std::string::npos) << err_.str();
}

TEST_F(RunSupervisorTest, AnInterruptStopsTheCoordinatorWhichReports) {
  ReportsWhenStopped(coordinator_, milliseconds(500));
  watch_.progress = [this]() -> std::optional<std::string> {
    if (coordinator_.Elapsed() >= seconds(1)) interrupted_ = true;  // Ctrl-C a second in
    return kProgress;
  };
  for (auto& w : workers_) w->ExitsAt(seconds(10), 0);
  Supervision outcome = Run();
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_TRUE(outcome.interrupted);
  EXPECT_TRUE(outcome.failure.empty()) << outcome.failure;
  EXPECT_EQ(coordinator_.signals, std::vector<int>{SIGTERM}) << "told once";
  EXPECT_NE(err_.str().find("interrupted: stopping robots and saving where it got to..."), std::string::npos) << err_.str();
}

// Ctrl-C before the job had started training: it replaces no model, and
// the note that it would came after "interrupted" (a new user's trial).
TEST_F(RunSupervisorTest, AnInterruptBeforeTrainingSaysNothingOfStartingAfresh) {
  ReportsWhenStopped(coordinator_, milliseconds(500));
  watch_.earlier_model = "/out/model.pt";
  JobProgress starting, training;
  training.state = JobState::kTraining;
  watch_.progress = [&]() -> std::optional<std::string> {
    if (coordinator_.Elapsed() >= milliseconds(300)) interrupted_ = true;
    return EncodeJobProgress(coordinator_.Elapsed() < seconds(1) ? starting : training);
  };
  for (auto& w : workers_) w->ExitsAt(seconds(10), 0);
  Supervision outcome = Run();
  EXPECT_TRUE(outcome.interrupted);
  EXPECT_EQ(err_.str().find("starts afresh"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("interrupted: stopping robots before it trained a step..."), std::string::npos)
      << err_.str();
}

// A pipeline's stages hold its weights: interrupted, only the head is told
// to stop; it fetches them, reports and tells the stages to stop, and they
// go. With the team's order they were signalled at once and left before the
// head could fetch a thing (the run failed and saved nothing).
TEST_F(RunSupervisorTest, AnInterruptedPipelineLeavesItsStagesToTheHead) {
  ReportsWhenStopped(coordinator_, milliseconds(500));
  watch_.progress = [this]() -> std::optional<std::string> {
    if (coordinator_.Elapsed() >= seconds(1)) interrupted_ = true;
    return kProgress;
  };
  for (auto& w : workers_) w->ExitsAt(seconds(1) + milliseconds(700), 0);  // the head's Stop
  Supervision outcome = Run(StopOrder::kCoordinatorFirst);
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_TRUE(outcome.interrupted);
  EXPECT_EQ(coordinator_.signals, std::vector<int>{SIGTERM});
  for (auto& w : workers_) EXPECT_TRUE(w->signals.empty()) << "left to the head";
}

// An agent held stopped (SIGSTOP, Ctrl-Z) is said to be once, with how to let
// it go on, and once it runs again; a Ctrl-C then continues it so that it
// heeds the SIGTERM: a stopped coordinator held a run silent for minutes past
// its budget, and a Ctrl-C waited out its grace and killed it, saving
// nothing (a new user's trial).
TEST_F(RunSupervisorTest, AStoppedAgentIsSaidToBeAndAnInterruptContinuesIt) {
  ReportsWhenStopped(coordinator_, milliseconds(500));
  coordinator_.stopped = true;
  workers_[1]->stopped = true;
  watch_.progress = [this]() -> std::optional<std::string> {
    if (coordinator_.Elapsed() >= seconds(7)) workers_[1]->stopped = false;  // kill -CONT
    if (coordinator_.Elapsed() >= seconds(9)) interrupted_ = true;
    return kProgress;
  };
  for (auto& w : workers_) w->ExitsAt(seconds(60), 0);
  Supervision outcome = Run();
  ASSERT_TRUE(outcome.result.has_value()) << outcome.failure;
  EXPECT_TRUE(outcome.interrupted);
  EXPECT_TRUE(outcome.failure.empty()) << outcome.failure;
  EXPECT_EQ(coordinator_.signals, (std::vector<int>{SIGTERM, SIGCONT})) << "continued, to heed it";
  EXPECT_EQ(workers_[1]->signals, std::vector<int>{SIGTERM}) << "running again by then";
  const std::string said = err_.str();
  EXPECT_NE(said.find("warning: robots: the coordinator (pid 4242) is stopped (SIGSTOP, or Ctrl-Z) and has been "
                      "for 5s: the job stands still, its wall clock running on, until `kill -CONT 4242` lets it go on"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("warning: robots: worker 1 (pid 4242) is stopped (SIGSTOP, or Ctrl-Z) and has been for 5s: "
                      "the team counts it out past its arrival deadline and trains on without it"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("note: robots: worker 1 runs again"), std::string::npos) << said;
  EXPECT_EQ(said.find("worker 0 (pid"), std::string::npos) << said;
  EXPECT_EQ(said.find("the coordinator runs again"), std::string::npos) << "the interrupt stopped the watch first";
}

TEST_F(RunSupervisorTest, AgentsThatOutstayTheInterruptGraceAreKilled) {
  coordinator_.OnSignal(SIGTERM, [](ScriptedAgent&) {});  // deaf to it
  for (auto& w : workers_) w->OnSignal(SIGTERM, [](ScriptedAgent&) {});
  interrupted_ = true;
  Supervision outcome = Run();
  EXPECT_FALSE(outcome.result.has_value());
  EXPECT_TRUE(outcome.interrupted);
  EXPECT_NE(outcome.failure.find("the agents did not stop within 30 s of being told to; killed them"), std::string::npos)
      << outcome.failure;
  EXPECT_EQ(coordinator_.signals, (std::vector<int>{SIGTERM, SIGKILL}));
  for (auto& w : workers_) {
    EXPECT_EQ(w->signals, (std::vector<int>{SIGTERM, SIGKILL})) << "told with the coordinator, then killed";
  }
  EXPECT_EQ(outcome.coordinator_exit, 128 + SIGKILL);
  EXPECT_GE(coordinator_.Elapsed(), seconds(30));
  EXPECT_LT(coordinator_.Elapsed(), seconds(31));
}

// Asked a second time, the runner kills the agents at once rather than wait
// out the grace (a second Ctrl-C did nothing for 30 s: found in review).
TEST_F(RunSupervisorTest, ASecondInterruptKillsTheAgentsAtOnce) {
  coordinator_.OnSignal(SIGTERM, [](ScriptedAgent&) {});  // slow to save
  for (auto& w : workers_) w->OnSignal(SIGTERM, [](ScriptedAgent&) {});
  bool forced = false;
  watch_.forced = [&] { return forced; };
  watch_.progress = [&]() -> std::optional<std::string> {
    if (coordinator_.Elapsed() >= seconds(1)) interrupted_ = true;
    if (coordinator_.Elapsed() >= seconds(3)) forced = true;
    return kProgress;
  };
  Supervision outcome = Run();
  EXPECT_TRUE(outcome.interrupted);
  EXPECT_EQ(outcome.failure, "asked again to stop: killed the agents, what they trained since their last checkpoint "
                             "lost");
  EXPECT_EQ(coordinator_.signals, (std::vector<int>{SIGTERM, SIGKILL}));
  for (auto& w : workers_) EXPECT_EQ(w->signals, (std::vector<int>{SIGTERM, SIGKILL}));
  EXPECT_LT(coordinator_.Elapsed(), seconds(4));
  EXPECT_NE(err_.str().find("interrupted: stopping robots and saving where it got to (interrupt again to stop at "
                            "once)...\n"),
            std::string::npos)
      << err_.str();
}

// Lost before the team started: its coordinator waits out its window for it
// first, and the warning says so (a user's trial waited 2 minutes unsaid).
TEST_F(RunSupervisorTest, AWorkerLostBeforeTheTeamStartedIsWaitedForAndSaidSo) {
  GathersUntil(seconds(3));
  workers_[0]->ExitsAt(seconds(1), 137);
  workers_[1]->ExitsAt(seconds(6), 0);
  coordinator_.Says(seconds(5), kResult).ExitsAt(seconds(5), 0);
  Supervision outcome = Run();
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_NE(err_.str().find("; the team has not started yet: its coordinator waits for every worker up to "
                            "spec.faultTolerance.nodeLossGrace (2m) after the first came, then starts without it\n"),
            std::string::npos)
      << err_.str();
}

// A worker that refused its inputs before its team started (its credentials
// another job's) would again: the run stops and fails as the job's fault,
// where the team waited its whole grace for it, then succeeded (a security
// trial: 129.5 s for a job of 8, exit 0).
TEST_F(RunSupervisorTest, AWorkerThatRefusesItsInputsBeforeTheTeamStartsFailsTheRun) {
  GathersUntil();
  workers_[0]->ExitsAt(seconds(1), 2);  // its credentials refused
  coordinator_.OnSignal(SIGTERM, [](ScriptedAgent& a) { a.ExitsAt(a.Elapsed() + seconds(1), 0); });
  for (auto& w : workers_) w->OnSignal(SIGTERM, [](ScriptedAgent& a) { a.ExitsAt(a.Elapsed(), 0); });
  Supervision outcome = Run();
  EXPECT_TRUE(outcome.inputs_at_fault);
  EXPECT_EQ(outcome.failure, "worker 0 stopped on an error of the job's own before its team started (exit 2; "
                             "worker-0.log's last lines below say which)");
  EXPECT_NE(err_.str().find("; the team has not started yet, and the same command fails the same way: the run stops"),
            std::string::npos)
      << err_.str();
  EXPECT_LT(coordinator_.Elapsed(), seconds(10)) << "not the two minutes' grace";
}

// A fresh pipeline's stage agent lost before its head started: nothing
// restarts it here, and the head would wait out its grace for it and fail
// (a new user's 20 s job stood 2 minutes unsaid). The run stops at once. A
// resumed pipeline's head goes on without it after the grace: said so.
TEST_F(RunSupervisorTest, AFreshPipelinesStageLostBeforeItStartsStopsTheRun) {
  Supervision outcome = AStageEndsBeforeThePipelineStarts(137);
  EXPECT_FALSE(outcome.inputs_at_fault);
  EXPECT_EQ(outcome.failure, "the stage agent of rank 1 ended before the pipeline started (worker-1.log's last "
                             "lines below): a fresh pipeline starts only with every device; run the same command "
                             "again");
  EXPECT_NE(err_.str().find("; the pipeline has not started yet, and a fresh one starts only with every device"),
            std::string::npos)
      << err_.str();
  EXPECT_LT(coordinator_.Elapsed(), seconds(10)) << "not the two minutes' grace";
}

// One that refused its inputs would again: the run fails as the job's fault.
TEST_F(RunSupervisorTest, APipelinesStageThatRefusesItsInputsBeforeItStartsFailsTheRun) {
  Supervision outcome = AStageEndsBeforeThePipelineStarts(2);
  EXPECT_TRUE(outcome.inputs_at_fault);
  EXPECT_EQ(outcome.failure, "the stage agent of rank 1 stopped on an error of the job's own before the pipeline "
                             "started (exit 2; worker-1.log's last lines below say which)");
}

TEST_F(RunSupervisorTest, AResumedPipelinesStageLostBeforeItStartsIsWaitedForAndSaidSo) {
  GathersUntil(seconds(3));
  watch_.resumes = true;
  workers_[0]->ExitsAt(seconds(1), 137);
  workers_[1]->ExitsAt(seconds(6), 0);
  coordinator_.Says(seconds(5), kResult).ExitsAt(seconds(5), 0);
  Supervision outcome = Run(StopOrder::kCoordinatorFirst, {1, 2});
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_TRUE(outcome.failure.empty()) << outcome.failure;
  EXPECT_NE(err_.str().find("; the pipeline has not started yet: its head waits for every device up to "
                            "spec.faultTolerance.nodeLossGrace (2m) and what a head started again adds, then "
                            "resumes without it\n"),
            std::string::npos)
      << err_.str();
}

// Lost just after the team started, before a look at /progress had seen it
// start: asked again, not said to be waited for (a new user's trial, a worker
// lost 33 ms after its team of 2 started).
TEST_F(RunSupervisorTest, AWorkerLostJustAfterTheTeamStartedIsNotSaidToBeWaitedFor) {
  GathersUntil(seconds(1));
  workers_[0]->ExitsAt(seconds(1), 2);
  workers_[1]->ExitsAt(seconds(6), 0);
  coordinator_.Says(seconds(5), kResult).ExitsAt(seconds(5), 0);
  Supervision outcome = Run();
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_EQ(err_.str().find("the team has not started yet"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("; the team trains on without it\n"), std::string::npos) << err_.str();
}

TEST_F(RunSupervisorTest, ALostWorkerIsNamedOnceAndTheTeamTrainsOn) {
  workers_[0]->ExitsAt(seconds(1), 1);
  workers_[1]->ExitsAt(seconds(6), 0);
  coordinator_.Says(seconds(5), kResult).ExitsAt(seconds(5), 0);
  Supervision outcome = Run();
  ASSERT_TRUE(outcome.result.has_value());
  const std::string said = err_.str();
  const std::string warning =
      "warning: worker 0 ended (exit 1; its log, worker-0.log, is kept with the run's logs); the team trains on without it";
  ASSERT_NE(said.find(warning), std::string::npos) << said;
  EXPECT_EQ(said.find(warning, said.find(warning) + 1), std::string::npos) << "named once:\n" << said;
  EXPECT_EQ(said.find("worker 1"), std::string::npos);
  EXPECT_EQ(outcome.lost_workers, 1) << "its log is kept";
}

// A worker stopped by an error of the job's own (exit 2: its loss NaN on a
// sample of its part) is named with its log's last words, even when the job
// ended before the runner looked again: a team of one epoch ended exit 0
// with the worker's end unsaid and its log deleted (a new user's trial).
TEST_F(RunSupervisorTest, AWorkerStoppedByTheJobsOwnErrorIsNamedWithWhyEvenAtTheEnd) {
  workers_[0]->ExitsAt(milliseconds(100), 2);
  coordinator_.Says(milliseconds(150), kResult).ExitsAt(milliseconds(150), 0);
  workers_[1]->ExitsAt(milliseconds(160), 0);
  watch_.last_words = [](int rank) {
    return rank == 0 ? "worker 0: the training loss is NaN at step 1 (...)" : "worker 1: done";
  };
  Supervision outcome = Run();
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_NE(err_.str().find("warning: worker 0 ended (exit 2, an error of the job's own: worker 0: the training loss "
                            "is NaN at step 1 (...); its log, worker-0.log, is kept with the run's logs)\n"),
            std::string::npos)
      << err_.str();
  EXPECT_EQ(err_.str().find("worker 1"), std::string::npos) << err_.str();
  EXPECT_EQ(outcome.lost_workers, 1) << "its log is kept";
}

// A pipeline's stage agent killed, and its head failing at once for it (a
// pipeline of one stage has nothing to rebuild it on): the kill is named,
// by the device's rank (the plan left rank 0 out), though the head's end
// came before the runner looked at its stages again (a new user's trial saw
// only the head's error).
TEST_F(RunSupervisorTest, AStageAgentKilledAsItsHeadFailsIsNamedByItsRank) {
  workers_[0]->ExitsAt(seconds(2), 128 + SIGKILL);
  coordinator_.Says(seconds(2), "result " + Encoded(JobState::kFailed, 40, 0.5, std::nullopt))
      .ExitsAt(seconds(2) + milliseconds(2), 1);
  workers_[1]->OnSignal(SIGTERM, [](ScriptedAgent& self) { self.ExitsAt(self.Elapsed(), 0); });
  Supervision outcome = Run(StopOrder::kCoordinatorFirst, {1, 2});
  EXPECT_NE(err_.str().find("warning: the stage agent of rank 1 ended (killed by SIGKILL; its log, worker-1.log, is "
                            "kept with the run's logs)\n"),
            std::string::npos)
      << err_.str();
  EXPECT_EQ(err_.str().find("rank 2"), std::string::npos) << "it was stopped, not lost:\n" << err_.str();
  EXPECT_EQ(outcome.lost_workers, 1);
}

// Here no one starts a team's workers again: once every one has exited, the
// run stops and fails, its coordinator told to save and report, rather than
// wait out its budget to end 'nothing trained' with 0 (a new user's trial).
TEST_F(RunSupervisorTest, ATeamWhoseWorkersHaveAllExitedStopsAndFails) {
  workers_[0]->ExitsAt(seconds(1), 1);
  workers_[1]->ExitsAt(seconds(2), 2);
  ReportsWhenStopped(coordinator_, seconds(1));
  Supervision outcome = Run();
  EXPECT_EQ(outcome.failure, "every worker exited: the team has no one left to train");
  EXPECT_FALSE(outcome.inputs_at_fault) << "worker 0's end was not the job's fault";
  EXPECT_EQ(outcome.failure_log, "worker-0.log");
  EXPECT_EQ(coordinator_.signals, std::vector<int>{SIGTERM});
  EXPECT_LT(coordinator_.Elapsed(), seconds(4));
  // Said once, as an error, by the runner with the log's tail; here only that it stops.
  EXPECT_EQ(err_.str().find("error:"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("stopping "), std::string::npos) << err_.str();
}

// Every worker refused what the job gave it (exit 2: its model computes NaN,
// say): the job's own fault, which a run again meets the same way. The run
// said exit 1 and "a run again starts over" (a new user's trial).
TEST_F(RunSupervisorTest, ATeamWhoseWorkersAllRefusedTheJobFailsAsTheJobsFault) {
  workers_[0]->ExitsAt(seconds(1), 2);
  workers_[1]->ExitsAt(seconds(2), 2);
  ReportsWhenStopped(coordinator_, seconds(1));
  Supervision outcome = Run();
  EXPECT_TRUE(outcome.inputs_at_fault);
  EXPECT_NE(outcome.failure.find("every worker stopped on an error of the job's own (exit 2"), std::string::npos)
      << outcome.failure;
  EXPECT_EQ(outcome.failure_log, "worker-0.log");
}

// A pipeline's head fails by itself once its stages are gone, saying which.
TEST_F(RunSupervisorTest, APipelineWhoseStagesHaveAllExitedIsLeftToItsHead) {
  for (auto& w : workers_) w->ExitsAt(seconds(1), 1);
  coordinator_.Says(seconds(3), kResult).ExitsAt(seconds(3), 0);
  Supervision outcome = Run(StopOrder::kCoordinatorFirst);
  EXPECT_TRUE(outcome.failure.empty()) << outcome.failure;
  EXPECT_TRUE(outcome.result.has_value());
  EXPECT_TRUE(coordinator_.signals.empty());
}

TEST_F(RunSupervisorTest, ACoordinatorThatDiesWithoutAResultFailsTheRun) {
  coordinator_.ExitsAt(seconds(2), 1);
  for (auto& w : workers_) w->ExitsAt(seconds(2), 0);
  Supervision outcome = Run();
  EXPECT_FALSE(outcome.result.has_value());
  EXPECT_EQ(outcome.failure, "the coordinator ended (exit 1) without a result");
  EXPECT_EQ(outcome.coordinator_exit, 1);
}

TEST_F(RunSupervisorTest, AnUnreadableResultFailsTheRun) {
  coordinator_.Says(seconds(1), "result {not json").ExitsAt(seconds(1), 0);
  for (auto& w : workers_) w->ExitsAt(seconds(1), 0);
  Supervision outcome = Run();
  EXPECT_FALSE(outcome.result.has_value());
  EXPECT_EQ(outcome.failure.rfind("unreadable result from the coordinator: ", 0), 0u) << outcome.failure;
}

TEST_F(RunSupervisorTest, LinksThatStopFollowingTheirTracesStopTheJobAndFailTheRun) {
  ReportsWhenStopped(coordinator_, milliseconds(300));
  for (auto& w : workers_) w->ExitsAt(seconds(10), 0);
  watch_.health = [this]() -> Status {
    if (coordinator_.Elapsed() < seconds(2)) return Status::Ok();
    return FailedPreconditionError("the links stopped following their traces: `tc qdisc change` failed");
  };
  Supervision outcome = Run();
  ASSERT_TRUE(outcome.result.has_value()) << "the model trained so far is still saved";
  EXPECT_EQ(outcome.failure, "the links stopped following their traces: `tc qdisc change` failed");
  EXPECT_FALSE(outcome.interrupted);
  EXPECT_EQ(coordinator_.signals, std::vector<int>{SIGTERM});
  EXPECT_NE(err_.str().find("stopping robots"), std::string::npos) << err_.str();
}

TEST_F(RunSupervisorTest, SaysOnceWhetherTheJobResumedOrReplacesAnEarlierModel) {
  struct Case {
    std::optional<int64_t> resumed_from;
    std::string earlier_model;
    std::string said;  // empty: nothing
    JobState state = JobState::kTraining;
    std::string afresh_also = "";
    std::vector<std::string> changes = {};
  } cases[] = {
      {120, "/out/model.pt", "resuming robots from its checkpoint at iteration 120 (edgetrain run --fresh starts over)\n"},
      // Its manifest edited since: trained on under the new one, and said so.
      {120, "/out/model.pt",
       "resuming robots from its checkpoint at iteration 120 (edgetrain run --fresh starts over)\n"
       "  its manifest changed since that checkpoint; training on under the new one:\n"
       "    spec.optimizer.learningRate: 0.001 -> 0.002\n",
       JobState::kTraining, "", {"spec.optimizer.learningRate: 0.001 -> 0.002"}},
      // Its model swapped for one of the same shapes: the checkpoint's weights go on in it.
      {120, "/out/model.pt",
       "resuming robots from its checkpoint at iteration 120 (edgetrain run --fresh starts over)\n"
       "  its manifest changed since that checkpoint; training on under the new one:\n"
       "    spec.model.torchscript.path: a.pt -> b.pt\n"
       "  the changed model trains on from the checkpoint's weights (its parameters have their shapes), not from "
       "its own: edgetrain run --fresh starts from those\n",
       JobState::kTraining, "", {"spec.model.torchscript.path: a.pt -> b.pt"}},
      // Its stages changed by --stages, not in its manifest: said as that.
      {120, "/out/model.pt",
       "resuming robots from its checkpoint at iteration 120 (edgetrain run --fresh starts over)\n"
       "  changed since that checkpoint; training on as it now is:\n"
       "    spec.parallelism.stages: planned -> 0-3:0,1/4-8:2 (by --stages)\n",
       JobState::kTraining, "", {"spec.parallelism.stages: planned -> 0-3:0,1/4-8:2"}},
      {120, "/out/model.pt",
       "resuming robots from its checkpoint at iteration 120 (edgetrain run --fresh starts over)\n"
       "  its manifest changed since that checkpoint; training on under the new one:\n"
       "    spec.optimizer.learningRate: 0.001 -> 0.002\n"
       "    spec.parallelism.stages: planned -> even (by --stages)\n",
       JobState::kTraining, "",
       {"spec.optimizer.learningRate: 0.001 -> 0.002", "spec.parallelism.stages: planned -> even"}},
      {std::nullopt, "/out/model.pt", "note: robots starts afresh; its model will replace /out/model.pt\n"},
      {std::nullopt, "", ""},
      // Refused its checkpoint (another model): not "starts afresh" before the error.
      {std::nullopt, "/out/model.pt", "", JobState::kFailed},
      {std::nullopt, "/out/model.pt",
       "note: robots starts afresh; its model will replace /out/model.pt; its workers read every file in in/ again\n",
       JobState::kTraining, "its workers read every file in in/ again"},
  };
  for (const auto& c : cases) {
    SimulatedClock clock;
    ScriptedAgent coordinator(clock);
    std::ostringstream err, shown;
    ProgressDisplay display(shown, false, clock);
    JobProgress starting, training;
    training.state = c.state;
    training.resumed_from_iteration = c.resumed_from;
    training.resumed_with_changes = c.changes;
    const bool failed = c.state == JobState::kFailed;
    coordinator.Says(seconds(3), failed ? "result " + Encoded(JobState::kFailed, 0, 0, StopReason::kFailed) : kResult)
        .ExitsAt(seconds(3), failed ? 1 : 0);
    RunWatch watch;
    int reads = 0;
    watch.progress = [&]() -> std::optional<std::string> {
      return EncodeJobProgress(++reads < 3 ? starting : training);  // loading data first
    };
    watch.earlier_model = c.earlier_model;
    watch.afresh_also = c.afresh_also;
    watch.set_by_options["spec.parallelism.stages"] = "--stages";
    RunSupervisor supervisor("robots", coordinator, {}, clock, err);
    Supervision outcome = supervisor.Run(interrupted_, display, watch);
    ASSERT_TRUE(outcome.result.has_value());
    EXPECT_EQ(err.str(), c.said);
  }
}

// A pipeline's devices taken for hung, let go of as stragglers, lost, back
// or left out of a layout, as its head's /progress counts them, are said on the terminal as
// they come, naming their ranks; a read that shows nothing new says nothing.
TEST_F(RunSupervisorTest, APipelinesDevicesLostLetGoOfOrBackAreSaidAsTheyCome) {
  auto progress = [](int hung, int stragglers, int restored, int steps_lost, int rejoined, std::vector<bool> active,
                     int covered = 0, int left_out = 0) {
    JobProgress p;
    p.state = JobState::kTraining;
    p.replays = JobProgress::Replays{};
    p.replays->hung = hung;
    p.replays->count = hung + covered;
    p.replays->covered = covered;
    p.replays->covered_shares = 4 * covered;
    p.replays->stragglers = stragglers;
    p.replays->left_out = left_out;
    p.replays->restored_stages = restored;
    p.replays->steps_lost = steps_lost;
    p.replays->rejoined = rejoined;
    for (size_t r = 0; r < active.size(); ++r) {
      WorkerProgress w;
      w.rank = static_cast<int>(r);
      w.active = active[r];
      p.workers.push_back(w);
    }
    return EncodeJobProgress(p);
  };
  const std::vector<std::string> reads = {
      progress(0, 0, 0, 0, 0, {true, true, true}),   progress(0, 0, 0, 0, 0, {true, true, true}),
      progress(1, 0, 1, 44, 0, {true, true, false}), progress(1, 0, 1, 44, 0, {true, true, false}),
      progress(1, 1, 1, 44, 0, {true, false, false}), progress(1, 1, 1, 44, 1, {true, false, true}),
      progress(1, 1, 1, 44, 1, {false, false, true}, 1),
      progress(1, 1, 1, 44, 1, {false, false, false}, 1, 1),
  };
  size_t read = 0;
  watch_.progress = [&]() -> std::optional<std::string> { return reads[std::min(read++, reads.size() - 1)]; };
  watch_.nodes = {{1, "board-2"}};  // a device named by its node where the watch knows it
  coordinator_.Says(seconds(3), kResult).ExitsAt(seconds(3), 0);
  Supervision outcome = Run(StopOrder::kCoordinatorFirst);
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_EQ(err_.str(),
            "note: robots: a device taken for hung (rank 2): a pass ran far past what its passes take, its heartbeats "
            "still coming\n"
            "note: robots: a stage lost its only device; rebuilt on its neighbour from a replica, 44 steps of its "
            "updates lost\n"
            "note: robots: a device let go of as a straggler (rank 1 on board-2): it ran its share far slower than its "
            "group's fastest; the others take it\n"
            "note: robots: a device is back in a stage (rank 2)\n"
            "note: robots: a device lost mid-step (rank 0); another of its group computed its 4 shares of the step, "
            "nothing else ran again\n"
            "note: robots: a device left out of the stages laid out anew (rank 2): at the pace it measured, the "
            "pipeline is predicted faster without it; it may rejoin later\n");
}

// The job had finished when Ctrl-C came: nothing was interrupted, and the
// run does not exit 130 (a script took it for a job to resume).
TEST_F(RunSupervisorTest, AnInterruptAfterTheJobFinishedChangesNothing) {
  coordinator_.Says(seconds(1), kResult).ExitsAt(seconds(1), 0);
  workers_[0]->ExitsAt(seconds(1), 0);
  // Ctrl-C lands while the runner stops the team, after the result.
  workers_[1]->OnSignal(SIGTERM, [this](ScriptedAgent& self) {
    interrupted_ = true;
    self.ExitsAt(self.Elapsed(), 0);
  });
  Supervision outcome = Run();
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_FALSE(outcome.interrupted);
  EXPECT_NE(err_.str().find("interrupted after robots had finished: nothing was lost, its model is saved"),
            std::string::npos)
      << err_.str();
}

// Ctrl-C once training had ended by itself, during the final evaluation:
// the job finishes as it would have (its checkpoint marked complete), so the
// run is not interrupted; exit 130 and "run again to resume" had the next
// run start afresh over its model (a new user's trial).
TEST_F(RunSupervisorTest, AnInterruptDuringTheFinalEvaluationLetsTheJobFinish) {
  ReportsWhenStopped(coordinator_, milliseconds(500), kResult);
  watch_.progress = [this]() -> std::optional<std::string> {
    if (coordinator_.Elapsed() >= seconds(1)) interrupted_ = true;
    return Encoded(JobState::kTraining, 40, 1, StopReason::kEpochs);  // finishing
  };
  for (auto& w : workers_) w->ExitsAt(seconds(10), 0);
  Supervision outcome = Run();
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_FALSE(outcome.interrupted);
  EXPECT_NE(err_.str().find("the interrupt came after robots had stopped training by itself (its budget spent or "
                            "its target reached): it finished as it would have, and its model is saved"),
            std::string::npos)
      << err_.str();
}

TEST_F(RunSupervisorTest, ACoordinatorKilledIsSaidToBe) {
  coordinator_.ExitsAt(seconds(1), 128 + SIGKILL);
  Supervision outcome = Run();
  EXPECT_FALSE(outcome.result.has_value());
  EXPECT_EQ(outcome.failure, "the coordinator ended (killed by SIGKILL) without a result");
}

TEST_F(RunSupervisorTest, APipelinesHeadKilledIsSaidToBeByItsName) {
  coordinator_.ExitsAt(seconds(1), 128 + SIGKILL);
  for (auto& w : workers_) w->ExitsAt(seconds(2), 0);
  Supervision outcome = Run(StopOrder::kCoordinatorFirst);
  EXPECT_FALSE(outcome.result.has_value());
  EXPECT_EQ(outcome.failure, "the pipeline's head ended (killed by SIGKILL) without a result");
}

}  // namespace
}  // namespace edgetrain::cli

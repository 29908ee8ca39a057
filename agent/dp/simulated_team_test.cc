// The data-parallel engine whole — job driver, coordinator, its service and
// workers — as threads on a deterministic clock over the in-memory transport,
// training fake models (agent/testing/simulated_team.h): minutes of a team's
// life in milliseconds, the same way every run. Every run is held to the
// engine's invariants (ExpectSound); each test adds what its scenario is about.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "agent/job_driver.h"
#include "agent/solo_engine.h"
#include "agent/storage/atomic_file.h"
#include "agent/storage/checkpoint.h"
#include "agent/data/dataset.h"
#include "agent/dp/coordinator.h"
#include "agent/dp/worker.h"
#include "agent/testing/fake_trainer.h"
#include "agent/transport/in_memory_transport.h"
#include "core/deterministic_clock.h"
#include "agent/testing/digits.h"
#include "agent/testing/simulated_team.h"
#include "agent/torch/trainer.h"
#include "core/encoding_choice.h"
#include "core/partition.h"

namespace edgetrain::agent::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string TestDir() {
  const std::string dir = ::testing::TempDir() + "/sim-" +
                          ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "-" +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::remove_all(dir);
  return dir;
}

TeamSetup ATeamOf(int workers) {
  TeamSetup s;
  s.workers = workers;
  s.budget.epochs = 5;
  s.output_dir = TestDir();
  return s;
}

// A team of 3 that gathers for 300 ms, then starts with the workers in, and
// trains for minutes unless stopped: for a worker that comes late.
TeamSetup ATeamThatStartsWithoutALateWorker() {
  TeamSetup s = ATeamOf(3);
  s.node_loss_grace = milliseconds(300);
  s.budget = {};
  s.budget.wall_clock = std::chrono::minutes(5);
  return s;
}

// The histogram of how stale each row was when a worker used it: every
// observation at most `bound`, for each worker (edgetrain_row_staleness_iterations).
void ExpectNoRowStalerThan(const std::string& metrics, int bound) {
  const std::regex bucket("edgetrain_row_staleness_iterations_bucket\\{[^}]*worker=\"(\\d+)\"[^}]*le=\"([^\"]+)\"\\} (\\d+)");
  const std::regex count("edgetrain_row_staleness_iterations_count\\{[^}]*worker=\"(\\d+)\"[^}]*\\} (\\d+)");
  std::map<std::string, int64_t> within, total;
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), bucket); it != std::sregex_iterator(); ++it) {
    if (std::stod((*it)[2]) == bound) within[(*it)[1]] = std::stoll((*it)[3]);
  }
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), count); it != std::sregex_iterator(); ++it) {
    total[(*it)[1]] = std::stoll((*it)[2]);
  }
  ASSERT_FALSE(total.empty()) << metrics;
  for (const auto& [worker, n] : total) {
    EXPECT_GT(n, 0) << "worker " << worker << " used no rows";
    EXPECT_EQ(within[worker], n) << "worker " << worker << " used a row more than " << bound << " iterations stale";
  }
}

// What holds of every run, whatever happens to the team.
void ExpectSound(const SimulatedTeam& team, int bound) {
  ASSERT_TRUE(team.result().ok()) << team.result().status().ToString() << "\n" << team.log();
  int64_t fated = 0;
  for (int64_t n : team.push_fates()) fated += n;
  EXPECT_EQ(fated, team.pushes_delivered()) << "every push read is applied or counted with its reason";
  EXPECT_GT(team.push_fates()[static_cast<int>(PushFate::kApplied)], 0);
  // Honest workers: none of their pushes is refused (an iteration they could
  // not be at, a row that is no gradient).
  EXPECT_EQ(team.push_fates()[static_cast<int>(PushFate::kRefused)], 0) << team.log();
  EXPECT_FALSE(team.progress_went_back());
  ExpectNoRowStalerThan(team.worker_metrics(), bound);
}

int64_t IterationOf(const JobProgress& p, int rank) {
  return static_cast<size_t>(rank) < p.workers.size() ? p.workers[rank].iteration : 0;
}
bool Active(const JobProgress& p, int rank) {
  return static_cast<size_t>(rank) < p.workers.size() && p.workers[rank].active;
}
// Back in the team and training with it: within the bound (4) and a few steps of worker 0.
bool CaughtUp(const JobProgress& p, int rank) {
  return Active(p, rank) && IterationOf(p, rank) >= IterationOf(p, 0) - 4 - 5;
}

class WorldSizeTest : public ::testing::TestWithParam<int> {};

TEST_P(WorldSizeTest, ATeamTrainsToItsBudgetWithinItsBounds) {
  TeamSetup setup = ATeamOf(GetParam());
  setup.train_samples = 64 * GetParam() * 10;
  SimulatedTeam team(setup);
  team.Run();
  ExpectSound(team, 4);
  const JobProgress& p = *team.result();
  EXPECT_EQ(p.stop_reason, StopReason::kEpochs);
  EXPECT_GE(p.samples, 5 * setup.train_samples);
  EXPECT_GT(*p.accuracy, 0.9) << team.log();
  for (int w = 0; w < GetParam(); ++w) {
    ASSERT_TRUE(team.workers()[w].ok()) << team.workers()[w].status().ToString();
    EXPECT_EQ(team.workers()[w]->stop_reason, "the job is over");
    EXPECT_TRUE(p.workers[w].active) << "in the team when it ended, though its stream has closed since";
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, WorldSizeTest, ::testing::Values(1, 2, 3, 7, 16));

// Epochs shorter than the coordinator's tick (steps of 1 ms, ticks of 20):
// the job stops as they are spent, not at the end of the tick they were in.
// A team of small data trained 4,032 samples for a budget of 2,874 (a new
// user's trial).
TEST(SimulatedTeamTest, AnEpochsBudgetEndsAsItIsSpentNotAtTheEndOfItsTick) {
  TeamSetup setup = ATeamOf(2);
  setup.policy = SyncPolicy::kBsp;
  setup.model.step = milliseconds(1);
  setup.budget.epochs = 3;
  SimulatedTeam team(setup);
  team.Run();
  ExpectSound(team, 0);
  const JobProgress& p = *team.result();
  EXPECT_EQ(p.stop_reason, StopReason::kEpochs);
  EXPECT_GE(p.samples, 3 * setup.train_samples);
  EXPECT_LE(p.samples, 3 * setup.train_samples + 2 * setup.workers * setup.batch_size) << "samples past the budget";
}

// Once the job stops, the model is final: the workers leave one by one as
// they hear Stop, and each departure had moved the clocks the others held,
// stepping rows on a part of a round's gradients (the last, their sum
// divided by one), so that the model evaluated and saved was a round ahead
// of what every worker had pushed (found in review). Under bsp no row steps
// past what every worker of the team pushed for it.
TEST(SimulatedTeamTest, NoRowStepsAfterTheJobStops) {
  for (int workers : {2, 3, 4, 7}) {
    TeamSetup setup = ATeamOf(workers);
    setup.policy = SyncPolicy::kBsp;
    setup.slowdowns.assign(static_cast<size_t>(workers), 1.0);
    for (int w = 0; w < workers; ++w) setup.slowdowns[static_cast<size_t>(w)] = 1 + w % 3;
    SimulatedTeam team(setup);
    team.Run();
    ASSERT_TRUE(team.result().ok()) << team.log();
    auto saved = LoadCheckpoint(setup.output_dir + "/checkpoint.bin");
    ASSERT_TRUE(saved.ok() && saved->has_value() && (*saved)->ledger) << "workers " << workers;
    const JobCheckpoint& c = **saved;
    const size_t rows = c.versions.size();
    for (size_t r = 0; r < rows; ++r) {
      int64_t least = INT64_MAX;
      for (int w = 0; w < c.ledger->workers; ++w) least = std::min(least, c.ledger->pushed[w * rows + r]);
      ASSERT_LE(c.versions[r], least) << "workers " << workers << ", row " << r << " stepped past what every worker "
                                      << "pushed";
    }
  }
}

TEST(SimulatedTeamTest, RunsTheSameWayEveryTime) {
  std::vector<std::string> outcomes;
  for (int run = 0; run < 3; ++run) {
    TeamSetup setup = ATeamOf(3);
    setup.partition = {PartitionKind::kDirichlet, 0.5};
    setup.slowdowns = {1, 2, 5};
    SimulatedTeam team(setup);
    team.Run();
    ASSERT_TRUE(team.result().ok());
    std::ostringstream o;
    o.precision(17);
    o << *team.result()->accuracy << " " << team.result()->iteration << " " << team.result()->elapsed_s;
    for (const auto& w : team.result()->workers) o << " " << w.iteration << "/" << w.rows_sent;
    outcomes.push_back(o.str());
  }
  EXPECT_EQ(outcomes[1], outcomes[0]);
  EXPECT_EQ(outcomes[2], outcomes[0]);
}

TEST(SimulatedTeamTest, ACutLinkReleasesTheBoundAndTheWorkerRejoinsWhenItIsBack) {
  TeamSetup setup = ATeamOf(3);
  setup.budget = {};
  setup.budget.wall_clock = std::chrono::minutes(5);
  SimulatedTeam team(setup);
  int64_t stuck_at = 0;
  team.Run([&](SimulatedTeam& t) {
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return IterationOf(p, 2) >= 20 && Active(p, 2); }));
    t.gate(2).Cut();
    // Still in the team, its figures are as old as its silence, and say so.
    double silent_while_in = 0;
    JobProgress cut_off;
    ASSERT_TRUE(t.WaitFor([&](const JobProgress& p) {
      cut_off = p;
      if (Active(p, 2)) silent_while_in = std::max(silent_while_in, p.workers[2].silent_s);
      return !Active(p, 2);
    }));
    EXPECT_GT(silent_while_in, 0.1);
    // The bound is released: the others train on far past S iterations beyond it.
    stuck_at = IterationOf(cut_off, 2);
    ASSERT_TRUE(t.WaitFor([&](const JobProgress& p) {
      return IterationOf(p, 0) > stuck_at + 4 + 40 && IterationOf(p, 1) > stuck_at + 4 + 40;
    }));
    // Its silence grows while it is out: what the operator tells a link down by.
    JobProgress silent;
    ASSERT_TRUE(t.WaitFor([&](const JobProgress& p) {
      silent = p;
      return p.workers[2].silent_s >= 5;
    }));
    EXPECT_LT(silent.workers[0].silent_s, 0.1) << "one in the team was heard from lately";
    t.gate(2).Restore();
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return CaughtUp(p, 2); }));
    t.Stop();
  });
  ExpectSound(team, 4);
  EXPECT_EQ(team.result()->stop_reason, StopReason::kCancelled);
  const std::string log = team.log();
  EXPECT_NE(log.find("worker 2 counted out"), std::string::npos) << log;
  EXPECT_NE(log.find("worker 2 is back"), std::string::npos) << log;
  EXPECT_EQ(team.push_fates()[static_cast<int>(PushFate::kCountedOut)], 1) << "its first push back";
  EXPECT_TRUE(std::regex_search(team.coordinator_metrics(),
                                std::regex("edgetrain_coordinator_dropped_pushes_total\\{[^}]*reason=\"counted_out\"[^}]*"
                                           "worker=\"2\"[^}]*\\} 1\n")))
      << team.coordinator_metrics();
}

TEST(SimulatedTeamTest, AKilledWorkerRestartsAndRejoins) {
  TeamSetup setup = ATeamOf(3);
  setup.budget = {};
  setup.budget.wall_clock = std::chrono::minutes(5);
  SimulatedTeam team(setup);
  team.Run([&](SimulatedTeam& t) {
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return IterationOf(p, 1) >= 20; }));
    t.KillWorker(1);
    JobProgress gone;
    ASSERT_TRUE(t.WaitFor([&](const JobProgress& p) {
      gone = p;
      return !Active(p, 1);
    }));
    ASSERT_TRUE(t.WaitFor([&](const JobProgress& p) { return IterationOf(p, 0) > IterationOf(gone, 0) + 40; }))
        << "the team stopped for a lost worker";
    t.StartWorker(1);
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return CaughtUp(p, 1); }));
    t.Stop();
  });
  ExpectSound(team, 4);
  const std::string log = team.log();
  EXPECT_NE(log.find("worker 1 left"), std::string::npos) << log;
  size_t joined = 0;
  for (size_t at = 0; (at = log.find("worker 1 joined", at)) != std::string::npos; ++at) ++joined;
  EXPECT_EQ(joined, 2u) << "joined once, and once more after its restart\n" << log;
}

// A plan of two workers on devices `slowdown` times slower, batches of 8.
JobPlan APlanOfTwo(const std::string& job, double slowdown) {
  JobPlan plan;
  plan.job = job;
  plan.spec.parallelism.workers = 2;
  plan.spec.data.batch_size = 8;
  for (int r = 0; r < 2; ++r) plan.workers.push_back({r, "device-" + std::to_string(r), slowdown, std::nullopt, {}});
  return plan;
}

// A team's coordinator guesses what evaluating takes by timing a slice of
// the test set at its own pace, not from the team's pace of training (its
// workers' waits and emulated slowdowns): an evaluation of 100 ms a call, on
// 256 of 1,024 test samples, is guessed at 0.4 s, and timed once.
TEST(SimulatedTeamTest, ACoordinatorGuessesItsEvaluationFromASliceOfTheTestSetOnce) {
  const JobPlan plan = APlanOfTwo("guess", 20);
  DeterministicClock clock;
  const TrainTestSplit data = FakeData(64, 1024, 10);
  FakeModel model;
  model.evaluation = milliseconds(100);
  std::optional<double> first, second;
  Duration second_took{};
  clock.Run("coordinator", [&] {
    FakeTrainer trainer(model, clock);
    MetricsRegistry registry;
    CoordinatorMetrics metrics{registry, plan.job, 2};
    std::ostringstream log;
    Coordinator coordinator(plan, trainer, data.test, data.train.size(), clock, log, metrics);
    first = coordinator.EvaluationGuess();
    const TimePoint before = clock.Now();
    second = coordinator.EvaluationGuess();
    second_took = clock.Now() - before;
  });
  ASSERT_TRUE(first.has_value());
  EXPECT_DOUBLE_EQ(*first, 0.1 * 1024 / 256);
  EXPECT_EQ(second, first);
  EXPECT_EQ(second_took, Duration::zero()) << "timed once";
}

// A worker whose coordinator never answers (a wrong address, a plaintext
// worker before a TLS coordinator) says so once, at its first try, rather
// than nothing until its grace ran out, and then gives up saying why.
TEST(SimulatedTeamTest, AWorkerWhoseCoordinatorNeverAnswersSaysSoOnceAndGivesUpAtItsGrace) {
  const JobPlan plan = APlanOfTwo("lonely", 1);
  DeterministicClock clock;
  const TrainTestSplit data = FakeData(64, 8, 10);
  std::ostringstream log;
  std::atomic<bool> cancel{false};
  StatusOr<WorkerSummary> summary = InternalError("not run");
  clock.Run("worker", [&] {
    InMemoryNetwork network(clock);
    const std::unique_ptr<CoordinatorConnector> nowhere = network.Connector("nowhere");
    FakeTrainer trainer(FakeModel{}, clock);
    WorkerOptions options;
    options.rank = 1;
    options.coordinator = nowhere.get();
    summary = RunWorker(plan, options, trainer, data.train, clock, log, cancel);
  });
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(summary.status().message().find("the coordinator at nowhere has been unreachable for"), std::string::npos)
      << summary.status().message();
  const std::string said = "worker 1: cannot reach the coordinator at nowhere yet; trying for up to ";
  const std::string text = log.str();
  int times = 0;
  for (size_t at = text.find(said); at != std::string::npos; at = text.find(said, at + 1)) ++times;
  EXPECT_EQ(times, 1) << "said once:\n" << text;
}

// A worker whose gradients are NaN (a diverged model, or a hostile one): each
// of its pushes is refused whole, counted by why, and never applied; after
// three it is quarantined, and the team trains on to its budget without it.
TEST(SimulatedTeamTest, AWorkerThatPushesPoisonIsRefusedThenQuarantinedAndTheTeamTrainsOn) {
  TeamSetup setup = ATeamOf(3);
  setup.policy = SyncPolicy::kBsp;
  setup.poisoned_worker = 2;
  SimulatedTeam team(setup);
  team.Run();
  ASSERT_TRUE(team.result().ok()) << team.result().status().ToString() << "\n" << team.log();
  const JobProgress& p = *team.result();
  EXPECT_EQ(p.stop_reason, StopReason::kEpochs);
  EXPECT_GT(*p.accuracy, 0.9) << "no NaN reached the model\n" << team.log();
  const std::string log = team.log();
  EXPECT_NE(log.find("coordinator: refusing worker 2's push of iteration "), std::string::npos) << log;
  EXPECT_NE(log.find(" (not_finite), none of this part applied: row "), std::string::npos) << log;
  EXPECT_NE(log.find("coordinator: worker 2 quarantined (3 pushes refused, the last not_finite): the team goes on "
                     "without it"),
            std::string::npos)
      << log;
  EXPECT_NE(team.coordinator_metrics().find("edgetrain_coordinator_refused_pushes_total{reason=\"not_finite\","
                                            "trainingjob=\"sim-team\",worker=\"2\"} 3"),
            std::string::npos)
      << team.coordinator_metrics();
  EXPECT_EQ(team.push_fates()[static_cast<int>(PushFate::kRefused)], 3);
  ASSERT_FALSE(team.workers()[2].ok()) << "the quarantined worker was turned away";
  const std::string turned_away = "worker 2 is quarantined: 3 pushes refused, the last not_finite (";
  EXPECT_NE(team.workers()[2].status().message().find(turned_away), std::string::npos)
      << team.workers()[2].status().ToString();
  EXPECT_GT(team.workers()[2].status().message().size(), std::string("worker 2 is quarantined: 3 pushes refused, the "
                                                                     "last not_finite ()").size())
      << "the refusal's words, which the worker's log then holds";
  for (int w : {0, 1}) EXPECT_TRUE(team.workers()[w].ok()) << team.workers()[w].status().ToString();
  // What the operator reads from /progress to say so with an Event.
  ASSERT_EQ(p.workers.size(), 3u);
  EXPECT_EQ(p.workers[2].quarantined, "3 pushes refused, the last not_finite");
  EXPECT_EQ(p.workers[0].quarantined, "");
}

// A worker whose loss is NaN stops at that step, as a job of one does, with
// the job's fault (exit 2) and what to change, and pushes nothing: every
// worker of a team whose model computed NaN ended "lost the coordinator",
// turned away as the coordinator refused its rows (a new user's trial).
TEST(SimulatedTeamTest, AWorkerWhoseLossIsNaNStopsSayingSoAndPushesNothing) {
  TeamSetup setup = ATeamOf(3);
  setup.policy = SyncPolicy::kBsp;
  setup.diverged_worker = 2;
  SimulatedTeam team(setup);
  team.Run();
  ASSERT_TRUE(team.result().ok()) << team.result().status().ToString() << "\n" << team.log();
  EXPECT_EQ(team.result()->stop_reason, StopReason::kEpochs) << "the others train on";
  ASSERT_FALSE(team.workers()[2].ok());
  EXPECT_EQ(team.workers()[2].status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(team.workers()[2].status().message().find("the training loss is NaN at step 1"), std::string::npos)
      << team.workers()[2].status().ToString();
  EXPECT_EQ(team.push_fates()[static_cast<int>(PushFate::kRefused)], 0) << "nothing of it reached the coordinator";
  for (int w : {0, 1}) EXPECT_TRUE(team.workers()[w].ok()) << team.workers()[w].status().ToString();
}

TEST(SimulatedTeamTest, AWorkerThatNeverArrivesIsANodeLostAtTheStart) {
  TeamSetup setup = ATeamOf(3);
  setup.node_loss_grace = seconds(30);
  SimulatedTeam team(setup);
  team.Run(
      [&](SimulatedTeam& t) {
        t.StartWorker(0);
        t.StartWorker(1);
      },
      /*start_workers=*/false);
  ExpectSound(team, 4);
  const JobProgress& p = *team.result();
  EXPECT_EQ(p.stop_reason, StopReason::kEpochs);
  EXPECT_FALSE(p.workers[2].active);
  EXPECT_EQ(p.workers[2].samples, 0);
  const std::string log = team.log();
  EXPECT_NE(log.find("waiting up to 30 s for 1 more worker(s)"), std::string::npos) << log;
  EXPECT_NE(log.find("the team starts with 2 of 3 workers; the others join when they come"), std::string::npos)
      << log;
  // The team waited 30 s for worker 2 before it started: that wait is not
  // training time, and the training itself is about half a second.
  EXPECT_LT(p.elapsed_s, 5) << "the wait was counted as training time";
}

TEST(SimulatedTeamTest, ALateWorkerWithinTheGraceStartsWithTheTeam) {
  TeamSetup setup = ATeamOf(3);
  SimulatedTeam team(setup);
  team.Run(
      [&](SimulatedTeam& t) {
        t.StartWorker(0);
        t.StartWorker(1);
        t.clock().SleepFor(seconds(8));  // hundreds of iterations, were they training
        t.StartWorker(2);
      },
      /*start_workers=*/false);
  ExpectSound(team, 4);
  const std::string log = team.log();
  EXPECT_NE(log.find("worker 2 joined at iteration 0"), std::string::npos) << log;
  EXPECT_NE(log.find("the team starts with 3 of 3 workers\n"), std::string::npos) << log;
  // The 8 s the first two waited for the third are not their training time,
  // nor its energy's: the job's clock and theirs start together.
  for (const auto& w : team.result()->workers) {
    EXPECT_LE(w.wall_s, team.result()->elapsed_s + 0.1) << "worker " << w.rank;
  }
}

TEST(SimulatedTeamTest, AWorkerLaterThanTheGraceJoinsWhereTheTeamIs) {
  SimulatedTeam team(ATeamThatStartsWithoutALateWorker());
  team.Run(
      [&](SimulatedTeam& t) {
        t.StartWorker(0);
        t.StartWorker(1);
        ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return IterationOf(p, 0) >= 30; }));
        t.StartWorker(2);
        ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return CaughtUp(p, 2); }));
        t.Stop();
      },
      /*start_workers=*/false);
  ExpectSound(team, 4);
  const std::string log = team.log();
  const size_t at = log.find("worker 2 joined at iteration ");
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_GE(std::stoll(log.substr(at + 29)), 30 - 4) << log;
}

// A worker the team started without (its link out from the start, say) is
// charged from the team's start, idle until it came, where it had been
// charged from its first Welcome (a robot out for the team's first 13 s was
// charged 6 J over the run: a new user's trial); its teammates' wait for
// the team to gather is not charged, as above.
TEST(SimulatedTeamTest, AWorkerTheTeamStartedWithoutIsChargedFromTheTeamsStart) {
  SimulatedTeam team(ATeamThatStartsWithoutALateWorker());
  double came_after_s = 0;
  team.Run(
      [&](SimulatedTeam& t) {
        t.StartWorker(0);
        t.StartWorker(1);
        ASSERT_TRUE(t.WaitFor([&](const JobProgress& p) {
          came_after_s = p.elapsed_s;
          return IterationOf(p, 0) >= 200;
        }));
        t.StartWorker(2);
        ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return CaughtUp(p, 2); }));
        t.Stop();
      },
      /*start_workers=*/false);
  ExpectSound(team, 4);
  const StatusOr<WorkerSummary>& late = team.workers()[2];
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  const double idle_watts = PowerProfile{}.idle_watts;
  ASSERT_GT(came_after_s, 0);
  EXPECT_GE(late->energy_joules, idle_watts * came_after_s) << "its wait from the team's start, idle, at least";
  // And its pushes told the coordinator, whose job figure counts it.
  EXPECT_GE(team.result()->workers[2].energy_joules, idle_watts * came_after_s);
  for (int w : {0, 1}) {
    ASSERT_TRUE(team.workers()[w].ok());
    EXPECT_LE(team.workers()[w]->energy_joules, PowerProfile{}.compute_watts * (team.result()->elapsed_s + 0.1))
        << "worker " << w << ": not charged twice";
  }
}

// A worker whose first Welcome, the whole model, crawls through a dip is
// charged from the team's start too, idle while it waited for it: it was
// charged from the Welcome's arrival, 12.7 s after the team started, 88 J
// of a robot's idle draw missing from the run's total (a user's trial).
TEST(SimulatedTeamTest, AWorkerWhoseFirstWelcomeCrawlsThroughADipIsChargedFromTheTeamsStart) {
  // Out of the dip at 2.5 s, so that its pushes after, sent at once, do not
  // make up for a wait left uncharged.
  auto dip = BandwidthTrace::Parse("seconds,mbps\n0,0.04\n2.5,50\n60,50\n", "dip.csv");
  ASSERT_TRUE(dip.ok()) << dip.status().ToString();
  TeamSetup setup = ATeamOf(3);
  setup.node_loss_grace = milliseconds(300);
  // A Welcome of the trained model, 32 kB: past the link's burst of 16, seconds at 0.04 Mbit/s.
  setup.model.shapes = {{32, 256}};
  setup.links = {std::nullopt, std::nullopt, *dip};
  setup.budget = {};
  setup.budget.wall_clock = std::chrono::minutes(5);
  SimulatedTeam team(setup);
  double welcomed_after_s = 0;
  team.Run(
      [&](SimulatedTeam& t) {
        t.StartWorker(0);
        t.StartWorker(1);
        ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return IterationOf(p, 0) >= 100; }));
        t.StartWorker(2);
        ASSERT_TRUE(t.WaitFor([&](const JobProgress& p) {
          welcomed_after_s = p.elapsed_s;
          return p.workers.size() > 2 && p.workers[2].samples > 0;  // trained with the team
        }));
        t.Stop();
      },
      /*start_workers=*/false);
  ExpectSound(team, 4);
  const StatusOr<WorkerSummary>& slow = team.workers()[2];
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  const double elapsed_s = team.result()->elapsed_s;
  ASSERT_GT(welcomed_after_s, 2) << "its Welcome took seconds";
  EXPECT_GE(slow->energy_joules, 0.95 * PowerProfile{}.idle_watts * elapsed_s)
      << "the team's whole time, idle at least, of " << elapsed_s << " s";
}

// A worker whose push crawls through a dip in parts is heard from several
// times a second, but its figures, its energy among them, come with a
// push's first part alone: /progress says how long they have been unheard,
// which an energy budget counts (an 84 J short stop: a user's trial).
TEST(SimulatedTeamTest, AWorkerWhosePushCrawlsInPartsIsHeardFromButItsFiguresAreOld) {
  auto dip = BandwidthTrace::Parse("seconds,mbps\n0,50\n1,0.2\n60,0.2\n", "dip.csv");
  ASSERT_TRUE(dip.ok()) << dip.status().ToString();
  TeamSetup setup = ATeamOf(2);
  setup.model.shapes = {{64, 1024}};  // pushes of 256 kB: parts of 16 kB, 0.65 s each at 0.2 Mbit/s
  setup.model.step = std::chrono::milliseconds(20);  // fewer steps of the worker unshaped: a faster test
  setup.links = {std::nullopt, *dip};
  setup.budget = {};
  setup.budget.wall_clock = std::chrono::minutes(5);
  SimulatedTeam team(setup);
  WorkerProgress crawling;
  team.Run([&](SimulatedTeam& t) {
    t.clock().SleepFor(std::chrono::seconds(5));
    crawling = t.progress().workers[1];
    t.Stop();
  });
  EXPECT_LT(crawling.silent_s, 1.5) << "its parts keep coming";
  EXPECT_GT(crawling.unreported_s, 2.5) << "its last figures came with a push's first part, seconds ago";
}

TEST(SimulatedTeamTest, TheJobsClockStartsWithItsTeam) {
  TeamSetup setup = ATeamOf(3);
  setup.budget = {};
  setup.budget.wall_clock = seconds(1);
  SimulatedTeam team(setup);
  team.Run(
      [&](SimulatedTeam& t) {
        t.clock().SleepFor(seconds(2));  // longer than the whole budget: loading data, say
        for (int w = 0; w < 3; ++w) t.StartWorker(w);
      },
      /*start_workers=*/false);
  ExpectSound(team, 4);
  const JobProgress& p = *team.result();
  EXPECT_EQ(p.stop_reason, StopReason::kWallClock);
  EXPECT_GT(p.samples, 0) << "the budget ran out while no worker was there";
  EXPECT_GE(p.elapsed_s, 1.0);
  EXPECT_LT(p.elapsed_s, 1.1) << "the wait, or telling the workers to stop, was counted";
}

class RestartTest : public ::testing::TestWithParam<SyncPolicy> {};

TEST_P(RestartTest, ARestartedCoordinatorResumesFromItsCheckpointAndTheWorkersReconnect) {
  TeamSetup setup = ATeamOf(3);
  setup.output_dir += NameOf(GetParam());
  setup.policy = GetParam();
  const int bound = GetParam() == SyncPolicy::kDeadline ? 0 : 4;
  setup.staleness_bound = bound;
  setup.checkpoint_every = 40;
  setup.budget.epochs = 10;
  SimulatedTeam team(setup);
  int64_t died_at = 0, checkpointed_at = 0;
  team.Run([&](SimulatedTeam& t) {
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return p.iteration >= 90; }));
    auto checkpoint = ReadWholeFile(t.plan().CheckpointPath());
    ASSERT_TRUE(checkpoint.ok());
    auto decoded = DecodeCheckpoint(*checkpoint, "checkpoint.bin");
    ASSERT_TRUE(decoded.ok());
    checkpointed_at = decoded->iteration;
    died_at = t.progress().iteration;
    t.RestartCoordinator(*checkpoint);
  });
  ExpectSound(team, bound);
  const JobProgress& p = *team.result();
  EXPECT_EQ(p.stop_reason, StopReason::kEpochs);
  ASSERT_TRUE(p.resumed_from_iteration.has_value()) << team.log();
  EXPECT_EQ(*p.resumed_from_iteration, checkpointed_at) << "the last checkpoint before it died at " << died_at;
  EXPECT_GE(checkpointed_at, 80);
  EXPECT_LT(checkpointed_at, died_at);
  EXPECT_GT(*p.accuracy, 0.9);
  EXPECT_NE(team.log().find("resumed from"), std::string::npos) << team.log();
  // Its workers' copies are ahead of its checkpoint: it trains on from theirs.
  EXPECT_NE(team.log().find("(ours was at " + std::to_string(checkpointed_at) + ")"), std::string::npos)
      << team.log();
  for (int w = 0; w < 3; ++w) {
    ASSERT_TRUE(team.workers()[w].ok());
    EXPECT_GE(team.workers()[w]->reconnects, 1) << "worker " << w;
  }
}

// A coordinator placed anew (its node lost, its checkpoint with it) starts
// behind its team: it takes the copy of the model furthest along among its
// workers (core/model_takeover.h) and trains on from there, losing a few
// iterations, not the job; one restarted on a checkpoint older than its
// workers' copies does the same.
TEST_P(RestartTest, ACoordinatorPlacedAnewTrainsOnFromItsWorkersCopyOfTheModel) {
  TeamSetup setup = ATeamOf(3);
  setup.output_dir += "-anew-";
  setup.output_dir += NameOf(GetParam());
  setup.policy = GetParam();
  const int bound = GetParam() == SyncPolicy::kDeadline ? 0 : 4;
  setup.staleness_bound = bound;
  setup.budget.epochs = 10;
  SimulatedTeam team(setup);
  int64_t died_at = 0;
  team.Run([&](SimulatedTeam& t) {
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return p.iteration >= 90; }));
    died_at = t.progress().iteration;
    t.RestartCoordinator(std::nullopt);
  });
  ExpectSound(team, bound);
  const JobProgress& p = *team.result();
  EXPECT_EQ(p.stop_reason, StopReason::kEpochs);
  EXPECT_FALSE(p.resumed_from_iteration.has_value()) << "no checkpoint to resume from";
  EXPECT_GT(*p.accuracy, 0.9);
  const std::string log = team.log();
  const size_t taken = log.find("coordinator: training on from worker ");
  ASSERT_NE(taken, std::string::npos) << log;
  const int64_t from = std::stoll(log.substr(log.find("at iteration ", taken) + 13));
  EXPECT_GE(from, died_at - bound - 2) << "the copy furthest along is at most S behind the team" << log;
  EXPECT_LE(from, died_at + 2);
  EXPECT_NE(log.find("(ours was at 0)"), std::string::npos) << log;
  EXPECT_NE(log.find("sending the coordinator its copy of the model"), std::string::npos) << log;
}

// The job's count, clock and energy go on with the model taken over: a
// coordinator moved 8 s into a 100 s budget had trained 111 s, its iteration
// shown back at 25 with its workers past 8,000; one moved with 482 J of a
// 700 J budget spent began again near 0 and ended "at its budget" at 1,180
// (new users' trials).
TEST_P(RestartTest, ACoordinatorPlacedAnewKeepsTheJobsIterationAndClock) {
  TeamSetup setup = ATeamOf(3);
  setup.output_dir += "-clock-";
  setup.output_dir += NameOf(GetParam());
  setup.policy = GetParam();
  setup.staleness_bound = GetParam() == SyncPolicy::kDeadline ? 0 : 4;
  setup.budget = {};
  setup.budget.wall_clock = seconds(3);
  SimulatedTeam team(setup);
  double elapsed_before = 0, energy_before = 0;
  int64_t iteration_before = 0;
  team.Run([&](SimulatedTeam& t) {
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return p.elapsed_s >= 1.0; }));
    elapsed_before = t.progress().elapsed_s;
    iteration_before = t.progress().iteration;
    energy_before = t.progress().energy_joules.value_or(0);
    t.RestartCoordinator(std::nullopt);
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return p.iteration > 0; }));
    const JobProgress after = t.progress();
    EXPECT_GE(after.iteration, iteration_before - setup.staleness_bound - 2) << "counted again from 0";
    EXPECT_GE(after.elapsed_s, elapsed_before) << "the job's clock started over";
    ASSERT_GT(energy_before, 0);
    // As the workers last heard it, an update's joules short at most.
    EXPECT_GE(after.energy_joules.value_or(0), 0.9 * energy_before) << "the job's energy started over";
  });
  ExpectSound(team, setup.staleness_bound);
  const JobProgress& p = *team.result();
  EXPECT_EQ(p.stop_reason, StopReason::kWallClock);
  EXPECT_GE(p.elapsed_s, 3.0);
  EXPECT_LT(p.elapsed_s, 3.0 + 0.5) << "the budget started over with the new coordinator";
  EXPECT_GT(p.iteration, iteration_before);
  EXPECT_NE(team.log().find("s into the job"), std::string::npos) << team.log();
}

// A copy asked for that does not come (the worker's link cut after it
// joined) is passed over once it is due, and the team starts on the next or
// on the coordinator's own: whichever worker's thread picked the donor, its
// own included (its teammates had then waited with no time set: found in
// review).
TEST(SimulatedTeamTest, ACopyOfTheModelThatDoesNotComeIsPassedOverWhenDue) {
  TeamSetup setup = ATeamOf(3);
  setup.node_loss_grace = seconds(2);
  setup.budget = {};
  setup.budget.wall_clock = seconds(60);
  SimulatedTeam team(setup);
  team.Run([&](SimulatedTeam& t) {
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return p.iteration >= 40; }));
    t.KillWorker(2);
    const size_t said_before = t.log().size();
    t.RestartCoordinator(std::nullopt);
    // Both left join the new coordinator, which gathers for its grace
    // waiting for the third; then both links are cut.
    auto said_since = [&](const std::string& text, int times) {
      const std::string log = t.log().substr(said_before);
      int found = 0;
      for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++found;
      return found >= times;
    };
    for (int ms = 0; !said_since("joined at iteration", 2); ms += 10) {
      ASSERT_LT(ms, 60'000) << t.log();
      t.clock().SleepFor(milliseconds(10));
    }
    t.gate(0).Cut();
    t.gate(1).Cut();
    for (int ms = 0; !said_since("sent no copy of the model within 2 s: passed over", 1); ms += 10) {
      ASSERT_LT(ms, 60'000) << "no copy passed over:\n" << t.log();
      t.clock().SleepFor(milliseconds(10));
    }
    t.gate(0).Restore();
    t.gate(1).Restore();
    // And the team trains on.
    const int64_t passed_over_at = t.progress().iteration;
    ASSERT_TRUE(t.WaitFor([&](const JobProgress& p) { return p.iteration >= passed_over_at + 20; })) << t.log();
    t.Stop();
  });
  ASSERT_TRUE(team.result().ok()) << team.result().status().ToString() << team.log();
  EXPECT_EQ(team.result()->stop_reason, StopReason::kCancelled) << team.log();
}

INSTANTIATE_TEST_SUITE_P(Policies, RestartTest, ::testing::Values(SyncPolicy::kRog, SyncPolicy::kDeadline),
                         [](const auto& info) { return std::string(NameOf(info.param)); });

// A team stopped while the faster worker's push for the next round was in
// and the slower one's not, then run again from its checkpoint, has both
// workers compute the round after the one its rows were kept at. The stop
// closed the open round on the faster worker's push; restored, the slower
// worker, which joined first, was put where it had been, a round behind, and
// the other where its teammate was: both computed the round the rows had
// stepped already, and both pushes were dropped as late, a batch of every
// worker lost at each resume (of a stream from a folder, its samples for
// good: a new user's trial).
class RunAgainTest : public ::testing::TestWithParam<SyncPolicy> {};

TEST_P(RunAgainTest, ATeamRunAgainFromItsCheckpointCountsEveryWorkersFirstPush) {
  TeamSetup setup = ATeamOf(2);
  setup.output_dir += NameOf(GetParam());
  setup.policy = GetParam();
  setup.staleness_bound = 0;
  setup.slowdowns = {3, 1};  // worker 0, which joins first, the slower
  setup.budget.epochs = 3;
  {
    SimulatedTeam stopped(setup);
    stopped.Run([](SimulatedTeam& t) {
      ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return IterationOf(p, 1) > IterationOf(p, 0); }));
      t.Stop();
    });
    ASSERT_TRUE(stopped.result().ok()) << stopped.log();
    ASSERT_EQ(stopped.result()->state, JobState::kInterrupted) << stopped.log();
  }
  auto checkpoint = ReadWholeFile(setup.output_dir + "/checkpoint.bin");
  ASSERT_TRUE(checkpoint.ok());
  auto kept = DecodeCheckpoint(*checkpoint, "checkpoint.bin");
  ASSERT_TRUE(kept.ok() && kept->ledger.has_value());
  const int64_t rows_at = *std::max_element(kept->ledger->pushed.begin(), kept->ledger->pushed.end());
  SimulatedTeam again(setup);
  again.Run();
  ExpectSound(again, 0);
  ASSERT_TRUE(again.result()->resumed_from_iteration.has_value()) << again.log();
  EXPECT_EQ(again.result()->stop_reason, StopReason::kEpochs);
  for (int w = 0; w < 2; ++w) {
    EXPECT_NE(again.log().find("worker " + std::to_string(w) + " joined at iteration " + std::to_string(rows_at) +
                               "\n"),
              std::string::npos)
        << "worker " << w << ", the rows at " << rows_at << "\n" << again.log();
  }
  if (GetParam() == SyncPolicy::kDeadline) {
    EXPECT_NE(again.log().find(", 0 gradient rows late"), std::string::npos) << again.log();
  }
}

// Run again with another number of workers (a job suspended, edited and
// resumed, as operator.md says to apply an edit), a team takes its
// checkpoint up: the rows where they stepped, its iteration and samples. It
// was refused as another team's, and on a cluster the job failed for good (a
// new user's trial).
TEST_P(RunAgainTest, ATeamOfAnotherSizeResumesFromTheCheckpoint) {
  TeamSetup setup = ATeamOf(3);
  setup.output_dir += NameOf(GetParam());
  setup.policy = GetParam();
  setup.staleness_bound = 0;
  setup.budget.epochs = 4;
  int64_t stopped_at = 0;
  double departed_j = 0;
  {
    SimulatedTeam stopped(setup);
    stopped.Run([&](SimulatedTeam& t) {
      ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return p.iteration >= 30; }));
      t.Stop();
    });
    ASSERT_TRUE(stopped.result().ok()) << stopped.log();
    stopped_at = stopped.result()->iteration;
    ASSERT_EQ(stopped.result()->workers.size(), 3u);
    departed_j = stopped.result()->workers[2].energy_joules;
    ASSERT_GT(departed_j, 0);
  }
  setup.workers = 2;
  SimulatedTeam again(setup);
  again.Run();
  ExpectSound(again, 0);
  ASSERT_TRUE(again.result()->resumed_from_iteration.has_value()) << again.log();
  EXPECT_GE(*again.result()->resumed_from_iteration, stopped_at - 1) << again.log();
  EXPECT_EQ(again.result()->stop_reason, StopReason::kEpochs);
  EXPECT_GT(*again.result()->accuracy, 0.9);
  // The departed worker's energy stays in the job's, beside the two's: it
  // had left the totals.
  double team_j = 0;
  for (const WorkerProgress& w : again.result()->workers) team_j += w.energy_joules;
  EXPECT_NEAR(*again.result()->energy_joules - team_j, departed_j, 1e-9 * departed_j) << again.log();
}

INSTANTIATE_TEST_SUITE_P(Policies, RunAgainTest, ::testing::Values(SyncPolicy::kBsp, SyncPolicy::kDeadline),
                         [](const auto& info) { return std::string(NameOf(info.param)); });

// A re-plan (a replacement node, a moved worker) reaches a running
// coordinator as a new plan generation: it adopts it without a restart, and
// the workers of the old generation are fenced out, at once and for good.
TEST(SimulatedTeamTest, ANewPlanGenerationFencesOutTheOldOneAndTheJobGoesOn) {
  TeamSetup setup = ATeamOf(3);
  setup.budget.epochs = 8;
  SimulatedTeam team(setup);
  int64_t replanned_at = 0;
  team.Run([&](SimulatedTeam& t) {
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return p.iteration >= 30; }));
    replanned_at = t.progress().iteration;
    JobPlan next = t.plan();
    next.generation = 2;
    ASSERT_TRUE(t.AdoptPlan(next).ok());
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return !Active(p, 0) && !Active(p, 1) && !Active(p, 2); }))
        << "the old generation still counts in the team's waits";
    for (int w = 0; w < 3; ++w) t.StartWorker(w);  // the new generation's pods
  });
  ExpectSound(team, 4);
  const JobProgress& p = *team.result();
  EXPECT_EQ(p.stop_reason, StopReason::kEpochs);
  EXPECT_GT(p.iteration, replanned_at);
  const std::string log = team.log();
  EXPECT_NE(log.find("adopted plan generation 2"), std::string::npos) << log;
  EXPECT_NE(log.find("worker 1 fenced out: its stream is of plan generation 1"), std::string::npos) << log;
  // The old generation's workers tried to come back and were refused.
  EXPECT_NE(log.find("plan generation 1 is not the current 2"), std::string::npos) << log;
  for (int w = 0; w < 3; ++w) ASSERT_TRUE(team.workers()[w].ok()) << "the new generation's worker " << w;
}

// The operator replaces only what was lost: a plan whose other slots keep the
// generation they were given at fences out the replaced worker alone, and the
// survivors train on without a reconnect.
TEST(SimulatedTeamTest, ARePlanOfOneSlotFencesOutThatWorkerAloneAndTheRestTrainOn) {
  TeamSetup setup = ATeamOf(3);
  setup.budget.epochs = 8;
  SimulatedTeam team(setup);
  team.Run([&](SimulatedTeam& t) {
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return p.iteration >= 30; }));
    JobPlan next = t.plan();
    next.generation = 2;
    for (WorkerSlot& slot : next.workers) slot.since_generation = slot.rank == 1 ? 2 : 1;
    next.workers[1].node = "replacement";
    ASSERT_TRUE(t.AdoptPlan(next).ok());
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return !Active(p, 1); })) << "worker 1 was not fenced out";
    const JobProgress now = t.progress();
    EXPECT_TRUE(Active(now, 0) && Active(now, 2)) << "the survivors stay in the team";
    t.StartWorker(1);  // the replacement, with plan generation 2
  });
  ExpectSound(team, 4);
  EXPECT_EQ(team.result()->stop_reason, StopReason::kEpochs);
  const std::string log = team.log();
  EXPECT_NE(log.find("worker 1 fenced out: its stream is of plan generation 1"), std::string::npos) << log;
  EXPECT_EQ(log.find("worker 0 fenced out"), std::string::npos) << log;
  EXPECT_EQ(log.find("worker 2 fenced out"), std::string::npos) << log;
  for (int w : {0, 2}) {
    ASSERT_TRUE(team.workers()[w].ok());
    EXPECT_EQ(team.workers()[w]->reconnects, 0) << "worker " << w << " never left";
  }
  ASSERT_TRUE(team.workers().back().ok()) << "the replacement trained to the end";
}

TEST(SimulatedTeamTest, APlanThatCannotReplaceTheRunningOneIsRefusedAndChangesNothing) {
  TeamSetup setup = ATeamOf(2);
  SimulatedTeam team(setup);
  team.Run([&](SimulatedTeam& t) {
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return p.iteration >= 10; }));
    JobPlan bigger = t.plan();
    bigger.generation = 2;
    bigger.spec.parallelism.workers = 3;
    Status refused = t.AdoptPlan(bigger);
    EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(refused.message().find("plan generation 2 has 3 workers, not 2: changing a team's size needs a restart"),
              std::string::npos)
        << refused.message();
    JobPlan same = t.plan();
    refused = t.AdoptPlan(same);
    EXPECT_NE(refused.message().find("plan generation 1 is not newer than the current 1"), std::string::npos)
        << refused.message();
    JobPlan other = t.plan();
    other.job = "another";
    other.generation = 5;
    EXPECT_FALSE(t.AdoptPlan(other).ok());
  });
  ExpectSound(team, 4);
  EXPECT_EQ(team.log().find("fenced out"), std::string::npos);
  EXPECT_EQ(team.result()->stop_reason, StopReason::kEpochs);
}

TEST(SimulatedTeamTest, Int8RowsBothWaysLearnAsWellOnUnderHalfTheDownlinkBytes) {
  std::vector<JobProgress> results;
  for (Compression c : {Compression::kNone, Compression::kInt8}) {
    TeamSetup setup = ATeamOf(3);
    setup.compression = c;
    SimulatedTeam team(setup);
    team.Run();
    ExpectSound(team, 4);
    results.push_back(*team.result());
  }
  auto down = [](const JobProgress& p) {
    int64_t sum = 0;
    for (const auto& w : p.workers) sum += w.bytes_received;
    return static_cast<double>(sum);
  };
  EXPECT_NEAR(*results[1].accuracy, *results[0].accuracy, 0.02);
  EXPECT_LT(down(results[1]) / down(results[0]), 0.5);
}

// Uplink bytes of a team's pushes, over its workers.
double UplinkBytes(const JobProgress& p) {
  int64_t sum = 0;
  for (const auto& w : p.workers) sum += w.bytes_sent;
  return static_cast<double>(sum);
}

// A team of three pushing `compression`, on a fake model whose targets are
// non-zero at `density` of its coordinates.
JobProgress CompressedTeam(Compression compression, double density) {
  TeamSetup setup = ATeamOf(3);
  setup.output_dir += std::string(NameOf(compression)) + std::to_string(density);
  setup.compression = compression;
  setup.model.target_density = density;
  SimulatedTeam team(setup);
  team.Run();
  ExpectSound(team, 4);
  return *team.result();
}

TEST(SimulatedTeamTest, Int4RowsLearnNearlyAsInt8DoesOnLittleOverHalfItsBytesBothWays) {
  // Fifteen levels a row instead of 255: what each push and update rounds
  // away goes in the next (error feedback, both ways).
  const JobProgress int8 = CompressedTeam(Compression::kInt8, 1);
  const JobProgress int4 = CompressedTeam(Compression::kInt4, 1);
  auto down = [](const JobProgress& p) {
    int64_t sum = 0;
    for (const auto& w : p.workers) sum += w.bytes_received;
    return static_cast<double>(sum);
  };
  // Measured: accuracy 0.9911 against 0.9912, on 71% of int8's bytes up and
  // 69% down. The fake model's rows are of 32 values: a row's id, clock,
  // encoding and scale take about a dozen bytes beside int4's 16 of values
  // and int8's 32.
  EXPECT_NEAR(*int4.accuracy, *int8.accuracy, 0.03);
  EXPECT_LT(UplinkBytes(int4) / UplinkBytes(int8), 0.75);
  EXPECT_LT(down(int4) / down(int8), 0.75);
}

TEST(SimulatedTeamTest, OnADenseGradientAdaptivePushesStayOnInt8AndTopKLearnsSlower) {
  // Every coordinate of the fake model's gradient is about as large: a row's
  // top 1/32 keeps about 0.4 of its norm, and what it leaves reaches the
  // coordinator pushes later (error feedback), so the team learns slower.
  // Measured: accuracy 0.967 (int8, and adaptive, which chose int8 for each
  // of its 71 pushes a worker, top-k keeping 0.39 to 0.42 of the norm) and
  // 0.794 (top-k) on 56% of int8's uplink bytes (rows of 32 send 1 value).
  const JobProgress int8 = CompressedTeam(Compression::kInt8, 1);
  const JobProgress topk = CompressedTeam(Compression::kTopK, 1);
  const JobProgress adaptive = CompressedTeam(Compression::kAdaptive, 1);
  EXPECT_GT(*topk.accuracy, 0.7);
  EXPECT_LT(*topk.accuracy, *int8.accuracy);
  EXPECT_LT(UplinkBytes(topk) / UplinkBytes(int8), 0.6);
  EXPECT_EQ(*adaptive.accuracy, *int8.accuracy);
  for (const JobProgress& p : {int8, topk}) {
    for (const auto& w : p.workers) EXPECT_FALSE(w.compression.has_value()) << "only adaptive workers choose";
  }
  for (const auto& w : adaptive.workers) {
    ASSERT_TRUE(w.compression.has_value()) << w.rank;
    EXPECT_GT(w.compression->pushes, 0);
    EXPECT_EQ(w.compression->topk_pushes, 0);
    EXPECT_EQ(w.compression->encoding, "int8");
    EXPECT_LT(w.compression->topk_kept_norm, kTopKKeepsEnough);
  }
}

TEST(SimulatedTeamTest, OnASparseGradientAdaptivePushesChooseTopKAndLearnAsInt8DoesOnFewerBytes) {
  // The classes' targets are non-zero at 1 in 32 coordinates: so is the
  // gradient, and top-k keeps most of it. Measured: each worker chose top-k
  // for all of its 71 pushes (keeping 0.80 to 0.93 of the norm when it last
  // measured), accuracy 0.965 against int8's 0.964, on 61% of int8's uplink
  // bytes (a push's stats and framing are the same size either way).
  const JobProgress int8 = CompressedTeam(Compression::kInt8, 1.0 / 32);
  const JobProgress adaptive = CompressedTeam(Compression::kAdaptive, 1.0 / 32);
  for (const auto& w : adaptive.workers) {
    ASSERT_TRUE(w.compression.has_value()) << w.rank;
    EXPECT_GT(w.compression->topk_pushes, w.compression->pushes / 2) << w.rank;
  }
  EXPECT_NEAR(*adaptive.accuracy, *int8.accuracy, 0.03);
  EXPECT_LT(UplinkBytes(adaptive) / UplinkBytes(int8), 0.7);
}

// ROG's staleness against BSP's none, on the same seed, with the real model
// on the digits: on a real clock how stale each row is depends on how the
// threads were scheduled (with both cores busy, rog ended 2.8 points under
// bsp here, and CI saw it past 3), so the comparison is made here, where it is the same every run. The
// workers differ fivefold in speed, so rog does use rows up to its bound stale.
TEST(SimulatedTeamTest, RogLandsWithinThreePointsOfBspOnTheSameSeed) {
  const TrainTestSplit& digits = Digits();
  double accuracy[2];
  int i = 0;
  for (SyncPolicy policy : {SyncPolicy::kBsp, SyncPolicy::kRog}) {
    TeamSetup setup = ATeamOf(3);
    setup.output_dir += NameOf(policy);
    setup.policy = policy;
    setup.staleness_bound = policy == SyncPolicy::kBsp ? 0 : 4;
    setup.optimizer = {OptimizerKind::kAdam, 0.003, std::nullopt, 0};
    setup.batch_size = 32;
    setup.budget.epochs = 15;
    setup.step_times = {milliseconds(10), milliseconds(20), milliseconds(50)};
    RealModel real;
    real.data = &digits;
    real.dataset = DatasetName::kDigits;
    real.spec.kind = ModelKind::kMlp;
    real.spec.hidden = {32};
    real.seed = 11;
    real.make = [&digits] { return CreateTrainer({{ModelKind::kMlp, {32}, {}}, digits.train.info, 11, 1}); };
    setup.real = real;
    SimulatedTeam team(setup);
    team.Run();
    ExpectSound(team, setup.staleness_bound);
    EXPECT_EQ(team.result()->stop_reason, StopReason::kEpochs) << NameOf(policy);
    accuracy[i++] = *team.result()->accuracy;
    ::testing::Test::RecordProperty(std::string(NameOf(policy)) + "_accuracy", std::to_string(accuracy[i - 1]));
  }
  EXPECT_GT(accuracy[0], 0.9) << "bsp";
  EXPECT_NEAR(accuracy[1], accuracy[0], 0.03) << "rog " << accuracy[1] << " vs bsp " << accuracy[0];
}

// What a worker reports of its link (GET /progress, the runner's table,
// metrics): nothing until something was measured, and never more than the
// link carries.
TEST(SimulatedTeamTest, ALinkEstimateIsAMeasurementNeverAboveTheLink) {
  TeamSetup setup = ATeamOf(2);
  setup.model.shapes = {{64, 256}};  // 64 kB of gradient a push: enough to time a link
  setup.links = {BandwidthTrace::Constant(20), BandwidthTrace::Constant(20)};
  setup.budget = {};
  setup.budget.wall_clock = seconds(2);
  SimulatedTeam shaped(setup);
  shaped.Run();
  ExpectSound(shaped, 4);
  for (const auto& w : shaped.result()->workers) {
    EXPECT_GT(w.bandwidth_mbps, 5) << "worker " << w.rank;
    EXPECT_LE(w.bandwidth_mbps, 20) << "worker " << w.rank;
  }
  // Pushes of a kilobyte tell nothing of a link: it is unknown, not the estimator's prior.
  SimulatedTeam small(ATeamOf(2));
  small.Run();
  ExpectSound(small, 4);
  for (const auto& w : small.result()->workers) EXPECT_EQ(w.bandwidth_mbps, 0) << "worker " << w.rank;
}

// A run that is slow says who it waited on.
TEST(SimulatedTeamTest, TheWorkerTheTeamWaitsOnIsNamedWithHowLong) {
  TeamSetup setup = ATeamOf(3);
  setup.slowdowns = {1, 1, 6};
  SimulatedTeam team(setup);
  team.Run();
  ExpectSound(team, 4);
  const auto& workers = team.result()->workers;
  EXPECT_GT(workers[2].held_team_s, 0.5 * team.result()->elapsed_s) << "the straggler held the team most of the time";
  EXPECT_LT(workers[0].held_team_s, 0.05 * team.result()->elapsed_s);
  EXPECT_LT(workers[1].held_team_s, 0.05 * team.result()->elapsed_s);

  // A worker on a thin link: a push of a kilobyte takes 16 ms at 0.5 Mbit/s, three steps.
  setup.slowdowns = {};
  setup.links = {std::nullopt, std::nullopt, BandwidthTrace::Constant(0.5)};
  setup.output_dir += "-link";
  SimulatedTeam thin(setup);
  thin.Run();
  ExpectSound(thin, 4);
  const auto& on_link = thin.result()->workers;
  EXPECT_GT(on_link[2].held_team_s, 0.25 * thin.result()->elapsed_s);
  EXPECT_LT(on_link[0].held_team_s, 0.05 * thin.result()->elapsed_s);
}

// Policy deadline (core/round_deadline.h) on links that keep up is bsp: the
// same run, step for step.
TEST(SimulatedTeamTest, DeadlineIsBspWhenEveryLinkKeepsUp) {
  std::vector<std::string> outcomes;
  for (SyncPolicy policy : {SyncPolicy::kBsp, SyncPolicy::kDeadline}) {
    TeamSetup setup = ATeamOf(4);
    setup.output_dir += NameOf(policy);
    setup.policy = policy;
    setup.staleness_bound = 0;
    setup.compression = Compression::kInt8;
    setup.partition = {PartitionKind::kDirichlet, 0.5};
    setup.links.assign(4, BandwidthTrace::Constant(20));
    SimulatedTeam team(setup);
    team.Run();
    ExpectSound(team, 0);
    std::ostringstream o;
    o.precision(17);
    o << *team.result()->accuracy << " " << team.result()->iteration << " " << team.result()->elapsed_s;
    for (const auto& w : team.result()->workers) o << " " << w.iteration << "/" << w.rows_sent << "/" << w.bytes_sent;
    outcomes.push_back(o.str());
    if (policy == SyncPolicy::kDeadline) {
      EXPECT_NE(team.log().find(" 0 closed by their deadline, 0 worker-rounds excused (a worker left out of a round), "
                                "0 gradient rows late"),
                std::string::npos)
          << team.log();
    }
  }
  EXPECT_EQ(outcomes[1], outcomes[0]);
}

// A link that fades to a few Mbit/s for a while — not out: its pushes still
// come, so it is never counted out — and comes back. bsp waits on it every
// round; deadline closes rounds without it (at most twice what the other
// three took, by default), counts it again once it keeps up, and never has
// anyone compute on a stale row.
TEST(SimulatedTeamTest, UnderDeadlineALinkInADipDoesNotHoldTheTeam) {
  auto dip = BandwidthTrace::Parse("seconds,mbps\n0,50\n1,3\n4,50\n20,50\n", "dip.csv");
  ASSERT_TRUE(dip.ok()) << dip.status().ToString();
  struct Run {
    SyncPolicy policy;
    bool dip;
    JobProgress result;
    int64_t w0_after = 0, w3_after = 0;  // iterations of workers 0 and 3 once the link is back
  };
  std::vector<Run> runs = {{SyncPolicy::kBsp, true, {}}, {SyncPolicy::kDeadline, true, {}},
                           {SyncPolicy::kDeadline, false, {}}};
  for (Run& run : runs) {
    TeamSetup setup = ATeamOf(4);
    setup.output_dir += std::string(NameOf(run.policy)) + (run.dip ? "-dip" : "");
    setup.policy = run.policy;
    setup.staleness_bound = 0;
    setup.model.shapes = {{64, 256}};  // 64 kB of gradient a push: 10 ms at 50 Mbit/s, 175 ms at 3
    setup.model.step = std::chrono::milliseconds(20);
    setup.links.assign(4, BandwidthTrace::Constant(50));
    if (run.dip) setup.links[3] = *dip;
    setup.budget = {};
    setup.budget.wall_clock = std::chrono::milliseconds(5500);
    SimulatedTeam team(setup);
    int64_t w0 = 0, w3 = 0;
    team.Run([&](SimulatedTeam& t) {
      t.clock().SleepFor(std::chrono::milliseconds(4500));
      w0 = IterationOf(t.progress(), 0);
      w3 = IterationOf(t.progress(), 3);
    });
    ExpectSound(team, 0);
    run.result = *team.result();
    run.w0_after = IterationOf(run.result, 0) - w0;
    run.w3_after = IterationOf(run.result, 3) - w3;
    EXPECT_EQ(team.push_fates()[static_cast<int>(PushFate::kCountedOut)], 0) << "the dip is not an outage";
    if (run.policy == SyncPolicy::kDeadline && run.dip) {
      const std::regex closed(" (\\d+) closed by their deadline, (\\d+) worker-rounds excused");
      std::smatch m;
      const std::string log = team.log();
      ASSERT_TRUE(std::regex_search(log, m, closed)) << log;
      EXPECT_GT(std::stoi(m[1]), 0) << "rounds closed without worker 3 while its link was at 3 Mbit/s";
    }
  }
  const Run &bsp = runs[0], &deadline = runs[1], &no_dip = runs[2];
  EXPECT_LT(bsp.result.iteration, 0.7 * no_dip.result.iteration) << "bsp waited 3 s on one link";
  EXPECT_GT(deadline.result.iteration, 0.85 * no_dip.result.iteration) << "deadline did not";
  EXPECT_LT(deadline.result.workers[0].stall_fraction, bsp.result.workers[0].stall_fraction);
  // Back, worker 3 is counted in every round: as many iterations as the others.
  EXPECT_GT(deadline.w0_after, 20);
  EXPECT_GE(deadline.w3_after, deadline.w0_after - 2);
}

TEST(SimulatedTeamTest, BspUsesNoStaleRow) {
  TeamSetup setup = ATeamOf(3);
  setup.policy = SyncPolicy::kBsp;
  setup.staleness_bound = 0;
  setup.slowdowns = {1, 3, 1};
  SimulatedTeam team(setup);
  team.Run();
  ExpectSound(team, 0);
}

}  // namespace
}  // namespace edgetrain::agent::testing

namespace edgetrain::agent::testing {
namespace {

// A job of one on the same fake model, data and budget, as a team of one trains it.
double SoloAccuracy(const TeamSetup& setup) {
  JobPlan plan;
  plan.job = "solo";
  plan.output_dir = setup.output_dir + "-solo";
  std::filesystem::remove_all(plan.output_dir);
  plan.spec.data.batch_size = setup.batch_size;
  plan.spec.optimizer = setup.optimizer;
  plan.spec.budget = setup.budget;
  plan.spec.evaluation.every_iterations = setup.evaluate_every;
  plan.spec.seed = setup.model.seed;
  const TrainTestSplit data = FakeData(setup.train_samples, 100, setup.model.classes);
  DeterministicClock clock;
  double accuracy = -1;
  clock.Run("solo", [&] {
    FakeTrainer trainer(setup.model, clock);
    SoloEngine engine(plan.spec, trainer, data, {}, {}, clock);
    MetricsRegistry registry;
    CoordinatorMetrics metrics(registry, plan.job, 1);
    ProgressBoard board;
    std::ostringstream log;
    std::atomic<bool> cancel{false};
    auto result = JobDriver(plan, engine, clock, board, metrics, log).Run(cancel);
    if (result.ok()) accuracy = *result->accuracy;
  });
  return accuracy;
}

// A worker alone has no teammate to be stale towards: every row's clock is its
// own push, and a bound S > 0 would only have it compute on its own delayed
// updates. With momentum, that overshoots (docs/data-parallelism.md).
// Streams (spec.data.stream): the samples each worker trains on arrive at its
// own rate, and a batch is what has arrived.
void ExpectStreamsAccountedFor(const JobProgress& p, const std::vector<double>& rates, int batch) {
  for (size_t w = 0; w < rates.size(); ++w) {
    ASSERT_TRUE(p.workers[w].stream.has_value()) << "worker " << w;
    const StreamProgress& s = *p.workers[w].stream;
    // Arrivals are the rate's integral over the worker's time on the stream
    // (which starts as it does, before the job's clock), as of its last push.
    EXPECT_GE(s.arrived, static_cast<int64_t>(rates[w] * (p.elapsed_s - 0.5))) << "worker " << w;
    EXPECT_LE(s.arrived, static_cast<int64_t>(rates[w] * (p.elapsed_s + 2))) << "worker " << w;
    // Every sample arrived is trained on, dropped or buffered; what was taken
    // into the batch being computed at the end was not yet reported.
    const int64_t unreported = s.arrived - s.dropped - s.backlog - p.workers[w].samples;
    EXPECT_GE(unreported, 0) << "worker " << w;
    EXPECT_LE(unreported, batch) << "worker " << w;
  }
}

TEST(SimulatedTeamTest, StreamsAtRatesOneThreeNineTrainOnWhatArrivesAndConverge) {
  TeamSetup setup = ATeamOf(3);
  const std::vector<double> rates = {40, 120, 360};
  setup.stream = StreamSpec{rates};
  setup.partition = {PartitionKind::kDirichlet, 0.5};
  setup.budget = {};
  setup.budget.wall_clock = seconds(30);
  setup.evaluate_every = 50;
  SimulatedTeam team(setup);
  team.Run();
  ExpectSound(team, 4);
  const JobProgress& p = *team.result();
  EXPECT_EQ(p.stop_reason, StopReason::kWallClock);
  EXPECT_GT(*p.accuracy, 0.9) << team.log();
  ExpectStreamsAccountedFor(p, rates, setup.batch_size);
  // The slowest stream's worker trains on nearly all it gets, in small
  // batches, and waits for samples; the fastest gets more than it can take
  // in the team's rounds, and its buffer drops the oldest.
  const StreamProgress &slow = *p.workers[0].stream, &fast = *p.workers[2].stream;
  EXPECT_GT(p.workers[0].samples, slow.arrived * 9 / 10);
  EXPECT_GT(slow.wait_s, 0.5 * p.elapsed_s);
  EXPECT_GT(p.workers[2].samples, 3 * p.workers[0].samples);
  EXPECT_EQ(slow.dropped, 0);
  EXPECT_GT(fast.dropped, 0);
  const std::string metrics = team.worker_metrics();
  EXPECT_NE(metrics.find("edgetrain_stream_arrived_samples_total{trainingjob=\"sim-team\",worker=\"2\"}"),
            std::string::npos) << metrics;
  EXPECT_NE(metrics.find("edgetrain_data_wait_seconds_total"), std::string::npos);
}

// A team held by a worker whose stream has all but stopped: the others push
// only keep-alives, and their streams' counts go on in them, where they had
// stood at those of their last step (a user's trial: 8 of 894 arrivals shown).
TEST(SimulatedTeamTest, AWorkerHeldByItsTeamStillReportsWhatItsStreamDeliversAndDrops) {
  TeamSetup setup = ATeamOf(3);
  const std::vector<double> rates = {0.0001, 60, 180};
  setup.stream = StreamSpec{rates};
  setup.budget = {};
  setup.budget.wall_clock = seconds(12);
  SimulatedTeam team(setup);
  team.Run();
  const JobProgress& p = *team.result();
  ExpectStreamsAccountedFor(p, rates, setup.batch_size);
  const StreamProgress& fast = *p.workers[2].stream;
  EXPECT_LT(p.workers[2].samples, setup.batch_size * 2) << "the team held it";
  EXPECT_GT(fast.dropped, 1500) << "its buffer full, what arrives pushes out the oldest";
  EXPECT_EQ(fast.backlog, StreamBufferCapacity(*setup.stream, setup.batch_size)) << "its buffer, full";
}

// A worker restarted, and then the coordinator resumed from its checkpoint,
// the workers reconnecting: each worker's stream is counted once over its
// processes and its coordinator's. A worker restarted had its stream's
// counts start again from 0 in the job's (fewer arrivals than samples
// trained); reconnected to a resumed coordinator, a worker's whole-life
// counts were added to the checkpoint's, and arrivals counted about twice
// (found in review).
TEST(SimulatedTeamTest, AStreamIsCountedOnceOverAWorkersRestartAndACoordinatorsResume) {
  TeamSetup setup = ATeamOf(3);
  const std::vector<double> rates = {120, 120, 120};
  setup.stream = StreamSpec{rates};
  setup.checkpoint_every = 40;
  setup.budget = {};
  setup.budget.wall_clock = seconds(20);
  SimulatedTeam team(setup);
  team.Run([&](SimulatedTeam& t) {
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return IterationOf(p, 1) >= 30; }));
    t.KillWorker(1);
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return !Active(p, 1); }));
    t.StartWorker(1);
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return CaughtUp(p, 1); }));
    const JobProgress restarted = t.progress();
    ASSERT_TRUE(restarted.workers[1].stream.has_value());
    EXPECT_GE(restarted.workers[1].stream->arrived + setup.batch_size, restarted.workers[1].samples)
        << "what it trained on before its restart arrived";
    ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return p.iteration >= 100; }));
    auto checkpoint = ReadWholeFile(t.plan().CheckpointPath());
    ASSERT_TRUE(checkpoint.ok());
    t.RestartCoordinator(*checkpoint);
  });
  const JobProgress& p = *team.result();
  ASSERT_TRUE(p.resumed_from_iteration.has_value()) << team.log();
  for (int w = 0; w < 3; ++w) {
    ASSERT_TRUE(p.workers[w].stream.has_value()) << "worker " << w;
    const StreamProgress& s = *p.workers[w].stream;
    // At most what the stream delivered over the whole run (its clock runs
    // from the workers' start, about the job's), where twice had been counted.
    EXPECT_LE(s.arrived, static_cast<int64_t>(rates[w] * (p.elapsed_s + 2))) << "worker " << w;
    // And all but what arrived between the checkpoint and the coordinator's
    // end, and while worker 1 was down.
    EXPECT_GE(s.arrived, static_cast<int64_t>(rates[w] * (p.elapsed_s - 3))) << "worker " << w;
  }
}

// A stream's file `file` under `folder` (worker-RANK/NAME.csv) of `rows`
// rows: a label, then the fake data's one feature.
void PutStreamFile(const std::filesystem::path& folder, const std::string& file, int rows) {
  std::filesystem::create_directories((folder / file).parent_path());
  std::ofstream out(folder / file);
  for (int i = 0; i < rows; ++i) out << i % 10 << ",0.5\n";
}

// A team of 2 on the streams of `folder`, buffers of `capacity`, for 10 s.
TeamSetup ATeamOnFolders(const std::filesystem::path& folder, int64_t capacity) {
  TeamSetup setup = ATeamOf(2);
  StreamSpec stream;
  stream.directory = folder.string();
  stream.buffer_capacity = capacity;
  setup.stream = stream;
  setup.budget = {};
  setup.budget.wall_clock = seconds(10);
  return setup;
}

TEST(SimulatedTeamTest, AStreamFromADirectoryTrainsOnTheFilesEachWorkersFolderReceives) {
  // A real source instead of emulated rates: each worker's samples are the
  // rows of the CSV files in its folder (a label, then the fake data's one
  // feature). Worker 0 has two files of 150 samples, worker 1 one of 100 and
  // one it cannot read.
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(::testing::TempDir()) / "sim-stream-directory";
  fs::remove_all(folder);
  auto put = [&](const std::string& file, int rows) { PutStreamFile(folder, file, rows); };
  put("worker-0/a.csv", 150);
  put("worker-0/b.csv", 150);
  put("worker-1/a.csv", 100);
  std::ofstream(folder / "worker-1" / "broken.csv") << "3,0.5,0.5\n";
  SimulatedTeam team(ATeamOnFolders(folder, 1000));
  team.Run();
  ExpectSound(team, 4);
  const JobProgress& p = *team.result();
  ASSERT_TRUE(p.workers[0].stream && p.workers[1].stream);
  EXPECT_EQ(p.workers[0].stream->arrived, 300);
  EXPECT_EQ(p.workers[1].stream->arrived, 100);
  // Nothing more comes. Worker 1 trains on all its file held, then waits
  // for more, and the team with it: worker 0 goes on no further than the
  // staleness bound lets it go ahead (a source that runs dry holds the team,
  // as a slow stream does).
  const WorkerProgress &w0 = p.workers[0], &w1 = p.workers[1];
  EXPECT_EQ(w1.samples, 100);
  EXPECT_GE(w0.samples, 100);
  EXPECT_LE(w0.iteration, w1.iteration + 4 + 1) << "the bound, 4, and the iteration it computes";
  EXPECT_GT(w1.stream->wait_s, 0.5 * p.elapsed_s) << "a wait still going on counts";
  for (const auto& w : p.workers) EXPECT_EQ(w.stream->dropped, 0);
  EXPECT_NE(team.log().find("worker 1: a file of its stream was left out: "), std::string::npos) << team.log();
  // And in its progress, for the run's summary: not in its log alone.
  EXPECT_EQ(w0.stream->refused_files, 0);
  EXPECT_EQ(w1.stream->refused_files, 1);
  EXPECT_NE(w1.stream->last_refused.find("broken.csv:1: "), std::string::npos) << w1.stream->last_refused;
  // And to Prometheus, where an alert can see a source writing bad files.
  const std::string metrics = team.worker_metrics();
  EXPECT_NE(metrics.find("edgetrain_stream_refused_files_total{trainingjob=\"sim-team\",worker=\"1\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("edgetrain_stream_refused_files_total{trainingjob=\"sim-team\",worker=\"0\"} 0"),
            std::string::npos);
  EXPECT_GT(*p.accuracy, 0.5);
}

// A file of more rows than the worker's buffer holds loses its first rows
// as it arrives: the worker says which file, and how many (744 rows of a
// file that came mid-run were dropped, unsaid: a new user's trial).
TEST(SimulatedTeamTest, AFileLargerThanTheBufferIsNamedWithWhatItLoses) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(::testing::TempDir()) / "sim-stream-oversized";
  fs::remove_all(folder);
  PutStreamFile(folder, "worker-0/big.csv", 150);
  PutStreamFile(folder, "worker-1/a.csv", 100);
  TeamSetup setup = ATeamOnFolders(folder, 100);
  setup.budget.wall_clock = seconds(3);
  SimulatedTeam team(setup);
  team.Run();
  const JobProgress& p = *team.result();
  ASSERT_TRUE(p.workers[0].stream.has_value());
  EXPECT_EQ(p.workers[0].stream->dropped, 50);
  EXPECT_NE(team.log().find("worker 0: its stream's file big.csv holds 150 rows, more than its buffer of 100: its "
                            "first 50 are dropped as it arrives"),
            std::string::npos)
      << team.log();
}

// A job resumed on another folder (spec.data.stream.directory changed)
// reads that folder's files whatever their names: the files read through are
// names of the folder the checkpoint's run read, and a resumed run skipped
// every file of the new one named before them, trained on nothing and
// exited 0 (a new user's trial). What had arrived stays counted.
TEST(SimulatedTeamTest, AJobResumedOnAnotherFolderReadsItsFiles) {
  namespace fs = std::filesystem;
  const fs::path first = fs::path(::testing::TempDir()) / "sim-stream-first";
  const fs::path second = fs::path(::testing::TempDir()) / "sim-stream-second";
  fs::remove_all(first);
  fs::remove_all(second);
  for (const char* worker : {"worker-0", "worker-1"}) {
    PutStreamFile(first, std::string(worker) + "/b.csv", 64);
    PutStreamFile(second, std::string(worker) + "/a.csv", 48);
  }
  TeamSetup setup = ATeamOnFolders(first, 1000);
  {
    SimulatedTeam stopped(setup);
    stopped.Run([&](SimulatedTeam& t) {
      ASSERT_TRUE(t.WaitFor([](const JobProgress& p) { return p.samples >= 128; }));
      t.Stop();
    });
    ASSERT_TRUE(stopped.result().ok()) << stopped.log();
  }
  setup.stream->directory = second.string();
  SimulatedTeam again(setup);
  again.Run();
  const JobProgress& p = *again.result();
  ASSERT_TRUE(p.resumed_from_iteration.has_value()) << again.log();
  for (int w = 0; w < 2; ++w) {
    ASSERT_TRUE(p.workers[w].stream.has_value());
    EXPECT_EQ(p.workers[w].stream->arrived, 64 + 48) << "worker " << w << "\n" << again.log();
    EXPECT_EQ(p.workers[w].samples, 64 + 48) << "worker " << w;
  }
}

// A buffer left with fewer samples than the least batch it trains on takes
// the next file though it does not fit beside them, the leftovers dropped:
// the stream had stood still for the whole budget, files of a full buffer's
// rows waiting unread beside 2 samples (a user's trial: 226, 256 and 256
// rows, a buffer of 256, batches of 32, the least 4).
TEST(SimulatedTeamTest, AStreamBufferOfLessThanTheLeastBatchTakesTheNextFileThoughItDoesNotFit) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(::testing::TempDir()) / "sim-stream-leftovers";
  fs::remove_all(folder);
  for (int w = 0; w < 2; ++w) {
    for (const auto& [file, rows] : {std::pair{"1.csv", 226}, std::pair{"2.csv", 256}, std::pair{"3.csv", 256}}) {
      PutStreamFile(folder, "worker-" + std::to_string(w) + "/" + file, rows);
    }
  }
  TeamSetup setup = ATeamOnFolders(folder, 256);
  setup.batch_size = 32;
  SimulatedTeam team(setup);
  team.Run();
  const JobProgress& p = *team.result();
  for (const WorkerProgress& w : p.workers) {
    ASSERT_TRUE(w.stream);
    EXPECT_EQ(w.stream->arrived, 226 + 256 + 256) << "every file read";
    EXPECT_LE(w.stream->dropped, 2 + 2) << "only leftovers of fewer than a batch";
    EXPECT_GE(w.samples, 700);
  }
}

class StreamWeightTest : public ::testing::TestWithParam<SyncPolicy> {};

TEST_P(StreamWeightTest, AWorkerWithTwiceTheSamplesCountsTwice) {
  // Two workers, one label each; the one whose stream is twice as fast
  // trains on about twice the samples each round, and the team's model
  // settles at its samples' weight: nearer its label's target than the
  // other's, at the optimum of a data set holding the labels 2:1.
  TeamSetup setup = ATeamOf(2);
  setup.model.classes = 2;
  setup.policy = GetParam();
  setup.staleness_bound = 0;
  setup.partition = {PartitionKind::kLabels, std::nullopt, 1};
  setup.stream = StreamSpec{{200, 100}};
  setup.budget = {};
  setup.budget.wall_clock = seconds(20);
  setup.optimizer = {OptimizerKind::kSgd, 0.05, std::nullopt, 0};
  SimulatedTeam team(setup);
  team.Run();
  ExpectSound(team, 0);
  const JobProgress& p = *team.result();
  const double ratio = static_cast<double>(p.workers[0].samples) / static_cast<double>(p.workers[1].samples);
  EXPECT_NEAR(ratio, 2.0, 0.3) << team.log();

  // The model as the coordinator saved it, judged against two optima: the
  // labels as many as each worker trained on, and the labels 1:1.
  const TrainTestSplit data = FakeData(setup.train_samples, 100, 2);
  const auto parts = PartitionSamples(data.train.labels, 2, 2, setup.partition, setup.model.seed);
  const int64_t label0 = data.train.labels[parts[0][0]], label1 = data.train.labels[parts[1][0]];
  ASSERT_NE(label0, label1);
  DeterministicClock clock;
  FakeTrainer model(setup.model, clock);
  std::ifstream saved(p.model_path, std::ios::binary);
  saved.read(reinterpret_cast<char*>(model.Parameters().data()),
             static_cast<std::streamsize>(model.Parameters().size() * sizeof(float)));
  ASSERT_TRUE(saved) << p.model_path;
  auto accuracy_at = [&](std::vector<int64_t> labels) {
    Dataset set = data.test;
    set.labels = std::move(labels);
    return model.Evaluate(set)->accuracy;
  };
  std::vector<int64_t> weighted;
  for (int64_t i = 0; i < p.workers[0].samples; ++i) weighted.push_back(label0);
  for (int64_t i = 0; i < p.workers[1].samples; ++i) weighted.push_back(label1);
  const double by_samples = accuracy_at(weighted), even = accuracy_at({label0, label1});
  // Measured: 0.9999 at the samples' weight, 0.80 at 1:1 (and the other
  // way round with the weighting taken out).
  EXPECT_GT(by_samples, 0.97) << "even " << even;
  EXPECT_GT(by_samples, even + 0.1);
}

INSTANTIATE_TEST_SUITE_P(Policies, StreamWeightTest, ::testing::Values(SyncPolicy::kBsp, SyncPolicy::kDeadline),
                         [](const auto& info) { return std::string(NameOf(info.param)); });

TEST(SimulatedTeamTest, InjectedSamplesOfTheLabelsAWorkerLacksCrossItsLinkAndWidenWhatTheTeamLearns) {
  // Three workers of one label each, of ten: alone they pull the model to
  // the mean of three labels' targets, far from the test set's optimum over
  // all ten. Injection tops each batch up with as many samples again from
  // all the labels a worker lacks, sent by the coordinator.
  auto run = [](std::optional<InjectionSpec> injection, const std::string& name) {
    TeamSetup setup = ATeamOf(3);
    setup.output_dir += name;
    setup.policy = SyncPolicy::kBsp;
    setup.staleness_bound = 0;
    setup.partition = {PartitionKind::kLabels, std::nullopt, 1};
    setup.injection = injection;
    setup.budget = {};
    setup.budget.wall_clock = seconds(6);
    auto team = std::make_unique<SimulatedTeam>(setup);
    team->Run();
    ExpectSound(*team, 0);
    return team;
  };
  const auto plain = run(std::nullopt, "-plain");
  const auto injected = run(InjectionSpec{1.0, 1.0}, "-injected");
  const JobProgress &without = *plain->result(), &with = *injected->result();
  int64_t bytes_without = 0, bytes_with = 0;
  for (int w = 0; w < 3; ++w) {
    EXPECT_EQ(without.workers[w].injected, 0);
    // As many as its own samples, every iteration but the first few (the
    // coordinator's first update brings the first).
    EXPECT_GE(with.workers[w].injected, 16 * (with.workers[w].iteration - 3)) << injected->log();
    bytes_without += without.workers[w].bytes_received;
    bytes_with += with.workers[w].bytes_received;
  }
  // The samples came over the downlinks: each is a pixel and a label here,
  // a few bytes an iteration beside the rows' hundreds.
  EXPECT_GT(bytes_with, bytes_without) << without.iteration << " and " << with.iteration << " iterations";
  // Measured: 0.58 without, 0.81 with.
  EXPECT_LT(*without.accuracy, 0.7);
  EXPECT_GT(*with.accuracy, *without.accuracy + 0.15) << "without " << *without.accuracy;
  EXPECT_NE(injected->worker_metrics().find("edgetrain_injected_samples_total"), std::string::npos);
}

// A BSP team of one device per slowdown, 32-sample batches and 20 simulated
// seconds, its steps costing `step` plus `per_sample` a sample (times the
// slowdown), with batches fixed or compute-weighted.
std::unique_ptr<SimulatedTeam> WeightedTeam(bool weighted, std::vector<double> slowdowns, Duration step,
                                            Duration per_sample) {
  TeamSetup setup = ATeamOf(static_cast<int>(slowdowns.size()));
  setup.output_dir += weighted ? "-weighted" : "-fixed";
  setup.policy = SyncPolicy::kBsp;
  setup.staleness_bound = 0;
  setup.model.step = step;
  setup.model.per_sample = per_sample;
  setup.train_samples = static_cast<int64_t>(slowdowns.size()) * 32 * 20;
  setup.slowdowns = std::move(slowdowns);
  setup.batch_size = 32;
  setup.compute_weighted = weighted;
  setup.budget = {};
  setup.budget.wall_clock = seconds(20);
  auto team = std::make_unique<SimulatedTeam>(setup);
  team->Run();
  ExpectSound(*team, 0);
  return team;
}

TEST(SimulatedTeamTest, ComputeWeightedBatchesFollowEachDevicesSpeedAndTheTeamStepsFaster) {
  // Slowdowns 1:2:4:8, a step's compute all per sample. With fixed batches a
  // round waits for the slowest device's batch; weighted, each device's batch
  // takes it about as long.
  auto run = [](bool weighted) {
    return WeightedTeam(weighted, {1, 2, 4, 8}, Duration::zero(), std::chrono::microseconds(500));
  };
  const auto fixed = run(false), weighted = run(true);
  const JobProgress &f = *fixed->result(), &w = *weighted->result();
  // The same aggregate batch a round: samples over rounds (a worker's own
  // iteration count) stay 4 x 32.
  EXPECT_NEAR(static_cast<double>(w.samples) / static_cast<double>(w.workers[0].iteration), 128, 8);
  // The fastest device trained on about 8 times the slowest's samples.
  EXPECT_NEAR(static_cast<double>(w.workers[0].samples) / static_cast<double>(w.workers[3].samples), 8, 1.5);
  EXPECT_NEAR(static_cast<double>(f.workers[0].samples) / static_cast<double>(f.workers[3].samples), 1, 0.05);
  // A fixed round takes the slowest device's 32 x 4 ms; a weighted one about
  // 128 x 0.5 / (8+4+2+1) x 8 ms: 128 ms against about 34. Measured: 20,000
  // samples in 20 s fixed, 70,775 weighted (the fastest 37,568, the slowest
  // 4,991), accuracy 0.987 and 0.984.
  EXPECT_GT(w.samples, 3 * f.samples) << "fixed " << f.samples << ", weighted " << w.samples;
  EXPECT_GT(*w.accuracy, 0.9);
}

TEST(SimulatedTeamTest, ComputeWeightedBatchesTellAStepsFixedCostApartAndFillTheRoundASlowDeviceHolds) {
  // A step costs 2 ms whatever its batch, and 0.1 ms a sample; slowdowns
  // 1:4:16. The slowest device's fixed cost alone (32 ms) outlasts what the
  // others' steps would take on the whole aggregate batch between them: it
  // is dealt one sample, its 33.6 ms step sets every bsp round, and the others
  // fill that round rather than idle in it (core/batch_sizing.h).
  auto run = [](bool weighted) {
    return WeightedTeam(weighted, {1, 4, 16}, std::chrono::milliseconds(2), std::chrono::microseconds(100));
  };
  const auto fixed = run(false), weighted = run(true);
  const JobProgress &f = *fixed->result(), &w = *weighted->result();
  // Fixed: a round of 96 samples waits for the slowest device's 16 x (2 +
  // 3.2) = 83 ms. Weighted: rounds of 33.6 ms of 128 + 63 + 1 samples, 4.9
  // times the samples a second. Measured: 23,104 samples in 20 s fixed,
  // 112,855 weighted (75,888, 36,339 and 628), accuracy 0.991 and 0.983.
  // Dealt by a step's time over its samples, with no round filled (before
  // 2026-11-28), the same team trained on 56,928.
  EXPECT_LT(w.workers[2].samples, w.workers[2].iteration + 2 * 32)
      << "the slowest device is dealt one sample a step once measured";
  EXPECT_NEAR(static_cast<double>(w.workers[0].samples) / static_cast<double>(w.workers[1].samples), 128.0 / 63, 0.3);
  EXPECT_GT(w.samples, 4 * f.samples) << "fixed " << f.samples << ", weighted " << w.samples;
  EXPECT_GT(*w.accuracy, 0.9);
}

TEST(SimulatedTeamTest, ATeamOfOneTrainsLikeAJobOfOne) {
  for (SyncPolicy policy : {SyncPolicy::kRog, SyncPolicy::kSsp}) {
    TeamSetup setup = ATeamOf(1);
    setup.output_dir += NameOf(policy);
    setup.policy = policy;
    setup.optimizer = {OptimizerKind::kSgd, 0.05, 0.9, 0};
    setup.batch_size = 64;  // a batch of 16 moves the fake model's end point by up to 5 points
    setup.budget.epochs = 16;
    SimulatedTeam team(setup);
    team.Run();
    ExpectSound(team, 0);
    const double solo = SoloAccuracy(setup);
    ASSERT_GT(solo, 0.85);
    EXPECT_NEAR(*team.result()->accuracy, solo, 0.02) << NameOf(policy) << " alone " << solo;
  }
}

}  // namespace
}  // namespace edgetrain::agent::testing

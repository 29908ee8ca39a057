#include "core/team_accounts.h"

#include <gtest/gtest.h>

#include <cmath>

namespace edgetrain {
namespace {

TEST(TeamAccountsTest, TheTeamsIterationIsItsSamplesOverABatchPerWorker) {
  TeamAccounts team(2, 32, 6400);
  WorkerReport r;
  r.samples = 96;
  team.Reported(0, r);
  r.samples = 32;
  team.Reported(1, r);
  EXPECT_EQ(team.samples(), 128);
  EXPECT_EQ(team.team_iteration(), 2);
  team.Pushed(0, 3, 10, 4000);
  team.Pushed(1, 1, 10, 4000);
  JobProgress p = team.Progress(2.0, {true, true});
  EXPECT_EQ(p.iteration, 2);
  EXPECT_EQ(p.workers[0].iteration, 3) << "each worker's own count differs from the team's";
  EXPECT_EQ(p.workers[1].iteration, 1);
  EXPECT_DOUBLE_EQ(p.samples_per_second, 64);
}

// A coordinator placed anew trains on from a worker's copy: the team's count
// goes on by the rounds the copy is ahead of its own model, and never back.
TEST(TeamAccountsTest, ATeamResumedFromACopyCountsOnByTheRoundsItIsAhead) {
  TeamAccounts team(2, 32, 6400);
  team.TrainedOnFromCopy(0, 2900);  // a coordinator with nothing of its own
  EXPECT_EQ(team.team_iteration(), 2900);
  EXPECT_EQ(team.samples(), 2900 * 64);
  JobProgress shown = team.Progress(1.0, {true, true});
  EXPECT_EQ(shown.workers[0].samples + shown.workers[1].samples, shown.samples) << "the workers add up to the job";
  WorkerReport r;
  r.samples = 64;
  team.Reported(0, r);
  EXPECT_EQ(team.team_iteration(), 2901);
  team.TrainedOnFromCopy(3000, 100);
  EXPECT_EQ(team.team_iteration(), 2901) << "a copy behind the team's own model moves nothing back";
  // Resumed from a checkpoint of 1,000 iterations (whole batches) whose rows
  // were at round 1,500 (rounds closed without a worker): a copy at round
  // 1,530 is 30 rounds on, not 1,530 iterations.
  TeamAccounts resumed(2, 32, 6400);
  resumed.Restore(1000, 1000 * 64, {}, std::nullopt);
  resumed.TrainedOnFromCopy(1500, 1530);
  EXPECT_EQ(resumed.team_iteration(), 1030);
  EXPECT_EQ(resumed.Totals()[0].samples, 30 * 32) << "a checkpoint without workers' totals: the copy's rounds";
}

// A job resumed at another batch size counts on from its checkpoint's
// iteration: its samples were made of batches of the earlier size.
TEST(TeamAccountsTest, AResumeAtAnotherBatchSizeCountsOnFromTheCheckpointsIteration) {
  TeamAccounts before(2, 32, 60000);
  WorkerReport r;
  r.samples = 32;
  for (int i = 0; i < 591; ++i) {
    before.Reported(0, r);
    before.Reported(1, r);
  }
  ASSERT_EQ(before.team_iteration(), 591);
  TeamAccounts after(2, 16, 60000);
  after.Restore(before.team_iteration(), before.samples(), before.Totals());
  EXPECT_EQ(after.team_iteration(), 591) << "not 1,182: the same samples in batches of half the size";
  r.samples = 16;
  after.Reported(0, r);
  after.Reported(1, r);
  EXPECT_EQ(after.team_iteration(), 592);
  EXPECT_EQ(after.samples(), 591 * 64 + 32);
}

// A job stopped mid-iteration and resumed counts the part it had left: its
// last batches (a short epoch's end) make the same whole iterations as a
// run never stopped. Each run rounding its own down, a resumed job of
// 600,000 samples in iterations of 96 ended at 6,249 (a new user's trial).
TEST(TeamAccountsTest, APartOfAnIterationCarriesOverAResume) {
  TeamAccounts before(3, 32, 600000);
  WorkerReport r;
  r.samples = 32;
  for (int i = 0; i < 4820; ++i) {
    for (int w = 0; w < 3; ++w) before.Reported(w, r);
  }
  before.Reported(0, r);
  before.Reported(1, r);  // two thirds of iteration 4,821
  ASSERT_EQ(before.team_iteration(), 4820);
  TeamAccounts after(3, 32, 600000);
  after.Restore(before.team_iteration(), before.samples(), before.Totals());
  EXPECT_EQ(after.team_iteration(), 4820);
  after.Reported(2, r);
  EXPECT_EQ(after.team_iteration(), 4821) << "its third of the iteration the checkpoint had two of";
}

// A push late for its round (policy deadline) trained nothing the team kept:
// its loss is heard, its samples are not counted as trained.
TEST(TeamAccountsTest, ALatePushsSamplesAreNotCountedAsTrained) {
  TeamAccounts team(2, 32, 6400);
  WorkerReport r;
  r.samples = 32;
  r.loss_sum = 64;
  r.loss_count = 32;
  team.Reported(0, r);
  r.loss_sum = 32;
  team.Reported(1, r, /*trained=*/false);
  EXPECT_EQ(team.samples(), 32);
  EXPECT_DOUBLE_EQ(team.loss(), 2 + (1 - 2) * (1 - std::pow(0.98, 32))) << "both losses heard";
  JobProgress p = team.Progress(1.0, {true, true});
  EXPECT_EQ(p.workers[0].samples, 32);
  EXPECT_EQ(p.workers[1].samples, 0);
}

TEST(TeamAccountsTest, AWorkersTotalsSurviveItsRestarts) {
  TeamAccounts team(1, 32, 6400);
  WorkerReport r;
  r.wall_s = 10;
  r.stall_s = 4;
  r.energy_j = 50;
  team.Reported(0, r);
  team.StreamOpened(0, 7);  // it restarted: its own counters begin again
  r.wall_s = 2;
  r.stall_s = 1;
  r.energy_j = 5;
  team.Reported(0, r);
  JobProgress p = team.Progress(12.0, {true});
  EXPECT_DOUBLE_EQ(p.workers[0].wall_s, 12);
  EXPECT_DOUBLE_EQ(p.workers[0].stall_s, 5);
  EXPECT_DOUBLE_EQ(p.workers[0].stall_fraction, 5.0 / 12);
  EXPECT_DOUBLE_EQ(p.workers[0].energy_joules, 55);
  EXPECT_DOUBLE_EQ(*p.energy_joules, 55);
}

// Joules no worker's figures hold (counted by a coordinator placed anew's
// predecessor) stay in the job's, and through its checkpoint.
TEST(TeamAccountsTest, EnergyCarriedFromAnEarlierCoordinatorStaysInTheJobsThroughACheckpoint) {
  TeamAccounts team(1, 32, 6400);
  WorkerReport r;
  r.energy_j = 5;
  team.Reported(0, r);
  team.CarryEnergy(400);
  EXPECT_DOUBLE_EQ(*team.Progress(1.0, {true}).energy_joules, 405);
  EXPECT_DOUBLE_EQ(team.Progress(1.0, {true}).workers[0].energy_joules, 5) << "not any worker's";
  TeamAccounts resumed(1, 32, 6400);
  resumed.Restore(0, 0, team.Totals(), std::nullopt, 405);
  EXPECT_DOUBLE_EQ(*resumed.Progress(1.0, {true}).energy_joules, 405);
  EXPECT_DOUBLE_EQ(resumed.Progress(1.0, {true}).workers[0].energy_joules, 5);
}

TEST(TeamAccountsTest, LossIsSmoothedOverAboutTheLastFiftyBatchesAsAJobOfOnesIs) {
  TeamAccounts team(2, 32, 6400);
  EXPECT_EQ(team.loss(), 0) << "nothing reported";
  WorkerReport r;
  r.loss_sum = 3;
  r.loss_count = 2;
  team.Reported(0, r);
  EXPECT_DOUBLE_EQ(team.loss(), 1.5) << "the first report as it is";
  r.loss_sum = 1;
  r.loss_count = 2;
  team.Reported(1, r);
  // Two batches of 0.5: each moves it 2% of the way.
  EXPECT_NEAR(team.loss(), 0.5 + (1.5 - 0.5) * 0.98 * 0.98, 1e-12);
  EXPECT_DOUBLE_EQ(team.Progress(1.0, {true, true}).loss, team.loss()) << "and looking does not change it";
  EXPECT_DOUBLE_EQ(team.Progress(1.0, {true, true}).loss, team.loss());
}

TEST(TeamAccountsTest, TimeTheTeamWaitedOnAWorkerAddsUp) {
  TeamAccounts team(2, 32, 6400);
  team.Holding(1, true, std::chrono::milliseconds(20));
  team.Holding(1, true, std::chrono::milliseconds(20));
  team.Holding(1, false, std::chrono::milliseconds(20));
  JobProgress p = team.Progress(1, {true, true});
  EXPECT_DOUBLE_EQ(p.workers[1].held_team_s, 0.04);
  EXPECT_FALSE(p.workers[1].holding_team);
  EXPECT_DOUBLE_EQ(p.workers[0].held_team_s, 0);
}

TEST(TeamAccountsTest, ARestoredTeamCountsOnFromWhereItStood) {
  TeamAccounts before(2, 32, 6400);
  WorkerReport r;
  r.samples = 64;
  r.wall_s = 3;
  r.energy_j = 20;
  r.injected = 7;
  before.Reported(1, r);
  before.Pushed(1, 2, 5, 1000);
  before.Holding(1, true, std::chrono::seconds(1));
  TeamAccounts after(2, 32, 6400);
  after.Restore(before.team_iteration(), before.samples(), before.Totals());
  r.samples = 32;
  r.wall_s = 1;
  r.energy_j = 5;
  r.injected = 3;
  after.Reported(1, r);  // its first report in the new run
  JobProgress p = after.Progress(4, {true, true});
  // Injected samples over both runs, as its samples are: a resumed run had
  // counted its own alone, and its stream table misread the rest (a user's trial).
  EXPECT_EQ(p.workers[1].injected, 10);
  EXPECT_EQ(after.Totals()[1].injected, 10);
  EXPECT_EQ(p.samples, 96);
  EXPECT_EQ(p.workers[1].samples, 96);
  EXPECT_EQ(p.workers[1].rows_sent, 5);
  EXPECT_DOUBLE_EQ(p.workers[1].wall_s, 4);
  EXPECT_DOUBLE_EQ(p.workers[1].energy_joules, 25);
  EXPECT_DOUBLE_EQ(p.workers[1].held_team_s, 1);
  EXPECT_DOUBLE_EQ(*p.energy_joules, 25);
}

// A team resumed with fewer workers keeps the departed ones' energy in the
// job's, so that an energy budget counts what they spent (it left the
// totals with them: a new user's trial); its checkpoint keeps their
// figures, which a team as large again takes back.
TEST(TeamAccountsTest, ATeamResumedWithFewerWorkersKeepsTheDepartedsEnergy) {
  TeamAccounts three(3, 32, 6400);
  for (int w = 0; w < 3; ++w) {
    WorkerReport r;
    r.samples = 32;
    r.energy_j = 10.0 * (w + 1);
    three.Reported(w, r);
  }
  std::vector<WorkerTotals> kept = three.Totals();
  kept[2].bytes_sent = 500;
  kept[2].bytes_received = 700;
  TeamAccounts two(2, 32, 6400);
  two.Restore(three.team_iteration(), three.samples(), kept);
  JobProgress p = two.Progress(1, {true, true});
  ASSERT_EQ(p.workers.size(), 2u);
  EXPECT_DOUBLE_EQ(*p.energy_joules, 60) << "10 + 20, and the departed worker's 30";
  EXPECT_EQ(p.departed_bytes_sent, 500) << "its bytes stay the job's too";
  EXPECT_EQ(p.departed_bytes_received, 700);
  ASSERT_EQ(two.Totals().size(), 3u);
  TeamAccounts again(3, 32, 6400);
  again.Restore(two.team_iteration(), two.samples(), two.Totals());
  p = again.Progress(1, {true, true, true});
  EXPECT_DOUBLE_EQ(p.workers[2].energy_joules, 30);
  EXPECT_DOUBLE_EQ(*p.energy_joules, 60);
}

// A stream from a folder: the last file a worker had taken all of is kept
// across a resume, and its next report's takes over.
TEST(TeamAccountsTest, TheLastFileAWorkerTookAllOfOutlivesAResume) {
  TeamAccounts before(2, 32, 6400);
  WorkerReport r;
  r.samples = 32;
  r.stream = StreamProgress{};
  r.stream->read_through = "0007.csv";
  before.Reported(1, r);
  EXPECT_EQ(before.StreamReadThrough(1), "0007.csv");
  EXPECT_EQ(before.StreamReadThrough(0), "");
  TeamAccounts after(2, 32, 6400);
  after.Restore(before.team_iteration(), before.samples(), before.Totals());
  EXPECT_EQ(after.StreamReadThrough(1), "0007.csv");
  r.stream->read_through = "0009.csv";
  after.Reported(1, r);
  EXPECT_EQ(after.Totals()[1].stream_read_through, "0009.csv");
}

// A worker reports its stream's counts and injected samples since its stream
// opened, as it does its time; a new stream (a restarted worker, one back on
// a coordinator resumed from its checkpoint) adds to what its earlier ones
// reported. A restarted worker's had started again from 0 in the table (found
// in review).
TEST(TeamAccountsTest, AStreamsCountsAndInjectedSamplesSurviveAWorkersRestarts) {
  TeamAccounts team(1, 32, 6400);
  WorkerReport r;
  r.samples = 640;
  r.injected = 40;
  r.stream = StreamProgress{700, 10, 30, 2.5, 1, "bad.csv", "0007.csv", 650};
  team.Reported(0, r);
  team.StreamOpened(0, 20);
  r.samples = 64;
  r.injected = 4;
  r.stream = StreamProgress{80, 2, 12, 0.5, 0, "", "0008.csv", 60};
  team.Reported(0, r);
  const JobProgress p = team.Progress(10, {true});
  ASSERT_TRUE(p.workers[0].stream.has_value());
  EXPECT_EQ(p.workers[0].stream->arrived, 730) << "the first stream's read through (650), and the second's";
  EXPECT_EQ(p.workers[0].stream->dropped, 12);
  EXPECT_EQ(p.workers[0].stream->backlog, 12) << "as it is now";
  EXPECT_DOUBLE_EQ(p.workers[0].stream->wait_s, 3.0);
  EXPECT_EQ(p.workers[0].stream->refused_files, 1);
  EXPECT_EQ(p.workers[0].stream->last_refused, "bad.csv");
  EXPECT_EQ(p.workers[0].injected, 44);
  EXPECT_EQ(team.StreamReadThrough(0), "0008.csv");
  const WorkerTotals kept = team.Totals()[0];
  EXPECT_EQ(kept.stream_arrived, 710);
  EXPECT_EQ(kept.stream_refused_files, 1);
  EXPECT_EQ(kept.injected, 44);
  // Opened again before its new stream reported: what it had is kept.
  team.StreamOpened(0, 22);
  EXPECT_EQ(team.StreamReadThrough(0), "0008.csv");
  EXPECT_EQ(team.Totals()[0].stream_arrived, 710);
  EXPECT_EQ(team.Totals()[0].injected, 44);
}

// A stream's counts start at each run; the job's count over every run, as its
// samples do, so that a resumed run's table adds up.
TEST(TeamAccountsTest, AStreamsCountsAddUpOverAResume) {
  TeamAccounts before(1, 32, 6400);
  WorkerReport r;
  r.samples = 700;
  r.stream = StreamProgress{700, 10, 0, 2.5};
  r.stream->arrived_for_good = 700;
  before.Reported(0, r);
  TeamAccounts after(1, 32, 6400);
  after.Restore(before.team_iteration(), before.samples(), before.Totals(), 0.7);
  EXPECT_DOUBLE_EQ(after.loss(), 0.7) << "the loss shown goes on from the checkpoint's";
  r.samples = 50;
  r.stream = StreamProgress{50, 0, 0, 1.0};  // this run's
  r.stream->arrived_for_good = 50;
  after.Reported(0, r);
  const JobProgress p = after.Progress(4, {true});
  ASSERT_TRUE(p.workers[0].stream.has_value());
  EXPECT_EQ(p.workers[0].stream->arrived, 750);
  EXPECT_EQ(p.workers[0].stream->dropped, 10);
  EXPECT_DOUBLE_EQ(p.workers[0].stream->wait_s, 3.5);
  EXPECT_EQ(p.workers[0].samples, 750);
  EXPECT_EQ(after.Totals()[0].stream_arrived, 750);
}

// A stream from a folder: what a run had read beyond its last file read
// through (a file taken in part, files waiting in its buffer) a resumed run
// reads again. The checkpoint carries only the files read through, so those
// samples arrive once in the job's count, not once a run (a trial: 50 of a
// file taken in part counted twice, and a buffer's worth shown as
// "uncounted").
TEST(TeamAccountsTest, AFolderStreamsSamplesReadAgainOnResumeArriveOnce) {
  TeamAccounts before(1, 32, 6400);
  WorkerReport r;
  r.samples = 120;
  r.stream = StreamProgress{150, 0, 30, 0.5};  // 3 files of 50: 100 read through, 20 taken of the third
  r.stream->read_through = "2.csv";
  r.stream->arrived_for_good = 100;
  before.Reported(0, r);
  EXPECT_EQ(before.Progress(1, {true}).workers[0].stream->arrived, 150) << "while it runs, all that arrived";
  TeamAccounts after(1, 32, 6400);
  after.Restore(before.team_iteration(), before.samples(), before.Totals());
  r.stream = StreamProgress{50, 0, 0, 0.1};  // 3.csv, read again whole
  r.stream->read_through = "3.csv";
  r.stream->arrived_for_good = 50;
  after.Reported(0, r);
  EXPECT_EQ(after.Progress(2, {true}).workers[0].stream->arrived, 150);
  EXPECT_EQ(after.Totals()[0].stream_arrived, 150);
}

// What a checkpoint keeps of a folder is through the batches a round
// counted: a push late for its round, or a push of nothing (a worker saying
// it is alive while it computes a batch it took), says files read through
// whose samples the team did not keep. A resumed run had skipped them,
// their samples never trained on and called "uncounted" (a new user's trial).
TEST(TeamAccountsTest, AFoldersReadThroughIsThatOfItsLastCountedPush) {
  TeamAccounts accounts(1, 4, 6400);
  WorkerReport counted;
  counted.samples = 4;
  counted.stream = StreamProgress{40, 0, 12, 1.0};
  counted.stream->read_through = "14.csv";
  counted.stream->arrived_for_good = 28;
  accounts.Reported(0, counted);
  WorkerReport late = counted;
  late.stream->read_through = "16.csv";
  late.stream->arrived_for_good = 32;
  accounts.Reported(0, late, /*trained=*/false);
  EXPECT_EQ(accounts.StreamReadThrough(0), "14.csv") << "late for its round";
  WorkerReport alive = late;
  alive.samples = 0;
  accounts.Reported(0, alive);
  EXPECT_EQ(accounts.StreamReadThrough(0), "14.csv") << "a push of no batch";
  EXPECT_EQ(accounts.Totals()[0].stream_read_through, "14.csv");
  EXPECT_EQ(accounts.Totals()[0].stream_arrived, 28);
  EXPECT_EQ(accounts.Progress(1, {true}).workers[0].stream->arrived, 40) << "while it runs, all that arrived";
  accounts.Reported(0, late);
  EXPECT_EQ(accounts.StreamReadThrough(0), "16.csv") << "counted";
}

// A file a worker's folder left out in one run is skipped by the next, which
// read past it: the left-out count goes on over the runs (a resumed run said
// 0 and dropped the note, a new user's trial).
TEST(TeamAccountsTest, AFoldersLeftOutFilesAddUpOverAResume) {
  TeamAccounts before(1, 32, 6400);
  WorkerReport r;
  r.stream = StreamProgress{100, 0, 0, 0.5};
  r.stream->refused_files = 1;
  r.stream->last_refused = "incoming/worker-0/bad.csv:1: expected 65 values, found 2";
  before.Reported(0, r);
  TeamAccounts after(1, 32, 6400);
  after.Restore(before.team_iteration(), before.samples(), before.Totals());
  r.stream = StreamProgress{50, 0, 0, 0.2};  // this run's: nothing refused
  after.Reported(0, r);
  const JobProgress p = after.Progress(4, {true});
  ASSERT_TRUE(p.workers[0].stream.has_value());
  EXPECT_EQ(p.workers[0].stream->refused_files, 1);
  EXPECT_EQ(p.workers[0].stream->last_refused, "incoming/worker-0/bad.csv:1: expected 65 values, found 2");
  EXPECT_EQ(after.Totals()[0].stream_refused_files, 1);
}

TEST(TeamAccountsTest, DownlinkTimeIsToldToTheWorkerOnce) {
  TeamAccounts team(1, 32, 6400);
  team.Delivered(0, 1000, std::chrono::milliseconds(250));
  team.Delivered(0, 1000, std::chrono::milliseconds(250));
  EXPECT_DOUBLE_EQ(team.TakeTransferSeconds(0), 0.5);
  EXPECT_DOUBLE_EQ(team.TakeTransferSeconds(0), 0.0);
  EXPECT_EQ(team.Progress(1, {true}).workers[0].bytes_received, 2000);
}

}  // namespace
}  // namespace edgetrain

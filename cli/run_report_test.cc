#include "cli/run_report.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace edgetrain::cli {
namespace {

api::TrainingJobManifest Job() {
  api::TrainingJobManifest job;
  job.name = "robot-team";
  job.spec.parallelism.workers = 3;
  job.spec.budget.target_accuracy = 0.85;
  return job;
}

// Three robots: the first on an emulated link too little used to time, the
// second timed, the third not emulated at all.
LocalRunPlan Team() {
  LocalRunPlan plan;
  plan.team = true;
  for (int r = 0; r < 3; ++r) {
    WorkerSlot slot{r, "robot-" + std::to_string(r + 1), 1, std::nullopt, {}};
    if (r < 2) slot.link = LinkSpec{"/traces/wifi.csv", 0, 1};
    plan.devices.push_back(slot);
  }
  return plan;
}

JobProgress Finished() {
  JobProgress p;
  p.state = JobState::kSucceeded;
  p.iteration = 331;
  p.samples = 331 * 3 * 64;
  p.elapsed_s = 60;
  p.accuracy = 0.7139;
  p.stop_reason = StopReason::kWallClock;
  for (int r = 0; r < 3; ++r) {
    WorkerProgress w;
    w.rank = r;
    w.iteration = 375;  // where it stands: a worker taken back resumes at the team's
    w.batch_size = 64;
    w.samples = 300 * 64;
    w.active = r != 2;
    p.workers.push_back(w);
  }
  p.workers[1].bandwidth_mbps = 41.5;
  p.workers[1].downlink_mbps = 38.2;
  p.workers[1].held_team_s = 31.2;
  p.workers[2].held_team_s = 12.04;
  p.workers[0].held_team_s = 2.0;  // under a twentieth: not worth a word
  return p;
}

// What PrintSummary prints of `p` for `plan`, `wall_s` seconds in all.
std::string Summary(const LocalRunPlan& plan, const JobProgress& p, double wall_s = 66.9) {
  std::ostringstream out;
  PrintSummary(Job(), plan, p, wall_s, out);
  return out.str();
}

// A worker out of the team at the end whose agent ended on its own is said
// with how it ended, not as "counted out, or gone".
TEST(RunReportTest, AWorkerWhoseAgentEndedOnItsOwnIsSaidWithHow) {
  JobProgress p = Finished();  // worker 2 is out of the team at the end
  const std::string said =
      [&] {
        std::ostringstream out;
        PrintSummary(Job(), Team(), p, 66.9, out, {{2, "exit 2, an error of the job's own: the loss is NaN"}});
        return out.str();
      }();
  EXPECT_NE(said.find("  not in the team at the end: robot-3 (its agent ended: exit 2, an error of the job's own: the "
                      "loss is NaN); its figures stop where it left\n"),
            std::string::npos)
      << said;
  EXPECT_NE(Summary(Team(), p).find("not in the team at the end: robot-3 (counted out, or gone;"), std::string::npos);
}

// A worker whose pushes the coordinator refused (its gradients beyond what a
// model that trains has) is said to be, with the last refusal's words.
TEST(RunReportTest, AWorkersRefusedPushesAreSaidWithTheLastOnesWords) {
  JobProgress p = Finished();
  p.workers[0].refused_pushes = 1;
  p.workers[0].last_refusal = "too_large: row 1 carries a value beyond 1e+15: no gradient of a model that trains";
  p.workers[2].refused_pushes = 3;
  p.workers[2].last_refusal = "not_finite: row 4 carries a NaN";
  p.workers[2].quarantined = "3 pushes refused, the last not_finite";
  const std::string s = Summary(Team(), p);
  EXPECT_NE(s.find("  robot-1: 1 push refused by the coordinator, none of it applied; the last too_large: row 1 "
                   "carries a value beyond 1e+15: no gradient of a model that trains\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("  robot-3: 3 pushes refused by the coordinator, none of it applied; the last not_finite: row 4 "
                   "carries a NaN; quarantined, the team went on without it\n"),
            std::string::npos)
      << s;
  EXPECT_EQ(Summary(Team(), Finished()).find("refused by the coordinator"), std::string::npos);
}

// Interrupted beside an earlier run's model, which it keeps: the accuracy
// measured is this run's model's, in its checkpoint, not the kept one's.
TEST(RunReportTest, AnInterruptedRunBesideAKeptModelSaysWhoseAccuracyItIs) {
  JobProgress p = Finished();
  p.state = JobState::kInterrupted;
  p.stop_reason = StopReason::kCancelled;
  p.evaluated_iteration = p.iteration;
  p.model_path.clear();
  const std::string s = Summary(Team(), p);
  EXPECT_NE(s.find("robot-team: test accuracy 0.7139 (this run's model, which its checkpoint holds; target 0.85 not "
                   "reached), interrupted"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("model: none written by this run (interrupted"), std::string::npos) << s;
  EXPECT_TRUE(nlohmann::json::parse(JsonLine(Job(), Team(), p, 0.4))["model_path"].is_null()) << "not \"\"";
}

// Ctrl-C while the team loaded or connected: no accuracy of an untrained
// model, and no promise of a checkpoint to resume from (a new user's trial).
// A model no better than guessing is said to have not learned: it read as
// a score like any other (a new user's trial asked for it).
TEST(RunReportTest, AModelNoBetterThanGuessingIsSaidToHaveNotLearned) {
  JobProgress p = Finished();
  p.accuracy = 0.1020;
  const std::string s = Summary(Team(), p);
  EXPECT_NE(s.find("\n  note: 0.1020 is about what guessing scores on 10 classes (1 in 10): the model has not "
                   "learned; a learning rate too high or too low"),
            std::string::npos)
      << s;
  p.accuracy = 0.7139;
  p.loss = 0.52;
  EXPECT_EQ(Summary(Team(), p).find("guessing"), std::string::npos);
  // A loss far past guessing's, finite: the outputs are extreme, said.
  p.loss = 3.956e27;
  EXPECT_NE(Summary(Team(), p).find("\n  note: the training loss is 3.96e+27, where guessing among 10 classes gives "
                                    "2.30: the model's outputs are extreme"),
            std::string::npos)
      << Summary(Team(), p);
}

TEST(RunReportTest, ARunStoppedBeforeItTrainedSaysSo) {
  JobProgress p = Finished();
  p.state = JobState::kInterrupted;
  p.iteration = 0;
  p.samples = 0;
  p.accuracy = 0.0998;
  p.stop_reason = StopReason::kCancelled;
  const std::string out = Summary(Team(), p, 5.6);
  const std::string s = out;
  EXPECT_EQ(s.find("test accuracy"), std::string::npos) << s;
  EXPECT_NE(s.find("robot-team: nothing trained, "), std::string::npos) << s;
  EXPECT_NE(s.find("model: none written by this run (nothing trained; a model.pt already there, if any, is as it was)"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("resume"), std::string::npos) << s;
  // Its workers' figures all 0 as well (a Ctrl-C while they gathered): no
  // table of zeros, nor a note that no link was timed (a new user's trial).
  JobProgress gathered = p;
  for (WorkerProgress& w : gathered.workers) w.samples = w.rows_sent = w.bytes_sent = w.bytes_received = 0;
  const std::string zeros = Summary(Team(), gathered, 5.6);
  EXPECT_NE(zeros.find("  no step trained: nothing to show of each worker\n"), std::string::npos) << zeros;
  EXPECT_EQ(zeros.find("rows sent"), std::string::npos) << zeros;
  EXPECT_EQ(zeros.find("up/down -"), std::string::npos) << zeros;

  // Samples short of a whole team iteration trained something: its accuracy
  // is said, not "nothing trained" beside "32 samples".
  p.samples = 32;
  p.state = JobState::kSucceeded;
  p.stop_reason = StopReason::kWallClock;
  p.model_path = "/tmp/out/model.pt";
  const std::string partial = Summary(Team(), p, 8.0);
  EXPECT_NE(partial.find("robot-team: test accuracy 0.0998"), std::string::npos) << partial;
  EXPECT_EQ(partial.find("nothing trained"), std::string::npos) << partial;

  // Resumed, and interrupted before this run's first step: its checkpoint's
  // model is not evaluated, and no accuracy of 0 is made up for it (it read
  // "test accuracy 0.0000", a new user's trial); nor a loss.
  p.state = JobState::kInterrupted;
  p.stop_reason = StopReason::kCancelled;
  p.samples = 1704 * 64;
  p.iteration = 1704;
  p.resumed_from_iteration = 1704;
  p.accuracy.reset();
  const std::string resumed = Summary(Team(), p, 0.4);
  EXPECT_NE(resumed.find("robot-team: no step this run, its checkpoint as it was, "), std::string::npos)
      << resumed;
  EXPECT_EQ(resumed.find("test accuracy"), std::string::npos) << resumed;
  EXPECT_TRUE(nlohmann::json::parse(JsonLine(Job(), Team(), p, 0.4))["loss"].is_null());
  // A team that trained less than a batch of every worker: no team iteration,
  // but a loss, which the progress line showed (it said null).
  p.resumed_from_iteration.reset();
  p.iteration = 0;
  p.samples = 32;
  p.loss = 1.517;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(JsonLine(Job(), Team(), p, 0.4))["loss"].get<double>(), 1.517);
}

// Interrupted, a slow final evaluation is left to the run that resumes
// (agent/job_driver.cc): the accuracy said is the last evaluation's, at its
// iteration, not the final model's.
TEST(RunReportTest, AnInterruptedRunsAccuracyIsSaidAtTheIterationItWasMeasured) {
  JobProgress p = Finished();
  p.state = JobState::kInterrupted;
  p.stop_reason = StopReason::kCancelled;
  p.evaluated_iteration = 300;
  const std::string s = Summary(Team(), p);
  EXPECT_NE(s.find("robot-team: test accuracy 0.7139 at iteration 300 (the final model's evaluation left to the run "
                   "that resumes), interrupted"),
            std::string::npos)
      << s;
  p.accuracy.reset();
  p.evaluated_iteration.reset();
  EXPECT_NE(Summary(Team(), p).find("robot-team: test accuracy not measured (left to the run that resumes)"),
            std::string::npos);
}

// A worker in the team whose reports stopped well before the end (its link
// down at the end of a new user's run): its row, and the team's totals, stop
// there, and the summary says so.
TEST(RunReportTest, AWorkerWhoseReportsStoppedBeforeTheEndIsNamed) {
  JobProgress p = Finished();
  for (auto& w : p.workers) w.wall_s = 59.6;
  p.workers[1].wall_s = 46.2;  // silent since, as the coordinator heard it
  p.workers[1].silent_s = 13.8;
  p.workers[2].wall_s = 30;  // counted out: said otherwise
  p.workers[2].silent_s = 30;
  const std::string out = Summary(Team(), p);
  const std::string s = out;
  EXPECT_NE(s.find("each worker's row is as of its last report, and these reported last before the end: robot-2 "
                   "13.8 s before it; nothing of theirs reached the coordinator since, so their figures stop there, "
                   "but for energy, which is each worker's own count to its end\n"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("robot-3 30.0 s"), std::string::npos) << s;
  EXPECT_EQ(s.find("batches 0 beside rows sent"), std::string::npos) << s;

  // A worker that pushed and had no batch counted: every push late for its round.
  p.workers[1].samples = 0;
  p.workers[1].rows_sent = 38'130;
  const std::string late = Summary(Team(), p);
  EXPECT_NE(late.find("batches 0 beside rows sent (robot-2): every push came after its round had closed"),
            std::string::npos)
      << late;
}

// A team resumed with fewer workers: what the departed ones trained, sent
// and spent is in the totals and in no row, said so (the rows summed to
// 545,792 of 600,000 samples, unsaid: a new user's trial). Not said of a
// team none left.
TEST(RunReportTest, WorkersOfTheRunsResumedThatAreNotInThisTeamAreSaid) {
  JobProgress p = Finished();
  p.energy_joules = 100;
  for (auto& w : p.workers) w.energy_joules = 20;
  EXPECT_EQ(Summary(Team(), p).find("workers of the runs it resumed"), std::string::npos) << Summary(Team(), p);
  p.departed_bytes_sent = 1'382'514;
  p.departed_bytes_received = 700'000;
  const std::string s = Summary(Team(), p);
  EXPECT_NE(s.find("  workers of the runs it resumed that are not in this team: 5,952 samples, 1.4 MB sent, 0.7 MB "
                   "received, 40.0 J: in the totals above, in no row\n"),
            std::string::npos)
      << s;
}

// A worker whose link was out when the team started joined seconds after it,
// and reported to the end: its own clock's shortfall is time it was not
// connected, not silence at the end (a user's trial: "reported last before
// the end: rover-2 7.7 s" of a worker at the team's last iteration).
TEST(RunReportTest, AWorkerThatJoinedLateIsNotSaidToHaveStoppedEarly) {
  JobProgress p = Finished();
  for (auto& w : p.workers) w.wall_s = 59.6;
  p.workers[1].wall_s = 52.3;
  const std::string s = Summary(Team(), p);
  EXPECT_EQ(s.find("reported last before the end"), std::string::npos) << s;
  EXPECT_NE(s.find("not connected all the while the team trained (robot-2 7.7 s; it joined after the team started, "
                   "or rejoined after its stream broke): its row, its stall too, counts the time it was\n"),
            std::string::npos)
      << s;
  // Silence read as the team finished, seconds after training ended, is not
  // silence before the end: a worker that reported to the end is not named.
  p.workers[1].wall_s = 59.6;
  p.workers[1].silent_s = 3.5;
  EXPECT_EQ(Summary(Team(), p).find("reported last before the end"), std::string::npos);
}

// A pipeline's plan may leave devices out: the JSON line says how many
// trained beside the workers the job asked for.
TEST(RunReportTest, TheJsonLineCountsTheDevicesThatTrained) {
  LocalRunPlan plan = Team();
  plan.job.pipeline = PipelineLayout{{{0, 3, {0}}}, 2};
  const auto line = nlohmann::json::parse(JsonLine(Job(), plan, Finished(), 66.9));
  EXPECT_EQ(line["workers"], 3);
  EXPECT_EQ(line["devices"], 1);
  EXPECT_EQ(nlohmann::json::parse(JsonLine(Job(), Team(), Finished(), 66.9))["devices"], 3);
  // A resumed run says from where: its train_s spans the runs it resumed, its
  // wall_s only this one (a new user read train_s 37.5 beside wall_s 29.1).
  EXPECT_TRUE(line["resumed_from_iteration"].is_null());
  JobProgress resumed = Finished();
  resumed.resumed_from_iteration = 1200;
  EXPECT_EQ(nlohmann::json::parse(JsonLine(Job(), Team(), resumed, 29.1))["resumed_from_iteration"], 1200);
  // A worker whose agent ended on its own, the team training on without it:
  // the line had said nothing of it, the run a success (a new user's trial).
  EXPECT_FALSE(line.contains("agents_ended"));
  const std::string how = "exit 2, an error of the job's own: the training loss is infinite";
  const auto lost = nlohmann::json::parse(JsonLine(Job(), Team(), Finished(), 66.9, {{0, how}}));
  EXPECT_EQ(lost["agents_ended"], nlohmann::json::array({{{"rank", 0}, {"how", how}}}));
}

// At its target a team keeps the model that reached it, not the rounds that
// closed while it stopped: the summary names that model's iteration (a new
// user read "final model" beside 2,011 iterations, model.json's 2,001).
TEST(RunReportTest, AtItsTargetTheSummaryNamesTheIterationOfTheModelKept) {
  JobProgress p = Finished();
  p.stop_reason = StopReason::kTarget;
  p.accuracy = 0.852;
  p.reached_target = true;
  p.iteration = 2011;
  p.evaluated_iteration = 2001;
  const std::string s = Summary(Team(), p);
  EXPECT_NE(s.find("robot-team: test accuracy 0.8520 (the model of iteration 2,001, kept as it reached the target "
                   "0.85), stopped at its target"),
            std::string::npos)
      << s;
  p.evaluated_iteration = 2011;  // the last round's model: nothing to say
  EXPECT_NE(Summary(Team(), p).find("test accuracy 0.8520 (final model; target 0.85 reached)"), std::string::npos);
}

TEST(RunReportTest, ASummarySaysWhatEachNumberIsAndWhomTheTeamWaitedOn) {
  const std::string out = Summary(Team(), Finished());
  const std::string s = out;
  EXPECT_NE(s.find("robot-team: test accuracy 0.7139 (final model; target 0.85 not reached), stopped at its "
                   "wall-clock budget"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("331 team iterations (each the samples of a batch from each of 3 workers; a round closed without a "
                   "late worker counts for the batches it had)"),
            std::string::npos)
      << "deadline's rounds, the default's: " << s;
  EXPECT_NE(s.find("the team waited on robot-2 for 31.2 s and robot-3 for 12.0 s"), std::string::npos) << s;
  EXPECT_NE(s.find("batches"), std::string::npos) << s;
  EXPECT_NE(s.find("\n  on the wire "), std::string::npos) << "what the team's synchronising bought: " << s;
  EXPECT_NE(s.find("not in the team at the end: robot-3"), std::string::npos) << s;
  EXPECT_NE(s.find("up/down -: not timed: a message must be 32 KiB or more to time a link"), std::string::npos)
      << "robot-1's emulated link, too little used to time: " << s;
  EXPECT_EQ(s.find("figures as of"), std::string::npos) << "every worker reported to the end: " << s;
  std::istringstream lines(s);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("  robot-") != std::string::npos) rows.push_back(line);
  }
  ASSERT_EQ(rows.size(), 3u) << s;
  EXPECT_NE(rows[0].find(" - "), std::string::npos) << "emulated, not yet timed: " << rows[0];
  EXPECT_NE(rows[0].find(" 300 "), std::string::npos) << "the batches it computed: " << rows[0];
  EXPECT_NE(rows[1].find(" 41.5/38.2 "), std::string::npos) << "its uplink, then its downlink: " << rows[1];
  EXPECT_NE(rows[2].find("unshaped"), std::string::npos) << rows[2];
  // Small pushes (sign rows) time no uplink; the downlink still shows.
  JobProgress down_only = Finished();
  down_only.workers[0].downlink_mbps = 15.4;
  const std::string d = Summary(Team(), down_only);
  EXPECT_NE(d.find(" -/15.4 "), std::string::npos) << d;
  // A short run's figures to a hundredth, as its total is: a worker's energy
  // read "0" beside a total of 0.57 J, a wait of a twentieth "0.0 s".
  JobProgress brief = Finished();
  brief.elapsed_s = 0.6;
  brief.workers[1].held_team_s = 0.04;
  brief.workers[0].energy_joules = 0.29;
  const std::string b = Summary(Team(), brief);
  EXPECT_NE(b.find(" for 0.04 s"), std::string::npos) << b;
  EXPECT_NE(b.find("       0.29\n"), std::string::npos) << b;
}

TEST(RunReportTest, ATeamOnStreamsCountsItsIterationsInFullBatchesAndShowsEachStream) {
  LocalRunPlan plan = Team();
  plan.job.spec.data.stream = StreamSpec{{20, 60, 180}};
  JobProgress p = Finished();
  p.workers[0].stream = StreamProgress{615, 0, 0, 29.7};
  p.workers[0].samples = 615;
  p.workers[0].wall_s = 30;
  p.workers[1].injected = 40;
  const std::string out = Summary(plan, p);
  const std::string s = out;
  EXPECT_NE(s.find("331 team iterations (in full batches' worth of samples from each of 3 workers)"), std::string::npos)
      << s;
  EXPECT_NE(s.find("injected samples (of labels their parts lack, from the coordinator):  worker 1: 40"),
            std::string::npos) << s;
  EXPECT_NE(s.find("       0        615         615          0          0          0   29.7 s (99%)"), std::string::npos)
      << s;
  EXPECT_NE(s.find("  worker  node            samples   rows sent"), std::string::npos)
      << "batches that vary are counted in samples: " << s;
  EXPECT_EQ(s.find(" left out "), std::string::npos) << "no folder, nothing left out";
  EXPECT_EQ(s.find("uncounted: "), std::string::npos) << "every sample that arrived is accounted for";

  // A batch taken from the buffer whose push no round took (late, or in
  // hand at the end): its samples are in the row, so that it adds up.
  p.workers[0].stream->arrived = 650;
  const std::string late = Summary(plan, p);
  EXPECT_NE(late.find("       0        650         615          0          0         35   29.7 s (99%)"),
            std::string::npos)
      << late;
  EXPECT_NE(late.find("  uncounted: taken into batches whose gradients no round counted"), std::string::npos)
      << late;
  EXPECT_EQ(late.find("trained on more than arrived"), std::string::npos);
  // A resumed run read again the file it had taken part of, and trained
  // on those samples again: said, not left as a row that cannot add up.
  p.workers[0].stream->arrived = 600;
  const std::string again = Summary(plan, p);
  EXPECT_NE(again.find("  trained on more than arrived: a resumed run reads again whole the file"), std::string::npos)
      << again;
  p.workers[0].stream->arrived = 615;

  p.workers[0].stream->refused_files = 2;
  p.workers[0].stream->last_refused = "incoming/worker-0/b.csv:1: expected 65 values, found 2";
  const std::string refused = Summary(plan, p);
  EXPECT_NE(refused.find("  worker 0 left out 2 files of its folder, the last it left out: incoming/worker-0/b.csv:1: "
                               "expected 65 values, found 2 (edgetrain partition JOB.yaml names each it would "
                               "leave out now; so does worker 0's log as each was, kept with --keep-logs)\n"),
            std::string::npos)
      << refused;
}

// Batches dealt by measured compute are shown as they ended: /progress gives
// each worker's dealt batch (a new user saw no sign of the weighting).
TEST(RunReportTest, ATeamOfComputeWeightedBatchesShowsWhatEachWasDealt) {
  LocalRunPlan plan = Team();
  plan.job.spec.data.compute_weighted = true;
  plan.job.spec.data.batch_size = 64;
  JobProgress p = Finished();
  p.workers[0].batch_size = 128;
  p.workers[1].batch_size = 64;
  p.workers[2].batch_size = 1;
  const std::string out = Summary(plan, p);
  EXPECT_NE(out.find("  batches dealt by measured compute (spec.data.computeWeighted; 64 a worker until "
                           "measured), as the run ended: robot-1 128, robot-2 64, robot-3 1\n"),
            std::string::npos)
      << out;
  const std::string fixed = Summary(Team(), Finished());
  EXPECT_EQ(fixed.find("batches dealt"), std::string::npos) << fixed;
}

// Every worker short of samples most of the time: no teammate is named as
// what the team waited on (found by a new user's trial, both buffers empty).
TEST(RunReportTest, StreamsThatStarveEveryWorkerAreSaidToSetThePace) {
  LocalRunPlan plan = Team();
  plan.job.spec.data.stream = StreamSpec{{20, 60, 180}};
  JobProgress p = Finished();
  for (auto& w : p.workers) {
    w.wall_s = 30;
    w.stream = StreamProgress{600, 0, 0, 25};
  }
  const std::string out = Summary(plan, p);
  EXPECT_NE(out.find("every worker waited for its stream's samples most of the time: the streams set the pace"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("the team waited on"), std::string::npos) << out;
  // Nobody held the team: the streams set the pace all the same (a new
  // user's two starved streams had nothing said).
  for (auto& w : p.workers) w.held_team_s = 0;
  const std::string unheld = Summary(plan, p);
  EXPECT_NE(unheld.find("the streams set the pace"), std::string::npos) << unheld;
  p = Finished();
  for (auto& w : p.workers) {
    w.wall_s = 30;
    w.stream = StreamProgress{600, 0, 0, 25};
  }
  p.workers[0].stream->wait_s = 3;  // one that had samples: the team waited on teammates
  const std::string one = Summary(plan, p);
  EXPECT_NE(one.find("the team waited on robot-2"), std::string::npos) << one;
  EXPECT_NE(one.find("robot-2 waited for its stream's samples 83% of its time, robot-3 waited for its stream's "
                           "samples 83% of its time: their streams set the team's pace"),
            std::string::npos)
      << "the workers waited on were themselves waiting for their streams (a new user's trial): " << one;
}

// A pipeline whose layers moved while it ran: the stage table shows them as
// they ended (from /progress), not as planned, and says they moved.
TEST(RunReportTest, APipelinesStagesShowTheLayersAsTheyEnded) {
  LocalRunPlan plan = Team();
  plan.devices.pop_back();
  plan.job.pipeline = PipelineLayout{{{0, 2, {0}}, {2, 4, {1}}}, 4};
  JobProgress p = Finished();
  p.workers.pop_back();
  p.workers[0].layers = std::pair{0, 3};
  p.workers[1].layers = std::pair{3, 4};
  // What went over each device's link to the head (a new user saw 0 bytes
  // for every stage in --json and a flat curve).
  p.workers[0].bytes_sent = 5'150'025;
  p.workers[0].bytes_received = 4'680'659;
  p.workers[0].energy_joules = 81.25;
  p.energy_joules = 123.4;
  p.replays = JobProgress::Replays{};
  p.replays->repartitions = 1;
  const std::string out = Summary(plan, p);
  const std::string text = out;
  EXPECT_NE(text.find("bubbles    MB sent   MB recv   energy J\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  energy (modelled, docs/energy.md): 123 J\n"), std::string::npos) << text;
  // A few joules, or a fraction of one, are not rounded to 0.
  p.energy_joules = 0.0227;
  EXPECT_NE(Summary(plan, p).find("  energy (modelled, docs/energy.md): 0.02 J\n"), std::string::npos);
  p.energy_joules = 3.04;
  EXPECT_NE(Summary(plan, p).find("  energy (modelled, docs/energy.md): 3.0 J\n"), std::string::npos);
  p.energy_joules = 123.4;
  EXPECT_NE(text.find("%        5.2       4.7       81.2\n"), std::string::npos) << "each device's joules\n" << text;
  EXPECT_EQ(text.find("in whatever stages it held then"), std::string::npos) << "a fresh run's are its own";
  p.resumed_from_iteration = 300;
  EXPECT_NE(Summary(plan, p).find("  each device's compute, bubbles and MB over this run and those it resumed (from "
                                  "iteration 300), in whatever stages it held then\n"),
            std::string::npos)
      << Summary(plan, p);
  p.resumed_from_iteration.reset();
  EXPECT_NE(text.find("  stages laid out anew 1 time (layers moved as the devices' pace drifted, devices left out, "
                      "or a device back taken in); as they ended:\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("      1  0-2     robot-1"), std::string::npos) << text;
  EXPECT_NE(text.find("      2  3       robot-2"), std::string::npos) << text;
  EXPECT_EQ(text.find("0-1 "), std::string::npos) << "not the planned layers\n" << text;
  // A plan's layers by the names the planner gave them (a new user read 0-8
  // where edgetrain plan had said conv1-classifier).
  PlannedFrom from;
  for (const char* name : {"conv1", "conv2", "conv3", "classifier"}) from.layers.push_back({name, 1e-3, 1e-3, 4, 4, {}, 0, ""});
  plan.job.pipeline->planned_from = from;
  const std::string named = Summary(plan, p);
  EXPECT_NE(named.find("  stage  layers       device"), std::string::npos) << named;
  EXPECT_NE(named.find("      1  conv1-conv3  robot-1"), std::string::npos) << named;
  EXPECT_NE(named.find("      2  classifier   robot-2"), std::string::npos) << named;

  // Stopped before its first step: the stages as planned, no table of zeros.
  p.iteration = 0;
  p.samples = 0;
  p.replays.reset();
  p.state = JobState::kInterrupted;
  p.stop_reason = StopReason::kCancelled;
  const std::string untrained = Summary(plan, p);
  EXPECT_NE(untrained.find("robot-team: nothing trained, interrupted\n  0 steps"), std::string::npos) << untrained;
  EXPECT_NE(untrained.find("  2 stages, 4 micro-batches a step\n"), std::string::npos) << untrained;
  EXPECT_EQ(untrained.find("stage  layers"), std::string::npos) << untrained;
}

// A pipeline that lost devices says what that cost and what the head
// planned for the devices left.
TEST(RunReportTest, APipelineThatLostDevicesSaysWhatItCostAndWhatWasPlannedAgain) {
  LocalRunPlan plan = Team();
  plan.devices.pop_back();
  plan.job.pipeline = PipelineLayout{{{0, 2, {0}}, {2, 4, {1}}}, 8};
  JobProgress p = Finished();
  p.workers.pop_back();
  p.replays = JobProgress::Replays{};
  p.replays->count = 1;
  p.replays->replayed_steps = 1;
  p.replays->micro_batches = 8;
  p.replays->recovery_s = 0.104;
  p.replays->restored_stages = 1;
  p.replays->steps_lost = 76;
  p.replays->replanned_micro_batches = 2;
  p.replays->replanned_samples_per_s = 1468.2;
  p.samples_per_second = 734;
  plan.predicted_samples_per_s = 1468;
  const std::string out = Summary(plan, p);
  // The run's rate spans the plan and the re-plan: set against neither.
  EXPECT_NE(out.find("  as planned, 2 stages, 8 micro-batches a step; the plan predicted 1,468 samples/s, its layout "
                           "changed mid-run (below)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  devices lost: 1 step run again on the devices left (8 micro-batches); 0.10 s from the "
                           "losses to their steps done; 1 stage rebuilt on a neighbour from the head's replica, 76 "
                           "steps of its layers' updates lost\n"
                           "  planned again for the devices it last had: 2 micro-batches a step, predicted 1,468 "
                           "samples/s\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("let go of for how they ran"), std::string::npos) << "lost, not let go of";
  EXPECT_EQ(out.find("back in a stage"), std::string::npos) << "none came back";
  JobProgress back = p;
  back.replays->rejoined = 1;
  EXPECT_NE(Summary(plan, back).find("  back in a stage: 1 device lost or let go of before, each rejoining between "
                                     "steps\n"),
            std::string::npos)
      << Summary(plan, back);
  // Stages given by hand (--stages) are not the plan's (a new user's trial
  // read "as planned" for them).
  LocalRunPlan given = plan;
  given.job.pipeline->stages_given = true;
  const std::string by_hand = Summary(given, p);
  EXPECT_NE(by_hand.find("  as given, 2 stages, 8 micro-batches a step; the cost model predicted 1,468 "
                         "samples/s, its layout changed mid-run (below)\n"),
            std::string::npos)
      << by_hand;
  // Its evaluations' pauses left out of the rate set against the prediction:
  // 63,552 samples over the 54 s of 60 it trained.
  JobProgress evaluated = p;
  evaluated.replays.reset();  // the plan's layout throughout
  evaluated.samples_per_second = static_cast<double>(p.samples) / p.elapsed_s;  // as the driver fills it
  evaluated.evaluation_s = 6;
  const std::string paused = Summary(plan, evaluated);
  EXPECT_NE(paused.find("; trained at 80% of the plan's predicted 1,468 samples/s (its 6.0 s of evaluations "
                              "left out)\n"),
            std::string::npos)
      << paused;
  // Two steps, the first paying for warming up, say nothing of a pace (a new
  // user's run stopped after 2 read 35% of its plan).
  JobProgress brief = evaluated;
  brief.iteration = 2;
  const std::string early = Summary(plan, brief);
  EXPECT_NE(early.find("  2 stages, 8 micro-batches a step; the plan predicted 1,468 samples/s (not compared: 2 "
                       "steps, too few to judge a pace by)\n"),
            std::string::npos)
      << early;
  // A resumed run's rate spans the runs before it: the prediction is said,
  // not compared (the line had gone from resumed runs: a new user's trial).
  JobProgress resumed = evaluated;
  resumed.resumed_from_iteration = 500;
  const std::string again = Summary(plan, resumed);
  EXPECT_NE(again.find("  2 stages, 8 micro-batches a step; the plan predicted 1,468 samples/s (not compared: a "
                       "resumed run's rate spans the runs before it)\n"),
            std::string::npos)
      << again;
  // A straggler let go of changes the layout as a loss does: the plan is not
  // set against the run (a new user's run read 58% of the plan's after its
  // slowed device had gone).
  JobProgress straggled = evaluated;
  straggled.replays = JobProgress::Replays{};
  straggled.replays->stragglers = 1;
  const std::string without = Summary(plan, straggled);
  EXPECT_NE(without.find("  as planned, 2 stages, 8 micro-batches a step; the plan predicted 1,468 samples/s, its "
                         "layout changed mid-run (below)\n"),
            std::string::npos)
      << without;
  // A device of a group covered by its group as well: no step run again for it.
  JobProgress covered = p;
  covered.replays->count = 2;
  covered.replays->covered = 1;
  covered.replays->covered_shares = 4;
  covered.replays->rerun_shares = 2;
  const std::string both = Summary(plan, covered);
  EXPECT_NE(both.find("  devices lost: 1 covered by its group (4 shares computed by another device, 2 of them "
                      "again); 1 step run again on the devices left (8 micro-batches); 0.10 s from the losses to "
                      "their steps done;"),
            std::string::npos)
      << both;
  // Lost with all it computed of the step in: no one covered it.
  covered.replays->count = 0;
  covered.replays->covered_shares = 0;
  covered.replays->rerun_shares = 0;
  covered.replays->replayed_steps = 0;
  const std::string all_in = Summary(plan, covered);
  EXPECT_NE(all_in.find("  devices lost: 1 with all it computed in, nothing run again; "), std::string::npos) << all_in;
  // One taken for hung, two stragglers: said apart from the losses.
  p.replays->hung = 1;
  p.replays->stragglers = 2;
  const std::string let_go = Summary(plan, p);
  EXPECT_NE(let_go.find("  let go of for how they ran: 1 taken for hung (a pass far past its deadline, its "
                              "heartbeats still coming); 2 stragglers (ran a share far slower than its group's "
                              "fastest)\n"),
            std::string::npos)
      << let_go;
  // And one left out of a measurement's layout by the planner.
  p.replays->left_out = 1;
  const std::string left_out = Summary(plan, p);
  EXPECT_NE(left_out.find("fastest); 1 left out of the stages laid out anew (at the pace measured, predicted faster "
                          "without it)\n"),
            std::string::npos)
      << left_out;
  // A group's micro-batches dealt anew as a device drifted: said, no layer having moved.
  JobProgress redealt = Finished();
  redealt.replays = JobProgress::Replays{};
  redealt.replays->redealt = 2;
  redealt.replays->replanned_micro_batches = 16;  // cut anew after a loss
  const std::string dealt = Summary(plan, redealt);
  EXPECT_NE(dealt.find("  micro-batches dealt anew within groups 2 times, by what their devices computed a "
                             "second\n"),
            std::string::npos)
      << dealt;
  EXPECT_EQ(dealt.find("laid out anew"), std::string::npos) << dealt;
  EXPECT_EQ(dealt.find("layout changed mid-run"), std::string::npos) << "its stages are the plan's\n" << dealt;
  EXPECT_NE(dealt.find("  planned again for the devices it last had: 16 micro-batches a step"), std::string::npos)
      << "said without a loss too (a straggler let go of)\n"
      << dealt;
  EXPECT_EQ(dealt.find("as before"), std::string::npos) << dealt;
  redealt.replays->replanned_micro_batches = plan.job.pipeline->micro_batches;
  EXPECT_NE(Summary(plan, redealt).find(" micro-batches a step, as before, predicted"), std::string::npos)
      << Summary(plan, redealt);
  // Three stages of a device each, the middle one lost and its layers taken
  // by the first: the table numbers the stages as they ended, 1 and 2, not
  // as planned, 1 and 3.
  LocalRunPlan three = Team();
  three.job.pipeline = PipelineLayout{{{0, 1, {0}}, {1, 2, {1}}, {2, 4, {2}}}, 8};
  JobProgress lost = Finished();
  lost.workers[0].layers = std::pair{0, 2};
  lost.workers[1].active = false;  // the head lists it, in no stage
  lost.workers[1].iteration = 204;
  lost.workers[1].bytes_sent = 2'500'000;
  lost.workers[1].bytes_received = 1'300'000;
  lost.workers[1].energy_joules = 40;
  lost.workers[2].active = true;
  lost.workers[2].layers = std::pair{2, 4};
  lost.replays = p.replays;
  const std::string renumbered = Summary(three, lost);
  EXPECT_NE(renumbered.find("      1  0-1     robot-1"), std::string::npos) << renumbered;
  EXPECT_NE(renumbered.find("      2  2-3     robot-3"), std::string::npos) << renumbered;
  EXPECT_EQ(renumbered.find("robot-2   "), std::string::npos) << "no row for the device lost\n" << renumbered;
  EXPECT_NE(renumbered.find("  not in the pipeline at the end: robot-2 (its last step 204, 2.5 MB sent, 1.3 MB "
                             "received, 40.0 J)\n"),
            std::string::npos)
      << renumbered;
  EXPECT_EQ(renumbered.find("devices of the runs it resumed"), std::string::npos) << "none: nothing left out\n"
                                                                                   << renumbered;
  // Resumed onto other devices: what the earlier runs' devices sent and
  // used is said, so that the rows and it add up to the job's totals.
  lost.energy_joules = 100;
  lost.departed_bytes_sent = 3'000'000;
  lost.departed_bytes_received = 500'000;
  EXPECT_NE(Summary(three, lost).find("  devices of the runs it resumed that are not in this one: 3.0 MB sent, 0.5 MB "
                                      "received, 60.0 J\n"),
            std::string::npos)
      << Summary(three, lost);
  p.replays = JobProgress::Replays{};
  const std::string none = Summary(plan, p);
  EXPECT_EQ(none.find("devices lost"), std::string::npos) << none;
  EXPECT_NE(none.find("  2 stages, 8 micro-batches a step"), std::string::npos) << "nothing changed the plan's";
}

// A worker's energy after its last report reached the coordinator (its link
// in an outage at the end) is in its own count: a fresh run takes that.
TEST(RunReportTest, AFreshTeamRunsEnergyIsEachWorkersOwnCountToItsEnd) {
  JobProgress p = Finished();
  p.workers[0].energy_joules = 100;
  p.workers[1].energy_joules = 50;
  p.energy_joules = 150 + p.workers[2].energy_joules;
  const double before = *p.energy_joules;
  TakeWorkersOwnEnergy(p, {{0, 100}, {1, 115}});  // rank 2 printed no result
  EXPECT_DOUBLE_EQ(p.workers[0].energy_joules, 100);
  EXPECT_DOUBLE_EQ(p.workers[1].energy_joules, 115);
  EXPECT_DOUBLE_EQ(*p.energy_joules, before + 65);
  // A resumed run's figures carry the runs before: its workers' own counts
  // are of this run alone, set against what it added to the checkpoint's
  // (its robot-4 went from 62 J to 54 J on resuming, the 8 J its coordinator
  // never heard of lost, and stayed there: a user's trial).
  JobProgress resumed = Finished();
  resumed.resumed_from_iteration = 40;
  resumed.workers[1].energy_joules = 50;  // 30 carried in, 20 reported this run
  const std::map<int, double> more = TakeWorkersOwnEnergy(resumed, {{1, 35}}, {{1, 30}});
  EXPECT_DOUBLE_EQ(resumed.workers[1].energy_joules, 65);
  EXPECT_EQ(more, (std::map<int, double>{{1, 15}}));
  EXPECT_TRUE(TakeWorkersOwnEnergy(resumed, {{1, 10}}, {{1, 30}}).empty()) << "all of it reported";
}

TEST(RunReportTest, NobodyHeldATeamThatDidNotWait) {
  JobProgress p = Finished();
  for (auto& w : p.workers) w.held_team_s = 0;
  EXPECT_EQ(WhoTheTeamWaitedOn(p, {}), "");
  p.workers[2].held_team_s = 30;
  EXPECT_EQ(WhoTheTeamWaitedOn(p, {}), "worker 2 for 30.0 s");
}

TEST(RunReportTest, ATeamsSummarySaysWhatItsSynchronisingBought) {
  JobSpec spec;  // mlp [128, 64] on fashion-mnist: 109,386 parameters, 437,544 bytes as float32
  spec.model.hidden = {128, 64};
  spec.data.dataset = DatasetName::kFashionMnist;
  spec.sync.policy = SyncPolicy::kBsp;
  JobProgress p;
  p.iteration = 100;
  p.elapsed_s = 10;
  for (int r = 0; r < 2; ++r) {
    WorkerProgress w;
    w.rank = r;
    w.batch_size = 64;
    w.samples = 100 * 64;
    w.wall_s = 12;  // 2 s of it reconnecting: neither computing nor stalled
    w.stall_s = 9;
    w.compute_s = 1;  // a batch every 10 ms when it computes: 100 a second alone
    w.stall_fraction = 0.9;
    w.bytes_sent = 1'000'000;
    w.bytes_received = 2'000'000;
    p.workers.push_back(w);
  }
  // bsp with float32 rows: 100 iterations x 2 workers x 437,544 bytes each way.
  EXPECT_EQ(WhatTheTeamGained(spec, p),
            "on the wire 2.0 MB up and 4.0 MB down, 3% of float32 rows both ways every iteration; stalled 90% of the "
            "time; 10.0 team iterations/s against 100.0 computing alone (10%)");
  // A worker whose every batch came late for its round (make run's robot-4,
  // its link out for most of the run) has no pace to read: the team's limit
  // is the others', said so (it was left out of the summary).
  p.workers[1].samples = 0;
  p.workers[1].compute_s = 0.3;
  EXPECT_EQ(WhatTheTeamGained(spec, p),
            "on the wire 2.0 MB up and 4.0 MB down, 3% of float32 rows both ways every iteration; stalled 90% of the "
            "time; 10.0 team iterations/s against 100.0 computing alone (10%, the pace of the 1 worker with a "
            "batch counted)");
  // Each worker's own pace where it gave one: robot-4's batches late for
  // their rounds are not in its samples, and its compute time is of all of
  // them (it read as computing at an eighth of its teammates' pace).
  p.workers[1].computed_samples_per_s = 100 * 64;
  EXPECT_NE(WhatTheTeamGained(spec, p).find("10.0 team iterations/s against 100.0 computing alone (10%)"),
            std::string::npos)
      << WhatTheTeamGained(spec, p);
  // --json gives that pace, which no file of the run's gives.
  api::TrainingJobManifest job = Job();
  job.spec = spec;
  const auto json = nlohmann::json::parse(JsonLine(job, Team(), p, 12));
  EXPECT_EQ(json["computing_alone"],
            nlohmann::json({{"per_s", 100.0}, {"of", "team iterations"}, {"workers", 2}}));
  // Not of a pipeline, whose summary says no such pace: its devices each
  // compute a part of every step (its --json had it, its text not).
  LocalRunPlan piped = Team();
  piped.job.pipeline = PipelineLayout{{{0, 3, {0, 1}}}, 2};
  EXPECT_FALSE(nlohmann::json::parse(JsonLine(job, piped, p, 12)).contains("computing_alone"));
  p.workers[1].computed_samples_per_s = 0;
  // A small total in as many places as it needs: "0 MB up" was said of 148,955 bytes.
  p.workers[0].bytes_sent = 148'955;
  p.workers[1].bytes_sent = 0;
  p.workers[0].bytes_received = 30'000;
  p.workers[1].bytes_received = 30'000;
  EXPECT_EQ(WhatTheTeamGained(spec, p).substr(0, 36), "on the wire 0.1 MB up and 60 kB down");
  // Under deadline a round closed without a worker counts for less than an
  // iteration: what was sent is set against the rounds, where 60 iterations
  // of 100 rounds had read as 5% for 3% (fp16 as 85% of float32 for 51%: a
  // new user's trial).
  spec.sync.policy = SyncPolicy::kDeadline;
  p.iteration = 60;
  for (auto& w : p.workers) w.iteration = 100, w.bytes_sent = 1'000'000, w.bytes_received = 2'000'000;
  EXPECT_EQ(WhatTheTeamGained(spec, p).substr(0, 96),
            "on the wire 2.0 MB up and 4.0 MB down, 3% of float32 rows both ways in each of 100 rounds; stall");
  p.iteration = 0;
  EXPECT_EQ(WhatTheTeamGained(spec, p), "") << "nothing to say before the first iteration";
}

// A resumed run whose budget was spent trained no round; each worker's one
// first batch, LibTorch's slow first pass, is no pace beside the team's
// iterations of every run before (640% of itself was printed).
TEST(RunReportTest, AResumedRunThatTrainedNothingTakesItsCheckpointsPace) {
  JobSpec spec;
  spec.model.hidden = {128, 64};
  spec.data.dataset = DatasetName::kFashionMnist;
  JobProgress p;
  p.iteration = 1000;
  p.elapsed_s = 100;
  p.resumed_from_iteration = 1000;
  WorkerProgress w;
  w.rank = 0;
  w.batch_size = 32;
  w.samples = 1000 * 32;
  w.compute_s = 10;  // 100 batches a second, over every run
  p.workers.push_back(w);
  TakeWorkersOwnPace(p, {{0, 32 / 0.1}});  // one batch of 100 ms, this run's
  EXPECT_NE(WhatTheTeamGained(spec, p).find("10.0 team iterations/s against 100.0 computing alone (10%)"),
            std::string::npos)
      << WhatTheTeamGained(spec, p);
  // Once it trains past its checkpoint, its own pace again.
  p.iteration = 1200;
  TakeWorkersOwnPace(p, {{0, 32 * 50.0}});
  EXPECT_NE(WhatTheTeamGained(spec, p).find("against 50.0 computing alone"), std::string::npos)
      << WhatTheTeamGained(spec, p);
}

// Batches that vary make the team's iteration a count of samples: what was
// sent is set against the rounds, the pace is in samples, and streams say
// what arrived (a new user's run said 219% of float32 rows and 0% of
// computing alone, counting 75 iterations of a team that made 156 rounds).
TEST(RunReportTest, ATeamOfVaryingBatchesIsMeasuredInRoundsAndSamples) {
  JobSpec spec;
  spec.model.hidden = {128, 64};
  spec.data.dataset = DatasetName::kFashionMnist;
  spec.data.stream = StreamSpec{{20, 60}};
  JobProgress p;
  p.iteration = 20;  // in full batches' worth of samples
  p.samples = 2'560;
  p.elapsed_s = 10;
  for (int r = 0; r < 2; ++r) {
    WorkerProgress w;
    w.rank = r;
    w.batch_size = 64;
    w.iteration = r == 0 ? 100 : 98;  // the rounds it pushed for
    w.samples = r == 0 ? 640 : 1'920;
    w.compute_s = r == 0 ? 0.5 : 1;  // alone, 1,280 and 1,920 samples/s
    w.wall_s = 10;
    w.stall_s = 5;
    w.stall_fraction = 0.5;
    w.bytes_sent = 43'754'400;  // the whole model as float32 rows, 100 times
    w.bytes_received = 43'754'400;
    w.stream = StreamProgress{r == 0 ? 700 : 2'000, 0, 0, 5};
    p.workers.push_back(w);
  }
  EXPECT_EQ(WhatTheTeamGained(spec, p),
            "on the wire 88 MB up and 88 MB down, 100% of float32 rows both ways in each of 100 rounds; stalled 50% "
            "of the time; 256 samples/s against 3,200 computing alone (8%) and 270 arriving (95% trained on)");
  // Over the whole: what besides the floats crossed is said (a new user read
  // 103% as a mistake).
  {
    JobProgress more = p;
    for (WorkerProgress& w : more.workers) w.bytes_sent = w.bytes_received = 45'066'000;
    EXPECT_NE(WhatTheTeamGained(spec, more).find("103% of float32 rows both ways in each of 100 rounds (headers and "
                                                 "framing included); stalled"),
              std::string::npos)
        << WhatTheTeamGained(spec, more);
  }
  // Injected samples come from the coordinator, not the streams: what
  // arrived is set against the streams' samples trained on (a new user's
  // run said 137% of what arrived).
  p.workers[1].injected = 1'000;
  p.samples += 1'000;
  EXPECT_NE(WhatTheTeamGained(spec, p).find("356 samples/s against 3,200 computing alone (11%) and 270 arriving (95% "
                                            "trained on, injected samples aside)"),
            std::string::npos)
      << WhatTheTeamGained(spec, p);
}

}  // namespace
}  // namespace edgetrain::cli

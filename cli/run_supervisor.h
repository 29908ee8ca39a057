#pragma once
// Watching a local run until it ends. The coordinator's `result` line ends it;
// meanwhile its GET /progress feeds the display, a worker that dies is named
// once (the team trains on without it), and the person's interrupt becomes a
// SIGTERM to the coordinator, which stops the workers, saves the model and
// reports — or, past a grace, SIGKILL to every agent. Once the job trains, it
// says whether it resumed from a checkpoint or replaces an earlier run's
// model. Then the team is stopped
// in order: the coordinator's exit awaited, the workers given a moment to
// leave by themselves before they are told to.
//
// Every wait is on the Clock, so tests drive it with scripted processes on a
// simulated clock.

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "cli/child_process.h"
#include "cli/progress_display.h"
#include "core/clock.h"
#include "core/job_progress.h"
#include "core/status.h"

namespace edgetrain::cli {

struct SupervisionTimes {
  Duration poll_every = std::chrono::milliseconds(200);
  // After an interrupt the coordinator saves and reports; past this, all are killed.
  Duration interrupt_grace = std::chrono::seconds(30);
  // How long the coordinator, then a team's workers told to stop, have to
  // exit before SIGKILL.
  Duration stop_grace = std::chrono::seconds(15);
  // Workers get this long after the coordinator's exit to have left by
  // themselves; a pipeline's stage agents as long again once told to, before
  // SIGKILL: the head has their weights, and nothing of theirs is read. One
  // behind a link still down took 15 s to heed SIGTERM, the run silent
  // meanwhile (a new user's trial).
  Duration worker_stop_grace = std::chrono::seconds(2);
  // An agent held stopped (SIGSTOP, Ctrl-Z) this long is said to be: a
  // stopped coordinator held a run silent for minutes past its budget, and
  // a stopped worker's end read "a link down?" (a new user's trial).
  Duration stopped_after = std::chrono::seconds(5);
};

struct Supervision {
  std::optional<JobProgress> result;  // the coordinator's final word
  std::string failure;                // why the run failed, with or without a result
  bool interrupted = false;           // the person interrupted the run
  int coordinator_exit = 0;
  // The agent's log that says why it failed; empty: the coordinator's.
  std::string failure_log;
  // The failure is the job's own (a model that computes NaN, a data file
  // refused): every worker exited 2. The same command fails the same way.
  bool inputs_at_fault = false;
  // Workers that ended on their own mid-run (killed, failed, stopped by a
  // signal this run did not send): their logs are worth keeping. By rank,
  // how each ended, as the warning said it.
  int lost_workers = 0;
  std::map<int, std::string> ended;
};

// What supervision reads and tells besides the agents' own lines.
struct RunWatch {
  // The /progress body when the coordinator answers, else nullopt.
  std::function<std::optional<std::string>()> progress;
  // Every snapshot read, as served and as decoded (null when it did not
  // decode), for a log; optional.
  std::function<void(const std::string& body, const JobProgress* decoded)> sink;
  // Whether the run's environment still holds (the kernel still shapes the
  // links as asked); optional. A failure stops the job as an interrupt does,
  // and fails the run.
  std::function<Status()> health;
  // The model.pt an earlier run left where this one writes; empty when none.
  // Unless the job resumes, it is replaced, and a person hears so.
  std::string earlier_model;
  // What else starting afresh means for this job, said with it; empty: nothing.
  std::string afresh_also;
  // Each device's node, by rank, to name it where a note names the rank
  // (a new user could not tell which device "rank 0" was); optional.
  std::map<int, std::string> nodes;
  // The last line of an agent's log, by rank: why one that stopped on an
  // error of the job's own (exit 2) stopped; optional.
  std::function<std::string(int rank)> last_words;
  // How long a team's coordinator waits after its first worker for the rest
  // before it starts without them, or a pipeline's head for its stages
  // (spec.faultTolerance.nodeLossGrace); zero: a job of one.
  Duration team_gathers_for = Duration::zero();
  // Whether the run resumes from a checkpoint: a pipeline's head then goes on
  // without a device that never came; a fresh one fails after the grace.
  bool resumes = false;
  // Whether a person asked a second time to stop: the agents told to stop
  // are then killed at once, not waited for through the interrupt's grace
  // (a second Ctrl-C did nothing for 30 s: found in review); optional.
  std::function<bool()> forced;
  // The fields of the manifest a command-line option set for this run, by
  // their path ("spec.parallelism.stages"), to the option ("--stages"): a
  // resume that finds them changed says the option changed them, not the
  // manifest (a new user's trial read "its manifest changed" of an unedited
  // file); optional.
  std::map<std::string, std::string> set_by_options;
};

// Who is told to stop when the run is interrupted or fails: every agent at
// once (a data-parallel team: the coordinator holds the model), or the
// coordinator alone (a pipeline: its stages hold the weights, and the head
// fetches them before it tells them to stop).
enum class StopOrder { kAllAtOnce, kCoordinatorFirst };

class RunSupervisor {
 public:
  // `worker_ranks`: each worker's rank (a pipeline's plan may leave devices
  // out); none: their places in `workers`.
  RunSupervisor(std::string job, WatchedProcess& coordinator, std::vector<WatchedProcess*> workers, Clock& clock,
                std::ostream& err, SupervisionTimes times = {}, StopOrder order = StopOrder::kAllAtOnce,
                std::vector<int> worker_ranks = {});

  // Until the coordinator reports or exits, then stops the team.
  Supervision Run(const std::atomic<bool>& interrupted, ProgressDisplay& display, const RunWatch& watch);

 private:
  // Warns of each worker that exited other than told to (`at_end`, once the
  // coordinator has ended: only by a signal, or on an error of the job's
  // own); true once every worker has: the team has no one left to train.
  bool NoteLostWorkers(ProgressDisplay& display, const RunWatch& watch, bool at_end = false);
  // Whether the coordinator's /progress, read now, says its team has started.
  bool TeamStartedNow(const RunWatch& watch) const;
  // By rank, how each worker that ended on its own ended: those whose loss was named.
  std::map<int, std::string> ended_;
  // A worker that stopped on an error of the job's own before its team
  // started: it would again, so the run stops rather than wait for it.
  std::optional<int> refused_before_start_;
  // A fresh pipeline's stage agent that ended before the pipeline started:
  // its head would wait out the grace for it, then fail.
  std::optional<int> stage_lost_before_start_;
  void NoteHowItStarted(const JobProgress& p, const RunWatch& watch, ProgressDisplay& display);
  // The job's warnings once its data was read, each said once.
  void NoteWarnings(const JobProgress& p, ProgressDisplay& display);
  // A pipeline's devices lost, let go of, or back, as its head's /progress
  // counts them: said on the terminal as they come, where they were seen
  // only in the head's log, kept only with --keep-logs (a new user's trial).
  void NoteDeviceEvents(const JobProgress& p, const RunWatch& watch, ProgressDisplay& display);
  // Each agent held stopped for times_.stopped_after, said once, and once it runs again.
  void NoteStoppedAgents(ProgressDisplay& display);
  // How a person reads of agent `i` (-1: the coordinator).
  std::string AgentName(int i) const;
  // SIGTERM, and SIGCONT to one held stopped, which heeds nothing until it is
  // continued: a Ctrl-C to a run whose coordinator was stopped waited out its
  // 30 s and killed it, saving nothing.
  static void TellToStop(WatchedProcess& agent);
  // Once the coordinator has its result: the agents still there are waited
  // for, told to stop, and killed past their grace, or at once when `forced`
  // (asked again to stop) says so.
  void StopTeam(Supervision& outcome, const std::function<bool()>& forced);
  // Whether `agent` has exited by `by`, looked at until then, or until
  // `forced` says to stop waiting.
  bool ExitsBy(WatchedProcess& agent, TimePoint by, const std::function<bool()>& forced);
  // `agent`'s exit status, waited for until `by`, or at once SIGKILLed when
  // `forced` says so.
  int WaitUntil(WatchedProcess& agent, TimePoint by, const std::function<bool()>& forced);

  std::string job_;
  WatchedProcess& coordinator_;
  std::vector<WatchedProcess*> workers_;
  Clock& clock_;
  std::ostream& err_;
  SupervisionTimes times_;
  StopOrder order_;
  std::vector<int> ranks_;       // per worker: its rank
  bool said_how_it_started_ = false;
  // A step, or samples, seen in /progress (this run's or the checkpoint's it
  // resumed): an interrupt says it saves where the job got to only then.
  bool seen_training_ = false;
  size_t warnings_said_ = 0;
  std::optional<JobProgress::Replays> seen_replays_;  // as last read
  std::map<int, bool> seen_active_;                   // each device's, by rank, as last read
  std::map<int, TimePoint> stopped_since_;             // by agent (-1: the coordinator), held stopped since
  std::set<int> said_stopped_;                         // those said to be stopped, until they run again
};

}  // namespace edgetrain::cli

#include "cli/run_supervisor.h"

#include <algorithm>
#include <csignal>

#include "core/duration_text.h"
#include "core/number_text.h"
#include "core/exit_codes.h"

namespace edgetrain::cli {

RunSupervisor::RunSupervisor(std::string job, WatchedProcess& coordinator, std::vector<WatchedProcess*> workers,
                             Clock& clock, std::ostream& err, SupervisionTimes times, StopOrder order,
                             std::vector<int> worker_ranks)
    : job_(std::move(job)), coordinator_(coordinator), workers_(std::move(workers)), clock_(clock), err_(err),
      times_(times), order_(order), ranks_(std::move(worker_ranks)) {
  if (ranks_.size() != workers_.size()) {
    ranks_.resize(workers_.size());
    for (size_t i = 0; i < ranks_.size(); ++i) ranks_[i] = static_cast<int>(i);
  }
}

Supervision RunSupervisor::Run(const std::atomic<bool>& interrupted, ProgressDisplay& display, const RunWatch& watch) {
  Supervision outcome;
  std::optional<TimePoint> give_up_at;
  bool stopping = false;  // the coordinator was told to stop
  for (;;) {
    const bool forced = give_up_at && watch.forced && watch.forced();
    if (give_up_at && (forced || clock_.Now() > *give_up_at)) {
      for (auto* w : workers_) w->Signal(SIGKILL);
      coordinator_.Signal(SIGKILL);
      // As given: a grace of 500ms read "within 0 s" in whole seconds (found in review).
      outcome.failure = (outcome.failure.empty() ? "" : outcome.failure + "; ") +
                        (forced ? "asked again to stop: killed the agents, what they trained since their last "
                                  "checkpoint lost"
                                : "the agents did not stop within " + PlainNumber(ToSeconds(times_.interrupt_grace)) +
                                      " s of being told to; killed them");
      // The error that follows starts a line of its own, not the bar's end.
      display.Finish();
      outcome.coordinator_exit = coordinator_.Wait(times_.stop_grace);
      for (auto* w : workers_) w->Wait(times_.stop_grace);
      return outcome;
    }
    if (interrupted.load() && !outcome.interrupted) {
      outcome.interrupted = true;
      // Stopped before it said how it started: an interrupted run that
      // trained nothing replaces no model, and the note came after
      // "interrupted" (a new user's trial); its summary says what it kept.
      said_how_it_started_ = true;
      display.Finish();
      // Ctrl-C before a step said it saved where it got to, which was nowhere
      // (a new user's trial).
      err_ << "interrupted: stopping " << job_
           << (seen_training_ ? " and saving where it got to" : " before it trained a step")
           << (watch.forced ? " (interrupt again to stop at once)...\n" : "...\n");
    }
    if (!stopping && outcome.failure.empty() && watch.health) {
      if (Status health = watch.health(); !health.ok()) {
        outcome.failure = health.message();
        display.Finish();
        err_ << "stopping " << job_ << ", saving where it got to...\n";  // the error follows, with a log's tail
      }
    }
    if (!stopping && (outcome.interrupted || !outcome.failure.empty())) {
      stopping = true;
      give_up_at = clock_.Now() + times_.interrupt_grace;
      TellToStop(coordinator_);  // it saves the model and reports
      // The workers too: an interrupted coordinator tells its workers the job
      // resumes (on a cluster, one placed anew takes them up); here none will.
      // A pipeline's stages are left to the head, which fetches their weights
      // first; those still there after it exits are stopped then (StopTeam).
      if (order_ == StopOrder::kAllAtOnce) {
        for (auto* w : workers_) TellToStop(*w);
      }
    }
    auto line = coordinator_.ReadLine(times_.poll_every);
    if (line && line->rfind("result ", 0) == 0) {
      auto decoded = DecodeJobProgress(line->substr(7));
      if (decoded.ok()) {
        NoteHowItStarted(*decoded, watch, display);
        NoteWarnings(*decoded, display);
        outcome.result = std::move(*decoded);
      } else if (outcome.failure.empty()) {
        outcome.failure = "unreadable result from the coordinator: " + decoded.status().message();
      }
      break;
    }
    if (!line && coordinator_.stdout_closed()) break;
    // A team's coordinator waits for its workers to come back, and here no
    // one starts them again, as the operator would on a cluster: the run
    // ended at its budget, 'nothing trained', exit 0 (a new user's trial,
    // both workers' losses NaN). A pipeline's head fails once its stages
    // are gone, saying which.
    // Once this run stops the team, its workers' ends are its own doing.
    if (!stopping && NoteLostWorkers(display, watch) && order_ == StopOrder::kAllAtOnce && outcome.failure.empty()) {
      // Each refused what the job gave it (exit 2): its model or data, which
      // a run again meets the same way.
      outcome.inputs_at_fault = std::all_of(workers_.begin(), workers_.end(), [](WatchedProcess* w) {
        const std::optional<int> status = w->Poll();
        return status && *status == kExitInvalid;
      });
      outcome.failure = outcome.inputs_at_fault
                            ? "every worker stopped on an error of the job's own (exit 2; worker-0.log's last "
                              "lines below say which): the team has no one left to train"
                            : "every worker exited: the team has no one left to train";
      outcome.failure_log = "worker-0.log";
      display.Finish();
      err_ << "stopping " << job_ << ", saving where it got to...\n";  // the error follows, with a log's tail
      continue;
    }
    if (!stopping && refused_before_start_ && outcome.failure.empty()) {
      const std::string rank = std::to_string(*refused_before_start_);
      outcome.inputs_at_fault = true;
      const bool pipeline = order_ == StopOrder::kCoordinatorFirst;
      outcome.failure = (pipeline ? "the stage agent of rank " : "worker ") + rank +
                        " stopped on an error of the job's own before " + (pipeline ? "the pipeline" : "its team") +
                        " started (exit 2; worker-" + rank + ".log's last lines below say which)";
      outcome.failure_log = "worker-" + rank + ".log";
      display.Finish();
      err_ << "stopping " << job_ << "...\n";  // the error follows, with a log's tail
      continue;
    }
    if (!stopping && stage_lost_before_start_ && outcome.failure.empty()) {
      const std::string rank = std::to_string(*stage_lost_before_start_);
      outcome.failure = "the stage agent of rank " + rank + " ended before the pipeline started (worker-" + rank +
                        ".log's last lines below): a fresh pipeline starts only with every device; run the same "
                        "command again";
      outcome.failure_log = "worker-" + rank + ".log";
      display.Finish();
      err_ << "stopping " << job_ << "...\n";  // the error follows, with a log's tail
      continue;
    }
    if (!stopping) NoteStoppedAgents(display);
    if (auto body = watch.progress()) {
      auto p = DecodeJobProgress(*body);
      if (p.ok()) {
        seen_training_ = seen_training_ || p->iteration > 0 || p->samples > 0;
        NoteHowItStarted(*p, watch, display);
        NoteWarnings(*p, display);
        NoteDeviceEvents(*p, watch, display);
        display.Show(*p);
      }
      if (watch.sink) watch.sink(*body, p.ok() ? &*p : nullptr);
    }
  }
  display.Finish();
  // A worker killed just before the coordinator ended (a pipeline of one
  // stage fails with its device) is named too, and one stopped by an error
  // of the job's own (a NaN loss) in a job over before the next look (a
  // new user's team of one epoch ended with exit 0 and the worker's end
  // unsaid); one that merely exited may be answering the coordinator's end.
  if (!stopping) NoteLostWorkers(display, watch, /*at_end=*/true);
  outcome.lost_workers = static_cast<int>(ended_.size());
  outcome.ended = ended_;
  StopTeam(outcome, watch.forced);
  if (!outcome.result && outcome.failure.empty()) {
    // A pipeline's by its name there (a user's trial read of "the coordinator"
    // of a job whose docs name only its head).
    outcome.failure = std::string(order_ == StopOrder::kCoordinatorFirst ? "the pipeline's head" : "the coordinator") +
                      " ended (" + DescribeExitStatus(outcome.coordinator_exit) + ") without a result";
  }
  // A Ctrl-C that came as the job was ending: a job that had finished lost
  // nothing to it, and its run is not interrupted; exit 130 there had a
  // script resume a job the next run started afresh (a new user's trial).
  if (interrupted.load() && !outcome.interrupted) {
    if (outcome.result && outcome.result->state == JobState::kSucceeded) {
      err_ << "interrupted after " << job_ << " had finished: nothing was lost, its model is saved\n";
    } else {
      outcome.interrupted = true;
      err_ << "interrupted: " << job_ << " had already stopped; what it trained is saved\n";
    }
  } else if (outcome.interrupted && outcome.result && outcome.result->state == JobState::kSucceeded) {
    // Told to stop once training had ended by itself (its budget spent, its
    // target reached), during the final evaluation or as the model was
    // written: the job finished as it would have, its checkpoint marked
    // complete. Exit 130 and "run again to resume" had the next run start
    // afresh over its model (a new user's trial).
    outcome.interrupted = false;
    err_ << "the interrupt came after " << job_ << " had stopped training by itself (its budget spent or its "
         << "target reached): it finished as it would have, and its model is saved\n";
  }
  return outcome;
}

// Asked afresh: the last look may predate the team's start by a poll, and a
// worker lost 33 ms after its team started was said to be waited for as one
// lost before it (a new user's trial, under load).
bool RunSupervisor::TeamStartedNow(const RunWatch& watch) const {
  if (!watch.progress) return false;
  const std::optional<std::string> body = watch.progress();
  if (!body) return false;
  const StatusOr<JobProgress> p = DecodeJobProgress(*body);
  return p.ok() && p->state != JobState::kStarting;
}

bool RunSupervisor::NoteLostWorkers(ProgressDisplay& display, const RunWatch& watch, bool at_end) {
  for (size_t i = 0; i < workers_.size(); ++i) {
    // A worker told to stop exits with 0; anything else is a loss the team absorbs.
    auto status = workers_[i]->Poll();
    if (!status || *status == 0 || ended_.contains(ranks_[i])) continue;
    const bool own_error = *status == kExitInvalid;
    if (at_end && !(*status > 128) && !own_error) continue;
    display.Finish();
    const bool pipeline = order_ == StopOrder::kCoordinatorFirst;
    // Why, where the job's own input made it stop: the reason was in a log
    // that a run over without a loss it saw deletes.
    std::string how = DescribeExitStatus(*status);
    if (const std::string why = own_error && watch.last_words ? watch.last_words(ranks_[i]) : ""; !why.empty()) {
      how += ", an error of the job's own: " + why;
    }
    ended_[ranks_[i]] = how;
    err_ << "warning: " << (pipeline ? "the stage agent of rank " : "worker ") << ranks_[i] << " ended (" << how
         << "; its log, worker-" << ranks_[i] << ".log, is kept with the run's logs)";
    // Once the coordinator has ended, nothing trains on; nor once this was
    // the last worker (the run then fails, saying so).
    if (!at_end && ended_.size() < workers_.size()) {
      const bool before_start =
          !said_how_it_started_ && watch.team_gathers_for > Duration::zero() && !TeamStartedNow(watch);
      if (pipeline && before_start && own_error) {
        // As a team's worker: its inputs refused would be again.
        refused_before_start_ = ranks_[i];
        err_ << "; the pipeline has not started yet, and the same command fails the same way: the run stops";
      } else if (pipeline && before_start && !watch.resumes) {
        // Nothing restarts an agent here, and the head waited out the grace
        // for it, then failed: a 20 s job stood 2 minutes unsaid (a new
        // user's trial).
        stage_lost_before_start_ = ranks_[i];
        err_ << "; the pipeline has not started yet, and a fresh one starts only with every device (nothing "
                "trained yet rebuilds its layers): the run stops";
      } else if (pipeline && before_start) {
        err_ << "; the pipeline has not started yet: its head waits for every device up to "
             << "spec.faultTolerance.nodeLossGrace (" << FormatDuration(watch.team_gathers_for)
             << ") and what a head started again adds, then resumes without it";
      } else if (pipeline) {
        err_ << "; the pipeline trains on without it where it can";
      } else if (before_start) {
        if (own_error) {
          // Its inputs refused (its credentials, another job's, say): it
          // would be again, and the team waited the whole grace for it, then
          // succeeded, where the docs say such a worker fails the run (a
          // security trial: 129.5 s for a job of 8).
          refused_before_start_ = ranks_[i];
          err_ << "; the team has not started yet, and the same command fails the same way: the run stops";
        } else {
          // Lost before the team started: "trains on without it" read as at
          // once, and the run stood 2 minutes unsaid (a user's trial).
          err_ << "; the team has not started yet: its coordinator waits for every worker up to "
               << "spec.faultTolerance.nodeLossGrace (" << FormatDuration(watch.team_gathers_for)
               << ") after the first came, then starts without it";
        }
      } else {
        err_ << "; the team trains on without it";
      }
    }
    err_ << "\n";
  }
  return !workers_.empty() && ended_.size() == workers_.size();
}

void RunSupervisor::NoteHowItStarted(const JobProgress& p, const RunWatch& watch, ProgressDisplay& display) {
  // A job that failed before it trained (a checkpoint of another model, say)
  // neither resumed nor started afresh: its error says what happened.
  if (said_how_it_started_ || p.state == JobState::kStarting || p.state == JobState::kFailed) return;
  said_how_it_started_ = true;
  if (p.resumed_from_iteration) {
    display.Finish();
    err_ << "resuming " << job_ << " from its checkpoint at iteration " << WithThousands(*p.resumed_from_iteration)
         << " (edgetrain run --fresh starts over)\n";
    // A manifest edited since (a learning rate, a budget): trained on under
    // the new one, and said so, not silently (a new user's trial).
    if (!p.resumed_with_changes.empty()) {
      // The option that set a changed field, if one did ("" if none).
      const auto option_of = [&](const std::string& change) -> std::string {
        for (const auto& [path, option] : watch.set_by_options) {
          if (change.rfind(path + ":", 0) == 0) return option;
        }
        return "";
      };
      // Its data may have changed under the same manifest, or an option
      // changed a field of it: said as that.
      const bool manifest =
          std::any_of(p.resumed_with_changes.begin(), p.resumed_with_changes.end(),
                      [&](const std::string& c) { return c.rfind("spec.", 0) == 0 && option_of(c).empty(); });
      err_ << (manifest ? "  its manifest changed since that checkpoint; training on under the new one:\n"
                        : "  changed since that checkpoint; training on as it now is:\n");
      bool model_changed = false;
      for (const std::string& change : p.resumed_with_changes) {
        const std::string option = option_of(change);
        err_ << "    " << change << (option.empty() ? "" : " (by " + option + ")") << "\n";
        model_changed = model_changed || change.rfind("spec.model.", 0) == 0;
      }
      // A model changed to one whose parameters have the same shapes resumes
      // with the checkpoint's weights, not the new one's (a new user's
      // module swapped in trained on from the old weights, unsaid).
      if (model_changed) {
        err_ << "  the changed model trains on from the checkpoint's weights (its parameters have their shapes), "
                "not from its own: edgetrain run --fresh starts from those\n";
      }
    }
  } else if (!watch.earlier_model.empty()) {
    display.Finish();
    err_ << "note: " << job_ << " starts afresh; its model will replace " << watch.earlier_model
         << (watch.afresh_also.empty() ? "" : "; " + watch.afresh_also) << "\n";
  }
}

void RunSupervisor::NoteWarnings(const JobProgress& p, ProgressDisplay& display) {
  if (p.warnings.size() <= warnings_said_) return;
  display.Finish();
  for (; warnings_said_ < p.warnings.size(); ++warnings_said_) {
    err_ << "warning: " << job_ << ": " << p.warnings[warnings_said_] << "\n";
  }
}

void RunSupervisor::NoteDeviceEvents(const JobProgress& p, const RunWatch& watch, ProgressDisplay& display) {
  if (!p.replays) return;
  // The ranks that left the stages, and those back in them, since the last read.
  std::vector<int> left, back;
  for (const WorkerProgress& w : p.workers) {
    const auto seen = seen_active_.find(w.rank);
    if (seen != seen_active_.end() && seen->second && !w.active) left.push_back(w.rank);
    if (seen != seen_active_.end() && !seen->second && w.active) back.push_back(w.rank);
    seen_active_[w.rank] = w.active;
  }
  const JobProgress::Replays was = seen_replays_.value_or(JobProgress::Replays{});
  const JobProgress::Replays& now = *p.replays;
  seen_replays_ = now;
  // " (rank 1 on board)", " (ranks 0 on gateway, 1 on board)", or without
  // their nodes where the watch names none.
  auto ranks = [&](const std::vector<int>& rs) {
    std::string said;
    for (int r : rs) {
      const auto node = watch.nodes.find(r);
      said += (said.empty() ? "" : ", ") + std::to_string(r) + (node != watch.nodes.end() ? " on " + node->second : "");
    }
    return rs.empty() ? std::string() : (rs.size() == 1 ? " (rank " : " (ranks ") + said + ")";
  };
  std::vector<std::string> notes;
  if (now.hung > was.hung) {
    notes.push_back("a device taken for hung" + ranks(left) +
                    ": a pass ran far past what its passes take, its heartbeats still coming");
  }
  if (now.stragglers > was.stragglers) {
    notes.push_back("a device let go of as a straggler" + ranks(left) +
                    ": it ran its share far slower than its group's fastest; the others take it");
  }
  if (now.left_out > was.left_out) {
    notes.push_back("a device left out of the stages laid out anew" + ranks(left) +
                    ": at the pace it measured, the pipeline is predicted faster without it; it may rejoin later");
  }
  const bool let_go = now.hung > was.hung || now.stragglers > was.stragglers || now.left_out > was.left_out;
  if (now.restored_stages > was.restored_stages) {
    const bool several = left.size() > 1 && !let_go;
    notes.push_back(std::string(several ? "a stage lost its only devices" : "a stage lost its only device") +
                    (let_go ? "" : ranks(left)) +
                    "; rebuilt on its neighbour from a replica, " + std::to_string(now.steps_lost - was.steps_lost) +
                    (now.steps_lost - was.steps_lost == 1 ? " step" : " steps") + " of its updates lost");
  } else if (now.micro_batches > was.micro_batches && now.hung == was.hung) {
    notes.push_back("a device lost mid-step" + ranks(left) + "; the step ran again on the devices left");
  } else if (now.covered > was.covered && now.hung == was.hung) {
    // Covered by its group, the step's other passes standing.
    const int64_t shares = now.covered_shares - was.covered_shares;
    notes.push_back("a device lost mid-step" + ranks(left) +
                    (shares > 0 ? "; another of its group computed its " + std::to_string(shares) +
                                      (shares == 1 ? " share" : " shares") + " of the step, nothing else ran again"
                                : "; all it computed of the step was in, nothing ran again"));
  }
  if (now.rejoined > was.rejoined) notes.push_back("a device is back in a stage" + ranks(back));
  if (notes.empty()) return;
  display.Finish();
  for (const std::string& note : notes) err_ << "note: " << job_ << ": " << note << "\n";
}

std::string RunSupervisor::AgentName(int i) const {
  const bool pipeline = order_ == StopOrder::kCoordinatorFirst;
  if (i < 0) return pipeline ? "the pipeline's head" : "the coordinator";
  return (pipeline ? "the stage agent of rank " : "worker ") + std::to_string(ranks_[static_cast<size_t>(i)]);
}

void RunSupervisor::TellToStop(WatchedProcess& agent) {
  agent.Signal(SIGTERM);
  if (agent.Stopped()) agent.Signal(SIGCONT);  // SIGTERM waits, pending, until then
}

void RunSupervisor::NoteStoppedAgents(ProgressDisplay& display) {
  for (int i = -1; i < static_cast<int>(workers_.size()); ++i) {
    WatchedProcess& agent = i < 0 ? coordinator_ : *workers_[static_cast<size_t>(i)];
    if (!agent.Stopped()) {
      stopped_since_.erase(i);
      if (said_stopped_.erase(i)) {
        display.Finish();
        err_ << "note: " << job_ << ": " << AgentName(i) << " runs again\n";
      }
      continue;
    }
    const TimePoint since = stopped_since_.try_emplace(i, clock_.Now()).first->second;
    if (clock_.Now() - since < times_.stopped_after || said_stopped_.contains(i)) continue;
    said_stopped_.insert(i);
    display.Finish();
    const int pid = agent.ProcessId();
    const std::string who = AgentName(i) + (pid > 0 ? " (pid " + std::to_string(pid) + ")" : "");
    const std::string go_on = pid > 0 ? "`kill -CONT " + std::to_string(pid) + "`" : "SIGCONT";
    err_ << "warning: " << job_ << ": " << who << " is stopped (SIGSTOP, or Ctrl-Z) and has been for "
         << FormatDuration(std::chrono::round<std::chrono::seconds>(clock_.Now() - since)) << ": ";
    if (i < 0) {
      err_ << "the job stands still, its wall clock running on, until " << go_on
           << " lets it go on; Ctrl-C stops it, saving where it got to\n";
    } else if (order_ == StopOrder::kCoordinatorFirst) {
      err_ << "the head lets it go past its deadline and trains on without it where it can; " << go_on
           << " lets it rejoin\n";
    } else {
      err_ << "the team counts it out past its arrival deadline and trains on without it; " << go_on
           << " lets it rejoin\n";
    }
  }
}

bool RunSupervisor::ExitsBy(WatchedProcess& agent, TimePoint by, const std::function<bool()>& forced) {
  // In slices, so that a second Ctrl-C, which the README says kills the
  // agents, is heeded: these waits had held it for up to 15 s each (found in
  // review).
  while (clock_.Now() < by) {
    if (agent.ExitsWithin(std::min<Duration>(by - clock_.Now(), std::chrono::milliseconds(100)))) return true;
    if (forced && forced()) return false;
  }
  return agent.Poll().has_value();
}

int RunSupervisor::WaitUntil(WatchedProcess& agent, TimePoint by, const std::function<bool()>& forced) {
  ExitsBy(agent, by, forced);
  return agent.Wait(Duration::zero());  // reaped, or SIGKILLed now
}

void RunSupervisor::StopTeam(Supervision& outcome, const std::function<bool()>& forced) {
  outcome.coordinator_exit = WaitUntil(coordinator_, clock_.Now() + times_.stop_grace, forced);
  // Workers that heard Stop (or were signalled with the coordinator) are gone
  // already; one behind a dead link did not hear it and would keep trying to
  // reconnect: it is told to stop.
  const TimePoint done_by = clock_.Now() + times_.worker_stop_grace;
  std::vector<bool> told(workers_.size(), false);
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (ExitsBy(*workers_[i], done_by, forced)) continue;
    TellToStop(*workers_[i]);
    told[i] = true;
  }
  // A pipeline's stage agents only once more: the head has every stage's
  // weights, and nothing of theirs is read after. A team's workers as long
  // as --stop-grace: one finishing its step (at a slowdown of 20, seconds)
  // prints its own account of its energy after it, which the summary reads.
  const bool pipeline = order_ == StopOrder::kCoordinatorFirst;
  const TimePoint killed_by = clock_.Now() + (pipeline ? times_.worker_stop_grace : times_.stop_grace);
  // Those still finishing a second after they were told are said, and how
  // long they may take: the run had stood silent 7 s after its last
  // progress line (a new user's trial).
  const TimePoint said_by = std::min(killed_by, clock_.Now() + std::chrono::seconds(1));
  std::vector<int> finishing;
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (told[i] && !ExitsBy(*workers_[i], said_by, forced)) finishing.push_back(ranks_[i]);
  }
  if (!finishing.empty() && clock_.Now() < killed_by) {
    err_ << "waiting up to " << FormatDuration(std::chrono::round<std::chrono::seconds>(killed_by - clock_.Now()))
         << " for "
         << (pipeline ? (finishing.size() > 1 ? "the stage agents of ranks" : "the stage agent of rank")
                      : (finishing.size() > 1 ? "workers" : "worker"));
    for (size_t k = 0; k < finishing.size(); ++k) err_ << (k == 0 ? " " : ", ") << finishing[k];
    err_ << " to stop: " << (finishing.size() > 1 ? "they" : "it")
         << " did not hear the " << (pipeline ? "head's" : "coordinator's") << " stop (a link down?) and "
         << (finishing.size() > 1 ? "were" : "was")
         << " told to\n";
  }
  std::vector<int> killed;
  for (size_t i = 0; i < workers_.size(); ++i) {
    const int status = WaitUntil(*workers_[i], killed_by, forced);
    if (told[i] && status == 128 + SIGKILL) killed.push_back(ranks_[i]);
  }
  if (killed.empty()) return;
  // Their logs say why: kept.
  outcome.lost_workers += static_cast<int>(killed.size());
  const bool several = killed.size() > 1;
  err_ << "killed " << (pipeline ? (several ? "the stage agents of ranks" : "the stage agent of rank")
                                 : (several ? "workers" : "worker"));
  for (size_t k = 0; k < killed.size(); ++k) err_ << (k == 0 ? " " : ", ") << killed[k];
  err_ << ": still running after the coordinator had ended, " << (several ? "they" : "it")
       << " did not stop when told to (a link down?)\n";
}

}  // namespace edgetrain::cli

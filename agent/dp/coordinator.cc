#include "agent/dp/coordinator.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

#include "agent/transport/message_parts.h"
#include "agent/transport/transport.h"
#include "core/finite_step.h"

namespace edgetrain::agent {
namespace {

// Refused pushes after which a worker is quarantined: a count, not a wait. A
// bad message is refused and its worker rejoins with a fresh copy; three in
// one job are no fluke.
constexpr int kRefusalsToQuarantine = 3;

int StalenessBound(const SyncSpec& sync) {
  if (sync.policy == SyncPolicy::kBsp || sync.policy == SyncPolicy::kDeadline) return 0;
  return sync.staleness_bound.value_or(4);  // the CRD documents 4 as the default
}

}  // namespace

Coordinator::Coordinator(const JobPlan& plan, Trainer& model, const Dataset& test, int64_t train_size, Clock& clock,
                         std::ostream& log, CoordinatorMetrics& metrics, CoordinatorTimings timings)
    : plan_(plan), model_(model), test_(test), train_size_(train_size), clock_(clock), log_(log), metrics_(metrics),
      timings_(timings), world_(plan.spec.parallelism.workers), shapes_(model.ParameterShapes()),
      layout_(shapes_, plan.spec.sync.granularity), changed_(clock),
      ledger_(world_, layout_.size(), StalenessBound(plan.spec.sync)),
      aggregator_(layout_, plan.spec.optimizer, model.Parameters()),
      downlink_(layout_, world_, DownlinkEncodingFor(plan.spec.sync.compression), plan.spec.sync.policy == SyncPolicy::kRog),
      members_(world_, plan.spec.fault_tolerance.node_loss_grace, timings.first_push_deadline), takeover_(world_),
      accounts_(world_, plan.spec.data.batch_size, train_size), links_(static_cast<size_t>(world_)),
      push_fates_(kPushFates, 0), refused_pushes_(static_cast<size_t>(world_), 0),
      last_refusal_(static_cast<size_t>(world_)), last_refusal_why_(static_cast<size_t>(world_)),
      last_report_at_(static_cast<size_t>(world_)), stream_generation_(static_cast<size_t>(world_), 0),
      plan_generation_(plan.generation), first_hello_at_(static_cast<size_t>(world_)) {
  for (int w = 0; w < world_; ++w) slot_since_.push_back(SlotSince(plan, w));
  // Workers join the ledger when their stream arrives (Join), not before: the
  // team starts with those there, and later ones join where it is.
  for (int w = 0; w < world_; ++w) ledger_.Deactivate(w);
  if (plan.spec.sync.policy == SyncPolicy::kDeadline) {
    rounds_.emplace(plan.spec.sync.quorum.value_or(kDefaultQuorum),
                    plan.spec.sync.deadline_slack.value_or(kDefaultDeadlineSlack));
    aggregator_.CloseRoundsAtDeadlines();
  }
}

void Coordinator::FollowRounds(TimePoint now) {
  if (!rounds_ || stopping_) return;  // once stopping, the model is final
  for (;;) {
    const int64_t round = aggregator_.least_applied_clock() + 1;
    if (round != rounds_->round()) rounds_->Opened(round, now);
    // Who the round waits on, and who of them has pushed all of it.
    int counted = 0, complete = 0;
    std::vector<bool> in(static_cast<size_t>(world_), false);
    for (int w = 0; w < world_; ++w) {
      if (!ledger_.counted(w)) continue;
      ++counted;
      bool all = true;
      for (size_t r = 0; all && r < layout_.size(); ++r) all = ledger_.pushed(w, r) >= round;
      in[w] = all;
      complete += all ? 1 : 0;
    }
    if (counted == 0) return;
    const bool had_deadline = rounds_->deadline().has_value();
    rounds_->Completed(complete, counted, now);
    if (!had_deadline && rounds_->deadline()) changed_.NotifyAll();  // Advance wakes for it
    if (!rounds_->Due(now)) return;
    for (int w = 0; w < world_; ++w) {
      if (!ledger_.counted(w) || in[w]) continue;
      ledger_.Excuse(w);
      ++excusals_;
    }
    ++rounds_at_deadline_;
    if (!aggregator_.StepMovedRows(ledger_)) return;
    changed_.NotifyAll();
  }
}

void Coordinator::FollowTeamChange(TimePoint now) {
  // Once stopping, the model is final: the workers leave one by one as they
  // hear Stop, and each departure had moved the clocks the others held, the
  // rows stepping on a part of a round's gradients, the last departure's on
  // the sum of them all divided by one; the final evaluation and the saved
  // model were of that (found in review).
  if (stopping_) return;
  // The rows whose clocks only the workers who left held step now, on what
  // the others pushed, under every policy; then a round may be complete, or due.
  if (aggregator_.StepMovedRows(ledger_)) changed_.NotifyAll();
  FollowRounds(now);
}

Coordinator::~Coordinator() = default;

// The workers' totals as the checkpoint holds them, but for the files their
// streams read through where the job now reads another folder: those are
// names of the folder it read then, and a run resumed on a new folder
// skipped every file of it named before them, trained on nothing and
// exited 0 (a new user's trial). Its arrivals and drops stay counted.
std::vector<WorkerTotals> Coordinator::ReadThroughOfThisFolder(const JobCheckpoint& c) const {
  std::vector<WorkerTotals> workers = c.workers;
  // The folder as the checkpoint's spec names it, as this run's plan was
  // read from its own (JobPlan::spec_json); none in a checkpoint written
  // before checkpoints kept their spec, taken as it was.
  const nlohmann::json then = nlohmann::json::parse(c.spec_json, nullptr, /*allow_exceptions=*/false);
  if (!then.is_object()) return workers;
  const nlohmann::json::json_pointer at("/data/stream/directory");
  const std::string folder_then = then.contains(at) && then[at].is_string() ? then[at].get<std::string>() : "";
  const auto& stream = plan_.spec.data.stream;
  const std::string folder_now = stream && stream->directory ? *stream->directory : "";
  if (folder_then == folder_now) return workers;
  for (WorkerTotals& t : workers) t.stream_read_through.clear();
  return workers;
}

Status Coordinator::Restore(const JobCheckpoint& c) {
  std::lock_guard lock(mu_);
  if (c.ledger) EDGETRAIN_RETURN_IF_ERROR(ParametersFit(c, shapes_));
  // A team of another size takes it up too: what it keeps of the team is
  // where each row stepped, which every worker goes on from (below). A job
  // suspended, given another worker count and resumed, as operator.md says
  // to apply an edit, failed for good on its own checkpoint (a new user's
  // trial).
  const int kept = c.ledger ? c.ledger->workers : 0;
  if (kept < 1 || c.ledger->pushed.size() != static_cast<size_t>(kept) * layout_.size() ||
      c.ledger->iterations.size() != static_cast<size_t>(kept)) {
    return FailedPreconditionError("holds a different model, optimizer or team");
  }
  if (Status restored = aggregator_.Restore({c.parameters, c.optimizer, c.versions}); !restored.ok()) {
    return FailedPreconditionError("holds a different model, optimizer or team");
  }
  // Each row where its furthest push had it: a checkpoint credits pushes only
  // as far as the rows stepped on them (Snapshot).
  std::vector<int64_t> stepped(layout_.size(), 0);
  for (int w = 0; w < kept; ++w) {
    for (size_t r = 0; r < layout_.size(); ++r) {
      stepped[r] = std::max(stepped[r], c.ledger->pushed[static_cast<size_t>(w) * layout_.size() + r]);
    }
  }
  // Every worker goes on from there, as from a copy taken over. Each put back
  // where it had pushed, a worker a round behind the rows (the stop closed
  // the round without it), joining first, was put there with its teammates:
  // both computed a round stepped already and both pushes were late, a batch
  // of each lost at every resume.
  ledger_.Resume(stepped);
  accounts_.Restore(c.iteration, c.samples, ReadThroughOfThisFolder(c), c.loss, c.energy_joules);
  resumed_iteration_ = c.iteration;
  restored_elapsed_s_ = c.elapsed_s;
  // Each row's last step is where the restored ledger's clock has it, with
  // nothing gathered towards the next (without rounds the first push after a
  // resume stepped its row alone, from clock 0: found in review).
  aggregator_.StepMovedRows(ledger_);
  return Status::Ok();
}

Status Coordinator::Start(const std::atomic<bool>& cancel) {
  const TimePoint waiting_since = clock_.Now();
  bool announced = false;
  std::unique_lock lock(mu_);
  while (!cancel.load()) {
    const TimePoint now = clock_.Now();
    if (members_.StartsNow(now)) {
      const int here = members_.connected_count();
      // As the driver starts the job's clock, once this returns.
      job_clock_start_ = now - FromSeconds(restored_elapsed_s_);
      team_started_ = now;
      log_ << "coordinator: the team starts with " << here << " of " << world_ << " workers";
      if (here < world_) log_ << "; the others join when they come";
      log_ << "\n";
      break;
    }
    if (!members_.first_arrival()) {
      if (now - waiting_since > timings_.first_worker_timeout) {
        return UnavailableError("no worker connected within " +
                                std::to_string(static_cast<int>(ToSeconds(timings_.first_worker_timeout))) + " s");
      }
    } else if (!announced) {
      announced = true;
      log_ << "coordinator: waiting up to " << ToSeconds(plan_.spec.fault_tolerance.node_loss_grace) << " s for "
           << world_ - members_.connected_count() << " more worker(s)\n";
    }
    changed_.WaitFor(lock, timings_.tick);  // Join wakes us as each worker arrives
  }
  changed_.NotifyAll();  // the Welcomes may go
  return Status::Ok();
}

std::optional<TimePoint> Coordinator::JobClockStart() {
  std::lock_guard lock(mu_);
  return clock_taken_over_ ? job_clock_start_ : std::nullopt;
}

double Coordinator::JobElapsedLocked() const {
  return job_clock_start_ ? std::max(0.0, ToSeconds(clock_.Now() - *job_clock_start_)) : restored_elapsed_s_;
}

void Coordinator::EndTicksAtSamples(int64_t samples, int64_t past_iteration) {
  std::lock_guard lock(mu_);
  end_ticks_at_ = std::pair{samples, past_iteration};
}

Status Coordinator::Advance() {
  const TimePoint began = clock_.Now();
  const TimePoint tick_end = began + timings_.tick;
  // The epochs budget spent ends the tick: a push's report that brings it
  // in wakes the wait.
  auto spent = [&] {
    return end_ticks_at_ && accounts_.samples() >= end_ticks_at_->first &&
           accounts_.team_iteration() > end_ticks_at_->second;
  };
  if (rounds_) {
    // A round's deadline is kept to the moment, not to the tick: a round
    // lasts a few ticks. The push that brings the quorum in sets it
    // (FollowRounds, from Receive) and wakes this wait.
    std::unique_lock lock(mu_);
    for (TimePoint now = clock_.Now(); now < tick_end && !spent(); now = clock_.Now()) {
      FollowRounds(now);
      const std::optional<TimePoint> deadline = rounds_->deadline();
      const TimePoint wake =
          deadline ? std::min(tick_end, std::max(*deadline, now + std::chrono::milliseconds(1))) : tick_end;
      changed_.WaitUntil(lock, wake, [&] { return rounds_->deadline() != deadline || spent(); });
    }
  } else {
    // Woken by every push only where an epochs budget may end the tick.
    std::unique_lock lock(mu_);
    if (end_ticks_at_) {
      changed_.WaitUntil(lock, tick_end, spent);
    } else {
      lock.unlock();
      clock_.SleepFor(timings_.tick);
    }
  }
  std::lock_guard lock(mu_);
  const TimePoint now = clock_.Now();
  const std::vector<CountedOut> counted_out = members_.CountOutOverdue(now, ledger_);
  for (const CountedOut& out : counted_out) {
    log_ << "coordinator: worker " << out.worker << " counted out: no push for " << ToSeconds(out.silent)
         << " s, past its deadline of " << ToSeconds(out.deadline) << " s\n";
  }
  // A worker counted out leaves the clocks, and the rows only it held step:
  // a pass over every row's clocks, paid only when the team changed (every
  // tick, it was one a tick under every policy). A deadline's round may close
  // on the clock alone.
  if (!counted_out.empty()) {
    FollowTeamChange(now);
  } else {
    FollowRounds(now);
  }
  // Who the team waits on: named in the progress, so that a slow run says why.
  for (int w = 0; w < world_; ++w) {
    accounts_.Holding(w, members_.started() && ledger_.HoldsTeam(w), now - began);
  }
  metrics_.SetActiveWorkers(ledger_.active_count());
  changed_.NotifyAll();  // senders look again: rows a worker may now have
  return Status::Ok();
}

std::vector<bool> Coordinator::ActiveWorkers() const {
  // Once the job is over its streams close: who was in is who was in when training ended.
  if (active_at_end_) return *active_at_end_;
  std::vector<bool> active(static_cast<size_t>(world_));
  for (int w = 0; w < world_; ++w) active[w] = members_.connected(w) && ledger_.active(w);
  return active;
}

JobProgress Coordinator::Progress() {
  std::lock_guard lock(mu_);
  JobProgress p = accounts_.Progress(0, ActiveWorkers());
  const TimePoint now = clock_.Now();
  for (WorkerProgress& w : p.workers) {
    w.downlink_mbps = MeasuredDownlinkMbps(w.rank);  // accounts give one entry per rank
    w.quarantined = QuarantineLocked(w.rank);
    w.refused_pushes = refused_pushes_[static_cast<size_t>(w.rank)];
    if (w.refused_pushes > 0) {
      w.last_refusal = last_refusal_[static_cast<size_t>(w.rank)] + ": " + last_refusal_why_[static_cast<size_t>(w.rank)];
    }
    // Out of the team, for how long says a deadline's blip from a link down;
    // in it, that its figures here are seconds old (its link out, not yet
    // counted out), which they did not say.
    w.silent_s = ToSeconds(members_.SilentFor(w.rank, now));
    const size_t r = static_cast<size_t>(w.rank);
    if (last_report_at_[r]) w.unreported_s = ToSeconds(now - *last_report_at_[r]);
  }
  return p;
}

std::optional<double> Coordinator::EvaluationGuess() const {
  // Enough samples that a pass's fixed cost is a small part of the time, few
  // enough to take milliseconds: asked at a Ctrl-C, among other times.
  constexpr int64_t kEvaluationProbe = 256;
  if (!evaluation_guess_ && test_.size() > 0) {
    const Dataset probe = SpreadSamples(test_, kEvaluationProbe);
    const TimePoint began = clock_.Now();
    if (!model_.Evaluate(probe).ok()) return std::nullopt;  // the evaluation itself will say why
    evaluation_guess_ = ToSeconds(clock_.Now() - began) * static_cast<double>(test_.size()) /
                        static_cast<double>(probe.size());
  }
  return evaluation_guess_;
}

StatusOr<double> Coordinator::Evaluate() {
  {
    std::lock_guard lock(mu_);
    std::span<const float> params = aggregator_.parameters();
    std::copy(params.begin(), params.end(), model_.Parameters().begin());
  }
  EDGETRAIN_RETURN_IF_ERROR(settled_.For(model_));
  EDGETRAIN_ASSIGN_OR_RETURN(Evaluation e, model_.Evaluate(test_));
  EDGETRAIN_RETURN_IF_ERROR(FiniteEvaluation(e.loss));
  return e.accuracy;
}

void Coordinator::Snapshot(JobCheckpoint& into) {
  std::lock_guard lock(mu_);
  into.plan_generation = plan_generation_;
  RowAggregator::State state = aggregator_.Snapshot();
  into.parameters = std::move(state.parameters);
  into.parameter_shapes = shapes_;
  into.optimizer = std::move(state.optimizer);
  into.versions = std::move(state.versions);
  // Pushes as far as the rows stepped on them: a push gathered toward a step
  // not taken yet (a round still open) is not in the parameters kept, and
  // credited, it would have the resumed rows step past that round on nothing
  // (Restore). Its worker computes it again.
  LedgerState ledger;
  ledger.workers = world_;
  for (int w = 0; w < world_; ++w) {
    for (size_t r = 0; r < layout_.size(); ++r) {
      ledger.pushed.push_back(std::min(ledger_.pushed(w, r), aggregator_.applied_clock(r)));
    }
    ledger.iterations.push_back(ledger_.iteration(w));
  }
  into.ledger = std::move(ledger);
  into.workers = accounts_.Totals();
}

void Coordinator::Interrupted() {
  std::lock_guard lock(mu_);
  interrupted_ = true;
}

Status Coordinator::Finish(FinalModel final) {
  std::unique_lock lock(mu_);
  active_at_end_ = ActiveWorkers();
  // Every sender sends Stop; streams then end.
  stopping_ = true;
  changed_.NotifyAll();
  changed_.WaitFor(lock, timings_.stop_grace, [&] { return members_.connected_count() == 0; });
  abandon_sends_ = true;  // a worker that has not heard Stop by now is behind a dead link
  changed_.NotifyAll();
  if (rounds_) {
    // Excusals are counted a worker a round: one link in a long dip is many.
    log_ << "coordinator: " << aggregator_.least_applied_clock() << " rounds, " << rounds_at_deadline_
         << " closed by their deadline, " << excusals_ << " worker-rounds excused (a worker left out of a round), "
         << aggregator_.late_rows() << " gradient rows late\n";
  }
  if (final == FinalModel::kLastEvaluated) {
    aggregator_.SetParameters(model_.Parameters());
  } else {
    std::span<const float> params = aggregator_.parameters();
    std::copy(params.begin(), params.end(), model_.Parameters().begin());
  }
  return Status::Ok();
}

// Settled here too: an interrupted run saves weights it did not evaluate
// (Finish gave them), whose statistics were another model's (found in
// review); weights just evaluated are not settled again.
Status Coordinator::SaveModel(const std::string& path) {
  EDGETRAIN_RETURN_IF_ERROR(settled_.For(model_));
  return model_.SaveModel(path);
}

WelcomeMessage Coordinator::MakeWelcome(int w, bool whole_model) {
  WelcomeMessage m;
  m.rows = downlink_.Welcome(w, whole_model, ledger_, aggregator_);
  m.resume_after = members_.resume_after(w);
  m.staleness_bound = ledger_.BoundInForce();
  m.welcome = members_.welcome(w);
  m.stream_read_through = accounts_.StreamReadThrough(w);
  m.job_elapsed_s = JobElapsedLocked();
  if (first_hello_at_[w] && team_started_) {
    m.waited_s = ToSeconds(*std::exchange(first_hello_at_[w], std::nullopt) - *team_started_);
  }
  members_.WelcomeSent(w);
  return m;
}

std::string Coordinator::QuarantineLocked(int w) const {
  if (refused_pushes_[w] < kRefusalsToQuarantine) return "";
  return std::to_string(refused_pushes_[w]) + " pushes refused, the last " + last_refusal_[w];
}

StatusOr<Coordinator::Joined> Coordinator::Join(int w, int64_t generation, int64_t model_clock, double job_elapsed_s,
                                                double job_energy_j) {
  std::unique_lock lock(mu_);
  if (stopping_) return StoppingError();
  // Its Hello was admitted before the lock: a plan adopted since may have
  // given its slot anew, and the worker fenced out had trained on as current
  // (found in review).
  EDGETRAIN_RETURN_IF_ERROR(CheckSlotHeld(generation, slot_since_[w], plan_generation_.load()));
  // FailedPrecondition: the worker gives up rather than ask again.
  // With the last refusal's words, which its log then holds: a team whose
  // every worker was turned away showed the user only "the last too_large",
  // the reason in the coordinator's log alone (a new user's trial).
  if (const std::string why = QuarantineLocked(w); !why.empty()) {
    return FailedPreconditionError("worker " + std::to_string(w) + " is quarantined: " + why + " (" +
                                   last_refusal_why_[w] + ")");
  }
  // A new stream from a known rank: the worker restarted or reconnected.
  const uint64_t stream = members_.Open(w, clock_.Now(), ledger_);
  // A worker back before its old stream was seen to close is credited up to
  // its teammates' clocks, which may move a row's: it steps now, on what the
  // others pushed, as when a worker leaves. Its Welcome had carried rows at
  // clocks their values had not reached (found in review).
  FollowTeamChange(clock_.Now());
  // Its first stream: its device is the team's from the team's start, and
  // its Welcome says how far its Hello came from that start, so that it
  // counts its energy from it. A robot whose link was out for the team's
  // first 13 s was charged 6 J where its teammates were charged idle for
  // such waits, and one whose first Welcome, the whole model, took 12.7 s
  // through a dip went uncharged for that long (users' trials). Not a later
  // stream's: a worker replaced was charged by its process.
  first_hello_at_[w] = stream == 1 && members_.welcome(w) == 1 ? std::optional(clock_.Now()) : std::nullopt;
  aggregator_.ForgetPushes(w);  // it may push again an iteration its last stream had begun
  stream_generation_[w] = plan_generation_.load();
  accounts_.StreamOpened(w, members_.resume_after(w));
  downlink_.StreamOpened(w);
  if (stream > 1) metrics_.AddRejoin(w);
  log_ << "coordinator: worker " << w << " joined at iteration " << members_.resume_after(w) << "\n";
  takeover_.Offered(w, model_clock, job_elapsed_s, job_energy_j);
  changed_.NotifyAll();  // Start() counts who is here
  // Until the team starts, its Welcome waits; and while a worker is asked
  // for its copy of the model, whatever the team trains on from is not known.
  for (;;) {
    // Woken too when whom the team asks changes, to wait again until the
    // new copy is due: a worker that picked itself went on to send its copy,
    // and its teammates waited on with no time set, for as long as a copy
    // that never came took to fail (found in review).
    const std::optional<int> asked_before = takeover_.asked();
    changed_.WaitUntil(lock, asked_before ? copy_due_ : kNever, [&] {
      return (members_.started() && !takeover_.asked()) || stopping_ || !members_.Current(w, stream) ||
             takeover_.asked() == w || takeover_.asked() != asked_before;
    });
    // Opened above: closed again on the way out, or the job's end waited its
    // whole grace for a stream no one would close (found in review).
    auto leaving = [&](Status why) {
      if (takeover_.asked() == w && members_.Current(w, stream)) takeover_.Withdrawn(w);
      members_.Close(w, stream, ledger_);
      FollowTeamChange(clock_.Now());
      changed_.NotifyAll();
      return why;
    };
    if (stopping_) return leaving(StoppingError());
    if (!members_.Current(w, stream)) {
      return leaving(AbortedError("superseded by a newer stream of worker " + std::to_string(w)));
    }
    if (takeover_.asked() == w) return Joined{stream, {}, /*send_model=*/true};
    if (const std::optional<int> asked = takeover_.asked()) {
      // A copy that does not come (its link dead, the stream still open)
      // holds no Welcome for longer than a node's loss would.
      if (clock_.Now() >= copy_due_) {
        log_ << "coordinator: worker " << *asked << " sent no copy of the model within "
             << ToSeconds(plan_.spec.fault_tolerance.ReachGrace()) << " s: passed over\n";
        takeover_.Withdrawn(*asked);
        changed_.NotifyAll();
      }
      continue;
    }
    const int64_t own = OwnModelClock();
    const std::optional<int> donor = takeover_.Donor(own);
    if (!donor) break;
    copy_due_ = clock_.Now() + plan_.spec.fault_tolerance.ReachGrace();
    log_ << "coordinator: worker " << *donor << "'s copy of the model is ahead of ours (iteration " << own
         << "): asking it for it\n";
    changed_.NotifyAll();
  }
  return Joined{stream, MakeWelcome(w, /*whole_model=*/true)};
}

Status Coordinator::StoppingError() const {
  // Cancelled: the worker stops too; Unavailable: it asks again, of whichever
  // coordinator resumes the job.
  return interrupted_ ? UnavailableError("the coordinator was interrupted; the job resumes")
                      : CancelledError("the job has ended");
}

int64_t Coordinator::OwnModelClock() const {
  // A checkpoint's rows are at least at its iteration less S; a worker's copy
  // is taken over only when its least row clock is past the iteration itself:
  // the checkpoint keeps the optimizer's state too.
  return std::max(resumed_iteration_, aggregator_.least_applied_clock());
}

StatusOr<WelcomeMessage> Coordinator::TakeModel(int w, uint64_t stream, const ArrivingCopy& copy) {
  std::lock_guard lock(mu_);
  auto pass_over = [&](const std::string& why) {
    takeover_.Withdrawn(w);
    changed_.NotifyAll();  // the next is asked, or the Welcomes go
    log_ << "coordinator: not training on from worker " << w << "'s copy of the model: " << why << "\n";
    return InvalidArgumentError("its copy of the model: " + why);
  };
  // An older stream's answer: the worker's newer stream is asked again.
  if (!members_.Current(w, stream)) return AbortedError("superseded by a newer stream of worker " + std::to_string(w));
  if (takeover_.asked() != w) return pass_over("it was not asked for (or not in time)");
  if (copy.rows.size() != layout_.size() || copy.clocks.size() != copy.rows.size()) {
    return pass_over(std::to_string(copy.rows.size()) + " rows, of " + std::to_string(layout_.size()));
  }
  std::vector<float> parameters(aggregator_.parameters().size());
  std::vector<int64_t> clocks(layout_.size(), -1);
  for (size_t i = 0; i < copy.rows.size(); ++i) {
    const PushedRow& row = copy.rows[i];
    if (row.id >= layout_.size() || clocks[row.id] >= 0) {
      return pass_over("row " + std::to_string(row.id) + " does not exist or comes twice");
    }
    if (copy.clocks[i] < 0) return pass_over("row " + std::to_string(row.id) + " has a negative clock");
    const RowSpan& span = layout_.row(row.id);
    std::span<float> out(parameters.data() + span.offset, static_cast<size_t>(span.length));
    if (Status decoded = DecodeRow(row.encoding, row.scale, row.values, out); !decoded.ok()) {
      return pass_over(decoded.message());
    }
    // The team's model from now on: one NaN in it is a NaN in every step.
    if (!std::all_of(out.begin(), out.end(), [](float v) { return std::isfinite(v); })) {
      return pass_over("row " + std::to_string(row.id) + " is not finite");
    }
    clocks[row.id] = copy.clocks[i];
  }
  // What a worker keeping the bound can hold: rows no further apart than
  // S + 1, the least of them what it offered (which is why it was asked) and
  // ahead of ours. Clocks far ahead would set the team where no push is.
  const auto [least, most] = std::minmax_element(clocks.begin(), clocks.end());
  const int64_t own = OwnModelClock(), offered = takeover_.offer(w);
  if (*least != offered || *least <= own || *most - *least > ledger_.bound() + 1) {
    return pass_over("its rows' clocks run from " + std::to_string(*least) + " to " + std::to_string(*most) +
                     "; it offered " + std::to_string(offered) + ", ours is " + std::to_string(own) +
                     ", and rows are at most " + std::to_string(ledger_.bound() + 1) + " apart");
  }
  const int64_t from = *least;
  if (Status resumed = aggregator_.Resume(std::move(parameters), clocks); !resumed.ok()) {
    return pass_over(resumed.message());
  }
  ledger_.Resume(clocks);
  takeover_.Taken();
  members_.ResumeAll(from);
  for (int o = 0; o < world_; ++o) {
    if (members_.connected(o)) accounts_.Resumed(o, from);
  }
  // The team's count and the job's clock go on from the copy's, not from
  // this coordinator's start: a coordinator moved 8 s into a 100 s budget
  // had trained 111 s, its iteration shown back at 25 with its workers past
  // 8,000 (a new user's trial). The clock counts the move's gap: it is wall
  // time the job spent.
  accounts_.TrainedOnFromCopy(own, from);
  const double offered_s = takeover_.offered_elapsed_s(w);
  const TimePoint now = clock_.Now();
  if (!job_clock_start_ || offered_s > ToSeconds(now - *job_clock_start_)) {
    job_clock_start_ = now - FromSeconds(offered_s);
    clock_taken_over_ = true;
  }
  // And its energy: the freshest a worker offers, as its last coordinator
  // said it with an update (a tick's joules short at most), where the count
  // had begun again at the workers' joules since: a team's energy budget of
  // 700 J spent 1,180 (a new user's trial).
  if (const double known = accounts_.EnergyJoules(); takeover_.most_energy_offered() > known) {
    accounts_.CarryEnergy(takeover_.most_energy_offered() - known);
  }
  log_ << "coordinator: training on from worker " << w << "'s copy of the model at iteration " << from
       << " (ours was at " << own << "), " << std::lround(offered_s) << " s into the job\n";
  changed_.NotifyAll();  // the others' Welcomes go
  return MakeWelcome(w, /*whole_model=*/true);
}

void Coordinator::CountFateLocked(int w, PushFate fate) {
  ++push_fates_[static_cast<int>(fate)];
  if (fate == PushFate::kApplied || fate == PushFate::kRefused) return;  // refusals count with their reason
  std::string label = NameOf(fate);  // "stale stream": a metric's label is stale_stream
  std::replace(label.begin(), label.end(), ' ', '_');
  metrics_.AddDroppedPush(w, label);
}

Status Coordinator::Receive(int w, uint64_t stream, const ArrivingPush& push) {
  std::lock_guard lock(mu_);
  if (!members_.Current(w, stream)) {
    if (push.report) CountFateLocked(w, PushFate::kStaleStream);
    return AbortedError("superseded by a newer stream of worker " + std::to_string(w));
  }
  if (stream_generation_[w] < slot_since_[w]) {
    if (push.report) CountFateLocked(w, PushFate::kStaleStream);
    return AbortedError("fenced out: this stream is of plan generation " + std::to_string(stream_generation_[w]) +
                        ", the job's is " + std::to_string(plan_generation_.load()));
  }
  const TimePoint now = clock_.Now();
  // A push's parts are sent back to back: their arrivals time its uplink.
  if (push.report) {
    links_[w].uplink.Begin(push.arrived);
  } else {
    links_[w].uplink.Continue(push.arrived, push.bytes);
  }
  // What its link carries, for the least its deadline may be: measured here
  // once pushes of several parts came; until then what the worker says of
  // its uplink, or of its downlink (a push small enough to go whole times
  // neither end).
  double link_mbps = links_[w].uplink.Mbps();
  if (link_mbps <= 0 && push.report) {
    link_mbps = push.report->uplink_mbps > 0 ? push.report->uplink_mbps : push.report->downlink_mbps;
  }
  members_.UplinkMeasured(w, link_mbps, kLeastPartBytes);
  const bool pushed_before = members_.pushed(w);
  PushFate fate = members_.Push(w, push.welcome, now, ledger_);
  if (fate == PushFate::kApplied && stopping_) fate = PushFate::kJobOver;  // once stopping, the model is final
  // An applied push's fate is counted once it is (below): it may yet be refused.
  if (push.report && fate != PushFate::kApplied) CountFateLocked(w, fate);
  // Senders are woken only when there may be something new to send: a push
  // comes in many parts, and most change nothing a sender looks at. The tick
  // wakes them anyway, so a change missed here costs at most a tick.
  bool news = true;
  if (fate == PushFate::kCountedOut) {
    // Its link is back. What it pushed was computed on a stale model: dropped
    // (and so is all it sends until it has the next Welcome); it resumes with
    // the team, sent what it lacks for that. One counted out before its first
    // push had its Welcome on the wire past its deadline: it joined (counted
    // then) and has not left since; it was counted a rejoin twice, and said
    // to be back (found in review).
    if (pushed_before) metrics_.AddRejoin(w);
    accounts_.Resumed(w, members_.resume_after(w));
    aggregator_.ForgetPushes(w);
    // Its Welcome clears the demands it heard: those teammates wait on are
    // asked again (marked as asked, they were not, and teammates stalled
    // until the rows fell due: found in review).
    downlink_.StreamOpened(w);
    if (pushed_before) {
      log_ << "coordinator: worker " << w << " is back; it rejoins at iteration " << members_.resume_after(w) << "\n";
    } else {
      log_ << "coordinator: worker " << w << " was counted out before its first push (its Welcome slow to reach "
           << "it, or its link out since); it starts again at iteration " << members_.resume_after(w) << "\n";
    }
  } else if (fate == PushFate::kApplied) {
    // An excused worker pushing for the round the team is in counts again.
    if (rounds_ && ledger_.excused(w) && push.iteration > aggregator_.least_applied_clock()) ledger_.Readmit(w);
    const int64_t late_before = aggregator_.late_rows();
    StatusOr<bool> stepped = aggregator_.ApplyPush(w, push.iteration, push.rows, ledger_);
    if (push.report) CountFateLocked(w, stepped.ok() ? PushFate::kApplied : PushFate::kRefused);
    if (!stepped.ok()) {
      // This part refused whole, none of it applied (parts before it were,
      // each sound in itself); the worker's stream ends, and it rejoins with
      // a fresh copy, as after any break.
      metrics_.AddRefusedPush(w, aggregator_.refusal());
      log_ << "coordinator: refusing worker " << w << "'s push of iteration " << push.iteration << " ("
           << aggregator_.refusal() << "), none of this part applied: " << stepped.status().message() << "\n";
      // One bad message may be a fluke; a worker that keeps sending them has
      // a diverged model, or means harm: the team goes on without it.
      ++refused_pushes_[w];
      last_refusal_[w] = aggregator_.refusal();
      last_refusal_why_[w] = std::string(stepped.status().message());
      if (const std::string why = QuarantineLocked(w); !why.empty()) {
        log_ << "coordinator: worker " << w << " quarantined (" << why << "): the team goes on without it\n";
      }
      return stepped.status();
    }
    for (const PushedRow& row : push.rows) downlink_.Pushed(w, row.id);
    accounts_.Pushed(w, push.iteration, static_cast<int>(push.rows.size()), push.bytes);
    metrics_.AddReceived(w, push.bytes, static_cast<int64_t>(push.rows.size()));
    // A new iteration: what the team waits for from each worker may have changed.
    // A push whose rows all came after their round closed (policy deadline)
    // trained nothing the team kept: its samples are not counted as trained.
    const bool late = !push.rows.empty() &&
                      aggregator_.late_rows() - late_before == static_cast<int64_t>(push.rows.size());
    if (push.report) {
      accounts_.Reported(w, *push.report, /*trained=*/!late);
      last_report_at_[w] = now;
    }
    news = *stepped || push.report.has_value();
    FollowRounds(now);
  }
  if (news) changed_.NotifyAll();
  return Status::Ok();
}

void Coordinator::RefuseOversized(int w, uint64_t stream, int64_t bytes, int64_t largest) {
  std::lock_guard lock(mu_);
  if (!members_.Current(w, stream)) return;
  CountFateLocked(w, PushFate::kRefused);
  metrics_.AddRefusedPush(w, "too_big");
  log_ << "coordinator: refusing worker " << w << "'s message of " << bytes << " bytes (too_big), none of it applied: no worker of "
       << "this model sends more than " << largest << "\n";
  ++refused_pushes_[w];
  last_refusal_[w] = "too_big";
  last_refusal_why_[w] = std::to_string(bytes) + " bytes, where no worker of this model sends more than " +
                         std::to_string(largest);
  if (const std::string why = QuarantineLocked(w); !why.empty()) {
    log_ << "coordinator: worker " << w << " quarantined (" << why << "): the team goes on without it\n";
  }
}

bool Coordinator::HasWork(int w) const {
  return members_.owes_welcome(w) || downlink_.HasWork(w, ledger_, aggregator_);
}

double Coordinator::MeasuredDownlinkMbps(int w) const {
  // The worker's own measure of what arrives, once it has one; until then what
  // our sends took, when the link is shaped in our transport (Delivered).
  const double reported = accounts_.report(w).downlink_mbps;
  if (reported > 0) return reported;
  const LinkMeters& link = links_[w];
  return link.downlink_shaped_here && link.downlink.observations() > 0 ? link.downlink.Mbps() : 0;
}

double Coordinator::DownlinkMbps(int w) const {
  // Our sends' times, or the estimator's prior, until the worker has measured.
  const double reported = accounts_.report(w).downlink_mbps;
  return reported > 0 ? reported : links_[w].downlink.Mbps();
}

std::optional<OutgoingMessage> Coordinator::Next(int w, uint64_t stream) {
  std::unique_lock lock(mu_);
  for (;;) {
    auto over = [&] { return !members_.Current(w, stream) || !members_.connected(w); };
    changed_.Wait(lock, [&] { return over() || stopping_ || HasWork(w); });
    if (over()) return std::nullopt;
    if (stopping_) {
      return interrupted_ ? StopMessage{"the coordinator was interrupted; the job resumes", true}
                          : StopMessage{"the job is over"};
    }
    if (members_.owes_welcome(w)) return MakeWelcome(w, /*whole_model=*/false);
    const double step_s = accounts_.report(w).step_s;
    const Duration step = step_s > 0 ? FromSeconds(step_s) : timings_.assumed_iteration;
    UpdateMessage m;
    m.update = downlink_.Update(w, DownlinkMbps(w), step, ledger_, aggregator_);
    if (m.update.empty()) {
      // Nothing worth a message yet (rows changed, but none may go): look again later.
      changed_.WaitFor(lock, timings_.tick);
      continue;
    }
    m.staleness_bound = ledger_.BoundInForce();
    m.transfer_seconds = accounts_.TakeTransferSeconds(w);
    m.uplink_mbps = links_[w].uplink.Mbps();
    m.downlink_mbps = DownlinkMbps(w);
    m.job_energy_j = accounts_.EnergyJoules();
    return m;
  }
}

void Coordinator::Delivered(int w, int64_t bytes, int rows, Duration took, bool opened_stream, bool shaped_here) {
  metrics_.AddSent(w, bytes, rows);
  std::lock_guard lock(mu_);
  accounts_.Delivered(w, bytes, took);
  if (opened_stream) {
    // A whole model can take seconds on a slow link: its deadline counts from now.
    members_.Welcomed(w, clock_.Now());
  } else if (bytes >= kLeastTimedBytes) {
    links_[w].downlink.Observe(bytes, took);
    links_[w].downlink_shaped_here = shaped_here;
  }
  metrics_.SetDownlinkMbps(w, MeasuredDownlinkMbps(w));  // as progress says it: a measurement, or 0
}

void Coordinator::Left(int w, uint64_t stream) {
  std::lock_guard lock(mu_);
  // Asked for its copy of the model and gone before it came: the next is asked.
  if (takeover_.asked() == w && members_.Current(w, stream)) takeover_.Withdrawn(w);
  if (members_.Close(w, stream, ledger_)) {
    if (!stopping_) log_ << "coordinator: worker " << w << " left\n";
    // Nothing arrives at a worker gone: its gauge had shown its last
    // measure for as long as it was away (found in review).
    metrics_.SetDownlinkMbps(w, 0);
  }
  FollowTeamChange(clock_.Now());
  changed_.NotifyAll();
}

int64_t Coordinator::slot_since(int w) const {
  std::lock_guard lock(mu_);
  return w >= 0 && w < world_ ? slot_since_[w] : plan_generation_.load();
}

Status Coordinator::AdoptPlan(const JobPlan& next) {
  std::lock_guard lock(mu_);
  if (next.job != plan_.job) {
    return FailedPreconditionError("a plan for job \"" + next.job + "\" cannot replace job \"" + plan_.job + "\"'s");
  }
  if (next.spec.parallelism.workers != world_) {
    return FailedPreconditionError("plan generation " + std::to_string(next.generation) + " has " +
                                   std::to_string(next.spec.parallelism.workers) + " workers, not " +
                                   std::to_string(world_) + ": changing a team's size needs a restart");
  }
  if (next.generation <= plan_generation_) {
    return FailedPreconditionError("plan generation " + std::to_string(next.generation) +
                                   " is not newer than the current " + std::to_string(plan_generation_.load()));
  }
  plan_generation_ = next.generation;
  for (int w = 0; w < world_; ++w) slot_since_[w] = SlotSince(next, w);
  log_ << "coordinator: adopted plan generation " << next.generation << "\n";
  // Only the workers whose slots the plan gave anew are fenced out; the others
  // train on, their streams as good as before.
  for (int w = 0; w < world_; ++w) {
    if (!members_.connected(w) || stream_generation_[w] >= slot_since_[w]) continue;
    // Its offer of its copy of the model withdrawn, as when it leaves: asked
    // for it now, or later once another's did not come, its copy had still
    // been taken (found in review).
    takeover_.Withdrawn(w);
    // The stream's stream number stays current until the worker reconnects,
    // so Close always takes it out of the team's waits here.
    members_.Close(w, members_.stream(w), ledger_);
    log_ << "coordinator: worker " << w << " fenced out: its stream is of plan generation " << stream_generation_[w]
         << "\n";
  }
  FollowTeamChange(clock_.Now());
  changed_.NotifyAll();
  return Status::Ok();
}

std::vector<int64_t> Coordinator::PushFates() const {
  std::lock_guard lock(mu_);
  return push_fates_;
}

}  // namespace edgetrain::agent

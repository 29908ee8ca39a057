// The pipeline head (pipeline_head.h) through a run: built, restored from a
// checkpoint, gathering its stages (Start), and each step told to the stages
// and seen through (Advance). What it does along the way is in files of
// their own: pipeline_head_relay.cc (each device's stream),
// pipeline_head_losses.cc (devices lost, and the step replayed),
// pipeline_head_takeover.cc (stages ahead of the head, devices back),
// pipeline_head_layout.cc (where layers and samples go as devices drift) and
// pipeline_head_model.cc (the whole model, evaluated and saved).

#include "agent/pipeline/pipeline_head.h"

#include <algorithm>

#include "core/duration_text.h"
#include "core/finite_step.h"
#include "core/number_text.h"
#include "core/row_layout.h"

namespace edgetrain::agent {

PipelineHead::PipelineHead(const JobPlan& plan, Trainer& model, const Dataset& test, int64_t train_size,
                           StageShapes shapes, Clock& clock, std::ostream& log)
    : plan_(plan), model_(model), test_(test), train_size_(train_size), shapes_(std::move(shapes)), clock_(clock),
      log_(log), changed_(clock) {
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    auto link = std::make_unique<Link>();
    link->rank = static_cast<int>(r);
    links_.push_back(std::move(link));
  }
  for (size_t s = 0; s < plan.pipeline->stages.size(); ++s) {
    groups_.push_back(plan.pipeline->stages[s].ranks);
    members_.insert(members_.end(), groups_.back().begin(), groups_.back().end());
    speeds_.emplace_back();
    layers_.emplace_back(plan.pipeline->stages[s].first_layer, plan.pipeline->stages[s].end_layer);
    replicas_.emplace_back();
    taken_.emplace_back();
    for (int r : groups_.back()) {
      links_[r]->stage = static_cast<int>(s);
      speeds_.back().push_back(1 / plan.workers[r].slowdown);
    }
  }
  micro_batches_ = plan.pipeline->micro_batches;
  if (plan.pipeline->planned_from) {
    problem_ = ProblemOf(*plan.pipeline->planned_from, plan.spec);
    cost_model_.emplace(*problem_);
  }
}

PipelineHead::~PipelineHead() { EndRelays(); }

void PipelineHead::EndRelays() {
  {
    std::lock_guard lock(mu_);
    relays_end_ = true;
    changed_.NotifyAll();
  }
  if (relayer_.joinable()) relayer_.Join();
}

void PipelineHead::RelayReplicas() {
  std::unique_lock lock(mu_);
  for (;;) {
    changed_.Wait(lock, [&] { return relays_end_ || !relays_.empty(); });
    if (relays_end_) return;
    Relayed next = std::move(relays_.front());
    relays_.pop_front();
    lock.unlock();
    (void)SendTo(next.rank, next.message);  // a keeper whose stream fails is found lost by its own reads
    lock.lock();
  }
}

void PipelineHead::SetRebalancing(Rebalancing rebalancing) {
  rebalancing_ = std::move(rebalancing);
  // Where each layer's floats and optimizer rows (one a tensor) begin in the whole model's state.
  layer_float_at_ = {0};
  layer_row_at_ = {0};
  for (const auto& tensors : rebalancing_.layer_shapes) {
    const RowLayout rows(tensors, SyncGranularity::kLayer);
    layer_float_at_.push_back(layer_float_at_.back() + rows.total_floats());
    layer_row_at_.push_back(layer_row_at_.back() + static_cast<int64_t>(rows.size()));
  }
}

int64_t PipelineHead::StepsPerEpoch() const {
  const int64_t batch = plan_.spec.data.batch_size;
  return (train_size_ + batch - 1) / batch;
}

Status PipelineHead::Restore(const JobCheckpoint& c) {
  const std::span<float> whole = model_.Parameters();
  // Moments are empty for an optimizer without them; of another length, the
  // stages' slices of them would be read past their end (found in review).
  auto fits = [&](const std::vector<float>& moment) { return moment.empty() || moment.size() == whole.size(); };
  if (!c.ledger) EDGETRAIN_RETURN_IF_ERROR(ParametersFit(c, model_.ParameterShapes()));
  if (c.ledger || c.parameters.size() != whole.size() || !fits(c.optimizer.first) || !fits(c.optimizer.second)) {
    return FailedPreconditionError("holds a different model, optimizer or team");
  }
  // The stages' streams are served already: a hello counted its bytes, under the lock.
  std::lock_guard lock(mu_);
  std::copy(c.parameters.begin(), c.parameters.end(), whole.begin());
  restored_ = c;
  step_ = c.iteration;
  samples_ = c.samples;
  if (c.loss) smoothed_loss_ = *c.loss;  // the loss shown goes on, not from the first step's
  // What each device did in the runs before, which this one goes on from: a
  // resumed run's energy, bytes and compute were this run's alone, beside
  // steps and time over every run. A rank the runs before had not (the
  // profile's devices changed) starts at 0, and one they had and this run
  // has not is left out of the devices' rows, as a team's accounts do.
  // The job's energy is every run's all the same: what no row of this run
  // carries on is kept apart (a budget in joules began again on resuming
  // under another profile: a new user's trial).
  departed_energy_j_ = c.energy_joules;
  departed_bytes_sent_ = c.departed_bytes_sent;
  departed_bytes_received_ = c.departed_bytes_received;
  for (size_t r = 0; r < c.workers.size(); ++r) {
    const WorkerTotals& t = c.workers[r];
    // The rank on another device than before (another profile), or none
    // this run: its figures are that device's, not this one's (a gateway
    // was shown with the 176.7 MB another device had sent: a new user's
    // trial), and its bytes stay the job's.
    if (r >= links_.size() || (!t.node.empty() && r < plan_.workers.size() && plan_.workers[r].node != t.node)) {
      departed_bytes_sent_ += t.bytes_sent;
      departed_bytes_received_ += t.bytes_received;
      continue;
    }
    Link& link = *links_[r];
    departed_energy_j_ -= t.energy_j;
    link.compute_s += t.compute_s;
    link.idle_s += t.stall_s;
    link.bytes_up += t.bytes_sent;
    link.bytes_down += t.bytes_received;
    link.energy_j += t.energy_j;
    link.samples += t.samples;
    if (metrics_) metrics_->CountOnFrom(static_cast<int>(r), link.compute_s, link.idle_s);
  }
  return Status::Ok();
}

Status PipelineHead::Admit(const v1::Hello& hello) {
  EDGETRAIN_RETURN_IF_ERROR(CheckHello(hello, plan_.job, SlotSince(plan_, hello.rank()), plan_.generation,
                                       static_cast<int>(plan_.workers.size())));
  auto stage = StageOfRank(*plan_.pipeline, hello.rank());
  if (!stage.ok()) return FailedPreconditionError(stage.status().message());
  std::lock_guard lock(mu_);
  if (finished_) return CancelledError("the job is over");
  // A device lost and back (its agent restarted, its link restored) rejoins
  // between steps, with replay on: the run went on without it.
  if (!MemberLocked(hello.rank()) && !plan_.spec.fault_tolerance.replay) {
    return FailedPreconditionError("rank " + std::to_string(hello.rank()) +
                                   " was lost, and with spec.faultTolerance.replay off the run does not take it back");
  }
  const Link& link = *links_[hello.rank()];
  // Its old stream, lost, may not have ended here yet: it says hello again.
  if (link.stream && link.lost) {
    return UnavailableError("rank " + std::to_string(hello.rank()) + "'s earlier stream is still closing: try again");
  }
  // Its old stream not yet seen to end: half-open, its device cut off
  // behind a dark link while the head's driver was busy, which the next
  // step's silence finds. Refused for good, the device that had come back
  // exited and never rejoined (found in review): it tries again. (An agent
  // started twice with one rank tries to its connect timeout, and says so.)
  if (link.stream) {
    return UnavailableError("rank " + std::to_string(hello.rank()) + " of stage " + std::to_string(*stage + 1) +
                            " is already here, on a stream whose end the head has not seen yet: try again");
  }
  // Lost once the stages were welcomed, and still in its stage until the
  // next step lets it go: taken in now it would train on with none of its
  // stage's state. It is taken back once let go of, and says hello again
  // meanwhile. (Before then, one that dropped and came back is simply here.)
  if (welcomed_ && MemberLocked(hello.rank()) && link.lost) {
    return UnavailableError("rank " + std::to_string(hello.rank()) +
                            " was lost and is let go of at the next step, after which it rejoins: try again");
  }
  return Status::Ok();
}

void PipelineHead::SendOrLose(const std::vector<std::pair<int, v1::CoordinatorMessage>>& commands) {
  for (const auto& [rank, command] : commands) {
    if (Status sent = SendTo(rank, command); !sent.ok()) LoseOnSend(rank, sent);
  }
}

void PipelineHead::LoseOnSend(int rank, const Status& sent) {
  std::lock_guard lock(mu_);
  Link& link = *links_[rank];
  if (link.lost) return;
  link.lost = true;
  link.lost_at = clock_.Now();
  // Said here: its stream's end, which follows, is then the head's cut and
  // says nothing (it had said nothing of such a loss at all: found in review).
  Log() << "pipeline: stage " << link.stage + 1 << " (rank " << rank << ") lost: " << sent.message() << "\n";
  changed_.NotifyAll();
}

Status PipelineHead::SendTo(int rank, const v1::CoordinatorMessage& message, std::optional<int> from) {
  Link& link = *links_[rank];
  WorkerStream* stream;
  // The forwarded device's wait on this link, from its start to its end.
  const auto forwarded = [&] {
    if (!from) return;
    Link& sender = *links_[*from];
    --sender.forwarding;
    sender.forwarded_at = clock_.Now();
    changed_.NotifyAll();
  };
  {
    // One sender a stream at a time, waited for through the clock: a send may
    // block on the stage's link, and a simulated clock must see who waits.
    std::unique_lock lock(mu_);
    if (from) ++links_[*from]->forwarding;
    changed_.Wait(lock, [&] { return !link.sending; });
    stream = link.stream;
    if (!stream) {
      forwarded();
      return UnavailableError("stage " + std::to_string(link.stage + 1) + " (rank " + std::to_string(rank) +
                              ") is not connected");
    }
    link.sending = true;
  }
  Status sent = stream->Send(message);
  std::lock_guard lock(mu_);
  link.sending = false;
  if (sent.ok()) link.bytes_down += static_cast<int64_t>(message.ByteSizeLong());
  forwarded();
  changed_.NotifyAll();
  return sent;
}

bool PipelineHead::MemberLocked(int rank) const {
  return std::find(members_.begin(), members_.end(), rank) != members_.end();
}

v1::StageLayers PipelineHead::LayersOfLocked(size_t s) const {
  v1::StageLayers l;
  if (taken_[s]) l = *taken_[s];
  l.set_stage(static_cast<int32_t>(s));
  l.set_stages(static_cast<int32_t>(groups_.size()));
  l.set_first_layer(layers_[s].first);
  l.set_end_layer(layers_[s].second);
  return l;
}

std::vector<std::pair<int, v1::CoordinatorMessage>> PipelineHead::LayersCommandsLocked() const {
  std::vector<std::pair<int, v1::CoordinatorMessage>> commands;
  for (size_t s = 0; s < groups_.size(); ++s) {
    v1::CoordinatorMessage command;
    *command.mutable_command()->mutable_layers() = LayersOfLocked(s);
    for (int rank : groups_[s]) commands.emplace_back(rank, command);
  }
  return commands;
}

std::vector<std::pair<int, v1::CoordinatorMessage>> PipelineHead::StepCommandsLocked(int64_t step,
                                                                                     bool replay) const {
  std::vector<std::pair<int, v1::CoordinatorMessage>> commands;
  for (size_t s = 0; s < groups_.size(); ++s) {
    v1::CoordinatorMessage command;
    if (replay) {
      v1::StageReplay* r = command.mutable_command()->mutable_replay();
      r->set_step(step);
      r->set_attempt(attempt_);
      for (int rank : groups_[s]) r->add_group(rank);
      for (double speed : speeds_[s]) r->add_speeds(speed);
      if (relaid_) *r->mutable_layers() = LayersOfLocked(s);
      r->set_micro_batches(micro_batches_);
    } else {
      command.mutable_command()->set_step(step);
    }
    command.mutable_command()->set_job_energy_joules(JobEnergyLocked());
    for (int rank : groups_[s]) commands.emplace_back(rank, command);
  }
  return commands;
}

Status PipelineHead::Start(const std::atomic<bool>& cancel) {
  if (!relayer_.joinable()) relayer_ = clock_.StartThread("replica relayer", [this] { RelayReplicas(); });
  const bool again = restored_.has_value() || plan_.generation > 1;
  const TimePoint deadline =
      clock_.Now() + plan_.spec.fault_tolerance.node_loss_grace + (again ? restart_gather_ : Duration::zero());
  {
    std::unique_lock lock(mu_);
    auto all_here = [&] {
      return std::all_of(members_.begin(), members_.end(), [&](int r) { return links_[r]->stream != nullptr; });
    };
    while (!all_here() && !cancel.load() && clock_.Now() < deadline) {
      changed_.WaitFor(lock, std::chrono::milliseconds(100));
    }
    if (cancel.load()) return Status::Ok();
    // What it waited, said as it is: a head that starts again waits longer
    // than the grace for stages that hear of it only by keepalive ("within
    // nodeLossGrace" was said after 35 s of a grace of 5: a new user's trial).
    const std::string waited =
        "within spec.faultTolerance.nodeLossGrace" +
        (again ? " and the " + FormatDuration(restart_gather_) + " a head started again gives more (" +
                     FormatDuration(plan_.spec.fault_tolerance.node_loss_grace + restart_gather_) + " in all)"
               : std::string(" (") + FormatDuration(plan_.spec.fault_tolerance.node_loss_grace) + ")");
    job_clock_start_ = clock_.Now() - FromSeconds(restored_ ? restored_->elapsed_s : 0);
    const std::optional<Takeover> takeover = TakeoverLocked();
    for (int r : members_) {
      const auto& link = links_[r];
      // Those here waited on the head, not the other way round: their
      // silence counts from now.
      if (link->stream) {
        link->heard.Restart(clock_.Now());
        continue;
      }
      // A resumed run (its head restarted) whose device was lost before goes
      // on without it, as the run it resumes did: the device is let go of at
      // the first step, its stage rebuilt from the checkpoint if it had no
      // other, or from the replica its neighbour keeps when the head trains
      // on from the stages'.
      const bool rebuilt = takeover && takeover->rebuilt.count(static_cast<size_t>(link->stage));
      if (!rebuilt && (!plan_.spec.fault_tolerance.replay || (!restored_ && !takeover))) {
        return UnavailableError("stage " + std::to_string(link->stage + 1) + " (rank " + std::to_string(link->rank) +
                                ") did not arrive " + waited);
      }
      link->lost = true;
      link->lost_at = clock_.Now();
      Log() << "pipeline: stage " << link->stage + 1 << " (rank " << r
            << ") did not arrive " << waited << ": the run resumes without it\n";
    }
    welcomed_ = true;
    if (takeover) {
      TakeOverLocked(*takeover);
    } else {
      int64_t furthest = 0;
      for (int r : members_) furthest = std::max(furthest, links_[static_cast<size_t>(r)]->offered_step);
      if (furthest > step_) {
        Log() << "pipeline: devices here hold layers up to step " << furthest << ", but not every stage has a device "
              << "at one step past the head's own (step " << step_ << "), nor a replica of its layers on its "
              << "neighbour: training on from the head's\n";
      }
    }
    started_step_ = step_;
  }
  // Each stage's slice of the checkpoint, when the job resumes: parameters
  // and optimizer state in the order of its tensors, one row a tensor; also
  // its replica, to rebuild it from if none of its devices is here.
  int64_t offset = 0;
  size_t row = 0;
  size_t gathered = 0;
  for (size_t s = 0; s < groups_.size(); ++s) {
    v1::CoordinatorMessage welcome;
    v1::StageWelcome* w = welcome.mutable_stage_welcome();
    w->set_resume_after(step_);
    w->set_keep_held(taken_over_);
    {
      std::lock_guard lock(mu_);
      w->set_job_elapsed_seconds(JobElapsedLocked());
    }
    const RowLayout tensors(shapes_[s], SyncGranularity::kLayer);  // one row a tensor, as the stage's optimizer
    const int64_t floats = tensors.total_floats();
    if (restored_) {
      *w->mutable_state() = SliceOf(*restored_, offset, floats, row, tensors.size());
      std::lock_guard lock(mu_);
      replicas_[s] = v1::StageReplica();
      replicas_[s]->set_step(step_);
      *replicas_[s]->mutable_state() = w->state();
    }
    offset += floats;
    row += tensors.size();
    std::vector<int> here;
    {
      std::lock_guard lock(mu_);
      for (int r : groups_[s]) {
        if (links_[r]->stream && !links_[r]->lost) here.push_back(r);
      }
    }
    // One gone since it was gathered is lost as at any send, and replayed
    // around as any loss is; it failed the job (found in review).
    for (int r : here) {
      if (Status sent = SendTo(r, welcome); sent.ok()) {
        ++gathered;
      } else {
        LoseOnSend(r, sent);
      }
    }
  }
  Log() << "pipeline: " << CountOf(groups_.size(), "stage", "stages") << " on "
        << CountOf(gathered, "device", "devices")
        << " gathered, " << CountOf(static_cast<size_t>(micro_batches_), "micro-batch", "micro-batches") << " a step\n";
  if (taken_over_) {
    // The replicas to rebuild a stage from, should its only device be lost
    // before its next: the state the stages trained on from. The model's
    // weights too, for an evaluation before the next fetch.
    auto state = StateNow();
    if (!state.ok()) return state.status().WithContext("fetching the stages' state to train on from");
    std::lock_guard lock(mu_);
    // Let go of with their stage when it was rebuilt: here, and back at the first step.
    for (int r : rejoin_after_rebuild_) links_[static_cast<size_t>(r)]->lost = false;
    rejoin_after_rebuild_.clear();
    int64_t offset = 0;
    size_t row = 0;
    for (size_t s = 0; s < groups_.size(); ++s) {
      const RowLayout tensors(shapes_[s], SyncGranularity::kLayer);
      replicas_[s] = ReplicaNowLocked(SliceOf(*state, offset, tensors.total_floats(), row, tensors.size()));
      offset += tensors.total_floats();
      row += tensors.size();
    }
  }
  return Status::Ok();
}

std::optional<TimePoint> PipelineHead::JobClockStart() {
  std::lock_guard lock(mu_);
  if (!taken_over_) return std::nullopt;
  return job_clock_start_;
}

Status PipelineHead::Advance() {
  const int64_t step = step_ + 1;
  const TimePoint advance_began = clock_.Now();
  if (proposed_ || relayout_) {
    // The stages' committed state, between steps, for the layers that move.
    auto state = StateNow();
    std::lock_guard lock(mu_);
    if (!state.ok()) {
      Log() << "pipeline: layers stay where they are: " << state.status().message() << "\n";
    } else if (proposed_) {
      MoveLayersLocked(*state);
    } else if (!relayout_) {
      // The cut proposed was of stages a device lost while their state was
      // fetched has changed (RestoreStageLocked let go of it): they are
      // measured again as they now are. Read as a layout, it was none.
    } else if (AllThereLocked(relayout_->plan)) {
      LayOutLocked(*relayout_, *state);
    } else {
      // The layout was planned over devices no longer all there (the fetch
      // lets go of one lost between steps): the stages are measured again
      // as they now are.
      Log() << "pipeline: the stages stay as they are: a device was lost since the planner laid them out\n";
    }
    proposed_.reset();
    relayout_.reset();
  }
  Rejoin();
  RegroupByThePlanner();
  // What the step takes without what came before it between steps (a
  // device back, fetching the stages' state): the stages' measurement
  // judges cuts by their steps.
  const TimePoint stepping_from = clock_.Now();
  std::unique_lock lock(mu_);
  // The last step's period measures the orders only when nothing but the
  // step happened between its word and this one: a fetch of the stages'
  // state (for an evaluation, a checkpoint, layers moved or a device back:
  // StateNow) forgets that word, and so does a loss.
  bool plain = last_word_at_.has_value();
  attempt_ = 0;
  covers_.Clear();
  std::optional<TimePoint> lost_at;  // the first loss this step
  TimePoint word_at{};
  for (;;) {
    // The user's module raised on a stage: before any loss it brings (the
    // stage ends), whatever else went wrong this step.
    if (module_failed_) return *module_failed_;
    // A device lost between steps is let go of now; the step is then sent
    // as a replay too, which carries the groups.
    if (!LostLocked().ok()) EDGETRAIN_RETURN_IF_ERROR(RegroupLocked());
    plain = plain && !regrouped_;
    const auto commands = StepCommandsLocked(step, regrouped_);
    regrouped_ = false;
    if (!lost_at) {
      word_at = clock_.Now();
      if (plain) orders_.Observe(ToSeconds(word_at - *last_word_at_), last_held_s_);
    }
    lock.unlock();
    SendOrLose(commands);
    lock.lock();
    // Every member has answered this attempt, but one lost and covered.
    auto all_done = [&] {
      return std::all_of(members_.begin(), members_.end(), [&](int r) {
        return links_[r]->covered || (links_[r]->done_step >= step && links_[r]->done_attempt == attempt_);
      });
    };
    // Recovery counts from the loss: for a silent device, its last word.
    auto note_loss = [&] {
      if (lost_at) return;
      lost_at = clock_.Now();
      for (int r : members_) {
        if (links_[r]->lost) lost_at = std::min(*lost_at, links_[r]->lost_at);
      }
    };
    for (;;) {
      // One done with the step owes it nothing; if it is gone, the next step finds out.
      const TimePoint next_deadline = LoseSilentLocked([&](const Link& l) {
        return !l.covered && (l.done_step < step || l.done_attempt != attempt_);
      });
      if (!changed_.WaitUntil(lock, next_deadline,
                              [&] { return module_failed_ || !LostLocked().ok() || all_done(); })) {
        continue;
      }
      // Before the loss it brings: the device that said it ends, and any
      // other given its shares would fail alike.
      if (module_failed_) return *module_failed_;
      CutLostLocked();
      // A device lost once the step was done is let go of at the next one.
      if (all_done() || !plan_.spec.fault_tolerance.replay) break;
      // A device of a group lost mid-step: another of its group computes
      // its shares, and the rest of the pipeline goes on.
      auto covering = CoverLostLocked(step);
      if (!covering) break;
      note_loss();
      lock.unlock();
      SendOrLose(*covering);
      lock.lock();
    }
    if (all_done()) break;
    if (module_failed_) return *module_failed_;
    if (!plan_.spec.fault_tolerance.replay) {
      return UnavailableError(LostLocked().message() +
                              " (spec.faultTolerance.replay is off: the job fails rather than run the step again "
                              "without it)");
    }
    // Replay: the step again on the survivors, from the weights before it
    // (no stage has committed it), under an attempt that fences the old one off.
    note_loss();
    for (int r : members_) links_[r]->covered = false;  // lost: out of their groups now
    // In flight when the loss was seen: what a finer replay would run again
    // at the least. Every micro-batch of the attempt given up is run again,
    // as many as it was cut into (the re-plan below may cut the replay into
    // fewer).
    const int in_flight = in_flight_, given_up = micro_batches_;
    EDGETRAIN_RETURN_IF_ERROR(RegroupLocked());
    replays_.in_flight_micro_batches += in_flight;
    replays_.micro_batches += given_up;
    if (metrics_) metrics_->AddReplay(given_up);
    ++attempt_;
    parts_.clear();
    gradients_.clear();
    covers_.Clear();
    in_flight_ = 0;
    // Said too: a pipeline replayed on one stage relays nothing, and the gauge
    // stayed at the 1 or 2 it read at the loss (a new user's trial).
    if (metrics_) metrics_->SetInFlight(0);
    ++replays_.count;
    ++replays_.replayed_steps;
    Log() << "pipeline: replaying step " << step << " (attempt " << attempt_ + 1 << ") on "
          << CountOf(members_.size(), "device", "devices") << "\n";
  }
  // Every stage holds the layers it was given: the next replay need not say.
  relaid_ = false;
  for (auto& t : taken_) t.reset();
  // The last stage's devices that answered this attempt each computed the
  // loss of their shares, and of those of a device they covered.
  int64_t samples = 0;
  double loss_sum = 0;
  for (int r : groups_.back()) {
    const Link& link = *links_[r];
    if (link.done_step < step || link.done_attempt != attempt_) {
      // Lost and covered: its cover computed the loss of the shares it had
      // not sent the gradient of; its parts brought the rest.
      if (link.parts_step == step && link.parts_attempt == attempt_) loss_sum += link.parts_loss;
      continue;
    }
    samples = link.step_samples;
    loss_sum += link.loss_sum;
  }
  // The step as the stages dealt it, by stage and device: for each device's
  // pace and its share of the samples, a lost one's counted to its cover.
  const auto passes = PassesLocked(samples);
  CountSharesLocked(passes);
  // Devices lost and covered leave their groups now; the next step goes to
  // the groups as they then are, the micro-batches planned again for them.
  if (std::any_of(members_.begin(), members_.end(), [&](int r) { return links_[r]->covered; })) {
    for (int r : members_) links_[r]->covered = false;
    EDGETRAIN_RETURN_IF_ERROR(RegroupLocked());
  }
  // The stage that answered last paced the step: the rest of its period,
  // measured at the next word, is the orders'.
  last_word_at_.reset();
  if (!lost_at) {
    last_word_at_ = word_at;
    const auto last = std::max_element(members_.begin(), members_.end(),
                                       [&](int a, int b) { return links_[a]->done_at < links_[b]->done_at; });
    last_held_s_ = links_[*last]->held_s;
    // The step's commit (the last one's, which its word brought) was in it.
    if (plain && samples > 0) ObservePaceLocked(passes);
    if (samples > 0) LetGoOfStragglersLocked(passes);
  }
  if (lost_at) {
    replays_.last_recovery_s = ToSeconds(clock_.Now() - *lost_at);
    replays_.recovery_s += replays_.last_recovery_s;
    if (metrics_) metrics_->AddRecovery(replays_.last_recovery_s);
  }
  const double loss = samples > 0 ? loss_sum / samples : 0;
  // Not committed yet: the stages' weights stay those before the step.
  EDGETRAIN_RETURN_IF_ERROR(FiniteStep(step, loss));
  last_step_loss_ = loss;
  smoothed_loss_ = smoothed_loss_ < 0 ? loss : smoothed_loss_ + kLossSmoothing * (loss - smoothed_loss_);
  samples_ += samples;
  step_ = step;
  // What a step takes, the time between steps included: what a stage's
  // updates since its replica would take to train again.
  const double took_s = ToSeconds(clock_.Now() - advance_began);
  step_s_ = step_s_ > 0 ? 0.9 * step_s_ + 0.1 * took_s : took_s;
  measured_step_s_ += ToSeconds(clock_.Now() - stepping_from);
  if (rebalancing_.every > 0) {
    if (last_compute_.empty()) {
      // After the first step (loading and warming up) or one that carried
      // moved layers (their rebuild): neither is the stages' pace.
      StartMeasureLocked();
    } else {
      for (int r : members_) {
        Link& link = *links_[static_cast<size_t>(r)];
        window_steps_[static_cast<size_t>(r)].Add(link.compute_s - last_compute_[static_cast<size_t>(r)]);
        last_compute_[static_cast<size_t>(r)] = link.compute_s;
      }
      // A device whose compute changed within the measurement ends it at
      // once: what it takes now is known, and a longer wait only delays the
      // move. Not before a quarter of --rebalance-within: steps of a few
      // milliseconds end their measurement of --rebalance-every as soon, and
      // four of them on a shared machine are noise (an MLP's head took one
      // for a drift and moved layers for nothing).
      const bool long_enough = clock_.Now() - measured_since_ >= rebalancing_.within / 4;
      const auto drifted = std::find_if(members_.begin(), members_.end(), [&](int r) {
        return long_enough && window_steps_[static_cast<size_t>(r)].Drifted(DriftFactor());
      });
      // After a drift the next measurement is short: the first steps of a
      // change (a pass begun before it, a share dealt by a pace caught
      // mid-change) make what was acted on a first guess, which the
      // steps after it confirm or correct.
      const int64_t every = after_drift_ ? static_cast<int64_t>(2 * StepWindow::kRecent) : rebalancing_.every;
      if (const int64_t steps = step_ - measured_from_;
          drifted != members_.end() || steps >= every ||
          (rebalancing_.within > Duration::zero() && steps >= 2 &&
           clock_.Now() - measured_since_ >= rebalancing_.within)) {
        after_drift_ = drifted != members_.end();
        MeasureStagesLocked(after_drift_ ? std::optional<int>(*drifted) : std::nullopt);
      }
    }
  }
  return Status::Ok();
}

}  // namespace edgetrain::agent

#include "agent/pipeline/pipeline_head.h"

#include <algorithm>
#include <iomanip>
#include <iterator>
#include <numeric>
#include <set>

#include "agent/pipeline/replica_parts.h"
#include "agent/pipeline/wire_floats.h"
#include "core/arrival_deadline.h"
#include "core/pass_deadline.h"
#include "core/batch_order.h"
#include "core/duration_text.h"
#include "core/finite_step.h"
#include "core/pipeline_planner.h"
#include "core/pipeline_words.h"
#include "core/replica_relay.h"
#include "core/row_layout.h"

namespace edgetrain::agent {

namespace {

// The part of the whole model's state (a checkpoint, the stages' as fetched)
// that floats [float_at, float_at + floats) and optimizer rows [row_at,
// row_at + rows) hold: a stage's, as it installs it. Moments empty for an
// optimizer without them stay empty; rows past the state's are left out.
v1::StageState SliceOf(const JobCheckpoint& whole, int64_t float_at, int64_t floats, size_t row_at, size_t rows) {
  auto slice = [&](const std::vector<float>& v) {
    return v.empty() ? std::string() : FloatBytes(std::span<const float>(v).subspan(float_at, floats));
  };
  v1::StageState state;
  state.set_parameters(slice(whole.parameters));
  state.set_first_moment(slice(whole.optimizer.first));
  state.set_second_moment(slice(whole.optimizer.second));
  for (size_t r = row_at; r < row_at + rows && r < whole.optimizer.steps.size(); ++r) {
    state.add_row_steps(whole.optimizer.steps[r]);
  }
  return state;
}

}  // namespace

// What the members of a group sent of one micro-batch or one gradient, until
// every one has.
struct PipelineHead::Parts {
  std::vector<std::optional<v1::MicroBatch>> micro_batches;
  std::vector<std::optional<std::string>> gradients;
  // By member, under gradientEachMicroBatch: its parts summed until its last
  // gradient (`gradients`) completes them, and the micro-batches they were of.
  std::vector<std::vector<float>> early;
  std::vector<std::set<int>> early_micro_batches;
};

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
  if (link.stream) {
    return FailedPreconditionError("rank " + std::to_string(hello.rank()) + " of stage " + std::to_string(*stage + 1) +
                                   " is already here");
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

Status PipelineHead::Serve(const v1::Hello& hello, WorkerStream& stream) {
  const int rank = hello.rank();
  Link& link = *links_[rank];
  {
    std::lock_guard lock(mu_);
    // Two hellos of one rank may both pass Admit before either is served:
    // the second is refused here, where the first took the rank (found in
    // review: the first's end marked the rank lost under the second).
    if (link.stream) {
      return FailedPreconditionError("rank " + std::to_string(rank) + " is already here");
    }
    link.stream = &stream;
    link.lost = false;
    // A new session: what an earlier one announced is not on its way.
    link.announced_bytes = 0;
    link.transfer_until = TimePoint{};
    // Silent is silent past the gaps it has shown, and never under four of
    // its heartbeats; a stage that sends none is judged by the grace alone.
    const double heartbeat_s = hello.heartbeat_seconds();
    link.silent_floor = heartbeat_s > 0 ? 4 * FromSeconds(heartbeat_s) : plan_.spec.fault_tolerance.ReachGrace();
    link.heard = ArrivalDeadline(plan_.spec.fault_tolerance.ReachGrace(), link.silent_floor);
    link.heard.Restart(clock_.Now());
    link.offered_step = hello.model_clock();
    link.offered_pending = hello.stage_step_pending();
    link.offered_elapsed_s = hello.job_elapsed_seconds();
    link.offered_energy_j = hello.job_energy_joules();
    link.offered_replicas.clear();
    for (const v1::KeptReplica& kept : hello.kept_replicas()) {
      link.offered_replicas[{kept.first_layer(), kept.end_layer()}] = kept.step();
    }
    link.busy_since.reset();
    RelearnPassesLocked(link);
    changed_.NotifyAll();
  }
  Status ended = Status::Ok();
  while (ended.ok()) {
    auto message = stream.Receive();
    if (message.ok()) {
      std::lock_guard lock(mu_);
      HeardLocked(link, *message);
    }
    if (!message.ok()) {
      ended = message.status();
    } else if (message->has_forward() || message->has_backward()) {
      // Relayed as it is read: the stage's neighbour waits on it.
      const bool forward = message->has_forward();
      ended = Relay(rank, forward, forward ? std::move(*message->mutable_forward()) : std::move(*message->mutable_backward()));
    } else if (message->has_gradient()) {
      ended = SumGradient(rank, std::move(*message->mutable_gradient()));
    } else if (message->has_replica_part()) {
      // Kept here, and relayed to the devices that would take these layers
      // should the stage lose its every device: they keep it too, for a head
      // lost with the stage's device to rebuild it from.
      std::lock_guard lock(mu_);
      // Relayed only at its own period (replicateEvery, core/replica_relay.h);
      // the head keeps the others too.
      const v1::ReplicaPart& part = message->replica_part();
      if (part.offset() == 0) {
        link.relaying_step =
            link.relay.Relays(part.step(), plan_.spec.fault_tolerance.replicate_every) ? part.step() : -1;
      }
      const bool relayed = link.relaying_step == part.step();
      for (int r : relayed ? ReplicaKeepersLocked(link) : std::vector<int>{}) {
        // Past the queue's bound, a part is dropped, and with it that replica at its keeper.
        if (relays_.size() >= kRelaysQueued) break;
        relays_.push_back({r, {}});
        *relays_.back().message.mutable_replica_part() = message->replica_part();
      }
      changed_.NotifyAll();
      TakeReplicaPartLocked(link, std::move(*message->mutable_replica_part()));
    } else if (message->has_step_done()) {
      std::lock_guard lock(mu_);
      const v1::StepDone& d = message->step_done();
      // The device's time counts whatever attempt it was spent on.
      link.compute_s += d.compute_seconds();
      link.idle_s += d.idle_seconds();
      link.energy_j += d.energy_joules();
      link.passes.Observed(d.longest_pass_seconds());
      if (metrics_) metrics_->SetStageSeconds(rank, link.stage, link.compute_s, link.idle_s);
      if (d.attempt() != attempt_) continue;  // of an attempt given up
      link.done_step = d.step();
      link.done_attempt = d.attempt();
      link.done_at = clock_.Now();
      link.held_s = d.held_seconds();
      link.work_s = d.work_seconds();
      link.loss_sum = d.loss_sum();
      link.step_samples = d.samples();
      changed_.NotifyAll();
    } else if (message->has_failed()) {
      {
        std::lock_guard lock(mu_);
        if (!module_failed_) {
          module_failed_ = InvalidArgumentError("stage " + std::to_string(link.stage + 1) + " (rank " +
                                                std::to_string(rank) + "): " + message->failed().reason());
        }
        // Gone, and said so here: its stream's end, which the cut below
        // brings, read "the worker closed its stream".
        if (!link.lost) {
          link.lost = true;
          link.lost_at = clock_.Now();
          Log() << "pipeline: stage " << link.stage + 1 << " (rank " << rank
                << ") ends: the user's module raised on its share, the job's own fault\n";
        }
        changed_.NotifyAll();
      }
      // Its last word read: the stage, which leaves its stream for the head
      // to end, is let go now, rather than waited on for the state Finish
      // fetches, which it will not send.
      stream.Cut();
    } else if (message->has_state()) {
      std::lock_guard lock(mu_);
      if (message->state().request() != state_request_) continue;  // to a request given up
      link.state = std::move(*message->mutable_state());
      changed_.NotifyAll();
    }
  }
  // The stream dies when this returns: a send to it still under way (a relay,
  // the driver's Stop) finishes first, and none starts after.
  std::unique_lock lock(mu_);
  changed_.Wait(lock, [&] { return !link.sending; });
  link.stream = nullptr;
  // A device the head let go of or took for lost had its stream cut by the
  // head, which said why then: its "worker closed its stream" is the cut's.
  if (!finished_ && !link.lost) {
    link.lost = true;
    link.lost_at = clock_.Now();
    Log() << "pipeline: stage " << link.stage + 1 << " (rank " << rank << ") left: " << ended.message() << "\n";
  }
  changed_.NotifyAll();
  return finished_ ? Status::Ok() : ended;
}

Status PipelineHead::Relay(int rank, bool forward, v1::MicroBatch part) {
  std::vector<v1::MicroBatch> out;
  std::vector<int> targets;  // the rank each of `out` goes to
  int to;
  {
    std::lock_guard lock(mu_);
    if (part.step() != step_ + 1 || part.attempt() != attempt_) return Status::Ok();  // of an attempt given up
    if (!MemberLocked(rank)) return Status::Ok();  // let go of: its stage number is of stages since renumbered
    // A device lost mid-step is covered by another of its group: what it
    // still sends, the cover sends too (covers_ keeps the first).
    if (links_[rank]->lost) return Status::Ok();
    // The sender's stage as the stages now are (a lost stage's layers taken
    // by a neighbour renumbers those after it).
    const int stage = links_[rank]->stage;
    to = forward ? stage + 1 : stage - 1;
    if (to < 0 || to >= static_cast<int>(groups_.size())) {
      return FailedPreconditionError("stage " + std::to_string(stage + 1) + " sent a micro-batch nowhere");
    }
    // Whose share it is: the sender's own, or a lost device's it covers.
    int of = rank;
    if (part.has_share_of()) {
      if (covers_.CoverOf(part.share_of()) != rank) return Status::Ok();  // of a cover given up
      of = part.share_of();
      part.clear_share_of();
    }
    const std::vector<int>& from = groups_[stage];
    const std::vector<int>& next = groups_[to];
    const auto bytes = static_cast<int64_t>(part.values().size());
    if (from.size() == 1 && next.size() == 1) {
      if (metrics_) metrics_->AddRelayedBytes(bytes);
      out.push_back(std::move(part));
      targets.push_back(next.front());
    } else {
      // Join the group's parts in member order, then deal the whole out to
      // the next group by its devices' speeds, as each of them deals it.
      const size_t member = std::find(from.begin(), from.end(), of) - from.begin();
      if (member == from.size()) return Status::Ok();  // from a device its stage has let go of
      // A lost device's part that came before its loss, sent again by its cover.
      if (!covers_.FirstSent(forward, part.micro_batch(), stage, member)) return Status::Ok();
      if (metrics_) metrics_->AddRelayedBytes(bytes);
      Parts& parts = parts_[{forward, part.step(), part.micro_batch(), to}];
      parts.micro_batches.resize(from.size());
      parts.micro_batches[member] = std::move(part);
      if (std::any_of(parts.micro_batches.begin(), parts.micro_batches.end(), [](auto& p) { return !p; })) {
        return Status::Ok();
      }
      v1::MicroBatch whole = *parts.micro_batches.front();
      whole.clear_values();
      int64_t samples = 0;
      std::string values;
      for (const auto& p : parts.micro_batches) {
        samples += p->samples();
        values += p->values();
      }
      parts_.erase({forward, whole.step(), whole.micro_batch(), to});
      // Dealt by samples: bytes that do not divide into them would be dealt
      // misaligned, every share's samples cut across (found in review).
      if (samples > 0 && values.size() % static_cast<size_t>(samples) != 0) {
        return InternalError("micro-batch " + std::to_string(whole.micro_batch()) + " of step " +
                             std::to_string(whole.step()) + " came in " + std::to_string(values.size()) +
                             " bytes, which do not divide into its " + std::to_string(samples) + " samples");
      }
      const size_t per_sample = samples > 0 ? values.size() / static_cast<size_t>(samples) : 0;
      size_t offset = 0;
      const std::vector<int64_t> shares = ShareOut(samples, speeds_[to]);
      for (size_t j = 0; j < shares.size(); ++j) {
        v1::MicroBatch share = whole;
        share.set_samples(static_cast<int32_t>(shares[j]));
        share.set_values(values.substr(offset, static_cast<size_t>(shares[j]) * per_sample));
        offset += static_cast<size_t>(shares[j]) * per_sample;
        // Kept for the step, for a device of the group that covers this
        // one should it be lost; a lost one's goes to its cover.
        targets.push_back(next[j]);
        if (next.size() > 1) {
          covers_.Dealt(forward, share.micro_batch(), to, j, share);
          if (const std::optional<int> cover = covers_.CoverOf(next[j])) {
            share.set_share_of(next[j]);
            targets.back() = *cover;
          }
        }
        out.push_back(std::move(share));
      }
    }
    // A whole micro-batch leaves the first stage, or comes back to it.
    if (forward && stage == 0) ++in_flight_;
    if (!forward && to == 0) --in_flight_;
    if (metrics_) metrics_->SetInFlight(in_flight_);
  }
  for (size_t j = 0; j < out.size(); ++j) {
    v1::CoordinatorMessage relayed;
    *(forward ? relayed.mutable_forward() : relayed.mutable_backward()) = std::move(out[j]);
    if (Status sent = SendTo(targets[j], relayed); !sent.ok()) {
      // The neighbour is gone; its own stream says so to the driver.
      Log() << "pipeline: stage " << to + 1 << " did not take a micro-batch: " << sent.message() << "\n";
    }
  }
  return Status::Ok();
}

Status PipelineHead::SumGradient(int rank, v1::GroupGradient part) {
  std::vector<int> group;
  v1::CoordinatorMessage sum;
  {
    std::lock_guard lock(mu_);
    if (part.step() != step_ + 1 || part.attempt() != attempt_) return Status::Ok();  // of an attempt given up
    if (!MemberLocked(rank) || links_[rank]->lost) return Status::Ok();
    const int stage = links_[rank]->stage;
    group = groups_[stage];
    // The group's slots it fills: its own, and those of lost devices it
    // covered. A rank no longer of the group (lost, then heard from late)
    // has no slot.
    std::vector<size_t> slots;
    const std::vector<int> of = part.shares_of().empty()
                                    ? std::vector<int>{rank}
                                    : std::vector<int>(part.shares_of().begin(), part.shares_of().end());
    for (int o : of) {
      if (o != rank && covers_.CoverOf(o) != rank) return Status::Ok();  // of a cover given up
      const auto at = std::find(group.begin(), group.end(), o);
      if (at == group.end()) return Status::Ok();
      slots.push_back(static_cast<size_t>(at - group.begin()));
    }
    Parts& parts = gradients_[{stage, part.step()}];
    parts.gradients.resize(group.size());
    parts.early.resize(group.size());
    parts.early_micro_batches.resize(group.size());
    if (part.more()) {
      // A part of its own shares, sent as each was done: kept until its
      // last completes them.
      const size_t j = slots.front();
      if (slots.size() != 1 || group[j] != rank || parts.gradients[j]) {
        return FailedPreconditionError("stage " + std::to_string(stage + 1) + " was sent a part of rank " +
                                       std::to_string(rank) + "'s gradient that is not of its own shares alone " +
                                       "or came after its last");
      }
      std::vector<float>& early = parts.early[j];
      if (early.empty()) early.assign(part.values().size() / sizeof(float), 0.0f);
      if (!AddDecodedRow(RowEncoding::kFloat32, 1, part.values(), early).ok()) {  // it checks the size
        return FailedPreconditionError("the devices of stage " + std::to_string(stage + 1) +
                                       " sent gradients of different sizes");
      }
      parts.early_micro_batches[j].insert(part.micro_batches().begin(), part.micro_batches().end());
      Link& link = *links_[rank];
      if (link.parts_step != part.step() || link.parts_attempt != part.attempt()) {
        link.parts_loss = 0;
        link.parts_step = part.step();
        link.parts_attempt = part.attempt();
      }
      link.parts_loss += part.loss_sum();
      return Status::Ok();
    }
    for (size_t j : slots) {
      // The head covers a device only while its gradient is not in: a
      // second gradient of the same shares would leave another slot empty,
      // and the group waiting for it for ever. Its sender is lost instead.
      if (parts.gradients[j]) {
        return FailedPreconditionError("stage " + std::to_string(stage + 1) + " was sent the gradient of rank " +
                                       std::to_string(group[j]) + "'s shares twice");
      }
    }
    // The values go in the first slot; the others' shares are summed in them.
    parts.gradients[slots.front()] = std::move(*part.mutable_values());
    for (size_t k = 1; k < slots.size(); ++k) parts.gradients[slots[k]] = std::string();
    if (std::any_of(parts.gradients.begin(), parts.gradients.end(), [](auto& g) { return !g; })) return Status::Ok();
    // Summed in member order, each member's parts before its last, with
    // the row codec the data-parallel engine gathers gradients with: every
    // member steps on the same bytes.
    std::vector<float> total;
    for (size_t j = 0; j < parts.gradients.size(); ++j) {
      const std::string& g = *parts.gradients[j];
      const std::vector<float>& early = parts.early[j];
      if (total.empty()) total.assign(early.empty() ? g.size() / sizeof(float) : early.size(), 0.0f);
      const bool early_fits = early.empty() || early.size() == total.size();
      if (early_fits) {
        for (size_t k = 0; k < early.size(); ++k) total[k] += early[k];
      }
      // AddDecodedRow checks the size.
      if (!early_fits || (!g.empty() && !AddDecodedRow(RowEncoding::kFloat32, 1, g, total).ok())) {
        return FailedPreconditionError("the devices of stage " + std::to_string(stage + 1) +
                                       " sent gradients of different sizes");
      }
    }
    gradients_.erase({stage, part.step()});
    covers_.Summed(stage);
    sum.mutable_gradient()->set_step(part.step());
    sum.mutable_gradient()->set_attempt(part.attempt());
    sum.mutable_gradient()->set_values(FloatBytes(total));
    std::erase_if(group, [&](int r) { return links_[r]->lost; });
  }
  for (int r : group) (void)SendTo(r, sum);
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

Status PipelineHead::SendTo(int rank, const v1::CoordinatorMessage& message) {
  Link& link = *links_[rank];
  WorkerStream* stream;
  {
    // One sender a stream at a time, waited for through the clock: a send may
    // block on the stage's link, and a simulated clock must see who waits.
    std::unique_lock lock(mu_);
    changed_.Wait(lock, [&] { return !link.sending; });
    stream = link.stream;
    if (!stream) {
      return UnavailableError("stage " + std::to_string(link.stage + 1) + " (rank " + std::to_string(rank) +
                              ") is not connected");
    }
    link.sending = true;
  }
  Status sent = stream->Send(message);
  std::lock_guard lock(mu_);
  link.sending = false;
  if (sent.ok()) link.bytes_down += static_cast<int64_t>(message.ByteSizeLong());
  changed_.NotifyAll();
  return sent;
}

Status PipelineHead::LostLocked() const {
  for (int r : members_) {
    const Link& link = *links_[r];
    if (link.lost && !link.covered) {
      return UnavailableError("stage " + std::to_string(link.stage + 1) + " (rank " + std::to_string(link.rank) +
                              ") was lost in step " + std::to_string(step_ + 1));
    }
  }
  return Status::Ok();
}

TimePoint PipelineHead::LoseSilentLocked(const std::function<bool(const Link&)>& owes) {
  const TimePoint now = clock_.Now();
  TimePoint next = kNever;
  for (int r : members_) {
    Link& link = *links_[r];
    if (link.lost || !link.stream || !owes(link)) continue;
    if (now < link.transfer_until) {  // an announced transfer's time on the wire
      next = std::min(next, link.transfer_until + std::chrono::milliseconds(1));
      continue;
    }
    // Hung or silent, a device is given at least what its loss would cost.
    const Duration loss_cost = LossCostLocked(link);
    if (link.busy_since) {
      const Duration ran = now - *link.busy_since;
      const Duration hung_after = std::max(link.passes.Deadline(), loss_cost);
      if (ran > hung_after) {
        link.lost = true;
        link.lost_at = *link.busy_since;
        ++replays_.hung;
        Log() << "pipeline: stage " << link.stage + 1 << " (rank " << r << ") has computed one pass for "
              << ToSeconds(ran) << " s in step " << step_ + 1 << ", past its deadline of " << ToSeconds(hung_after)
              << " s (" << (link.passes.learned() ? "from its passes so far" : "before a step of it was learned")
              << "), its heartbeats still coming: taken for hung, and lost\n";
        HoldBackLocked(link);
        continue;
      }
      next = std::min(next, *link.busy_since + hung_after + std::chrono::milliseconds(1));
    }
    const bool alone = groups_[static_cast<size_t>(link.stage)].size() == 1;
    const Duration allowed = std::max({link.heard.Deadline(), alone ? 2 * link.silent_floor : Duration::zero(), loss_cost});
    if (!link.heard.Overdue(now) || now - link.heard.last_arrival() <= allowed) {
      next = std::min(next, link.heard.last_arrival() + allowed + std::chrono::milliseconds(1));
      continue;
    }
    link.lost = true;
    link.lost_at = link.heard.last_arrival();
    Log() << "pipeline: stage " << link.stage + 1 << " (rank " << r << ") silent for "
          << ToSeconds(now - link.heard.last_arrival()) << " s in step " << step_ + 1 << ", past its deadline of "
          << ToSeconds(allowed) << " s" << (alone ? " (its stage's only device)" : "") << ": taken for lost\n";
  }
  return next;
}

void PipelineHead::RelearnPassesLocked(Link& link) const {
  link.passes = PassDeadline(plan_.spec.fault_tolerance.ReachGrace(), hung_.floor, hung_.factor);
}

void PipelineHead::CarryPaceLocked(int rank, std::pair<int, int> was, std::pair<int, int> now) {
  if (!cost_model_ || was == now) return;
  // A pass over the whole batch on each: the two layers' work, in proportion.
  const std::vector<int64_t> whole = {plan_.spec.data.batch_size};
  pace_.Carry(rank, cost_model_->DeviceStepSeconds(was.first, was.second, rank, whole),
              cost_model_->DeviceStepSeconds(now.first, now.second, rank, whole));
}

Duration PipelineHead::LossCostLocked(const Link& link) const {
  const auto s = static_cast<size_t>(link.stage);
  // One of a group: the others hold its layers, and its loss costs a step replayed.
  if (groups_[s].size() > 1) return Duration::zero();
  const Duration grace = plan_.spec.fault_tolerance.ReachGrace();
  // Nothing to rebuild it from, or nowhere: its loss ends the job.
  if (groups_.size() < 2 || !replicas_[s]) return grace;
  const double redo_s = static_cast<double>(std::max<int64_t>(0, step_ - replicas_[s]->step())) * step_s_;
  return std::min(grace, FromSeconds(redo_s));
}

void PipelineHead::CutLostLocked() {
  // A relay blocked on the full window of a device taken for lost returns
  // (its neighbour's messages are read again), and if its link comes back it
  // finds its stream ended rather than wait in a step given up. Under mu_ the
  // stream is still there: Serve lets go of it under mu_.
  for (int r : members_) {
    if (links_[r]->lost && links_[r]->stream) links_[r]->stream->Cut();
  }
}

void PipelineHead::HoldBackLocked(Link& link) {
  const Duration wait = stragglers_.rejoin_after * (int64_t{1} << std::min(link.held_back, 10));
  ++link.held_back;
  link.back_after = clock_.Now() + wait;
  Log() << "pipeline: rank " << link.rank << " may rejoin no sooner than " << ToSeconds(wait) << " s from now\n";
}

void PipelineHead::LetGoOfStragglersLocked(const Passes& passes) {
  for (size_t s = 0; s < groups_.size(); ++s) {
    if (groups_[s].size() < 2) continue;  // alone, its layers would be lost with it: they move off it instead
    // Each device's seconds of work a sample of its share, times the speed
    // its share was dealt by: alike across a group that runs as planned.
    std::vector<double> paces(groups_[s].size(), 0);
    double fastest = 0;
    for (size_t j = 0; j < groups_[s].size(); ++j) {
      int64_t samples = 0;
      for (int64_t n : passes[s][j]) samples += n;
      const Link& link = *links_[static_cast<size_t>(groups_[s][j])];
      if (samples == 0 || !(link.work_s > 0)) continue;
      paces[j] = link.work_s / static_cast<double>(samples) * speeds_[s][j];
      if (fastest == 0 || paces[j] < fastest) fastest = paces[j];
    }
    if (fastest == 0) continue;
    for (size_t j = 0; j < groups_[s].size(); ++j) {
      Link& link = *links_[static_cast<size_t>(groups_[s][j])];
      // A device's first step in a session warms its trainer up: not its pace.
      if (step_ <= link.joined_after + 1) continue;
      link.slow_steps = paces[j] > stragglers_.factor * fastest ? link.slow_steps + 1 : 0;
      // Two steps running, or one of a device slower by the factor twice
      // over: a device back from a hang still slowed a thousandfold held two
      // steps of 13 and 17 s (a new user's trial).
      const bool far = paces[j] > stragglers_.factor * stragglers_.factor * fastest;
      if (link.slow_steps < 2 && !far) continue;
      // The group keeps one device at the least: the slowest of two goes,
      // not both.
      const auto left = std::count_if(groups_[s].begin(), groups_[s].end(),
                                      [&](int r) { return !links_[static_cast<size_t>(r)]->lost; });
      if (left < 2) continue;
      LetGoLocked(link);
      ++replays_.stragglers;
      Log() << "pipeline: stage " << s + 1 << " (rank " << link.rank << ") ran its share " << std::fixed
            << std::setprecision(1) << paces[j] / fastest << std::defaultfloat << " times slower than its group's "
            << "fastest, for the speeds the shares are dealt by, " << (far ? "in its last step" : "in two steps running")
            << ": let go of as a straggler, "
            << "the others of its group take its share\n";
    }
  }
  CutLostLocked();
}

void PipelineHead::LetGoLocked(Link& link) {
  link.lost = true;
  link.lost_at = clock_.Now();
  link.slow_steps = 0;
  HoldBackLocked(link);
}

Status PipelineHead::RegroupLocked() {
  std::vector<std::vector<int>> kept(groups_.size());
  std::vector<std::vector<double>> speeds(groups_.size());
  for (size_t s = 0; s < groups_.size(); ++s) {
    for (size_t j = 0; j < groups_[s].size(); ++j) {
      if (!links_[groups_[s][j]]->lost) {
        kept[s].push_back(groups_[s][j]);
        speeds[s].push_back(speeds_[s][j]);
      }
    }
  }
  // Whether every stage left with no device can be restored, before anything changes.
  std::vector<size_t> emptied;
  for (size_t s = 0; s < groups_.size(); ++s) {
    if (!groups_[s].empty() && kept[s].empty()) {
      EDGETRAIN_RETURN_IF_ERROR(CanRestoreLocked(s, kept, emptied));
      emptied.push_back(s);
    }
  }
  for (size_t s = 0; s < groups_.size(); ++s) {
    if (kept[s].size() == groups_[s].size()) continue;
    for (int r : groups_[s]) {
      if (!links_[r]->lost) continue;
      if (!kept[s].empty()) {
        Log() << "pipeline: stage " << s + 1 << " (rank " << r << ") lost at step " << step_ + 1 << "; "
              << kept[s].size() << (kept[s].size() == 1 ? " of its devices goes on\n" : " of its devices go on\n");
      }
      members_.erase(std::find(members_.begin(), members_.end(), r));
    }
    regrouped_ = true;
  }
  const std::vector<std::vector<int>> before = std::move(groups_);
  groups_ = std::move(kept);
  speeds_ = std::move(speeds);
  // From the last, so that the stages before keep their numbers meanwhile.
  for (auto s = emptied.rbegin(); s != emptied.rend(); ++s) RestoreStageLocked(*s, before[*s]);
  if (regrouped_) {
    ReplanLocked();
    regroup_due_ = true;
    // The survivors' steps change with the groups: not a drift of theirs.
    if (rebalancing_.every > 0 && !last_compute_.empty()) StartMeasureLocked();
  }
  return Status::Ok();
}

std::optional<std::vector<std::pair<int, v1::CoordinatorMessage>>> PipelineHead::CoverLostLocked(int64_t step) {
  struct Covering {
    Link* lost;
    size_t member;          // its place in its group, which the step was dealt by
    std::optional<int> by;  // none: all it owed is in
    std::set<int> done;     // the micro-batches of its shares whose gradient its parts brought
  };
  std::vector<Covering> covering;
  for (int r : members_) {
    Link& link = *links_[r];
    if (!link.lost || link.covered) continue;
    const auto s = static_cast<size_t>(link.stage);
    const std::vector<int>& group = groups_[s];
    // Done with this attempt: all it computed is in, its loss of the step too.
    const bool answered = link.done_step >= step && link.done_attempt == attempt_;
    // Its group's gradient in (summed, or its own part at the head): every
    // share it computed went on before it. Only its answer is missing,
    // which in the last stage carries its shares' loss.
    const size_t member = std::find(group.begin(), group.end(), r) - group.begin();
    const auto parts = gradients_.find({static_cast<int>(s), step});
    const bool sent_all = covers_.WasSummed(static_cast<int>(s)) ||
                          (parts != gradients_.end() && member < parts->second.gradients.size() &&
                           parts->second.gradients[member].has_value());
    if (group.size() > 1 && (answered || (sent_all && s + 1 < groups_.size()))) {
      covering.push_back({&link, member, std::nullopt, {}});
      continue;
    }
    // A stage's only device: its layers come back from a replica, and the
    // step runs again. One covering another takes that one's shares with
    // it too: the step runs again.
    if (group.size() < 2 || sent_all || covers_.Covers(r)) return std::nullopt;
    // The fastest of its group left computes its shares.
    std::optional<size_t> by;
    for (size_t j = 0; j < group.size(); ++j) {
      if (links_[group[j]]->lost) continue;
      if (!by || speeds_[s][j] > speeds_[s][*by]) by = j;
    }
    if (!by) return std::nullopt;
    std::set<int> done;
    if (parts != gradients_.end() && member < parts->second.early_micro_batches.size()) {
      done = parts->second.early_micro_batches[member];
    }
    covering.push_back({&link, member, group[*by], std::move(done)});
  }
  if (covering.empty()) return std::nullopt;
  std::vector<std::pair<int, v1::CoordinatorMessage>> sends;
  for (const Covering& c : covering) {
    c.lost->covered = true;
    ++replays_.covered;
    if (!c.by) {
      Log() << "pipeline: stage " << c.lost->stage + 1 << " (rank " << c.lost->rank << ") lost in step " << step
            << ", all its shares of the step in; it leaves its group after the step\n";
      continue;
    }
    covers_.Cover(c.lost->rank, *c.by, c.done);
    v1::CoordinatorMessage command;
    v1::StageCover& cover = *command.mutable_command()->mutable_cover();
    cover.set_step(step);
    cover.set_attempt(attempt_);
    cover.set_rank(c.lost->rank);
    for (const int done : c.done) cover.add_done_micro_batches(done);
    sends.emplace_back(*c.by, std::move(command));
    // What it had been dealt, sent again as its share (the first stage's
    // devices read their samples themselves), but of the micro-batches its
    // parts brought in.
    for (auto [forward, share] : covers_.DealtTo(c.lost->stage, c.member)) {
      if (c.done.count(share.micro_batch())) continue;
      if (metrics_) metrics_->AddRelayedBytes(static_cast<int64_t>(share.values().size()));
      share.set_share_of(c.lost->rank);
      v1::CoordinatorMessage relayed;
      *(forward ? relayed.mutable_forward() : relayed.mutable_backward()) = std::move(share);
      sends.emplace_back(*c.by, std::move(relayed));
    }
    // Its shares of the step, each of a micro-batch: what is computed again,
    // and of those the ones it had computed before, its output of them sent
    // on (the work lost with it; the others it had not begun).
    int shares = 0, rerun = 0;
    const int stage = c.lost->stage;
    const std::vector<int64_t> its =
        DealStep(plan_.spec.data.batch_size, micro_batches_, speeds_[static_cast<size_t>(stage)])[c.member];
    for (int i = 0; i < static_cast<int>(its.size()); ++i) {
      if (c.done.count(i) || its[static_cast<size_t>(i)] == 0) continue;
      ++shares;
      if (covers_.WasSent(true, i, stage, c.member) || covers_.WasSent(false, i, stage, c.member)) ++rerun;
    }
    ++replays_.count;
    replays_.covered_shares += shares;
    replays_.rerun_shares += rerun;
    replays_.in_flight_micro_batches += in_flight_;
    if (metrics_) metrics_->AddCover(shares);
    Log() << "pipeline: stage " << c.lost->stage + 1 << " (rank " << c.lost->rank << ") lost in step " << step
          << "; rank " << *c.by << " of its group computes its "
          << CountOf(static_cast<size_t>(shares), "share", "shares") << " of the step (" << rerun
          << " of them it had computed before, its output sent on"
          << (c.done.empty() ? "" : "; " + std::to_string(c.done.size()) + " more came in its parts")
          << "; " << CountOf(static_cast<size_t>(in_flight_), "micro-batch", "micro-batches")
          << " in flight through the stages), the rest of the pipeline going on\n";
  }
  return sends;
}

PipelineProblem PipelineHead::PacedProblemLocked(std::map<int, double>& paces) const {
  // The head's word and the stages' answers as the run's last steps paid
  // them, where the profile timed two messages on a quiet stream.
  PipelineProblem problem = *problem_;
  problem.transport.orders_s = orders_.Seconds();
  // Each device left as it has run its part of the steps, where the profile
  // timed its layers alone.
  paces.clear();
  for (int r : members_) {
    if (!pace_.Learned(r)) continue;
    problem.devices[static_cast<size_t>(r)].speed /= pace_.Of(r);
    paces[r] = pace_.Of(r);
  }
  return problem;
}


std::vector<PipelineStage> PipelineHead::StagesLocked() const {
  std::vector<PipelineStage> stages;
  for (size_t s = 0; s < groups_.size(); ++s) stages.push_back({layers_[s].first, layers_[s].second, groups_[s]});
  return stages;
}

void PipelineHead::ReplanLocked() {
  if (!problem_) return;
  const std::vector<PipelineStage> stages = StagesLocked();
  std::map<int, double> learned;
  const PipelineProblem problem = PacedProblemLocked(learned);
  const std::string paces = SayPaces(learned);
  const PipelinePlan plan = AtBestMicroBatches(problem, stages);
  if (!plan.cost.fits) {
    Log() << "pipeline: no micro-batch count fits the devices left (" << plan.cost.misfit << "); " << micro_batches_
          << " a step, as before\n";
    return;
  }
  Log() << "pipeline: planned again for the devices it now has (" << members_.size() << "): "
        << CountOf(static_cast<size_t>(plan.micro_batches), "micro-batch", "micro-batches") << " of " << plan.micro_batch_size << " (were " << micro_batches_ << "), predicted "
        << static_cast<int64_t>(plan.cost.samples_per_s + 0.5) << " samples/s"
        << OrdersNote(problem.transport, orders_.counted())
        << (!paces.empty() ? "; each device at its pace in the run's steps against the profile's prediction: " + paces
                           : std::string())
        << "\n";
  micro_batches_ = plan.micro_batches;
  replays_.replanned_micro_batches = plan.micro_batches;
  replays_.replanned_samples_per_s = plan.cost.samples_per_s;
  replays_.replanned_orders_s = problem.transport.OrdersSeconds();
  replays_.replanned_paces = std::move(learned);
}

PipelineHead::Passes PipelineHead::PassesLocked(int64_t samples) const {
  // As the stages deal it.
  Passes passes(groups_.size());
  for (size_t s = 0; s < groups_.size(); ++s) {
    passes[s] = DealStep(samples, micro_batches_, speeds_[s]);
    passes[s].resize(groups_[s].size());
  }
  return passes;
}

void PipelineHead::CountSharesLocked(const Passes& passes) {
  std::map<int, int64_t> shares;  // by rank
  std::map<int, int64_t> before_lost;  // a lost device's shares it computed itself, its parts in
  for (size_t s = 0; s < groups_.size(); ++s) {
    for (size_t j = 0; j < groups_[s].size(); ++j) {
      // A lost device's shares, computed by its cover, are the cover's; its
      // own figures stay where they stopped, but for the samples of the
      // shares whose gradient its parts brought (gradientEachMicroBatch).
      const int r = groups_[s][j];
      const std::optional<int> cover = covers_.CoverOf(r);
      for (size_t k = 0; k < passes[s][j].size(); ++k) {
        if (cover && covers_.DoneBy(r, static_cast<int>(k))) {
          before_lost[r] += passes[s][j][k];
        } else {
          shares[cover.value_or(r)] += passes[s][j][k];
        }
      }
    }
  }
  for (const auto& [r, share] : shares) {
    links_[r]->samples += share;
    links_[r]->batch_share = share;
  }
  for (const auto& [r, share] : before_lost) links_[r]->samples += share;
}

void PipelineHead::ObservePaceLocked(const Passes& all) {
  if (!cost_model_) return;
  for (size_t s = 0; s < groups_.size(); ++s) {
    const std::vector<std::vector<int64_t>>& passes = all[s];
    for (size_t j = 0; j < passes.size(); ++j) {
      const int r = groups_[s][j];
      pace_.Observe(r, links_[r]->work_s,
                    cost_model_->DeviceStepSeconds(layers_[s].first, layers_[s].second, r, passes[j]));
    }
  }
}

Status PipelineHead::CanRestoreLocked(size_t s, const std::vector<std::vector<int>>& kept,
                                      const std::vector<size_t>& emptied) const {
  const std::vector<int>& lost = groups_[s];
  const std::string what = "stage " + std::to_string(s + 1) + " lost its only device" + (lost.size() > 1 ? "s" : "") +
                           " at step " + std::to_string(step_ + 1) + " (" + SayRanks(lost) + ")";
  if (groups_.size() == 1) {
    return UnavailableError(what + ": a pipeline of one stage has no other stage to rebuild it on, so it ends with " +
                            (lost.size() > 1 ? "them" : "it") +
                            " (more devices in the stage, or more stages, let a run train on without one)");
  }
  if (!replicas_[s]) {
    return UnavailableError(what + ", and the head has no replica of its layers" +
                            (plan_.spec.fault_tolerance.replicate_every > 0
                                 ? " yet (the first goes after the first step)"
                                 : " (spec.faultTolerance.replicateEvery is 0)"));
  }
  const size_t n = NeighbourOf(s);
  if (kept[n].empty()) return UnavailableError(what + ", and so did its neighbour, stage " + std::to_string(n + 1));
  const bool shared = std::any_of(emptied.begin(), emptied.end(), [&](size_t e) { return NeighbourOf(e) == n; });
  // A stage whose layers moved this step is sent them whole, and takes the
  // lost one's with them; one that took a lost stage's layers this step cannot take more.
  const bool took = taken_[n] && !(taken_[n]->taken_first_layer() == layers_[n].first &&
                                   taken_[n]->taken_end_layer() == layers_[n].second);
  if (shared || took) {
    return UnavailableError(what + ", and stage " + std::to_string(n + 1) + " takes another stage's layers already");
  }
  return Status::Ok();
}

void PipelineHead::RestoreStageLocked(size_t s, const std::vector<int>& lost) {
  const size_t n = NeighbourOf(s);
  v1::StageLayers taken;
  taken.set_taken_first_layer(layers_[s].first);
  taken.set_taken_end_layer(layers_[s].second);
  // A replica without state is one the neighbour's devices keep, as a head
  // that started behind found them (Start): they take the layers from it.
  const bool kept_there = replicas_[s]->state().parameters().empty();
  taken.set_taken_from_held(kept_there);
  if (!kept_there) *taken.mutable_taken() = replicas_[s]->state();
  const int64_t replica_step = replicas_[s]->step();
  if (taken_[n] && !kept_there) {
    // Its layers moved this step: it is sent all of them, the lost stage's joined on.
    const v1::StageState& moved = taken_[n]->taken();
    v1::StageState whole = s < n ? JoinStates(taken.taken(), moved) : JoinStates(moved, taken.taken());
    taken.set_taken_first_layer(std::min(layers_[n].first, layers_[s].first));
    taken.set_taken_end_layer(std::max(layers_[n].second, layers_[s].second));
    *taken.mutable_taken() = std::move(whole);
  }
  const std::pair<int, int> held = {std::min(layers_[n].first, layers_[s].first),
                                    std::max(layers_[n].second, layers_[s].second)};
  for (int r : groups_[n]) CarryPaceLocked(r, layers_[n], held);
  layers_[n] = held;
  StageShapes::value_type shapes = s < n ? shapes_[s] : shapes_[n];
  const auto& after = s < n ? shapes_[n] : shapes_[s];
  shapes.insert(shapes.end(), after.begin(), after.end());
  shapes_[n] = std::move(shapes);
  replicas_[n].reset();  // of fewer layers than the stage now holds
  taken_[n] = std::move(taken);
  for (int r : groups_[n]) RelearnPassesLocked(*links_[static_cast<size_t>(r)]);
  const int host_rank = groups_[n].front();
  const auto at = static_cast<std::ptrdiff_t>(s);
  groups_.erase(groups_.begin() + at);
  speeds_.erase(speeds_.begin() + at);
  layers_.erase(layers_.begin() + at);
  shapes_.erase(shapes_.begin() + at);
  replicas_.erase(replicas_.begin() + at);
  taken_.erase(taken_.begin() + at);
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (int r : groups_[g]) links_[r]->stage = static_cast<int>(g);
  }
  relaid_ = true;
  regrouped_ = true;
  ++replays_.restored_stages;
  // The stages' next measurement is of the stages as they now are: a re-cut
  // over the survivors, if one paces them better, follows it. Cuts proposed
  // before are of stages that are no more.
  proposed_.reset();
  if (rebalancing_.every > 0 && !last_compute_.empty()) StartMeasureLocked();
  replays_.steps_lost += step_ - replica_step;
  if (metrics_) {
    metrics_->AddRestoredStage(step_ - replica_step);
    metrics_->AddRepartition(RepartitionReason::kStageLost);
  }
  const int host = links_[host_rank]->stage;
  // The host named as it was numbered when the loss came, and as it is now:
  // "stage 1 ... go to stage 1" named two stages alike (a new user's trial).
  const size_t host_was = n;
  Log() << "pipeline: stage " << s + 1 << " lost its only device" << (lost.size() > 1 ? "s" : "") << " at step "
        << step_ + 1 << " (" << SayRanks(lost) << "); its layers " << taken_[host]->taken_first_layer() << "-"
        << taken_[host]->taken_end_layer() - 1 << " go to stage " << host_was + 1 << ", now stage " << host + 1
        << " of " << groups_.size() << " (layers " << layers_[host].first << "-" << layers_[host].second - 1
        << ") from the replica of step " << replica_step << ": " << step_ - replica_step
        << (step_ - replica_step == 1 ? " step" : " steps") << " of their updates lost\n";
}

void PipelineHead::HeardLocked(Link& link, const v1::WorkerMessage& message) {
  const TimePoint now = clock_.Now();
  link.bytes_up += static_cast<int64_t>(message.ByteSizeLong());
  link.heard.Arrived(now);  // alive, whatever it sent
  // A pass is under way as long as its heartbeats say so; whatever else it
  // sends, a pass ended before it.
  const bool idle_word = message.has_heartbeat() && message.heartbeat().next_bytes() == 0;
  if (idle_word && message.heartbeat().busy_seconds() > 0) {
    link.busy_since = now - FromSeconds(message.heartbeat().busy_seconds());
  } else {
    link.busy_since.reset();
  }
  if (link.announced_bytes > 0 && !message.has_heartbeat()) {
    // The announced message is in: the time it took is this uplink's rate.
    const double seconds = ToSeconds(now - link.announced_at);
    if (seconds > 0) {
      const double rate = static_cast<double>(link.announced_bytes) / seconds;
      link.uplink_bytes_per_s = link.uplink_bytes_per_s > 0 ? 0.7 * link.uplink_bytes_per_s + 0.3 * rate : rate;
    }
    link.announced_bytes = 0;
    link.transfer_until = TimePoint{};
  }
  if (message.has_heartbeat() && message.heartbeat().next_bytes() > 0) {
    link.announced_bytes = message.heartbeat().next_bytes();
    link.announced_at = now;
    // Twice what it should take at the rate this link has shown, or at the
    // plan's mean for it; with neither, the grace a device has to arrive.
    double rate = link.uplink_bytes_per_s;
    const WorkerSlot& slot = plan_.workers[static_cast<size_t>(link.rank)];
    if (rate <= 0 && slot.link && slot.link->mean_mbps > 0) rate = slot.link->mean_mbps * 1e6 / 8;
    const Duration wire = rate > 0 ? FromSeconds(2 * static_cast<double>(link.announced_bytes) / rate)
                                   : plan_.spec.fault_tolerance.ReachGrace();
    link.transfer_until = now + wire + link.heard.Deadline();
  }
}

bool PipelineHead::MemberLocked(int rank) const {
  return std::find(members_.begin(), members_.end(), rank) != members_.end();
}

std::vector<int> PipelineHead::ReplicaKeepersLocked(const Link& link) const {
  if (!welcomed_ || finished_ || groups_.size() < 2 || !MemberLocked(link.rank)) return {};
  std::vector<int> keepers;
  for (int r : groups_[NeighbourOf(static_cast<size_t>(link.stage))]) {
    if (links_[static_cast<size_t>(r)]->stream && !links_[static_cast<size_t>(r)]->lost) keepers.push_back(r);
  }
  return keepers;
}

void PipelineHead::TakeReplicaPartLocked(Link& link, v1::ReplicaPart part) {
  if (part.offset() == 0) link.replica_began = clock_.Now();
  std::optional<v1::StageReplica> replica = link.replica.Add(part);
  if (!replica) return;
  if (metrics_) metrics_->AddReplica(link.stage, part.total(), ToSeconds(clock_.Now() - link.replica_began));
  KeepReplicaLocked(link, std::move(*replica));
}

void PipelineHead::KeepReplicaLocked(const Link& link, v1::StageReplica replica) {
  if (!MemberLocked(link.rank)) return;  // let go of: of a stage that is no more, or renumbered
  const size_t s = static_cast<size_t>(link.stage);
  // One sent before its stage took other layers is of layers it no longer holds.
  const int64_t floats = RowLayout(shapes_[s], SyncGranularity::kLayer).total_floats();
  if (static_cast<int64_t>(replica.state().parameters().size()) != floats * static_cast<int64_t>(sizeof(float))) return;
  if (replicas_[s] && replicas_[s]->step() >= replica.step()) return;
  // Kept as float32, as a stage installs state; a replica that does not
  // decode is no replica (the one before stays).
  if (!MomentsToFloat32(*replica.mutable_state()).ok()) return;
  replicas_[s] = std::move(replica);
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
  Log() << "pipeline: " << CountOf(groups_.size(), "stage", "stages") << " on " << CountOf(gathered, "device", "devices")
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

void PipelineHead::TakeOverLocked(const Takeover& takeover) {
  Log() << "pipeline: the stages hold the model at step " << takeover.step << ", past the head's own (step "
        << step_ << "): training on from theirs\n";
  // A device here that cannot train on from that step (its agent
  // restarted, or a step behind) rejoins at the first step, from the
  // stages' state.
  double elapsed_s = 0, energy_j = 0;
  for (size_t s = 0; s < groups_.size(); ++s) {
    if (takeover.rebuilt.count(s)) {
      // Its devices are lost: the stages' state Start fetches next rebuilds
      // it. One here that holds nothing (its agent made again) rejoins
      // the stage that then holds its layers, at the first step.
      for (int r : groups_[s]) {
        Link& link = *links_[static_cast<size_t>(r)];
        if (!link.stream) continue;
        link.lost = true;
        link.lost_at = clock_.Now();
        rejoin_after_rebuild_.push_back(r);
      }
      continue;
    }
    // A stage that takes a rebuilt neighbour's layers: its devices that keep that replica.
    std::optional<size_t> hosted;
    for (const auto& [lost, replica_step] : takeover.rebuilt) {
      if (NeighbourOf(lost) == s) hosted = lost;
    }
    const int64_t replica_step = hosted ? takeover.rebuilt.at(*hosted) : 0;
    std::vector<int> kept;
    std::vector<double> speeds;
    for (size_t j = 0; j < groups_[s].size(); ++j) {
      const Link& link = *links_[static_cast<size_t>(groups_[s][j])];
      if (HoldsLocked(link, takeover.step, hosted, replica_step)) {
        kept.push_back(groups_[s][j]);
        speeds.push_back(speeds_[s][j]);
        elapsed_s = std::max(elapsed_s, link.offered_elapsed_s);
        energy_j = std::max(energy_j, link.offered_energy_j);
      } else {
        members_.erase(std::find(members_.begin(), members_.end(), groups_[s][j]));
        regrouped_ = true;  // the first step goes as a replay, which carries the groups
      }
    }
    groups_[s] = std::move(kept);
    speeds_[s] = std::move(speeds);
  }
  step_ = takeover.step;
  // A stage does not say how many samples its steps had: the batches'
  // sizes say it, each epoch's last short of a batch where the batch
  // does not divide the data (core/batch_order.h).
  const int64_t per_epoch = StepsPerEpoch();
  samples_ = step_ / per_epoch * train_size_ + step_ % per_epoch * plan_.spec.data.batch_size;
  job_clock_start_ = std::min(job_clock_start_, clock_.Now() - FromSeconds(elapsed_s));
  // The job's energy as the old head last said it, if more than this head
  // knows (a checkpoint older than the stages' state, or none): a step's
  // joules short at most, those of the step the word came with.
  if (const double known = JobEnergyLocked(); energy_j > known) {
    departed_energy_j_ = std::max(0.0, departed_energy_j_) + (energy_j - known);
  }
  taken_over_ = true;
  restored_.reset();  // older than the stages' state: no stage is welcomed with it, nor rebuilt from it
  for (auto& replica : replicas_) replica.reset();
  // A stage to rebuild: its replica is its neighbour's devices' to take
  // the layers from (a replica without state, RestoreStageLocked).
  for (const auto& [lost, replica_step] : takeover.rebuilt) {
    replicas_[lost] = v1::StageReplica();
    replicas_[lost]->set_step(replica_step);
    replicas_[lost]->set_first_layer(layers_[lost].first);
    replicas_[lost]->set_end_layer(layers_[lost].second);
    Log() << "pipeline: stage " << lost + 1 << " (layers " << layers_[lost].first << "-"
          << layers_[lost].second - 1 << ") is rebuilt on stage " << NeighbourOf(lost) + 1
          << " from the replica of step " << replica_step << " its devices keep\n";
  }
}

std::optional<TimePoint> PipelineHead::JobClockStart() {
  std::lock_guard lock(mu_);
  if (!taken_over_) return std::nullopt;
  return job_clock_start_;
}

bool PipelineHead::HoldsLocked(const Link& link, int64_t at, std::optional<size_t> s, int64_t replica_step) const {
  if (!link.stream || link.offered_step <= 0) return false;
  if (link.offered_step != at && !(link.offered_pending && link.offered_step + 1 == at)) return false;
  if (!s) return true;
  const auto kept = link.offered_replicas.find(layers_[*s]);
  return kept != link.offered_replicas.end() && kept->second == replica_step;
}

std::optional<PipelineHead::Takeover> PipelineHead::TakeoverLocked() const {
  // The steps each stage can train on from: those its devices here offer.
  std::optional<std::set<int64_t>> common;
  std::vector<size_t> absent;  // stages none of whose devices is here
  for (size_t s = 0; s < groups_.size(); ++s) {
    std::set<int64_t> steps;
    for (int r : groups_[s]) {
      const Link& link = *links_[static_cast<size_t>(r)];
      if (!link.stream || link.offered_step <= 0) continue;
      steps.insert(link.offered_step);
      if (link.offered_pending) steps.insert(link.offered_step + 1);
    }
    // No device here holds its layers (none came, or only agents made again
    // that hold nothing): rebuilt from its neighbour's kept replica, if any.
    if (steps.empty()) {
      absent.push_back(s);
      continue;
    }
    if (!common) {
      common = std::move(steps);
    } else {
      std::set<int64_t> both;
      std::set_intersection(common->begin(), common->end(), steps.begin(), steps.end(), std::inserter(both, both.end()));
      common = std::move(both);
    }
  }
  if (!common || common->empty() || *common->rbegin() <= step_) return std::nullopt;
  Takeover takeover{*common->rbegin(), {}};
  // Each stage none of whose devices came: rebuilt on its neighbour, from the
  // latest replica of its layers that devices there keep (at most the step).
  for (size_t s : absent) {
    const size_t n = NeighbourOf(s);
    if (groups_.size() < 2 || std::find(absent.begin(), absent.end(), n) != absent.end()) return std::nullopt;
    // Two stages rebuilt on one neighbour: it takes one lost stage's layers a step.
    if (std::count_if(absent.begin(), absent.end(), [&](size_t a) { return NeighbourOf(a) == n; }) > 1) {
      return std::nullopt;
    }
    int64_t replica_step = 0;
    for (int r : groups_[n]) {
      const Link& link = *links_[static_cast<size_t>(r)];
      const auto kept = link.offered_replicas.find(layers_[s]);
      if (HoldsLocked(link, takeover.step) && kept != link.offered_replicas.end() && kept->second <= takeover.step) {
        replica_step = std::max(replica_step, kept->second);
      }
    }
    if (replica_step <= 0) return std::nullopt;
    takeover.rebuilt[s] = replica_step;
  }
  return takeover;
}

void PipelineHead::Rejoin() {
  {
    std::lock_guard lock(mu_);
    if (ReturningLocked().empty()) return;
  }
  // The stages' committed state, which the device takes its stage's layers from.
  auto state = StateNow();
  std::vector<std::pair<int, v1::CoordinatorMessage>> welcomes;
  {
    std::lock_guard lock(mu_);
    if (!state.ok()) {
      Log() << "pipeline: a device back waits for the next step: " << state.status().message() << "\n";
      return;
    }
    for (int r : ReturningLocked()) {
      // The stage that now holds the first of the layers it was planned with.
      const PipelineStagePlan& mine = plan_.pipeline->stages[static_cast<size_t>(*StageOfRank(*plan_.pipeline, r))];
      size_t t = 0;
      while (t + 1 < layers_.size() && layers_[t].second <= mine.first_layer) ++t;
      const auto [first, end] = layers_[t];
      const v1::StageState layers = LayersStateLocked(*state, first, end);
      v1::CoordinatorMessage welcome;
      v1::StageWelcome* w = welcome.mutable_stage_welcome();
      w->set_resume_after(step_);
      w->set_job_elapsed_seconds(JobElapsedLocked());
      // Its stage's place now (stages rebuilt on a neighbour are renumbered),
      // and its layers: the ones it was planned with, whose state the welcome
      // brings, or others, which it takes whole.
      v1::CoordinatorMessage command;
      v1::StageLayers* l = command.mutable_command()->mutable_layers();
      l->set_stage(static_cast<int32_t>(t));
      l->set_stages(static_cast<int32_t>(groups_.size()));
      l->set_first_layer(first);
      l->set_end_layer(end);
      if (mine.first_layer == first && mine.end_layer == end) {
        *w->mutable_state() = layers;
      } else {
        l->set_taken_first_layer(first);
        l->set_taken_end_layer(end);
        *l->mutable_taken() = layers;
      }
      welcomes.emplace_back(r, std::move(welcome));
      welcomes.emplace_back(r, std::move(command));
      Link& link = *links_[static_cast<size_t>(r)];
      link.stage = static_cast<int>(t);
      link.done_step = step_;
      link.done_attempt = 0;
      // It waited on the head since its hello: its silence counts from now.
      link.heard.Restart(clock_.Now());
      link.slow_steps = 0;
      link.joined_after = step_;
      pace_.Forget(r);  // whatever it went through, it is learned afresh
      groups_[t].push_back(r);
      speeds_[t].push_back(1 / plan_.workers[static_cast<size_t>(r)].slowdown);
      members_.push_back(r);
      regrouped_ = true;  // the next step goes as a replay, which carries the groups
      ++replays_.rejoined;
      regroup_due_ = true;
      // A group of one more device paces differently: measured afresh.
      if (rebalancing_.every > 0 && !last_compute_.empty()) StartMeasureLocked();
      Log() << "pipeline: rank " << r << " is back and rejoins stage " << t + 1 << " (layers " << first << "-"
            << end - 1 << ", now on " << CountOf(groups_[t].size(), "device", "devices") << ") after step " << step_ << "\n";
    }
    // The micro-batches a step is cut into, for the groups as they now are:
    // a device back kept the count planned for the stages without it, which
    // trained at a third of that plan's rate (a new user's trial).
    if (!welcomes.empty()) ReplanLocked();
  }
  SendOrLose(welcomes);
}

std::vector<int> PipelineHead::ReturningLocked() const {
  std::vector<int> back;
  if (finished_ || layer_float_at_.size() < 2) return back;  // without the layers' offsets no stage's state can be cut out
  for (const auto& link : links_) {
    if (link->stream && !link->lost && !MemberLocked(link->rank) && StageOfRank(*plan_.pipeline, link->rank).ok() &&
        clock_.Now() >= link->back_after) {
      back.push_back(link->rank);
    }
  }
  return back;
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
      return UnavailableError(LostLocked().message() + " (spec.faultTolerance.replay is off: the job fails rather than run the step again without it)");
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

void PipelineHead::StartMeasureLocked() {
  measured_from_ = step_;
  measured_since_ = clock_.Now();
  measured_step_s_ = 0;
  last_compute_.clear();
  for (const auto& link : links_) last_compute_.push_back(link->compute_s);
  window_steps_.assign(links_.size(), StepWindow());
}

bool PipelineHead::RedealLocked(const Passes& passes, const std::map<int, double>& computed) {
  bool redealt = false;
  for (size_t s = 0; s < groups_.size(); ++s) {
    const std::vector<int>& group = groups_[s];
    // A group with a device let go of or lost is regrouped before the next
    // step, and measured afresh then.
    const bool whole = std::none_of(group.begin(), group.end(), [&](int r) { return links_[r]->lost; });
    if (group.size() < 2 || !whole) continue;
    // Each device's samples a second of the stage's layers, as it computed
    // its shares in the window.
    std::vector<double> rates;
    double samples = 0, rate = 0, slowest = 0;
    for (size_t j = 0; j < group.size(); ++j) {
      const auto n = static_cast<double>(std::accumulate(passes[s][j].begin(), passes[s][j].end(), int64_t{0}));
      const auto t = computed.find(group[j]);
      if (n <= 0 || t == computed.end() || t->second <= 0) break;  // dealt nothing, or not measured: unknown
      rates.push_back(n / t->second);
      samples += n;
      rate += rates.back();
      slowest = std::max(slowest, t->second);
    }
    if (rates.size() != group.size()) continue;
    // Dealt by these rates in whole samples, as the stages deal them: what
    // the group's slowest would compute a step.
    std::vector<double> speeds;
    const double sum = std::accumulate(speeds_[s].begin(), speeds_[s].end(), 0.0);
    for (double r : rates) speeds.push_back(r * sum / rate);  // the group's speeds keep their sum
    const auto now = DealStep(plan_.spec.data.batch_size, micro_batches_, speeds_[s]);
    const auto then = DealStep(plan_.spec.data.batch_size, micro_batches_, speeds);
    std::vector<double> predicted(group.size(), 0.0);
    for (size_t j = 0; j < group.size(); ++j) {
      for (int64_t n : then[j]) predicted[j] += static_cast<double>(n) / rates[j];
    }
    const bool differs = now != then;
    const double balanced = *std::max_element(predicted.begin(), predicted.end());
    if (!differs || !(slowest > (1 + rebalancing_.min_gain) * balanced)) continue;
    // A device that would be dealt nothing would have no pace to measure
    // and stay idle in its group, though it came back to speed: it is let
    // go of as a straggler instead, and may rejoin as stragglers do.
    if (const auto idle = std::find(predicted.begin(), predicted.end(), 0.0); idle != predicted.end()) {
      const auto j = static_cast<size_t>(idle - predicted.begin());
      Link& link = *links_[static_cast<size_t>(group[j])];
      const auto fastest = static_cast<size_t>(std::max_element(rates.begin(), rates.end()) - rates.begin());
      LetGoLocked(link);
      ++replays_.stragglers;
      Log() << "pipeline: stage " << s + 1 << " (rank " << link.rank << ") computed "
            << static_cast<int64_t>(rates[j] + 0.5) << " samples/s of its layers against "
            << static_cast<int64_t>(rates[fastest] + 0.5) << " for rank " << group[fastest]
            << ", too few for a sample of a micro-batch dealt by them: let go of as a straggler, the others of its "
            << "group take its share\n";
      CutLostLocked();
      redealt = true;
      continue;
    }
    std::ostringstream said;
    for (size_t j = 0; j < group.size(); ++j) {
      said << (j ? ", " : "") << "rank " << group[j] << " " << static_cast<int64_t>(rates[j] + 0.5);
    }
    speeds_[s] = std::move(speeds);
    regrouped_ = true;  // the next step goes as a replay, which carries the speeds
    ++replays_.redealt;
    if (metrics_) metrics_->AddRepartition(RepartitionReason::kShares);
    Log() << "pipeline: stage " << s + 1 << "'s devices computed " << said.str()
          << " samples/s of its layers: its micro-batches are dealt by those from the next step, its compute "
          << "predicted " << Seconds3(balanced) << " s a step against " << Seconds3(slowest) << "\n";
    redealt = true;
  }
  return redealt;
}

void PipelineHead::MeasureStagesLocked(std::optional<int> drifted) {
  const auto steps = static_cast<double>(step_ - measured_from_);
  const double step_s = measured_step_s_ / steps;  // a step of this window, as the head saw it
  std::vector<StageMeasure> stages;
  std::map<int, double> computed;  // by rank: a step's compute in this window
  for (size_t s = 0; s < groups_.size(); ++s) {
    StageMeasure m{layers_[s].first, layers_[s].second, 0};
    // A group's devices share each micro-batch by speed: the slowest of them paces it.
    for (int r : groups_[s]) {
      // What it takes a step now: after a drift, its steps since.
      const StepWindow& window = window_steps_[static_cast<size_t>(r)];
      computed[r] = window.Now(DriftFactor());  // 0 for a device with no step in it: not judged
      m.seconds = std::max(m.seconds, computed[r]);
    }
    stages.push_back(m);
  }
  StartMeasureLocked();
  // The shares this window's steps were dealt, before any are dealt anew.
  const Passes passes = PassesLocked(plan_.spec.data.batch_size);
  // One change at a time: cuts are judged once the shares dealt anew are measured.
  if (RedealLocked(passes, computed)) return;
  // What each layout measured a step: a prediction is only a model, so
  // layouts once measured are judged by their measure, and layers never move
  // back to one that was no faster.
  const std::vector<PipelineStage> as_they_are = StagesLocked();
  std::vector<std::pair<int, int>> now;
  for (const StageMeasure& m : stages) now.emplace_back(m.first_layer, m.end_layer);
  // A window a drift ended is mostly steps from before it: its mean is not
  // this layout's pace now; and what other layouts measured was of devices
  // as they were (a board slowed and back to speed never had its first cuts
  // back, measured while it was slow; a new user's trial).
  if (drifted) {
    measured_layouts_.clear();
  } else {
    measured_layouts_[LayoutOf(as_they_are, micro_batches_)] = step_s;
  }
  auto measured_no_faster = [&](const Layout& layout) {
    const auto before = measured_layouts_.find(layout);
    return before != measured_layouts_.end() && before->second * (1 + rebalancing_.min_gain) >= step_s;
  };
  // Cuts proposed that were tried and measured no faster are not moved to.
  bool tried = false;  // and the log said so
  auto unless_tried = [&] {
    if (!proposed_) return;
    std::vector<PipelineStage> recut = as_they_are;
    for (size_t s = 0; s < recut.size(); ++s) std::tie(recut[s].first_layer, recut[s].end_layer) = proposed_->layers[s];
    if (!measured_no_faster(LayoutOf(recut, micro_batches_))) return;
    Log() << "pipeline: the stages took " << Seconds3(step_s) << " s a step; the cuts that would do better measured "
          << Seconds3(measured_layouts_[LayoutOf(recut, micro_batches_)]) << " s when tried: layers stay\n";
    proposed_.reset();
    tried = true;
  };
  const size_t layers = layer_float_at_.size() - 1;
  const bool timed = cost_model_ && problem_->layers.size() == layers;
  std::string paces;
  if (timed) {
    // The planner's cost model, each device at the pace its compute ran in
    // this window against the profile's time for its passes: it counts the
    // activations a new cut sends over its link, which compute alone does
    // not (a board slowed tenfold was given the vgg's conv1 alone, and its
    // 3.2 MB of activations a step each way over Wi-Fi kept the step where
    // it was; a new user's trial).
    // (The pace the re-plans use, learned from a device's whole part of its
    // steps over the run, moves too slowly for a drift: this is the
    // window's, of its passes alone.)
    std::map<int, double> learned;
    PipelineProblem paced = PacedProblemLocked(learned);
    std::map<int, double> drift;
    for (size_t s = 0; s < groups_.size(); ++s) {
      for (size_t j = 0; j < groups_[s].size(); ++j) {
        const int r = groups_[s][j];
        const double speed = problem_->devices[static_cast<size_t>(r)].speed;
        double profiled = 0;
        for (int64_t n : passes[s][j]) {
          profiled += cost_model_->WorkSeconds(layers_[s].first, layers_[s].second, n, r);
        }
        profiled /= speed;
        if (profiled <= 0 || computed[r] <= 0) continue;  // dealt nothing: its pace says nothing
        drift[r] = computed[r] / profiled;
        paced.devices[static_cast<size_t>(r)].speed = speed / drift[r];
      }
    }
    paces = SayPaces(drift);
    const PipelineCostModel model(paced);
    std::map<int, double> at = learned;  // each device's pace, for a layout's shares
    for (const auto& [r, pace] : drift) at[r] = pace;
    // A layout measured since the last drift faster than the stages now by
    // the least gain, over devices all still here, is laid back out: a
    // measure beats the model. (A device back had the planner lay out the
    // two stages of the plan again, predicted at 0.084 s a step; they took
    // 0.165, where the gateway alone had taken 0.095, and the model, at the
    // paces measured, still said they were the best; a new user's trial.)
    if (auto back = FastestMeasuredLocked(model, step_s)) {
      const Layout layout = LayoutOf(back->stages, back->micro_batches);
      Log() << "pipeline: the stages took " << Seconds3(step_s) << " s a step over steps " << step_ - steps + 1 << "-"
            << step_ << "; " << DescribeStagesOf(back->stages) << ", "
            << CountOf(static_cast<size_t>(back->micro_batches), "micro-batch", "micro-batches") << " a step, measured "
            << Seconds3(measured_layouts_[layout]) << " s when tried" << LeavingOut(LeftOutLocked(*back))
            << ": laid back out so before the next step\n";
      relayout_ = Relayout{std::move(*back), std::move(at), paced.transport.OrdersSeconds()};
      return;
    }
    proposed_ = RecutStages(model, as_they_are, micro_batches_, rebalancing_.min_gain);
    unless_tried();
    // The planner over the same devices at the same paces: it may regroup
    // them, and leave out one too slow for any layers its link would carry,
    // which cuts moved between the same groups never do (a board slowed
    // tenfold beside a gateway kept the vgg's conv1, its activations crossing
    // Wi-Fi each step, 0.9-1.2 s a step where the gateway alone would take
    // a few tenths; a new user's trial). Laid out when it beats the best of
    // those cuts by the least gain a move must promise: it sends every
    // layer's state. Not over a device lost since it answered the step (it
    // leaves its stage at the next): the stages are measured again without it.
    const auto kept = model.Plan(as_they_are, micro_batches_);
    std::optional<PipelinePlan> best;
    if (LostLocked().ok() && kept && kept->fits) best = PlanOverMembersLocked(paced);
    if (best && best->cost.fits) {
      const double cut_s = proposed_ ? proposed_->predicted_s : kept->step_s;
      const bool faster = best->cost.step_s * (1 + rebalancing_.min_gain) < cut_s;
      const Layout best_layout = LayoutOf(best->stages, best->micro_batches);
      const std::vector<int> left_out = LeftOutLocked(*best);
      if (faster && measured_no_faster(best_layout)) {
        Log() << "pipeline: the stages took " << Seconds3(step_s) << " s a step; the planner's layout, "
              << DescribeStagesOf(best->stages) << ", "
              << CountOf(static_cast<size_t>(best->micro_batches), "micro-batch", "micro-batches")
              << " a step, measured " << Seconds3(measured_layouts_[best_layout]) << " s when tried: the stages stay\n";
        tried = true;
      } else if (faster && !left_out.empty() && !plan_.spec.fault_tolerance.replay) {
        // A device left out may rejoin only by saying hello again, which
        // with spec.faultTolerance.replay off the head refuses.
        Log() << "pipeline: the planner's layout, " << DescribeStagesOf(best->stages) << LeavingOut(left_out)
              << ": with spec.faultTolerance.replay off no device left out could rejoin, so the stages stay\n";
        tried = true;
      } else if (faster) {
        Log() << "pipeline: the stages computed " << SayStageSeconds(stages) << " a step over steps "
              << step_ - steps + 1 << "-" << step_ << DriftNote(drifted)
              << (paces.empty() ? "" : " (each device at its pace against the profile: " + paces + ")")
              << "; the planner over these devices: " << DescribePlan(paced, *best) << ", predicted "
              << Seconds3(best->cost.step_s) << " s a step against " << Seconds3(cut_s)
              << (proposed_ ? " for the best cut between the same groups" : " as they are") << LeavingOut(left_out)
              << ": laid out before the next step\n";
        proposed_.reset();
        relayout_ = Relayout{std::move(*best), std::move(at), paced.transport.OrdersSeconds()};
        return;
      }
    }
    // Said once for these cuts, where the stages' compute came apart: why
    // layers stay.
    const auto [least, most] = std::minmax_element(stages.begin(), stages.end(), [](const auto& a, const auto& b) {
      return a.seconds < b.seconds;
    });
    const bool scored = plan_.spec.data.batch_size % micro_batches_ == 0;  // else RecutStages judges nothing
    if (!proposed_ && !tried && scored && said_stay_for_ != now &&
        most->seconds > (1 + rebalancing_.min_gain) * least->seconds) {
      said_stay_for_ = now;
      Log() << "pipeline: the stages computed " << SayStageSeconds(stages) << " a step over steps "
            << step_ - steps + 1 << "-" << step_ << DriftNote(drifted)
            << (paces.empty() ? "" : " (each device at its pace against the profile: " + paces + ")")
            << "; no other cut between the same groups that fits, nor the planner's layout of these devices, is "
            << "predicted " << static_cast<int>(rebalancing_.min_gain * 100 + 0.5)
            << "% faster, links counted: layers stay\n";
    }
  } else {
    // A layout by hand knows of its layers only their parameters: each
    // layer's share of a stage's compute is taken as its share of them.
    std::vector<double> weights;
    for (size_t l = 0; l < layers; ++l) {
      weights.push_back(std::max(static_cast<double>(layer_float_at_[l + 1] - layer_float_at_[l]), 1.0));
    }
    proposed_ = RebalanceStages(stages, weights, rebalancing_.min_gain);
    unless_tried();
  }
  if (!proposed_) return;
  Log() << "pipeline: the stages computed " << SayStageSeconds(stages) << " a step over steps " << step_ - steps + 1
        << "-" << step_ << DriftNote(drifted)
        << (paces.empty() ? "" : " (each device at its pace against the profile: " + paces + ")")
        << "; moving layers for " << Seconds3(proposed_->predicted_s)
        << (timed ? " s a step, links counted, against a predicted "
                  : " s a step at the slowest stage, computing, against ")
        << Seconds3(proposed_->now_s) << "\n";
}

PipelineHead::Layout PipelineHead::LayoutOf(std::span<const PipelineStage> stages, int micro_batches) {
  Layout layout{micro_batches, {}};
  for (const PipelineStage& stage : stages) {
    // A group is its devices whatever their order (a device back is added last).
    std::vector<int> group = stage.devices;
    std::sort(group.begin(), group.end());
    layout.second.emplace_back(stage.first_layer, stage.end_layer, std::move(group));
  }
  return layout;
}

v1::StageState PipelineHead::LayersStateLocked(const JobCheckpoint& state, int first, int end) const {
  return SliceOf(state, layer_float_at_[first], layer_float_at_[end] - layer_float_at_[first],
                 static_cast<size_t>(layer_row_at_[first]), static_cast<size_t>(layer_row_at_[end] - layer_row_at_[first]));
}

v1::StageLayers PipelineHead::WholeLayersLocked(const JobCheckpoint& state, int first, int end) const {
  v1::StageLayers whole;
  whole.set_taken_first_layer(first);
  whole.set_taken_end_layer(end);
  *whole.mutable_taken() = LayersStateLocked(state, first, end);
  return whole;
}

v1::StageReplica PipelineHead::ReplicaNowLocked(const v1::StageState& committed) const {
  // The state a stage is sent is the stage's as committed at step_: its replica too.
  v1::StageReplica replica;
  replica.set_step(step_);
  *replica.mutable_state() = committed;
  return replica;
}

StageShapes::value_type PipelineHead::ShapesOfLayers(int first, int end) const {
  StageShapes::value_type shapes;
  for (int l = first; l < end; ++l) {
    shapes.insert(shapes.end(), rebalancing_.layer_shapes[l].begin(), rebalancing_.layer_shapes[l].end());
  }
  return shapes;
}

bool PipelineHead::FitsLayersLocked(const JobCheckpoint& state) const {
  // Moments are empty for an optimizer without them (plain SGD).
  auto fits = [&](const std::vector<float>& moment) {
    return moment.empty() || moment.size() == state.parameters.size();
  };
  return layer_float_at_.back() == static_cast<int64_t>(state.parameters.size()) && fits(state.optimizer.first) &&
         fits(state.optimizer.second) && layer_row_at_.back() == static_cast<int64_t>(state.optimizer.steps.size());
}

void PipelineHead::MoveLayersLocked(const JobCheckpoint& state) {
  if (!FitsLayersLocked(state)) {
    Log() << "pipeline: layers stay where they are: the stages' state is not the layers' the head was given\n";
    return;
  }
  const std::string was = CutsSaidLocked(layers_);
  for (size_t s = 0; s < groups_.size(); ++s) {
    const auto [first, end] = proposed_->layers[s];
    if (std::pair{first, end} == layers_[s]) continue;
    for (int r : groups_[s]) {
      RelearnPassesLocked(*links_[static_cast<size_t>(r)]);
      CarryPaceLocked(r, layers_[s], {first, end});
    }
    taken_[s] = WholeLayersLocked(state, first, end);
    replicas_[s] = ReplicaNowLocked(taken_[s]->taken());
    layers_[s] = {first, end};
    shapes_[s] = ShapesOfLayers(first, end);
  }
  relaid_ = true;
  regrouped_ = true;  // the next step goes as a replay, which carries the layers
  ++replays_.repartitions;
  if (metrics_) metrics_->AddRepartition(RepartitionReason::kImbalance);
  // The next measurement starts afresh, on the layers as they now are,
  // after the step that carries them: the stages' rebuild is not their pace.
  last_compute_.clear();
  Log() << "pipeline: layers moved at step " << step_ << ": " << was << " now " << CutsSaidLocked(layers_)
        << ", predicted " << Seconds3(proposed_->predicted_s) << " s a step against " << Seconds3(proposed_->now_s)
        << ", as proposed above\n";
}

void PipelineHead::RegroupByThePlanner() {
  std::optional<Relayout> better;
  {
    std::lock_guard lock(mu_);
    if (!regroup_due_) return;
    regroup_due_ = false;
    better = BetterPlanLocked();
  }
  if (!better) return;
  // The stages' committed state, which every device takes its new layers from.
  auto state = StateNow();
  std::lock_guard lock(mu_);
  if (!state.ok()) {
    Log() << "pipeline: the stages stay as they are this step: " << state.status().message() << "\n";
    regroup_due_ = true;
    return;
  }
  // A device lost meanwhile (the fetch lets go of one lost between steps):
  // the plan was of devices that are no longer all there. The step replays
  // without it, and the planner runs again after.
  if (!AllThereLocked(better->plan)) {
    Log() << "pipeline: the stages stay as they are this step: a device was lost while the planner ran\n";
    regroup_due_ = true;
    return;
  }
  LayOutLocked(*better, *state);
}

std::optional<PipelinePlan> PipelineHead::FastestMeasuredLocked(const PipelineCostModel& model, double now_s) const {
  std::optional<PipelinePlan> fastest;
  double fastest_s = 0;
  for (const auto& [layout, measured_s] : measured_layouts_) {
    if (!(measured_s * (1 + rebalancing_.min_gain) < now_s) || (fastest && measured_s >= fastest_s)) continue;
    PipelinePlan plan;
    plan.micro_batches = layout.first;
    for (const auto& [first, end, group] : layout.second) plan.stages.push_back({first, end, group});
    if (!AllThereLocked(plan)) continue;  // of a device lost or let go of since
    // One that leaves a device out, which with replay off could not rejoin.
    if (!plan_.spec.fault_tolerance.replay && !LeftOutLocked(plan).empty()) continue;
    const auto cost = model.Plan(plan.stages, plan.micro_batches);
    if (!cost || !cost->fits) continue;
    plan.micro_batch_size = plan_.spec.data.batch_size / plan.micro_batches;
    plan.cost = *cost;
    fastest = std::move(plan);
    fastest_s = measured_s;
  }
  return fastest;
}

std::vector<int> PipelineHead::LeftOutLocked(const PipelinePlan& plan) const {
  std::vector<int> out;
  for (int r : members_) {
    const bool used = std::any_of(plan.stages.begin(), plan.stages.end(), [&](const PipelineStage& stage) {
      return std::find(stage.devices.begin(), stage.devices.end(), r) != stage.devices.end();
    });
    if (!used) out.push_back(r);
  }
  return out;
}

bool PipelineHead::AllThereLocked(const PipelinePlan& plan) const {
  const bool all_there = std::all_of(plan.stages.begin(), plan.stages.end(), [&](const PipelineStage& stage) {
    return std::all_of(stage.devices.begin(), stage.devices.end(),
                       [&](int r) { return MemberLocked(r) && !links_[static_cast<size_t>(r)]->lost; });
  });
  return all_there && LostLocked().ok();
}

std::optional<PipelinePlan> PipelineHead::PlanOverMembersLocked(const PipelineProblem& problem) {
  // The same problem over the members alone: the planner numbers them from 0.
  PipelineProblem left = problem;
  left.devices.clear();
  std::vector<int> ranks;
  for (int r : members_) {
    left.devices.push_back(problem.devices[static_cast<size_t>(r)]);
    ranks.push_back(r);
  }
  auto verdict = PlanPipeline(left, {.one_device_per_stage = plan_.spec.parallelism.mode == ParallelismMode::kPipeline});
  if (!verdict.ok()) {
    Log() << "pipeline: the planner has no plan over the devices in the stages: " << verdict.status().message() << "\n";
    return std::nullopt;
  }
  PipelinePlan best = std::move(verdict->plan);
  for (PipelineStage& stage : best.stages) {
    for (int& d : stage.devices) d = ranks[static_cast<size_t>(d)];
  }
  return best;
}

std::optional<PipelineHead::Relayout> PipelineHead::BetterPlanLocked() {
  if (!problem_ || rebalancing_.every <= 0 || layer_float_at_.size() < 2) return std::nullopt;
  std::map<int, double> learned;
  const PipelineProblem problem = PacedProblemLocked(learned);
  const std::string paces = SayPaces(learned);
  std::optional<PipelinePlan> found = PlanOverMembersLocked(problem);
  if (!found) return std::nullopt;
  PipelinePlan best = std::move(*found);
  const PipelinePlan as_they_are = AtBestMicroBatches(problem, StagesLocked());
  // A re-plan costs every layer's state sent out once; one inside the
  // cost model's error would move the layers for nothing.
  const bool faster = best.cost.samples_per_s > (1 + rebalancing_.min_gain) * as_they_are.cost.samples_per_s;
  // A plan that leaves a device out is not laid out here: a device just
  // back is planned at its profile's speed, unmeasured, and one planned at a
  // pace learned over the whole run is not judged on a fresh measure. (A
  // board back to speed, planned at its profile's, had the gateway it was
  // as fast as let go of in its favour; a new user's trial.) The next
  // measurement's layout, on the paces measured, may leave one out.
  const bool everyone = LeftOutLocked(best).empty();
  std::string said = ": laid out so";
  if (!faster) {
    said = ", not " + std::to_string(static_cast<int>(rebalancing_.min_gain * 100 + 0.5)) + "% more: they stay";
  } else if (!everyone) {
    said = ", but it leaves devices out, which the next measurement judges: they stay";
  }
  Log() << "pipeline: the planner over the devices left (" << members_.size() << "): " << DescribePlan(problem, best)
        << "; predicted " << static_cast<int64_t>(best.cost.samples_per_s + 0.5) << " samples/s against "
        << static_cast<int64_t>(as_they_are.cost.samples_per_s + 0.5) << " for the stages as they are" << said
        << (!paces.empty() ? " (each device at its pace in the run's steps: " + paces + ")" : std::string()) << "\n";
  if (!faster || !everyone) return std::nullopt;
  return Relayout{std::move(best), std::move(learned), problem.transport.OrdersSeconds()};
}

void PipelineHead::LayOutLocked(const Relayout& relayout, const JobCheckpoint& state) {
  const PipelinePlan& plan = relayout.plan;
  const std::map<int, double>& paces = relayout.paces;
  if (!FitsLayersLocked(state)) {
    Log() << "pipeline: the stages stay as they are: the stages' state is not the layers' the head was given\n";
    return;
  }
  // A member in no stage of the plan would sit idle, its batches and steps
  // falling behind the job's: it is let go of as a straggler, its stream
  // cut, and may rejoin as stragglers do, measured again then.
  for (int r : LeftOutLocked(plan)) {
    Link& link = *links_[static_cast<size_t>(r)];
    Log() << "pipeline: stage " << link.stage + 1 << " (rank " << r << ") is in no stage of the new layout: let go "
          << "of, as a straggler is\n";
    LetGoLocked(link);
    ++replays_.left_out;
  }
  CutLostLocked();
  std::vector<std::vector<int>> groups;
  std::vector<std::vector<double>> speeds;
  std::vector<std::pair<int, int>> layers;
  StageShapes shapes;
  std::vector<std::optional<v1::StageReplica>> replicas;
  std::vector<std::optional<v1::StageLayers>> taken;
  std::vector<int> members;
  for (const PipelineStage& stage : plan.stages) {
    const int first = stage.first_layer, end = stage.end_layer;
    groups.push_back(stage.devices);
    speeds.emplace_back();
    for (int r : stage.devices) {
      RelearnPassesLocked(*links_[static_cast<size_t>(r)]);
      // Dealt as the planner planned it: each device at the pace it was planned at.
      const auto found = paces.find(r);
      const double pace = found != paces.end() && found->second > 0 ? found->second : 1;
      speeds.back().push_back(1 / (plan_.workers[static_cast<size_t>(r)].slowdown * pace));
      links_[static_cast<size_t>(r)]->stage = static_cast<int>(groups.size() - 1);
      members.push_back(r);
    }
    layers.emplace_back(first, end);
    shapes.push_back(ShapesOfLayers(first, end));
    // Every device of the stage is sent its layers whole: one that had
    // them keeps its own, the same as committed.
    taken.push_back(WholeLayersLocked(state, first, end));
    replicas.push_back(ReplicaNowLocked(taken.back()->taken()));
  }
  const std::string was = DescribeStagesLocked();
  members_ = std::move(members);
  groups_ = std::move(groups);
  speeds_ = std::move(speeds);
  layers_ = std::move(layers);
  shapes_ = std::move(shapes);
  replicas_ = std::move(replicas);
  taken_ = std::move(taken);
  micro_batches_ = plan.micro_batches;
  replays_.replanned_micro_batches = plan.micro_batches;
  replays_.replanned_samples_per_s = plan.cost.samples_per_s;
  replays_.replanned_orders_s = relayout.orders_s;
  replays_.replanned_paces.clear();
  for (int r : members_) {
    if (const auto found = paces.find(r); found != paces.end()) replays_.replanned_paces[r] = found->second;
  }
  relaid_ = true;
  regrouped_ = true;  // the next step goes as a replay, which carries the groups and layers
  ++replays_.repartitions;
  if (metrics_) metrics_->AddRepartition(RepartitionReason::kReplan);
  // Cuts proposed were of stages that are no more.
  proposed_.reset();
  last_compute_.clear();  // measured afresh after the step that carries the new layout
  Log() << "pipeline: stages laid out anew after step " << step_ << ": " << was << " now " << DescribeStagesLocked()
        << ", " << CountOf(static_cast<size_t>(micro_batches_), "micro-batch", "micro-batches") << " a step\n";
}

std::string PipelineHead::CutsSaidLocked(const std::vector<std::pair<int, int>>& cuts) const {
  std::ostringstream out, names;
  const bool named = problem_ && problem_->layers.size() + 1 == layer_float_at_.size();
  for (size_t s = 0; s < cuts.size(); ++s) {
    out << (s ? " | " : "") << cuts[s].first << "-" << cuts[s].second - 1;
    if (named) names << (s ? " | " : "") << StageLayerNames(*problem_, {cuts[s].first, cuts[s].second, {}});
  }
  if (named) out << " (" << names.str() << ")";
  return out.str();
}

std::string PipelineHead::DescribeStagesLocked() const { return DescribeStagesOf(StagesLocked()); }

JobProgress PipelineHead::Progress() {
  std::lock_guard lock(mu_);
  JobProgress p;
  p.state = JobState::kTraining;
  p.iteration = step_;
  p.samples = samples_;
  p.epoch = static_cast<int>(samples_ / std::max<int64_t>(1, train_size_));
  p.loss = std::max(0.0, smoothed_loss_);
  p.replays = replays_;
  // Every device the plan gave a stage: those in no stage now (lost, let go
  // of, or not yet back) as not active, their figures where they stopped, as
  // a team's counted-out workers are; a dashboard could not tell a lost
  // device from one never planned (a new user's trial). One the plan left
  // out from the start has no agent, and is not listed.
  for (const auto& link : links_) {
    const int r = link->rank;
    if (!StageOfRank(*plan_.pipeline, r).ok()) continue;
    const bool member = MemberLocked(r);
    WorkerProgress w;
    w.rank = link->rank;
    w.batch_size = link->batch_share > 0 ? link->batch_share : plan_.spec.data.batch_size;
    w.iteration = link->done_step;
    w.samples = link->samples;
    w.active = member && link->stream != nullptr && !link->lost;  // a device lost is out before the next step lets it go
    // Out: how long since it was last heard from, as a team's worker out of
    // it (a lost device showed 0 for minutes: a new user's trial).
    if (!w.active && link->heard.last_arrival() != TimePoint{}) {
      w.silent_s = ToSeconds(clock_.Now() - link->heard.last_arrival());
    }
    w.compute_s = link->compute_s;
    // A stage's stall is its bubbles: waiting in a step for a neighbour.
    w.stall_s = link->idle_s;
    w.wall_s = link->compute_s + link->idle_s;
    w.stall_fraction = w.wall_s > 0 ? w.stall_s / w.wall_s : 0;
    if (member) w.layers = layers_[static_cast<size_t>(link->stage)];
    w.bytes_sent = link->bytes_up;
    w.bytes_received = link->bytes_down;
    w.energy_joules = link->energy_j;
    if (pace_.Learned(r)) w.pace = pace_.Of(r);
    p.workers.push_back(w);
  }
  p.energy_joules = JobEnergyLocked();
  p.departed_bytes_sent = departed_bytes_sent_;
  p.departed_bytes_received = departed_bytes_received_;
  return p;
}

double PipelineHead::JobEnergyLocked() const {
  double energy_j = std::max(0.0, departed_energy_j_);
  for (const auto& link : links_) energy_j += link->energy_j;
  return energy_j;
}

StatusOr<JobCheckpoint> PipelineHead::FetchState() {
  std::vector<Link*> speakers;
  std::unique_lock lock(mu_);
  for (;;) {
    // A device lost between steps leaves its stage's others to speak for it.
    if (!LostLocked().ok()) EDGETRAIN_RETURN_IF_ERROR(RegroupLocked());
    if (relaid_) {
      // A stage rebuilt on its neighbour: its layers are there before they are asked for.
      const auto commands = LayersCommandsLocked();
      relaid_ = false;
      for (auto& t : taken_) t.reset();
      lock.unlock();
      SendOrLose(commands);
      lock.lock();
      continue;  // a device lost meanwhile is looked at again
    }
    // A group's devices step alike: each stage's first speaks for it.
    speakers.clear();
    for (const auto& group : groups_) speakers.push_back(links_[group.front()].get());
    for (Link* link : speakers) link->state.reset();
    v1::CoordinatorMessage ask;
    ask.mutable_command()->set_send_state(++state_request_);
    std::vector<std::pair<int, v1::CoordinatorMessage>> asks;
    for (Link* link : speakers) asks.emplace_back(link->rank, ask);
    lock.unlock();
    SendOrLose(asks);
    lock.lock();
    auto all_sent = [&] {
      return std::all_of(speakers.begin(), speakers.end(), [](const Link* l) { return l->state.has_value(); });
    };
    for (;;) {
      const TimePoint next_deadline = LoseSilentLocked([&](const Link& l) {
        return !l.state && std::find(speakers.begin(), speakers.end(), &l) != speakers.end();
      });
      if (changed_.WaitUntil(lock, next_deadline, [&] { return !LostLocked().ok() || all_sent(); })) break;
    }
    CutLostLocked();
    if (LostLocked().ok()) break;
  }
  JobCheckpoint whole;
  // Read under the lock: Serve writes a link's state.
  for (const Link* link : speakers) {
    EDGETRAIN_RETURN_IF_ERROR(AppendFloats(link->state->parameters(), whole.parameters));
    EDGETRAIN_RETURN_IF_ERROR(AppendFloats(link->state->first_moment(), whole.optimizer.first));
    EDGETRAIN_RETURN_IF_ERROR(AppendFloats(link->state->second_moment(), whole.optimizer.second));
    whole.optimizer.steps.insert(whole.optimizer.steps.end(), link->state->row_steps().begin(),
                                 link->state->row_steps().end());
  }
  if (whole.parameters.size() != model_.Parameters().size()) {
    return InternalError("the stages hold " + std::to_string(whole.parameters.size()) + " parameters, the model " +
                         std::to_string(model_.Parameters().size()));
  }
  return whole;
}

StatusOr<JobCheckpoint> PipelineHead::StateNow() {
  if (fetched_ && fetched_step_ == step_) return *fetched_;
  {
    // The next step's period holds this fetch (and an evaluation, a
    // checkpoint or layers moved with it): not the orders' to learn from.
    std::lock_guard lock(mu_);
    last_word_at_.reset();
  }
  EDGETRAIN_ASSIGN_OR_RETURN(JobCheckpoint state, FetchState());
  fetched_ = state;
  fetched_step_ = step_;
  return state;
}

std::optional<double> PipelineHead::EvaluationGuess() const {
  // The whole model forward over the test set, at this machine's speed (the
  // head evaluates as it was profiled, not slowed as a device). Its stages'
  // weights fetched first are not counted: milliseconds on these links.
  if (!plan_.pipeline || !plan_.pipeline->planned_from) return std::nullopt;
  double forward_s = 0;
  for (const LayerCost& layer : plan_.pipeline->planned_from->layers) forward_s += layer.forward_s;
  if (forward_s <= 0) return std::nullopt;
  return forward_s * static_cast<double>(test_.size());
}

StatusOr<double> PipelineHead::Evaluate() {
  // Once finished the stages are gone, and the head's model is the final one.
  if (!final_) {
    EDGETRAIN_ASSIGN_OR_RETURN(JobCheckpoint state, StateNow());
    std::copy(state.parameters.begin(), state.parameters.end(), model_.Parameters().begin());
  }
  // The final model's too: Finish gave the head the stages' last weights.
  EDGETRAIN_RETURN_IF_ERROR(settled_.For(model_));
  EDGETRAIN_ASSIGN_OR_RETURN(Evaluation e, model_.Evaluate(test_));
  EDGETRAIN_RETURN_IF_ERROR(FiniteEvaluation(e.loss));
  return e.accuracy;
}

void PipelineHead::Snapshot(JobCheckpoint& into) {
  into.parameter_shapes = model_.ParameterShapes();
  {
    // Each device's totals over every run so far, for a resumed run to go on from.
    std::lock_guard lock(mu_);
    into.departed_bytes_sent = departed_bytes_sent_;
    into.departed_bytes_received = departed_bytes_received_;
    into.workers.clear();
    for (const auto& link : links_) {
      WorkerTotals t;
      t.iteration = link->done_step;
      t.compute_s = link->compute_s;
      t.stall_s = link->idle_s;
      t.wall_s = link->compute_s + link->idle_s;
      t.bytes_sent = link->bytes_up;
      t.bytes_received = link->bytes_down;
      t.energy_j = link->energy_j;
      t.samples = link->samples;
      if (static_cast<size_t>(link->rank) < plan_.workers.size()) {
        t.node = plan_.workers[static_cast<size_t>(link->rank)].node;
      }
      into.workers.push_back(t);
    }
  }
  if (final_) {
    into.parameters = final_->parameters;
    into.optimizer = final_->optimizer;
    return;
  }
  auto state = StateNow();
  if (!state.ok() && fetched_) {
    // The stages' state as last fetched, optimizer and all, so that the
    // checkpoint still resumes (parameters alone would be refused).
    Log() << "pipeline: the checkpoint keeps the stages' state of step " << fetched_step_ << ": "
         << state.status().message() << "\n";
    state = *fetched_;
  }
  if (!state.ok()) {
    Log() << "pipeline: the checkpoint keeps the model as last fetched: " << state.status().message() << "\n";
    std::span<const float> params = model_.Parameters();
    into.parameters.assign(params.begin(), params.end());
    return;
  }
  into.parameters = std::move(state->parameters);
  into.optimizer = std::move(state->optimizer);
}

void PipelineHead::Finish(FinalModel final) {
  // The stages' state, fetched once more before they are told to stop: the
  // driver evaluates and checkpoints the final model after this. Stages never
  // welcomed (the job stopped while they gathered) hold nothing to fetch.
  bool welcomed;
  {
    std::lock_guard lock(mu_);
    welcomed = welcomed_;
  }
  StatusOr<JobCheckpoint> state =
      welcomed ? StateNow() : StatusOr<JobCheckpoint>(CancelledError("the job stopped before the stages were welcomed"));
  if (!state.ok() && fetched_) {
    // The stages' state as last fetched, optimizer and all, so that its
    // checkpoint still resumes (parameters alone would be refused).
    Log() << "pipeline: the final model is the stages' of step " << fetched_step_ << ": " << state.status().message()
          << "\n";
    std::copy(fetched_->parameters.begin(), fetched_->parameters.end(), model_.Parameters().begin());
    state = *fetched_;
  } else if (!state.ok()) {
    Log() << "pipeline: the stages' state was never fetched, and the final model is the one the head started "
          << "from: " << state.status().message() << "\n";
    state = JobCheckpoint{};
    std::span<const float> params = model_.Parameters();
    state->parameters.assign(params.begin(), params.end());
  } else if (final == FinalModel::kCurrent) {
    std::copy(state->parameters.begin(), state->parameters.end(), model_.Parameters().begin());
  } else {
    // The last evaluated model, which reached the target, is the one kept.
    std::span<const float> params = model_.Parameters();
    state->parameters.assign(params.begin(), params.end());
  }
  final_ = std::move(*state);
  {
    std::lock_guard lock(mu_);
    finished_ = true;
  }
  EndRelays();
  v1::CoordinatorMessage stop;
  stop.mutable_stop()->set_reason("the job is over");
  // Members, and devices back that a step has not taken in yet.
  std::vector<int> connected;
  {
    std::lock_guard lock(mu_);
    for (const auto& link : links_) {
      if (link->stream) connected.push_back(link->rank);
    }
  }
  for (int r : connected) (void)SendTo(r, stop);
}

// Settled here too: an interrupted run saves weights it did not evaluate
// (Finish gave them), whose statistics were another model's (found in
// review); weights just evaluated are not settled again.
Status PipelineHead::SaveModel(const std::string& path) {
  EDGETRAIN_RETURN_IF_ERROR(settled_.For(model_));
  return model_.SaveModel(path);
}

}  // namespace edgetrain::agent

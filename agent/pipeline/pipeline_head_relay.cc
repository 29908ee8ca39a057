// The pipeline head's side of each device's stream (pipeline_head.h): what
// a device says is read here on its own thread, its micro-batches passed on
// to the next stage or back to the one before, a group's gradients summed,
// and its replicas kept and relayed to the devices that keep copies.

#include "agent/pipeline/pipeline_head.h"

#include <algorithm>

#include "agent/pipeline/replica_parts.h"
#include "agent/pipeline/wire_floats.h"
#include "core/arrival_deadline.h"
#include "core/batch_order.h"
#include "core/duration_text.h"
#include "core/pass_deadline.h"
#include "core/peer_figures.h"
#include "core/row_layout.h"

namespace edgetrain::agent {

Status PipelineHead::Serve(const v1::Hello& hello, WorkerStream& stream) {
  const int rank = hello.rank();
  Link& link = *links_[rank];
  {
    std::lock_guard lock(mu_);
    // Two hellos of one rank may both pass Admit before either is served:
    // the second is refused here, where the first took the rank (found in
    // review: the first's end marked the rank lost under the second).
    if (link.stream) {
      return UnavailableError("rank " + std::to_string(rank) + " is already here: try again");
    }
    link.stream = &stream;
    link.lost = false;
    // A new session: what an earlier one announced is not on its way.
    link.announced_bytes = 0;
    link.transfer_until = TimePoint{};
    // Silent is silent past the gaps it has shown, and never under four of
    // its heartbeats; a stage that sends none is judged by the grace alone.
    // Within the longest duration counted, so that four of them and twice
    // that do not overflow a Duration (a hello of 1e10 s did, by reading).
    const double heartbeat_s = Measure(hello.heartbeat_seconds(), kLongestSeconds);
    link.silent_floor = heartbeat_s > 0 ? 4 * FromSeconds(heartbeat_s) : plan_.spec.fault_tolerance.ReachGrace();
    link.heard = ArrivalDeadline(plan_.spec.fault_tolerance.ReachGrace(), link.silent_floor);
    link.heard.Restart(clock_.Now());
    link.offered_step = hello.model_clock();
    link.offered_pending = hello.stage_step_pending();
    link.offered_elapsed_s = Measure(hello.job_elapsed_seconds(), kLongestSeconds);
    link.offered_energy_j = Measure(hello.job_energy_joules(), kMostJoules);
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
      ended = Relay(rank, forward,
                    forward ? std::move(*message->mutable_forward()) : std::move(*message->mutable_backward()));
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
      // The device's time counts whatever attempt it was spent on. Its
      // figures as the data-parallel coordinator takes a worker's
      // (core/peer_figures.h): a NaN energy never reached an energy budget.
      link.compute_s += Measure(d.compute_seconds(), kLongestSeconds);
      link.idle_s += Measure(d.idle_seconds(), kLongestSeconds);
      link.energy_j += Measure(d.energy_joules(), kMostJoules);
      link.passes.Observed(Measure(d.longest_pass_seconds(), kLongestSeconds));
      if (metrics_) metrics_->SetStageSeconds(rank, link.stage, link.compute_s, link.idle_s);
      if (d.attempt() != attempt_) continue;  // of an attempt given up
      link.done_step = d.step();
      link.done_attempt = d.attempt();
      link.done_at = clock_.Now();
      link.held_s = Measure(d.held_seconds(), kLongestSeconds);
      link.work_s = Measure(d.work_seconds(), kLongestSeconds);
      link.loss_sum = d.loss_sum();  // a NaN is the step's, which FiniteStep stops on
      link.step_samples = Count(d.samples(), plan_.spec.data.batch_size);  // of the step the head dealt
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
    // Filed by index in the neighbour's inbox until taken: one past the
    // step's micro-batches is never taken, and a stage sending such would
    // grow its neighbour's memory a message at a time (a security review).
    if (part.micro_batch() < 0 || part.micro_batch() >= micro_batches_) {
      return FailedPreconditionError("stage " + std::to_string(stage + 1) + " sent micro-batch " +
                                     std::to_string(part.micro_batch()) + " of a step of " +
                                     std::to_string(micro_batches_));
    }
    // Summed and dealt out by it, a negative count became negative shares,
    // sent on to stages that sized their labels by them (found in review).
    if (part.samples() < 0) {
      return FailedPreconditionError("stage " + std::to_string(stage + 1) + " sent a micro-batch of " +
                                     std::to_string(part.samples()) + " samples");
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
    if (Status sent = SendTo(targets[j], relayed, rank); !sent.ok()) {
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
    // Looked for once, not a count a slot.
    std::vector<size_t> sorted = slots;
    std::sort(sorted.begin(), sorted.end());
    const bool named_twice = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
    for (size_t j : slots) {
      // The head covers a device only while its gradient is not in: a
      // second gradient of the same shares would leave another slot empty,
      // and the group waiting for it for ever. Its sender is lost instead.
      // So is one naming the same shares twice in one message, which had
      // left them out of the sum unsaid (found in review).
      if (parts.gradients[j] || named_twice) {
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
  // A send to another of the group is on the sender's behalf; one to the
  // sender itself is not: waiting on its own link, it is judged by its own
  // silence (found in review).
  for (int r : group) (void)SendTo(r, sum, r != rank ? std::optional<int>(rank) : std::nullopt);
  return Status::Ok();
}

void PipelineHead::HeardLocked(Link& link, const v1::WorkerMessage& message) {
  const TimePoint now = clock_.Now();
  link.bytes_up += static_cast<int64_t>(message.ByteSizeLong());
  link.heard.Arrived(now);  // alive, whatever it sent
  // A pass is under way as long as its heartbeats say so; whatever else it
  // sends, a pass ended before it.
  const bool idle_word = message.has_heartbeat() && message.heartbeat().next_bytes() == 0;
  // Figures off the wire are held within the longest duration the project
  // takes, as the data-parallel coordinator holds its workers': saturated, a
  // huge one overflowed the clock's arithmetic below (found in review).
  const double longest_s = ToSeconds(kLongestDuration);
  if (idle_word && message.heartbeat().busy_seconds() > 0) {
    link.busy_since = now - FromSeconds(std::min(message.heartbeat().busy_seconds(), longest_s));
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
    const Duration wire =
        rate > 0 ? FromSeconds(std::min(2 * static_cast<double>(link.announced_bytes) / rate, longest_s))
                                   : plan_.spec.fault_tolerance.ReachGrace();
    link.transfer_until = now + wire + link.heard.Deadline();
  }
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

}  // namespace edgetrain::agent

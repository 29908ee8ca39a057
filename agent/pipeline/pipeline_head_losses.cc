// How the pipeline head (pipeline_head.h) finds a device lost — its stream
// ended, a pass hung, a silence past its deadline, a straggler let go of —
// and what it does then: the lost one's share covered by the others of its
// group, or its stage rebuilt on a neighbour from its replica, and the step
// replayed on the stages as they now are.

#include "agent/pipeline/pipeline_head.h"

#include <algorithm>
#include <iomanip>
#include <set>

#include "agent/pipeline/wire_floats.h"
#include "core/arrival_deadline.h"
#include "core/batch_order.h"
#include "core/number_text.h"
#include "core/pass_deadline.h"
#include "core/pipeline_planner.h"
#include "core/pipeline_words.h"

namespace edgetrain::agent {

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
    // Its messages wait to be read while the head forwards one of them to a
    // device slow to take it: that one is judged, by its own silence, not
    // this one (woken when the forward ends).
    if (link.forwarding > 0) continue;
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
    const bool alone = LiveInStageLocked(link.stage) == 1;
    const Duration allowed =
        std::max({link.heard.Deadline(), alone ? 2 * link.silent_floor : Duration::zero(), loss_cost});
    // Silent since it was last heard, or since the head last waited on
    // another's link with its messages unread, whichever is later.
    const TimePoint heard_at = std::max(link.heard.last_arrival(), link.forwarded_at);
    if (!link.heard.Overdue(now) || now - heard_at <= allowed) {
      next = std::min(next, heard_at + allowed + std::chrono::milliseconds(1));
      continue;
    }
    link.lost = true;
    link.lost_at = heard_at;
    Log() << "pipeline: stage " << link.stage + 1 << " (rank " << r << ") silent for "
          << ToSeconds(now - heard_at) << " s in step " << step_ + 1 << ", past its deadline of "
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

int PipelineHead::LiveInStageLocked(int stage) const {
  const auto& group = groups_[static_cast<size_t>(stage)];
  return static_cast<int>(std::count_if(group.begin(), group.end(), [&](int r) { return !links_[r]->lost; }));
}

Duration PipelineHead::LossCostLocked(const Link& link) const {
  const auto s = static_cast<size_t>(link.stage);
  // One of a group whose others are here: they hold its layers, and its loss
  // costs a step replayed. The last of a group that lost the others mid-step
  // (its cover) is its stage's only device, and judged as one: it had a
  // group's second of silence, and the job ended for want of it (found in
  // review).
  if (LiveInStageLocked(link.stage) > 1) return Duration::zero();
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
            << "fastest, for the speeds the shares are dealt by, "
            << (far ? "in its last step" : "in two steps running")
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
    const auto in = [&](size_t m) {
      return parts != gradients_.end() && m < parts->second.gradients.size() && parts->second.gradients[m].has_value();
    };
    // Its own gradient, and that of each device it covers: one that had sent
    // its own and was lost covering another had been taken for one with all
    // it owed in, the other's shares lost with it unsaid, and the step waited
    // for them for ever (found in review).
    bool owes_a_cover = false;
    for (size_t m = 0; m < group.size(); ++m) owes_a_cover |= covers_.CoverOf(group[m]) == r && !in(m);
    const bool sent_all = covers_.WasSummed(static_cast<int>(s)) || (in(member) && !owes_a_cover);
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
        << CountOf(static_cast<size_t>(plan.micro_batches), "micro-batch", "micro-batches") << " of "
        << plan.micro_batch_size << " (were " << micro_batches_ << "), predicted "
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

}  // namespace edgetrain::agent

// A pipeline head (pipeline_head.h) that starts behind its stages trains on
// from what they hold, and devices lost and back rejoin a stage between
// steps.

#include "agent/pipeline/pipeline_head.h"

#include <algorithm>
#include <iterator>
#include <set>

#include "core/number_text.h"

namespace edgetrain::agent {

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
      std::set_intersection(common->begin(), common->end(), steps.begin(), steps.end(),
                            std::inserter(both, both.end()));
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
            << end - 1 << ", now on " << CountOf(groups_[t].size(), "device", "devices") << ") after step " << step_
            << "\n";
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
  // Without the layers' offsets no stage's state can be cut out.
  if (finished_ || layer_float_at_.size() < 2) return back;
  for (const auto& link : links_) {
    if (link->stream && !link->lost && !MemberLocked(link->rank) && StageOfRank(*plan_.pipeline, link->rank).ok() &&
        clock_.Now() >= link->back_after) {
      back.push_back(link->rank);
    }
  }
  return back;
}

}  // namespace edgetrain::agent

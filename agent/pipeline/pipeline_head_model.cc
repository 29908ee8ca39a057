// The whole model as the pipeline head (pipeline_head.h) sees it: fetched
// from the stages and joined for evaluations, checkpoints and the final
// model; sliced for a stage that takes layers; and the job's progress.

#include "agent/pipeline/pipeline_head.h"

#include <algorithm>

#include "agent/pipeline/wire_floats.h"
#include "core/finite_step.h"

namespace edgetrain::agent {

v1::StageState PipelineHead::SliceOf(const JobCheckpoint& whole, int64_t float_at, int64_t floats, size_t row_at,
                                     size_t rows) {
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

v1::StageState PipelineHead::LayersStateLocked(const JobCheckpoint& state, int first, int end) const {
  return SliceOf(state, layer_float_at_[first], layer_float_at_[end] - layer_float_at_[first],
                 static_cast<size_t>(layer_row_at_[first]),
                 static_cast<size_t>(layer_row_at_[end] - layer_row_at_[first]));
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
    w.batch_size = link->batch_share.value_or(plan_.spec.data.batch_size);
    w.iteration = link->done_step;
    w.samples = link->samples;
    // A device lost is out before the next step lets it go.
    w.active = member && link->stream != nullptr && !link->lost;
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

Status PipelineHead::Finish(FinalModel final) {
  // The stages' state, fetched once more before they are told to stop: the
  // driver evaluates and checkpoints the final model after this. Stages never
  // welcomed (the job stopped while they gathered) hold nothing to fetch.
  bool welcomed;
  {
    std::lock_guard lock(mu_);
    welcomed = welcomed_;
  }
  StatusOr<JobCheckpoint> state =
      welcomed ? StateNow()
               : StatusOr<JobCheckpoint>(CancelledError("the job stopped before the stages were welcomed"));
  Status failed = Status::Ok();
  if (!state.ok() && fetched_) {
    // The stages' state as last fetched, optimizer and all, so that its
    // checkpoint still resumes (parameters alone would be refused).
    Log() << "pipeline: the final model is the stages' of step " << fetched_step_ << ": " << state.status().message()
          << "\n";
    std::copy(fetched_->parameters.begin(), fetched_->parameters.end(), model_.Parameters().begin());
    state = *fetched_;
  } else if (!state.ok()) {
    // Steps trained in this run and none of them had (or the stages' state
    // taken over, which the head never held): the job fails, rather than
    // save and evaluate the model it began with as though trained (a
    // pipeline of a tied module did, exit 0: a new user's trial). A resumed
    // run that lost a device before its first step holds its checkpoint's
    // model, which is the job's (found in review: it had failed too).
    const bool stale = welcomed && (step_ > started_step_ || taken_over_);
    if (!stale) {
      Log() << "pipeline: the stages' state was never fetched, and the final model is the one the head started "
            << "from: " << state.status().message() << "\n";
    } else {
      failed = InternalError("the stages' state after " + std::to_string(step_) +
                             " steps could not be had, and the head holds only the model it began with: " +
                             state.status().message());
    }
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
  return failed;
}

// Settled here too: an interrupted run saves weights it did not evaluate
// (Finish gave them), whose statistics were another model's (found in
// review); weights just evaluated are not settled again.
Status PipelineHead::SaveModel(const std::string& path) {
  EDGETRAIN_RETURN_IF_ERROR(settled_.For(model_));
  return model_.SaveModel(path);
}

}  // namespace edgetrain::agent

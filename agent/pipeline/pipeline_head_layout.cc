// Where the pipeline head (pipeline_head.h) puts the layers and the samples
// as the devices run: each device's pace against the cost model, the
// stages measured over a window of steps, a group's micro-batches dealt
// anew, layers moved between stages, or the planner's layout over the
// devices there, each with hysteresis so that one drift is one move.

#include "agent/pipeline/pipeline_head.h"

#include <algorithm>
#include <numeric>

#include "core/batch_order.h"
#include "core/number_text.h"
#include "core/pipeline_planner.h"
#include "core/pipeline_words.h"

namespace edgetrain::agent {

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
      // A device dealt no sample of the step says nothing of its pace: its
      // step is its optimizer's and its waits, against a prediction of the
      // optimizer alone. A board dealt empty shares of micro-batches of one
      // was learned at 7 times its pace, and the re-plan after a loss
      // predicted a fifth of what the devices left trained (a new user's
      // trial: 69 samples/s, 297-339 trained).
      if (std::accumulate(passes[j].begin(), passes[j].end(), int64_t{0}) == 0) continue;
      pace_.Observe(r, links_[r]->work_s,
                    cost_model_->DeviceStepSeconds(layers_[s].first, layers_[s].second, r, passes[j]));
    }
  }
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
  auto verdict =
      PlanPipeline(left, {.one_device_per_stage = plan_.spec.parallelism.mode == ParallelismMode::kPipeline});
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

}  // namespace edgetrain::agent

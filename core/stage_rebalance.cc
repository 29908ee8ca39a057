#include "core/stage_rebalance.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace edgetrain {

namespace {

// The cuts of layers [0, layers) into stages.size() stages, each at least one
// layer, whose slowest stage by `seconds(s, first, end)` is least, and of
// those the one that moves the fewest stages' first layers (each moved stage
// is rebuilt and sent its state). None when no cut is finite.
template <typename StageSeconds>
std::optional<StageCuts> LeastSlowestCuts(std::span<const StageMeasure> stages, int layers, StageSeconds seconds) {
  const size_t count = stages.size();
  // best[s][e]: the least slowest-stage time of stages 0..s-1 holding layers
  // [0, e), each at least one layer.
  constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(count + 1, std::vector<double>(layers + 1, kNone));
  best[0][0] = 0;
  for (size_t s = 1; s <= count; ++s) {
    for (int e = static_cast<int>(s); e <= layers; ++e) {
      for (int b = static_cast<int>(s) - 1; b < e; ++b) {
        if (best[s - 1][b] == kNone) continue;
        best[s][e] = std::min(best[s][e], std::max(best[s - 1][b], seconds(s - 1, b, e)));
      }
    }
  }
  const double predicted = best[count][layers];
  if (predicted == kNone) return std::nullopt;
  // Of the cuts that fast, those that move the fewest stages' first layers:
  // moved[s][e], with no stage over `predicted`; cut[s][e] where stage s-1
  // begins then.
  const double bound = predicted * (1 + 1e-12);
  constexpr int kNoWay = std::numeric_limits<int>::max();
  std::vector<std::vector<int>> moved(count + 1, std::vector<int>(layers + 1, kNoWay));
  std::vector<std::vector<int>> cut(count + 1, std::vector<int>(layers + 1, 0));
  moved[0][0] = 0;
  for (size_t s = 1; s <= count; ++s) {
    for (int e = static_cast<int>(s); e <= layers; ++e) {
      for (int b = static_cast<int>(s) - 1; b < e; ++b) {
        if (moved[s - 1][b] == kNoWay || seconds(s - 1, b, e) > bound) continue;
        const int m = moved[s - 1][b] + (b != stages[s - 1].first_layer ? 1 : 0);
        if (m < moved[s][e]) {
          moved[s][e] = m;
          cut[s][e] = b;
        }
      }
    }
  }
  StageCuts cuts;
  cuts.layers.resize(count);
  for (int s = static_cast<int>(count), e = layers; s > 0; --s) {
    cuts.layers[s - 1] = {cut[s][e], e};
    e = cut[s][e];
  }
  cuts.predicted_s = predicted;
  return cuts;
}

// Whether `stages` are contiguous, in order, from layer 0 to `layers`, each
// with a layer at least.
bool CoversInOrder(std::span<const StageMeasure> stages, int layers) {
  if (stages.size() < 2 || stages.front().first_layer != 0 || stages.back().end_layer != layers) return false;
  for (size_t s = 0; s < stages.size(); ++s) {
    if (stages[s].end_layer <= stages[s].first_layer) return false;
    if (s > 0 && stages[s - 1].end_layer != stages[s].first_layer) return false;
  }
  return true;
}

}  // namespace

std::optional<StageCuts> RebalanceStages(std::span<const StageMeasure> stages, std::span<const double> layer_weights,
                                         double min_gain) {
  const int layers = static_cast<int>(layer_weights.size());
  if (!CoversInOrder(stages, layers)) return std::nullopt;
  std::vector<double> prefix(layer_weights.size() + 1, 0.0);  // weight of layers [0, l)
  for (size_t l = 0; l < layer_weights.size(); ++l) prefix[l + 1] = prefix[l] + layer_weights[l];
  auto weight = [&](int first, int end) { return prefix[end] - prefix[first]; };
  std::vector<double> pace;  // seconds a unit of weight, each stage's
  double measured = 0;
  for (const StageMeasure& m : stages) {
    if (m.seconds <= 0 || weight(m.first_layer, m.end_layer) <= 0) return std::nullopt;
    pace.push_back(m.seconds / weight(m.first_layer, m.end_layer));
    measured = std::max(measured, m.seconds);
  }
  auto cuts = LeastSlowestCuts(stages, layers, [&](size_t s, int b, int e) { return pace[s] * weight(b, e); });
  if (!cuts || !(cuts->predicted_s * (1 + min_gain) < measured)) return std::nullopt;
  cuts->now_s = measured;
  return cuts;
}

std::optional<StageCuts> RecutStages(const PipelineCostModel& model, std::span<const PipelineStage> stages,
                                     int micro_batches, double min_gain) {
  const PipelineProblem& problem = model.problem();
  const int layers = static_cast<int>(problem.layers.size());
  const int count = static_cast<int>(stages.size());
  std::vector<StageMeasure> now;
  for (const PipelineStage& stage : stages) now.push_back({stage.first_layer, stage.end_layer, 0});
  if (!CoversInOrder(now, layers) || micro_batches < 1 || problem.batch_size % micro_batches != 0) return std::nullopt;
  const auto as_they_are = model.Plan(stages, micro_batches);
  if (!as_they_are) return std::nullopt;
  const int micro_batch = problem.batch_size / micro_batches;
  // A stage's own part of a step, cut at [b, e): its micro-batches at its
  // period (the busier of its compute and its link), then its flush (its
  // exchange, its optimizer's step, the head's word and its answer). The
  // slowest stage's paces the step but for the pipeline's filling and
  // draining, which the whole step's figure below counts when the cuts are
  // judged.
  auto seconds = [&](size_t s, int b, int e) {
    const int in_flight = std::min(micro_batches, count - static_cast<int>(s));
    const StageCost c = model.Stage(b, e, stages[s].devices, micro_batch, in_flight);
    if (!c.fits) return std::numeric_limits<double>::infinity();
    return micro_batches * c.period_s + PipelineCostModel::FlushSeconds(c);
  };
  auto cuts = LeastSlowestCuts(now, layers, seconds);
  if (!cuts) return std::nullopt;
  std::vector<PipelineStage> recut(stages.begin(), stages.end());
  for (int s = 0; s < count; ++s) std::tie(recut[s].first_layer, recut[s].end_layer) = cuts->layers[s];
  const auto then = model.Plan(recut, micro_batches);
  if (!then || !then->fits || !(then->step_s * (1 + min_gain) < as_they_are->step_s)) return std::nullopt;
  cuts->predicted_s = then->step_s;
  cuts->now_s = as_they_are->step_s;
  return cuts;
}

}  // namespace edgetrain

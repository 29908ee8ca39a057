#include "core/stage_rebalance.h"

#include <algorithm>
#include <limits>

namespace edgetrain {

std::optional<StageCuts> RebalanceStages(std::span<const StageMeasure> stages, std::span<const double> layer_weights,
                                         double min_gain) {
  const size_t count = stages.size();
  const int layers = static_cast<int>(layer_weights.size());
  if (count < 2 || stages.front().first_layer != 0 || stages.back().end_layer != layers) return std::nullopt;
  std::vector<double> prefix(layer_weights.size() + 1, 0.0);  // weight of layers [0, l)
  for (size_t l = 0; l < layer_weights.size(); ++l) prefix[l + 1] = prefix[l] + layer_weights[l];
  auto weight = [&](int first, int end) { return prefix[end] - prefix[first]; };
  std::vector<double> pace;  // seconds a unit of weight, each stage's
  double measured = 0;
  for (size_t s = 0; s < count; ++s) {
    const StageMeasure& m = stages[s];
    if (m.seconds <= 0 || m.end_layer <= m.first_layer || weight(m.first_layer, m.end_layer) <= 0) return std::nullopt;
    if (s > 0 && stages[s - 1].end_layer != m.first_layer) return std::nullopt;
    pace.push_back(m.seconds / weight(m.first_layer, m.end_layer));
    measured = std::max(measured, m.seconds);
  }
  // best[s][e]: the least slowest-stage time of stages 0..s-1 holding layers
  // [0, e), each at least one layer.
  constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(count + 1, std::vector<double>(layers + 1, kNone));
  best[0][0] = 0;
  for (size_t s = 1; s <= count; ++s) {
    for (int e = static_cast<int>(s); e <= layers; ++e) {
      for (int b = static_cast<int>(s) - 1; b < e; ++b) {
        if (best[s - 1][b] == kNone) continue;
        best[s][e] = std::min(best[s][e], std::max(best[s - 1][b], pace[s - 1] * weight(b, e)));
      }
    }
  }
  const double predicted = best[count][layers];
  if (!(predicted * (1 + min_gain) < measured)) return std::nullopt;
  // Of the cuts that fast, those that move the fewest stages' first layers
  // (each moved stage is rebuilt and sent its state): moved[s][e], with no
  // stage over `predicted`; cut[s][e] where stage s-1 begins then.
  const double bound = predicted * (1 + 1e-12);
  constexpr int kNoWay = std::numeric_limits<int>::max();
  std::vector<std::vector<int>> moved(count + 1, std::vector<int>(layers + 1, kNoWay));
  std::vector<std::vector<int>> cut(count + 1, std::vector<int>(layers + 1, 0));
  moved[0][0] = 0;
  for (size_t s = 1; s <= count; ++s) {
    for (int e = static_cast<int>(s); e <= layers; ++e) {
      for (int b = static_cast<int>(s) - 1; b < e; ++b) {
        if (moved[s - 1][b] == kNoWay || pace[s - 1] * weight(b, e) > bound) continue;
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
  cuts.measured_s = measured;
  return cuts;
}

}  // namespace edgetrain

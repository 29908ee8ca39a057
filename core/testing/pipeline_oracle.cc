#include "core/testing/pipeline_oracle.h"

#include <algorithm>
#include <cmath>

namespace edgetrain::testing {

PipelineProblem RandomPipelineProblem(std::mt19937_64& random, int layers, int devices) {
  std::uniform_real_distribution<double> unit(0, 1);
  auto spread = [&](double low, double high) { return low * std::pow(high / low, unit(random)); };
  PipelineProblem p;
  // Half the problems time their layers' passes at a few sizes, a sample
  // costing from half to three times as much at each, as small passes and
  // large ones do on a real device, and their optimizer's step (a
  // nanosecond a weight, about Adam's on this machine, drawing nothing more
  // so that the problems of a seed stay those they were); the others are in
  // proportion, with no optimizer's cost.
  const bool timed = unit(random) < 0.5;
  for (int l = 0; l < layers; ++l) {
    const double work_s = spread(0.1, 10) / 1000;
    LayerCost layer{"l" + std::to_string(l), work_s / 3, 2 * work_s / 3, static_cast<int64_t>(spread(1e3, 1e6)),
                    static_cast<int64_t>(spread(1e2, 1e5)), {}, 0, ""};
    if (timed) {
      layer.optimizer_s = static_cast<double>(layer.parameter_bytes) / 4 * 1e-9;
      for (int samples : {1, 2, 4, 8}) {
        const double pass_s = samples * work_s * spread(0.5, 3);
        layer.passes.push_back({samples, pass_s / 3, 2 * pass_s / 3});
      }
    }
    p.layers.push_back(std::move(layer));
  }
  for (int d = 0; d < devices; ++d) {
    const double mbps = unit(random) < 0.2 ? 0 : spread(1, 100);
    const int64_t memory = unit(random) < 0.3 ? static_cast<int64_t>(spread(2e6, 2e7)) : 0;
    p.devices.push_back({"d" + std::to_string(d), spread(1, 10), memory, mbps * 125000, mbps * 125000});
  }
  const int batches[] = {4, 6, 8, 12};
  p.batch_size = batches[random() % 4];
  p.max_micro_batches = 8;
  // The timed half pays the runtime's messages too, from what was drawn
  // already (a message half the first layer's forward time a sample, a
  // stream of 1.5 GB/s), so the problems of a seed stay those they were.
  if (timed) p.transport = {p.layers[0].forward_s / 2, 1.5e9};
  // And a stage's own cost of a pass, the same way: the last layer's pass
  // of one sample at 1 sample, and half again at 8 (a pass's fixed cost,
  // which a split pays once a stage).
  // Back to back a third to a half of that, timed after a pause of 20 ms,
  // at sizes apart from the layers'; every other device emulated, paying it
  // as after the pause.
  if (timed) {
    const LayerPass& one = p.layers.back().passes.front();
    p.stage_pass.passes = {{1, one.forward_s, one.backward_s}, {6, 1.5 * one.forward_s, 1.5 * one.backward_s}};
    p.stage_pass.back_to_back = {{1, one.forward_s / 3, one.backward_s / 3},
                                 {6, one.forward_s / 2, one.backward_s / 2}};
    p.stage_pass.pause_s = 0.02;
    for (size_t d = 1; d < p.devices.size(); d += 2) p.devices[d].emulated_slowdown = 1 + p.devices[d].speed;
  }
  return p;
}

std::optional<double> BruteForcePipelineStep(const PipelineProblem& p, bool one_device_per_stage,
                                             bool transient_company) {
  const PipelineCostModel model(p);
  const int layers = static_cast<int>(p.layers.size()), devices = static_cast<int>(p.devices.size());
  std::optional<double> best;
  for (uint32_t cuts = 0; cuts < (1u << (layers - 1)); ++cuts) {
    std::vector<PipelineStage> stages(1);
    for (int l = 1; l < layers; ++l) {
      if (cuts >> (l - 1) & 1) {
        stages.back().end_layer = l;
        stages.push_back({l, 0, {}});
      }
    }
    stages.back().end_layer = layers;
    const int k = static_cast<int>(stages.size());
    if (k > devices) continue;
    std::vector<int> where(devices, 0);  // 0: no stage; s: stage s - 1
    for (;;) {
      for (auto& s : stages) s.devices.clear();
      for (int d = 0; d < devices; ++d) {
        if (where[d] > 0) stages[where[d] - 1].devices.push_back(d);
      }
      const size_t most = one_device_per_stage ? 1 : p.devices.size();
      if (std::all_of(stages.begin(), stages.end(), [&](auto& s) {
            return !s.devices.empty() && s.devices.size() <= most &&
                   !(transient_company && s.devices.size() == 1 && p.devices[s.devices[0]].transient);
          })) {
        for (int m : MicroBatchCounts(p)) {
          const auto cost = model.Plan(stages, m);
          if (cost->fits && (!best || cost->step_s < *best)) best = cost->step_s;
        }
      }
      int d = 0;
      while (d < devices && ++where[d] > k) where[d++] = 0;
      if (d == devices) break;
    }
  }
  return best;
}

}  // namespace edgetrain::testing

#include "core/pipeline_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace edgetrain {
namespace {

// Seconds for `bytes` over a link of `bytes_per_s`; a link of 0 is not limited.
double Over(double bytes, double bytes_per_s) { return bytes_per_s > 0 ? bytes / bytes_per_s : 0; }

}  // namespace

PipelineCostModel::PipelineCostModel(const PipelineProblem& problem) : problem_(problem) {
  const size_t n = problem.layers.size();
  work_s_.assign(n + 1, 0);
  parameters_.assign(n + 1, 0);
  stash_.assign(n + 1, 0);
  for (size_t l = 0; l < n; ++l) {
    const LayerCost& layer = problem.layers[l];
    work_s_[l + 1] = work_s_[l] + layer.forward_s + layer.backward_s;
    parameters_[l + 1] = parameters_[l] + layer.parameter_bytes;
    stash_[l + 1] = stash_[l] + layer.activation_bytes;
  }
}

StageRates PipelineCostModel::Rates(int first_layer, int end_layer, std::span<const int> devices) const {
  const auto& layers = problem_.layers;
  const int n = static_cast<int>(layers.size());
  // The cuts on either side; the pipeline's input is read where the first
  // stage runs, and its loss computed where the last does.
  const double in = first_layer > 0 ? layers[first_layer - 1].activation_bytes : 0;
  const double out = end_layer < n ? layers[end_layer - 1].activation_bytes : 0;
  const double parameters = parameters_[end_layer] - parameters_[first_layer];
  // Autograd keeps the stage's input and each layer's output until the
  // micro-batch's backward pass.
  const double stash = in + (stash_[end_layer] - stash_[first_layer]);

  double capacity = 0;
  for (int d : devices) capacity += problem_.devices[d].speed;

  StageRates rates;
  rates.compute_s = (work_s_[end_layer] - work_s_[first_layer]) / capacity;
  rates.held_bytes = parameters * problem_.state_factor;
  for (int d : devices) {
    const PipelineDevice& device = problem_.devices[d];
    const double share = device.speed / capacity;
    const double each_way = share * (in + out);
    rates.link_s = std::max({rates.link_s, Over(each_way, device.up_bytes_per_s), Over(each_way, device.down_bytes_per_s)});
    if (devices.size() > 1) {
      rates.exchange_s =
          std::max(rates.exchange_s, Over(parameters, device.up_bytes_per_s) + Over(parameters, device.down_bytes_per_s));
    }
    if (device.memory_bytes > 0) {
      const double room = device.memory_bytes - rates.held_bytes;
      rates.room_samples = std::min(rates.room_samples, room < 0 ? -1 : stash > 0 ? room / (share * stash) : StageRates::kUnlimited);
    }
  }
  return rates;
}

StageCost PipelineCostModel::Scale(const StageRates& rates, int micro_batch_size, int in_flight) {
  const double b = micro_batch_size;
  StageCost cost;
  cost.compute_s = b * rates.compute_s;
  cost.link_s = b * rates.link_s;
  cost.exchange_s = rates.exchange_s;
  cost.period_s = std::max(cost.compute_s, cost.link_s);
  cost.latency_s = cost.compute_s + 2 * cost.link_s;
  cost.max_in_flight =
      rates.room_samples < 0 ? 0 : static_cast<int>(std::min(std::floor(rates.room_samples / b), 1e9));
  cost.fits = in_flight <= cost.max_in_flight;
  return cost;
}

StageCost PipelineCostModel::Stage(int first_layer, int end_layer, std::span<const int> devices, int micro_batch_size,
                                   int in_flight) const {
  StageCost cost = Scale(Rates(first_layer, end_layer, devices), micro_batch_size, in_flight);
  const auto& layers = problem_.layers;
  const double stash = (first_layer > 0 ? layers[first_layer - 1].activation_bytes : 0) +
                       (stash_[end_layer] - stash_[first_layer]);
  const double held = (parameters_[end_layer] - parameters_[first_layer]) * problem_.state_factor;
  double capacity = 0;
  for (int d : devices) capacity += problem_.devices[d].speed;
  for (int d : devices) {
    const double share = problem_.devices[d].speed / capacity;
    cost.memory_bytes.push_back(static_cast<int64_t>(held + in_flight * share * micro_batch_size * stash));
  }
  return cost;
}

std::optional<PipelineCost> PipelineCostModel::Plan(std::span<const PipelineStage> stages, int micro_batches) const {
  const int n = static_cast<int>(problem_.layers.size());
  const int k = static_cast<int>(stages.size());
  if (k == 0 || micro_batches < 1 || problem_.batch_size % micro_batches != 0) return std::nullopt;
  std::vector<bool> used(problem_.devices.size(), false);
  int next_layer = 0;
  for (const PipelineStage& s : stages) {
    if (s.first_layer != next_layer || s.end_layer <= s.first_layer || s.devices.empty()) return std::nullopt;
    for (int d : s.devices) {
      if (d < 0 || d >= static_cast<int>(used.size()) || used[d]) return std::nullopt;
      used[d] = true;
    }
    next_layer = s.end_layer;
  }
  if (next_layer != n) return std::nullopt;

  const int b = problem_.batch_size / micro_batches;
  PipelineCost cost;
  cost.fits = true;
  double max_period = 0, latency = 0, max_exchange = 0;
  for (int i = 0; i < k; ++i) {
    StageCost stage = Stage(stages[i].first_layer, stages[i].end_layer, stages[i].devices, b,
                            std::min(micro_batches, k - i));
    if (!stage.fits && cost.fits) {
      cost.fits = false;
      for (size_t j = 0; j < stages[i].devices.size(); ++j) {
        const PipelineDevice& device = problem_.devices[stages[i].devices[j]];
        if (device.memory_bytes > 0 && stage.memory_bytes[j] > device.memory_bytes) {
          std::ostringstream why;
          why << device.name << " would hold " << stage.memory_bytes[j] << " bytes of stage " << i + 1 << ", over its "
              << device.memory_bytes;
          cost.misfit = why.str();
          break;
        }
      }
    }
    if (stage.period_s > max_period) {
      max_period = stage.period_s;
      cost.bottleneck_stage = i;
    }
    latency += stage.latency_s;
    max_exchange = std::max(max_exchange, stage.exchange_s);
    cost.stages.push_back(std::move(stage));
  }
  cost.step_s = StepSeconds(micro_batches, max_period, latency, max_exchange);
  cost.samples_per_s = cost.step_s > 0 ? problem_.batch_size / cost.step_s : 0;
  return cost;
}

std::vector<int> MicroBatchCounts(const PipelineProblem& problem) {
  std::vector<int> counts;
  for (int m = 1; m <= std::min(problem.batch_size, problem.max_micro_batches); ++m) {
    if (problem.batch_size % m == 0) counts.push_back(m);
  }
  return counts;
}

}  // namespace edgetrain

#include "core/pipeline_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/batch_order.h"
#include "core/number_text.h"

namespace edgetrain {
namespace {

// Seconds for `bytes` over a link of `bytes_per_s`; a link of 0 is not limited.
double Over(double bytes, double bytes_per_s) { return bytes_per_s > 0 ? bytes / bytes_per_s : 0; }

}  // namespace

PipelineCostModel::PipelineCostModel(const PipelineProblem& problem) : problem_(problem) {
  const size_t n = problem.layers.size();
  sizes_ = {0};
  for (const LayerCost& layer : problem.layers) {
    for (const LayerPass& pass : layer.passes) sizes_.push_back(pass.samples);
  }
  for (const LayerPass& pass : problem.stage_pass.passes) sizes_.push_back(pass.samples);
  for (const LayerPass& pass : problem.stage_pass.back_to_back) sizes_.push_back(pass.samples);
  // A model whose passes were not timed is in proportion: one sample says it all.
  if (sizes_.size() == 1) sizes_.push_back(1);
  std::sort(sizes_.begin(), sizes_.end());
  sizes_.erase(std::unique(sizes_.begin(), sizes_.end()), sizes_.end());
  work_s_.assign(sizes_.size() * (n + 1), 0);
  least_work_s_.assign(n + 1, 0);
  // A stage's own cost at each size, after a pause and back to back (0s
  // when not measured). Size 0 takes the smallest pass's: a pass of any
  // samples pays it whole.
  const StagePassCost& own = problem.stage_pass;
  for (double samples : sizes_) {
    stage_paused_s_.push_back(StagePassSeconds(own.passes, std::max(samples, 1.0)));
    stage_back_to_back_s_.push_back(
        StagePassSeconds(own.back_to_back.empty() ? own.passes : own.back_to_back, std::max(samples, 1.0)));
  }
  for (const PipelineDevice& device : problem.devices) {
    stage_s_of_.push_back(device.emulated_slowdown > 1 ? &stage_paused_s_ : &stage_back_to_back_s_);
  }
  parameters_.assign(n + 1, 0);
  stash_.assign(n + 1, 0);
  optimizer_s_.assign(n + 1, 0);
  for (size_t l = 0; l < n; ++l) {
    const LayerCost& layer = problem.layers[l];
    double least = std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < sizes_.size(); ++k) {
      const double seconds = PassSeconds(layer, sizes_[k]);
      work_s_[k * (n + 1) + l + 1] = work_s_[k * (n + 1) + l] + seconds;
      // Each layer is linear between the sizes, and in proportion below the
      // first and above the last: its time a sample is least at one of them.
      if (k > 0) least = std::min(least, seconds / sizes_[k]);
    }
    least_work_s_[l + 1] = least_work_s_[l] + least;
    parameters_[l + 1] = parameters_[l] + layer.parameter_bytes;
    stash_[l + 1] = stash_[l] + layer.activation_bytes;
    optimizer_s_[l + 1] = optimizer_s_[l] + layer.optimizer_s;
  }
  // Whole samples below the last size (past it, a pass is in proportion to
  // the last and needs no search).
  for (int samples = 0; samples < std::min<double>(sizes_.back(), problem.batch_size + 1.0); ++samples) {
    const size_t above = std::upper_bound(sizes_.begin(), sizes_.end(), samples) - sizes_.begin();
    brackets_.push_back({above, (samples - sizes_[above - 1]) / (sizes_[above] - sizes_[above - 1])});
  }
  for (const PipelineDevice& device : problem.devices) {
    seconds_a_unit_.push_back(1 / device.speed);
    // The stream's own rate on top of the link's: the bytes cross both.
    seconds_a_byte_.push_back(std::max(Over(1, device.up_bytes_per_s), Over(1, device.down_bytes_per_s)) +
                              Over(1, problem.transport.bytes_per_s));
  }
}

double PipelineCostModel::WorkSeconds(int first_layer, int end_layer, int64_t samples, int device) const {
  if (samples <= 0) return 0;
  const size_t row = problem_.layers.size() + 1;
  // The layers' passes and the stage's own, which an emulated device pays as
  // after a pause (it sleeps after every pass while the site's other agents
  // compute on the same cores, and finds the caches as cold after a sleep
  // of a millisecond as of twenty: docs/pipeline.md) and a device of its own
  // as back to back (it pauses only in its bubbles, not counted).
  const std::vector<double>& own = *stage_s_of_[static_cast<size_t>(device)];
  auto at = [&](size_t k) { return work_s_[k * row + end_layer] - work_s_[k * row + first_layer] + own[k]; };
  // Below the last size a whole number of samples is always bracketed; past
  // it the layers' pass is in proportion to the last, and the stage's own as
  // at the last: a pass's cost, not its samples'.
  if (samples < static_cast<int64_t>(brackets_.size())) {
    const Bracket& b = brackets_[static_cast<size_t>(samples)];
    return at(b.above - 1) + b.weight * (at(b.above) - at(b.above - 1));
  }
  const size_t last = sizes_.size() - 1;
  return static_cast<double>(samples) * (at(last) - own[last]) / sizes_[last] + own[last];
}

double PipelineCostModel::DeviceStepSeconds(int first_layer, int end_layer, int device,
                                            std::span<const int64_t> passes) const {
  double s = optimizer_s_[end_layer] - optimizer_s_[first_layer];
  for (int64_t n : passes) s += WorkSeconds(first_layer, end_layer, n, device);
  return s * seconds_a_unit_[static_cast<size_t>(device)];
}

double PipelineCostModel::BestWorkSeconds(int first_layer, int end_layer, int device) const {
  double best = std::numeric_limits<double>::infinity();
  for (size_t k = 1; k < sizes_.size(); ++k) {
    if (sizes_[k] > problem_.batch_size) break;
    const auto samples = static_cast<int64_t>(sizes_[k]);
    best = std::min(best, WorkSeconds(first_layer, end_layer, samples, device) / sizes_[k]);
  }
  // The whole batch in one pass, whether or not it was a size timed: a
  // stage's own cost is a pass's, and the largest pass pays least of it a
  // sample.
  const int batch = std::max(1, problem_.batch_size);
  return std::min(best, WorkSeconds(first_layer, end_layer, batch, device) / batch);
}

StageRates PipelineCostModel::Rates(int first_layer, int end_layer, std::span<const int> devices) const {
  const auto& layers = problem_.layers;
  const int n = static_cast<int>(layers.size());
  // The cuts on either side; the pipeline's input is read where the first
  // stage runs, and its loss computed where the last does.
  const double in = first_layer > 0 ? layers[first_layer - 1].activation_bytes : 0;
  const double out = end_layer < n ? layers[end_layer - 1].activation_bytes : 0;
  const double parameters = parameters_[end_layer] - parameters_[first_layer];

  StageRates rates;
  rates.first_layer = first_layer;
  rates.end_layer = end_layer;
  rates.held_bytes = parameters * problem_.state_factor;
  rates.cut_bytes = in + out;
  // Autograd keeps the stage's input and each layer's output until the
  // micro-batch's backward pass.
  rates.stash_bytes = in + (stash_[end_layer] - stash_[first_layer]);
  // Each device steps its own copy: the slowest holds the stage.
  for (int d : devices) {
    rates.commit_s = std::max(rates.commit_s, (optimizer_s_[end_layer] - optimizer_s_[first_layer]) * seconds_a_unit_[d]);
  }
  const TransportCost& transport = problem_.transport;
  if (devices.size() > 1) {
    for (int d : devices) {
      const PipelineDevice& device = problem_.devices[d];
      rates.exchange_s =
          std::max(rates.exchange_s, Over(parameters, device.up_bytes_per_s) + Over(parameters, device.down_bytes_per_s));
    }
    // The gradient to the head and the sum back: two messages on the stream.
    rates.exchange_s += 2 * (transport.message_s + Over(parameters, transport.bytes_per_s));
    // Sent in parts, a micro-batch's at a time, the gradient also goes up
    // after each micro-batch's backward, beside its activations (Scale: in
    // the stage's pace, not in a micro-batch's way through); the last part
    // is the exchange's way up, after the flush, as before.
    if (problem_.gradient_each_micro_batch) rates.part_bytes = parameters;
  }
  rates.orders_s = transport.OrdersSeconds();
  if (first_layer > 0) rates.messages_s = 4 * transport.message_s;
  return rates;
}

std::vector<int64_t> PipelineCostModel::Shares(std::span<const int> devices, int micro_batch_size) const {
  std::vector<double> speeds;
  for (int d : devices) speeds.push_back(problem_.devices[d].speed);
  return ShareOut(micro_batch_size, speeds);
}

StageCost PipelineCostModel::Scale(const StageRates& rates, std::span<const int> devices,
                                   std::span<const int64_t> shares, int in_flight) const {
  StageCost cost;
  cost.exchange_s = rates.exchange_s;
  cost.commit_s = rates.commit_s;
  cost.orders_s = rates.orders_s;
  cost.messages_s = rates.messages_s;
  cost.max_in_flight = std::numeric_limits<int>::max();
  double cut_link_s = 0;  // of link_s, the activations' alone: a micro-batch's way through waits for them
  for (size_t i = 0; i < devices.size(); ++i) {
    const int d = devices[i];
    const int64_t samples = shares[i];
    // A device dealt none of a micro-batch passes an empty share on, and
    // still holds the stage.
    if (samples > 0) {
      cost.compute_s =
          std::max(cost.compute_s, WorkSeconds(rates.first_layer, rates.end_layer, samples, d) * seconds_a_unit_[d]);
      const double cut_s = static_cast<double>(samples) * rates.cut_bytes * seconds_a_byte_[d];
      // A part goes up only.
      const double part_s = Over(rates.part_bytes, problem_.devices[d].up_bytes_per_s) +
                            Over(rates.part_bytes, problem_.transport.bytes_per_s);
      cost.link_s = std::max(cost.link_s, cut_s + part_s);
      cut_link_s = std::max(cut_link_s, cut_s);
    }
    if (const int64_t memory = problem_.devices[d].memory_bytes; memory > 0) {
      const double room = memory - rates.held_bytes;
      const double each = samples * rates.stash_bytes;
      const double most = room < 0 ? 0 : each > 0 ? std::floor(room / each) : cost.max_in_flight;
      cost.max_in_flight = std::min<double>(cost.max_in_flight, most);
    }
  }
  cost.period_s = std::max(cost.compute_s, cost.link_s);
  // Messages wait on one another, not on compute: they lengthen a
  // micro-batch's way through, not the pace stages keep once full.
  cost.latency_s = cost.compute_s + 2 * cut_link_s + rates.messages_s;
  cost.fits = in_flight <= cost.max_in_flight;
  return cost;
}

StageCost PipelineCostModel::Stage(int first_layer, int end_layer, std::span<const int> devices, int micro_batch_size,
                                   int in_flight) const {
  const StageRates rates = Rates(first_layer, end_layer, devices);
  const std::vector<int64_t> shares = Shares(devices, micro_batch_size);
  StageCost cost = Scale(rates, devices, shares, in_flight);
  for (int64_t samples : shares) {
    cost.memory_bytes.push_back(static_cast<int64_t>(rates.held_bytes + in_flight * samples * rates.stash_bytes));
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
  double max_period = 0, latency = 0, max_flush = 0;
  for (int i = 0; i < k; ++i) {
    StageCost stage = Stage(stages[i].first_layer, stages[i].end_layer, stages[i].devices, b,
                            std::min(micro_batches, k - i));
    if (!stage.fits && cost.fits) {
      cost.fits = false;
      for (size_t j = 0; j < stages[i].devices.size(); ++j) {
        const PipelineDevice& device = problem_.devices[stages[i].devices[j]];
        if (device.memory_bytes > 0 && stage.memory_bytes[j] > device.memory_bytes) {
          std::ostringstream why;
          // In binary units, as a profile gives memory: raw bytes were read
          // digit by digit (a new user's trial); two decimals, so that the
          // two never read alike.
          why << device.name << " would hold " << BinaryBytes(static_cast<double>(stage.memory_bytes[j]), 2)
              << " of stage " << i + 1 << ", over its " << BinaryBytes(static_cast<double>(device.memory_bytes), 2);
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
    max_flush = std::max(max_flush, FlushSeconds(stage));
    cost.stages.push_back(std::move(stage));
  }
  cost.step_s = StepSeconds(micro_batches, max_period, latency, max_flush);
  cost.samples_per_s = cost.step_s > 0 ? problem_.batch_size / cost.step_s : 0;
  return cost;
}

std::vector<int> MicroBatchCounts(const PipelineProblem& problem) {
  // One at least, whatever the limit: the planner takes the best of these,
  // and of none it dereferenced nothing (a plan's maxMicroBatches of 0,
  // refused since as the plan is read, had reached it).
  std::vector<int> counts = {1};
  for (int m = 2; m <= std::min(problem.batch_size, problem.max_micro_batches); ++m) {
    if (problem.batch_size % m == 0) counts.push_back(m);
  }
  return counts;
}

}  // namespace edgetrain

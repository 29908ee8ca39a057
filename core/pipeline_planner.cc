#include "core/pipeline_planner.h"

#include <algorithm>
#include <cmath>
#include <bit>
#include <cstdio>
#include <limits>
#include <numeric>
#include <sstream>

#include "core/number_text.h"

namespace edgetrain {
namespace {

// A plan of the model's last layers, as far as the program has built it: what
// the step time will need of it, and the way back to the stages after it.
struct Partial {
  double max_period_s = 0;
  double latency_s = 0;
  double max_flush_s = 0;  // the exchange inside a group and the optimizer's step
  int from_front = -1;  // the front this one extends, and which of its partials
  int from_partial = -1;
  int first_layer = 0;  // the stage it added
  uint64_t group = 0;
};

// Whether `a` makes a step no longer than `b` does whatever stages still come
// before them, of `micro_batches`, those stages' longest period at least
// `period_at_least_s`. They add to the latency and may raise the longest
// period and flush (PipelineCostModel::StepSeconds), so the most `a` can lose
// to `b` is its longer period, as far as theirs leaves it showing, times the
// micro-batches after the first, and its longer flush: if `b`'s latency
// covers that, `a` is never worse. Weaker than `a` being no worse on all
// three, which kept fronts of partials the search then extended in vain
// (16 devices x 64 layers took up to 0.7 s where the optimizer's step and the
// agents' messages were costed).
bool Dominates(const Partial& a, const Partial& b, int micro_batches, double period_at_least_s) {
  const double period_loss =
      std::max(a.max_period_s, period_at_least_s) - std::max(b.max_period_s, period_at_least_s);
  return a.latency_s + (micro_batches - 1) * std::max(0.0, period_loss) +
             std::max(0.0, a.max_flush_s - b.max_flush_s) <=
         b.latency_s;
}

// Keeps the partials no other is always as good as: which is best depends on
// the stages still to come.
void Insert(std::vector<Partial>& front, const Partial& p, int micro_batches, double period_at_least_s) {
  for (const Partial& q : front) {
    if (Dominates(q, p, micro_batches, period_at_least_s)) return;
  }
  std::erase_if(front, [&](const Partial& q) { return Dominates(p, q, micro_batches, period_at_least_s); });
  front.push_back(p);
}

std::vector<int> DevicesOf(uint64_t group) {
  std::vector<int> devices;
  for (int d = 0; group; ++d, group >>= 1) {
    if (group & 1) devices.push_back(d);
  }
  return devices;
}

// Which devices the stages built so far hold (the program's device state),
// and the groups a stage may take: each with the states it extends, and the
// state it makes of each.
//
// Exact: a state is the set of devices taken; a group is any set of the
// others.
struct SubsetsOfDevices {
  int n;
  std::vector<double> free_capacity;  // by state: the speeds of the devices not taken

  explicit SubsetsOfDevices(const PipelineProblem& problem)
      : n(static_cast<int>(problem.devices.size())), free_capacity(size_t{1} << n, 0) {
    for (int s = 0; s < States(); ++s) {
      for (int d = 0; d < n; ++d) {
        if (!(s >> d & 1)) free_capacity[s] += problem.devices[d].speed;
      }
    }
  }
  int States() const { return 1 << n; }
  bool LeavesOut() const { return false; }
  std::vector<uint64_t> Groups() const {
    std::vector<uint64_t> groups;
    for (uint64_t g = 1; g < (uint64_t{1} << n); ++g) groups.push_back(g);
    return groups;
  }
  // Groups as indices into Groups(): group g is the set g + 1.
  template <typename F>
  void ForEachGroup(int state, F&& f) const {
    const int free = (States() - 1) & ~state;
    for (int g = free; g; g = (g - 1) & free) f(static_cast<size_t>(g - 1), state | g);
  }
};

// Relaxed: devices in a fixed order, each group a run of consecutive ones
// (those left out need not be at an end), stages taking runs in the order's
// order. State j: the stages built so far (the model's last) hold devices
// of order[j..] only; the program leaves device j - 1 out by carrying a
// state j's plans to j - 1 unchanged.
struct RunsOfDevices {
  std::vector<int> order;
  std::vector<std::pair<int, int>> runs;  // [i, j) of each group
  std::vector<double> free_capacity;      // by state j: the speeds of order[..j)

  RunsOfDevices(const PipelineProblem& problem, std::vector<int> o) : order(std::move(o)) {
    const int n = static_cast<int>(order.size());
    free_capacity.assign(n + 1, 0);
    for (int j = 0; j < n; ++j) free_capacity[j + 1] = free_capacity[j] + problem.devices[order[j]].speed;
    for (int j = 1; j <= n; ++j) {
      for (int i = j - 1; i >= 0; --i) runs.push_back({i, j});
    }
  }
  int States() const { return static_cast<int>(order.size()) + 1; }
  bool LeavesOut() const { return true; }
  std::vector<uint64_t> Groups() const {
    std::vector<uint64_t> groups;
    for (auto [i, j] : runs) {
      uint64_t mask = 0;
      for (int k = i; k < j; ++k) mask |= uint64_t{1} << order[k];
      groups.push_back(mask);
    }
    return groups;
  }
  // Runs [i, j) for the state j, in the order of runs: g = j(j-1)/2 + (j-1-i).
  template <typename F>
  void ForEachGroup(int j, F&& f) const {
    const size_t base = static_cast<size_t>(j) * (j - 1) / 2;
    for (int i = j - 1; i >= 0; --i) f(base + (j - 1 - i), i);
  }
};

// The program for one micro-batch count: fronts of partial plans indexed by
// (first layer of the suffix, device state, stages in it capped at M — only
// min(M, stages after) matters, for the micro-batches in flight).
struct Program {
  int micro_batches, micro_batch_size, states, depth;
  std::vector<std::vector<Partial>> fronts;
  std::vector<bool> reached;  // by (layer, state): a front there holds a partial

  Program(const PipelineProblem& problem, int m, int s)
      : micro_batches(m),
        micro_batch_size(problem.batch_size / m),
        states(s),
        depth(std::min<int>(m, problem.devices.size()) + 1),
        fronts(static_cast<size_t>(problem.layers.size() + 1) * s * depth),
        reached(static_cast<size_t>(problem.layers.size() + 1) * s, false) {}
  int Index(int layer, int state, int k) const { return (layer * states + state) * depth + k; }
  bool Reached(int layer, int state) const { return reached[layer * states + state]; }
};

struct Best {
  double step_s = std::numeric_limits<double>::infinity();
  int program = -1;
  int front = -1;
  int partial = -1;
};

// The programs for every micro-batch count, run side by side so that each
// stage's rates are worked out once for all of them, and a plan found at one
// count bounds the search at the others. Only plans faster than
// `incumbent_s` are looked for.
template <typename Devices>
std::optional<PipelinePlan> Search(const PipelineCostModel& model, const Devices& devices, double incumbent_s,
                                   bool one_device_per_stage, bool transient_company, int64_t& candidates) {
  const PipelineProblem& problem = model.problem();
  const int layers = static_cast<int>(problem.layers.size());
  const int states = devices.States();
  // The empty plan: no stage yet, every device free.
  const int start = devices.LeavesOut() ? states - 1 : 0;
  std::vector<Program> programs;
  for (int m : MicroBatchCounts(problem)) {
    Program& p = programs.emplace_back(problem, m, states);
    p.fronts[p.Index(layers, start, 0)].push_back(Partial{});
    p.reached[layers * states + start] = true;
  }
  const std::vector<uint64_t> groups = devices.Groups();
  std::vector<std::vector<int>> members;
  for (uint64_t g : groups) members.push_back(DevicesOf(g));
  // How each group deals each micro-batch size among its devices, worked out
  // when first asked: by group, then program.
  std::vector<double> capacity(groups.size(), 0);  // by group: the speeds of its devices
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int d : members[g]) capacity[g] += problem.devices[d].speed;
  }
  std::vector<std::vector<std::vector<int64_t>>> shares(groups.size());
  auto shares_of = [&](size_t g, size_t c) -> const std::vector<int64_t>& {
    if (shares[g].empty()) shares[g].resize(programs.size());
    if (shares[g][c].empty()) shares[g][c] = model.Shares(members[g], programs[c].micro_batch_size);
    return shares[g][c];
  };

  Best best{incumbent_s};
  for (int end = layers; end >= 1; --end) {
    if (devices.LeavesOut()) {
      for (Program& p : programs) {
        for (int state = states - 1; state >= 1; --state) {
          if (!p.Reached(end, state)) continue;
          p.reached[end * states + state - 1] = true;
          for (int k = 0; k < p.depth; ++k) {
            // With no bound on the stages to come: it holds for any.
            for (const Partial& q : p.fronts[p.Index(end, state, k)]) {
              Insert(p.fronts[p.Index(end, state - 1, k)], q, p.micro_batches, 0);
            }
          }
        }
      }
    }
    // Each stage's rates, worked out once a plan is there to extend and then
    // shared by every state and micro-batch count that extends with it.
    std::vector<std::optional<StageRates>> rates(static_cast<size_t>(end) * groups.size());
    for (int state = 0; state < states; ++state) {
      if (std::none_of(programs.begin(), programs.end(), [&](const Program& p) { return p.Reached(end, state); })) {
        continue;
      }
      for (int first = end - 1; first >= 0; --first) {
        devices.ForEachGroup(state, [&](size_t g, int next) {
          if (one_device_per_stage && members[g].size() > 1) return;
          if (transient_company && members[g].size() == 1 && problem.devices[members[g][0]].transient) return;
          if (first > 0 && devices.free_capacity[next] <= 0) return;  // no device left for the layers before
          std::optional<StageRates>& r = rates[first * groups.size() + g];
          if (!r) r = model.Rates(first, end, members[g]);
          for (size_t c = 0; c < programs.size(); ++c) {
            Program& p = programs[c];
            if (!p.Reached(end, state)) continue;
            // Stages still to come only add, at least the layers left computed
            // on all the devices left at their least cost a sample: a partial
            // plan already as slow as the best whole one cannot become faster.
            // That is a bound on their latency, and on their longest period
            // too: the stages' periods, each at least its layers' work over
            // its group's speed, cannot all be under the work's over all.
            const double still_s =
                first == 0 ? 0 : p.micro_batch_size * model.LeastWorkSeconds(0, first) / devices.free_capacity[next];
            // The same bound with this stage's compute bounded alike, before
            // it is worked out device by device.
            const double least_s = p.micro_batch_size * model.LeastWorkSeconds(first, end) / capacity[g];
            if (PipelineCostModel::StepSeconds(p.micro_batches, std::max(least_s, still_s), least_s + still_s,
                                               PipelineCostModel::FlushSeconds(*r)) >=
                best.step_s) {
              continue;
            }
            const StageCost stage = model.Scale(*r, members[g], shares_of(g, c), 1);
            if (PipelineCostModel::StepSeconds(p.micro_batches, std::max(stage.period_s, still_s),
                                               stage.latency_s + still_s,
                                               PipelineCostModel::FlushSeconds(stage)) >= best.step_s) {
              continue;
            }
            for (int k = 0; k < p.depth; ++k) {
              if (std::min(p.micro_batches, k + 1) > stage.max_in_flight) break;
              const int from = p.Index(end, state, k);
              for (size_t i = 0; i < p.fronts[from].size(); ++i) {
                const Partial& before = p.fronts[from][i];
                Partial q{std::max(before.max_period_s, stage.period_s), before.latency_s + stage.latency_s,
                          std::max(before.max_flush_s, PipelineCostModel::FlushSeconds(stage)), from,
                          static_cast<int>(i), first,
                          groups[g]};
                const double bound = PipelineCostModel::StepSeconds(p.micro_batches, std::max(q.max_period_s, still_s),
                                                                    q.latency_s + still_s, q.max_flush_s);
                if (bound >= best.step_s) continue;
                const int to = p.Index(first, next, std::min(k + 1, p.depth - 1));
                ++candidates;
                if (first == 0) {
                  p.fronts[to].assign(1, q);
                  best = {bound, static_cast<int>(c), to, 0};
                } else {
                  Insert(p.fronts[to], q, p.micro_batches, still_s);
                  p.reached[first * states + next] = true;
                }
              }
            }
          }
        });
      }
    }
  }
  if (best.front < 0) return std::nullopt;

  const Program& p = programs[best.program];
  PipelinePlan plan;
  plan.micro_batches = p.micro_batches;
  plan.micro_batch_size = p.micro_batch_size;
  for (int f = best.front, i = best.partial; p.fronts[f][i].from_front >= 0;) {
    const Partial& q = p.fronts[f][i];
    plan.stages.push_back({q.first_layer, q.from_front / (states * p.depth), DevicesOf(q.group)});
    f = q.from_front;
    i = q.from_partial;
  }
  plan.cost = *model.Plan(plan.stages, p.micro_batches);
  return plan;
}

bool Faster(const PipelinePlan& a, const std::optional<PipelinePlan>& b) {
  return !b || (a.cost.fits && !b->cost.fits) ||
         (a.cost.fits == b->cost.fits && a.cost.step_s < b->cost.step_s);
}

std::string Names(const PipelineProblem& problem, const std::vector<int>& devices) {
  std::string out;
  for (size_t i = 0; i < devices.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == devices.size() ? " and " : ", ") + problem.devices[devices[i]].name;
  }
  return out;
}

std::string Ms(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", seconds * 1000);
  return text;
}

}  // namespace

PipelinePlan AtBestMicroBatches(const PipelineProblem& problem, const std::vector<PipelineStage>& stages) {
  PipelineCostModel model(problem);
  std::optional<PipelinePlan> best;
  for (int m : MicroBatchCounts(problem)) {
    PipelinePlan plan{stages, m, problem.batch_size / m, *model.Plan(stages, m)};
    if (Faster(plan, best)) best = std::move(plan);
  }
  return *best;
}

std::string StageLayerNames(const PipelineProblem& problem, const PipelineStage& stage) {
  const std::string& first = problem.layers[stage.first_layer].name;
  return stage.end_layer - stage.first_layer == 1 ? first : first + "-" + problem.layers[stage.end_layer - 1].name;
}

bool KeepsTransientCompany(const PipelineProblem& problem, const PipelinePlan& plan) {
  return std::none_of(plan.stages.begin(), plan.stages.end(), [&](const PipelineStage& stage) {
    return stage.devices.size() == 1 && problem.devices[stage.devices[0]].transient;
  });
}

namespace {

// The fastest plan that fits; with `transient_company`, of those in which no
// stage is a transient device alone. None when none fits.
std::optional<PipelinePlan> Fastest(const PipelineProblem& problem, const PlannerOptions& options,
                                    bool transient_company, PlannerVerdict& verdict) {
  const PipelineCostModel model(problem);
  std::optional<PipelinePlan> best;
  auto consider = [&](std::optional<PipelinePlan> plan) {
    if (plan && plan->cost.fits && (!transient_company || KeepsTransientCompany(problem, *plan)) &&
        Faster(*plan, best)) {
      best = std::move(plan);
    }
  };
  auto incumbent = [&] { return best ? best->cost.step_s : std::numeric_limits<double>::infinity(); };
  // Plans the search would find anyway, scored first so that it looks only
  // for faster ones: every device as one stage, and each device alone.
  // A plain pipeline has no data parallelism; what it is compared with, the
  // even split, it must never lose to (the relaxed search may miss it).
  if (options.one_device_per_stage) {
    consider(EvenSplitPlan(problem));
  } else {
    consider(DataParallelPlan(problem));
  }
  for (int d = 0; d < static_cast<int>(problem.devices.size()); ++d) {
    consider(AtBestMicroBatches(problem, {{0, static_cast<int>(problem.layers.size()), {d}}}));
  }
  if (verdict.exact) {
    consider(Search(model, SubsetsOfDevices(problem), incumbent(), options.one_device_per_stage, transient_company,
                    verdict.candidates));
  } else {
    std::vector<int> order(problem.devices.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return problem.devices[a].speed > problem.devices[b].speed; });
    // Three orders: by speed both ways, and by link, the best first.
    auto link = [&](int d) {
      const PipelineDevice& device = problem.devices[d];
      const double up = device.up_bytes_per_s > 0 ? device.up_bytes_per_s : 1e18;
      const double down = device.down_bytes_per_s > 0 ? device.down_bytes_per_s : 1e18;
      return std::min(up, down);
    };
    std::vector<int> by_link = order;
    std::stable_sort(by_link.begin(), by_link.end(), [&](int a, int b) { return link(a) > link(b); });
    for (const std::vector<int>& o : {order, std::vector<int>(order.rbegin(), order.rend()), by_link}) {
      consider(Search(model, RunsOfDevices(problem, o), incumbent(), options.one_device_per_stage, transient_company,
                      verdict.candidates));
    }
  }
  return best;
}

// Why no plan can fit, where one layer alone is over the memory of the device
// with the most: empty when every layer fits it. The even split's misfit
// alone named a stage of a plan no one would choose (a user's trial).
std::string LayerNoDeviceHolds(const PipelineProblem& problem) {
  int roomiest = 0;
  for (size_t d = 0; d < problem.devices.size(); ++d) {
    const int64_t m = problem.devices[d].memory_bytes, most = problem.devices[roomiest].memory_bytes;
    if (most > 0 && (m == 0 || m > most)) roomiest = static_cast<int>(d);
  }
  const PipelineCostModel model(problem);
  const int device[] = {roomiest};
  // The one that takes the most, which is what the device would need: the
  // first named had a neighbour twice its size (a new user's trial).
  int largest = -1, others = 0;
  int64_t most = 0;
  for (int l = 0; l < static_cast<int>(problem.layers.size()); ++l) {
    // Its least: micro-batches of one sample, one in flight.
    const StageCost alone = model.Stage(l, l + 1, device, 1, 1);
    if (alone.fits || alone.memory_bytes.empty()) continue;
    if (largest >= 0) ++others;
    if (largest < 0 || alone.memory_bytes[0] > most) {
      largest = l;
      most = alone.memory_bytes[0];
    }
  }
  if (largest < 0) return "";
  const PipelineDevice& d = problem.devices[static_cast<size_t>(roomiest)];
  return "layer " + problem.layers[static_cast<size_t>(largest)].name + " alone would take " +
         BinaryBytes(static_cast<double>(most), 2) + " on " + d.name + ", the device of the most memory, over its " +
         BinaryBytes(static_cast<double>(d.memory_bytes), 2) +
         (others == 0   ? ""
          : others == 1 ? " (nor does 1 other layer fit it)"
                        : " (nor do " + std::to_string(others) + " other layers fit it)");
}

}  // namespace

StatusOr<PlannerVerdict> PlanPipeline(const PipelineProblem& problem, const PlannerOptions& options) {
  if (problem.layers.empty()) return InvalidArgumentError("the model has no layers to plan");
  if (problem.devices.empty()) return InvalidArgumentError("there are no devices to plan on");
  if (problem.devices.size() > 64) return InvalidArgumentError("the planner takes at most 64 devices");
  if (problem.batch_size < 1) return InvalidArgumentError("the batch must hold at least one sample");
  for (const PipelineDevice& d : problem.devices) {
    if (!(d.speed > 0)) return InvalidArgumentError("device " + d.name + " has no speed");
  }

  PlannerVerdict verdict;
  verdict.exact = static_cast<int>(problem.devices.size()) <= options.exact_devices;
  std::optional<PipelinePlan> best = Fastest(problem, options, /*transient_company=*/false, verdict);
  if (!best) {
    if (std::string layer = LayerNoDeviceHolds(problem); !layer.empty()) {
      return FailedPreconditionError("no plan fits the devices' memory: " + layer);
    }
  }
  if (!best && options.one_device_per_stage) {
    return FailedPreconditionError("no plan of one device a stage fits the devices' memory: as the even split, " +
                                   EvenSplitPlan(problem).cost.misfit);
  }
  if (!best) {
    const PipelinePlan alone = DataParallelPlan(problem);
    return FailedPreconditionError("no plan fits the devices' memory: even as one stage on every device, " +
                                   alone.cost.misfit);
  }
  if (options.transient_slack > 0 && !KeepsTransientCompany(problem, *best)) {
    std::vector<int> alone;
    for (const PipelineStage& stage : best->stages) {
      if (stage.devices.size() == 1 && problem.devices[stage.devices[0]].transient) alone.push_back(stage.devices[0]);
    }
    const std::string who = Names(problem, alone) + ", transient,";
    auto safe = Fastest(problem, options, /*transient_company=*/true, verdict);
    const int slower =
        safe ? static_cast<int>(std::lround(100 * (1 - safe->cost.samples_per_s / best->cost.samples_per_s))) : 0;
    if (safe && safe->cost.samples_per_s >= (1 - options.transient_slack) * best->cost.samples_per_s) {
      verdict.transient_note = "no transient device alone in a stage: " + std::to_string(slower) +
                               "% slower than the fastest plan, which had " + Names(problem, alone) + " alone";
      best = std::move(safe);
    } else {
      const int slack = static_cast<int>(std::lround(100 * options.transient_slack));
      // A pipeline of one stage keeps no replica: no other stage holds one,
      // and its device lost ends the job, to resume from its checkpoint (as
      // the operator does; `edgetrain run` again) (a new user's plan said
      // "since its stage's replica" of one).
      const bool only_stage = best->stages.size() == 1;
      verdict.transient_note =
          who +
          (only_stage ? " alone in the only stage: its loss ends the job, to resume from its checkpoint; "
                      : " alone in a stage: its loss costs the updates since its stage's replica; ") +
          (safe ? "the fastest plan without that is " + std::to_string(slower) + "% slower, more than " +
                      std::to_string(slack) + "%"
                : std::string("no plan that fits is without that"));
    }
  }
  verdict.plan = std::move(*best);
  return verdict;
}

PipelinePlan EvenSplitPlan(const PipelineProblem& problem) {
  const int layers = static_cast<int>(problem.layers.size());
  const int k = std::min<int>(layers, problem.devices.size());
  std::vector<PipelineStage> stages;
  for (int s = 0, first = 0; s < k; ++s) {
    const int length = layers / k + (s < layers % k ? 1 : 0);
    stages.push_back({first, first + length, {s}});
    first += length;
  }
  return AtBestMicroBatches(problem, stages);
}

PipelinePlan DataParallelPlan(const PipelineProblem& problem) {
  std::vector<int> all(problem.devices.size());
  std::iota(all.begin(), all.end(), 0);
  return AtBestMicroBatches(problem, {{0, static_cast<int>(problem.layers.size()), all}});
}

std::string DescribePlan(const PipelineProblem& problem, const PipelinePlan& plan) {
  std::ostringstream out;
  const PipelineCost& cost = plan.cost;
  out << plan.stages.size() << (plan.stages.size() == 1 ? " stage" : " stages") << ", " << plan.micro_batches
      << (plan.micro_batches == 1 ? " micro-batch" : " micro-batches") << " of " << plan.micro_batch_size << ": ";
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    out << (i ? "; " : "") << StageLayerNames(problem, plan.stages[i]) << " on " << Names(problem, plan.stages[i].devices);
  }
  if (!cost.fits) {
    out << ". It does not fit: " << cost.misfit;
    return out.str();
  }
  // The stage whose exchange and optimizer's step end the step last.
  const StageCost* flushing = &cost.stages.front();
  for (const StageCost& s : cost.stages) {
    if (PipelineCostModel::FlushSeconds(s) > PipelineCostModel::FlushSeconds(*flushing)) flushing = &s;
  }
  const double exchange = flushing->exchange_s, commit = flushing->commit_s;
  // The runtime's messages through the head: the stages' answers once a
  // step, and each micro-batch's in and out of the stages after the first
  // while the pipeline fills and drains.
  double messages = flushing->orders_s;
  for (const StageCost& s : cost.stages) messages += s.messages_s;
  auto percent = [&](double seconds) { return static_cast<int>(100 * seconds / cost.step_s + 0.5); };
  auto share = [&](double seconds) { return std::to_string(percent(seconds)) + "%"; };
  auto flush_shares = [&] {
    std::string said;
    if (exchange > 0) said += ", exchanging gradients inside groups " + share(exchange);
    if (commit > 0) said += ", the optimizer's step " + share(commit);
    // A share that rounds to nothing is not worth a word (the vgg's steps
    // are tens of milliseconds against tens of microseconds a message).
    if (percent(messages) > 0) said += ", messages through the head " + share(messages);
    return said;
  };
  if (plan.stages.size() == 1) {
    out << ". A step takes " << Ms(cost.step_s);
    if (exchange > 0 || commit > 0 || messages > 0) {
      out << ": computing " << share(cost.step_s - exchange - commit - messages) << flush_shares();
    }
    return out.str();
  }
  const StageCost& slowest = cost.stages[cost.bottleneck_stage];
  out << ". The slowest stage, " << StageLayerNames(problem, plan.stages[cost.bottleneck_stage]) << ", takes "
      << Ms(slowest.period_s) << " a micro-batch" << (slowest.link_s > slowest.compute_s ? " on its link" : " computing");
  const double fill = cost.step_s - (plan.micro_batches - 1) * slowest.period_s - exchange - commit - messages;
  out << "; of a " << Ms(cost.step_s) << " step, filling and draining the pipeline is " << share(fill)
      << flush_shares();
  return out.str();
}

}  // namespace edgetrain

// bench/dp-sim (built as build/bin/edgetrain-dp-sim; docs/benchmarks.md): bench/dp-links' setting
// on the simulated clock. The whole
// data-parallel engine (job driver, coordinator, its service, workers) runs
// as threads of a DeterministicClock over the in-memory transport
// (agent/testing/simulated_team.h), training the real model on the real data,
// with each worker's link following its trace in simulated time (both ways,
// in-process shaped) and each step charged R times a full model's transfer at
// the trace's mean. Minutes of a team's life take seconds, and a run is a
// function of its inputs: two policies are compared without the machine's
// load in the figures. What it does not model: the coordinator's and codecs'
// CPU time (free here, on two shared cores not), and the kernel's queues (a
// send here returns once its last byte is through the link).
//
// Every mode runs until it holds the sustained target (the mean of the last 5
// evaluations, every --eval-every s of simulated time) or to --cap. One JSON
// line per run goes to stderr, and a final JSON line to stdout.
#include <algorithm>
#include <iterator>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>
#include <string_view>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "agent/data/dataset.h"
#include "agent/storage/atomic_file.h"
#include "agent/testing/simulated_team.h"
#include "agent/torch/trainer.h"
#include "bench/sim_evaluations.h"
#include "core/bandwidth_trace.h"
#include "core/step_cost.h"

namespace edgetrain::bench {
namespace {

using agent::testing::RealModel;
using agent::testing::SimulatedTeam;
using agent::testing::TeamSetup;
using Json = nlohmann::json;
using agent::TrainTestSplit;

constexpr int kWorkers = 4;
const std::vector<int> kHidden = {128, 64};

// A mode's spec.sync, from its name: POLICY[-sS][-CODEC][-staleness-order],
// as bench/dp-links names them ("bsp-int8", "rog-s4-int8"), and "rog-paper".
std::optional<SyncSpec> ModeSpec(const std::string& name) {
  SyncSpec spec;
  if (name == "rog-paper") {
    spec.policy = SyncPolicy::kRog;
    spec.staleness_bound = 4;
    spec.compression = Compression::kSign;
    spec.row_order = RowOrder::kStaleness;
    return spec;
  }
  std::vector<std::string> parts;
  std::stringstream in(name);
  for (std::string part; std::getline(in, part, '-');) parts.push_back(part);
  if (parts.empty()) return std::nullopt;
  const std::map<std::string, SyncPolicy> policies = {
      {"rog", SyncPolicy::kRog}, {"ssp", SyncPolicy::kSsp}, {"bsp", SyncPolicy::kBsp},
      {"deadline", SyncPolicy::kDeadline}};
  const std::map<std::string, Compression> codecs = {
      {"fp16", Compression::kFp16}, {"int8", Compression::kInt8}, {"int4", Compression::kInt4},
      {"sign", Compression::kSign}};
  if (!policies.contains(parts[0])) return std::nullopt;
  spec.policy = policies.at(parts[0]);
  if (spec.policy == SyncPolicy::kRog || spec.policy == SyncPolicy::kSsp) spec.staleness_bound = 4;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    if (p.size() > 1 && p[0] == 's' && std::isdigit(static_cast<unsigned char>(p[1]))) {
      spec.staleness_bound = std::stoi(p.substr(1));
    } else if (codecs.contains(p)) {
      spec.compression = codecs.at(p);
    } else if (p == "staleness") {
      spec.row_order = RowOrder::kStaleness;
    } else if (p.size() > 1 && p[0] == 'q' && std::isdigit(static_cast<unsigned char>(p[1]))) {
      spec.quorum = std::stod(p.substr(1)) / 100;  // deadline: q75 is a quorum of 0.75
    } else if (p.size() > 1 && p[0] == 'k' && std::isdigit(static_cast<unsigned char>(p[1]))) {
      spec.deadline_slack = std::stod(p.substr(1)) / 100;  // k50: a slack of 0.5
    } else {
      return std::nullopt;
    }
  }
  return spec;
}

struct Options {
  std::string trace = "examples/traces/wifi-walk-away-1.csv";
  std::string setting = "similar";
  std::string links = "trace";
  std::string straggler_trace = "examples/traces/hsdpa-bus-1.csv";
  double scale = 1;
  double ratio = 0.2;
  double step_ms = 0;
  std::string modes = "bsp-int8";
  int seeds = 1;
  int first_seed = 1;
  double target = 0.85;
  double cap = 300;
  double budget = 0;  // accuracy at this many seconds, a second figure; 0: none
  double lr = 0.004;
  int batch = 128;
  double eval_every = 2;
  std::string out;
};

StatusOr<BandwidthTrace> LoadTrace(const std::string& path) {
  EDGETRAIN_ASSIGN_OR_RETURN(std::string text, agent::ReadWholeFile(path));
  return BandwidthTrace::Parse(text, std::filesystem::path(path).filename().string());
}


struct Setting {
  std::vector<std::optional<BandwidthTrace>> links;  // per worker, both ways; none: unlimited
  std::vector<std::optional<BandwidthTrace>> traces;  // what the stall is judged against (the trace itself)
  Duration step{};
  double mean_mbps = 0;
  double transfer_s = 0;
};

// The share of [from, to] seconds a link spent below 1 Mbit/s (none: no outage).
double OutageShare(const std::optional<BandwidthTrace>& trace, double from, double to) {
  if (!trace || to <= from) return 0;
  const int n = std::max(1, static_cast<int>(std::ceil((to - from) / 0.01)));
  int below = 0;
  for (int k = 0; k < n; ++k) below += trace->MbpsAt(from + (k + 0.5) * (to - from) / n) < 1.0;
  return static_cast<double>(below) / n;
}

Json RunOne(const std::string& mode, const SyncSpec& sync, uint64_t seed, const Options& o, const Setting& setting,
            const TrainTestSplit& data) {
  TeamSetup setup;
  setup.workers = kWorkers;
  setup.sync = sync;
  setup.partition = {PartitionKind::kDirichlet, 0.5};
  setup.optimizer = {OptimizerKind::kAdam, o.lr, std::nullopt, 0};
  setup.batch_size = o.batch;
  setup.budget.wall_clock = FromSeconds(o.cap);
  setup.evaluate_every = 1000000;
  setup.evaluate_every_seconds = o.eval_every;
  setup.links = setting.links;
  setup.step_times.assign(kWorkers, setting.step);
  RealModel real;
  real.data = &data;
  real.dataset = DatasetName::kFashionMnist;
  real.spec.kind = ModelKind::kMlp;
  real.spec.hidden = kHidden;
  real.seed = seed;
  real.make = [&data, seed]() { return agent::CreateTrainer({{ModelKind::kMlp, kHidden, {}}, data.train.info, seed, 1}); };
  setup.real = real;
  setup.output_dir = o.out + "/" + mode + "-seed" + std::to_string(seed);
  std::filesystem::remove_all(setup.output_dir);
  std::filesystem::create_directories(setup.output_dir);

  SimulatedTeam team(setup);
  const std::string evaluations = setup.output_dir + "/evaluations.csv";
  std::optional<Evaluated> reached;
  // Stall while the worker's own link was at 1 Mbit/s or more (bench/dp-links' method).
  double stall_out = 0, wall_out = 0, stall_in = 0, wall_in = 0;
  team.Run([&](SimulatedTeam& t) {
    // Each worker's figures as they last moved, and when (the links' clock).
    std::map<int, std::pair<WorkerProgress, double>> moved;
    const TimePoint began = t.clock().Now();
    for (;;) {
      t.clock().SleepFor(std::chrono::milliseconds(500));
      const JobProgress p = t.progress();
      if (p.stop_reason) break;
      // The links' time 0 is the team's construction: about `began`.
      const double now = ToSeconds(t.clock().Now() - began);
      for (const WorkerProgress& w : p.workers) {
        auto before = moved.find(w.rank);
        if (before == moved.end()) {
          moved[w.rank] = {w, now};
          continue;
        }
        const auto& [last, since] = before->second;
        const double ds = std::max(0.0, w.stall_s - last.stall_s), dw = w.wall_s - last.wall_s;
        if (dw <= 0) continue;
        // Its figures come over its own link: an outage freezes them, and
        // the jump once it ends is shared between outside and inside by the
        // time the link spent in each since they last moved (bench/dp-links
        // does the same).
        const double inside = OutageShare(setting.traces[w.rank], since, now);
        stall_out += ds * (1 - inside), wall_out += dw * (1 - inside);
        stall_in += ds * inside, wall_in += dw * inside;
        before->second = {w, now};
      }
      // Held, and past the budget: a run stopped where it held the target
      // before the budget had its accuracy there read as its accuracy at the
      // budget (a reviewer's check).
      const std::vector<Evaluated> so_far = ReadEvaluations(evaluations);
      if (!reached) reached = Sustained(so_far, o.target);
      if (reached && (o.budget <= 0 || (!so_far.empty() && so_far.back().seconds >= o.budget))) {
        t.Stop();
        break;
      }
    }
  });
  std::ofstream(setup.output_dir + "/team.log") << team.log();
  const std::vector<Evaluated> evals = ReadEvaluations(evaluations);
  if (!reached) reached = Sustained(evals, o.target);
  Json run;
  run["mode"] = mode;
  run["seed"] = seed;
  if (!team.result().ok()) {
    run["error"] = team.result().status().message();
    std::cerr << team.log() << "\n";
    return run;
  }
  const JobProgress& p = *team.result();
  int64_t up = 0, down = 0;
  for (const WorkerProgress& w : p.workers) {
    up += w.bytes_sent;
    down += w.bytes_received;
  }
  run["time_to_target_s"] = reached ? Json(reached->seconds) : Json(nullptr);
  run["steps_to_target"] = reached ? Json(reached->iteration) : Json(nullptr);
  run["s_per_step"] = reached && reached->iteration > 0 ? Json(reached->seconds / reached->iteration) : Json(nullptr);
  run["energy_to_target_j"] = reached ? Nullable(reached->energy) : Json(nullptr);
  std::optional<double> at_budget;
  for (const Evaluated& e : evals) {
    if (o.budget > 0 && e.seconds <= o.budget) at_budget = e.accuracy;
  }
  run["accuracy_at_budget"] = Nullable(at_budget);
  run["final_accuracy"] = evals.empty() ? Json(nullptr) : Json(evals.back().accuracy);
  run["elapsed_s"] = p.elapsed_s;
  run["iterations"] = p.iteration;
  run["samples_per_s"] = p.elapsed_s > 0 ? static_cast<double>(p.samples) / p.elapsed_s : 0.0;
  // As `edgetrain run --json` (and so bench/dp-links) reports it: the mean of
  // the workers' own fractions.
  double fractions = 0;
  for (const WorkerProgress& w : p.workers) fractions += w.stall_fraction;
  run["stall_fraction"] = p.workers.empty() ? 0.0 : fractions / static_cast<double>(p.workers.size());
  run["stall_outside_outages"] = wall_out > 0 ? Json(stall_out / wall_out) : Json(nullptr);
  run["stall_inside_outages"] = wall_in > 0 ? Json(stall_in / wall_in) : Json(nullptr);
  run["mb_up"] = static_cast<double>(up) / 1e6;
  run["mb_down"] = static_cast<double>(down) / 1e6;
  run["evaluations"] = Json::array();
  for (const Evaluated& e : evals) run["evaluations"].push_back({e.seconds, e.accuracy});
  return run;
}

// A flag's value that must be above 0, said in plain words (CLI11's own
// bound printed 309 digits).
const CLI::Validator AboveZero(
    [](const std::string& text) {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      return end != text.c_str() && *end == '\0' && v > 0 ? std::string() : "must be above 0, got " + text;
    },
    "> 0");

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"bench/dp-links' setting on the simulated clock: time to the sustained target per sync mode"};
  app.add_option("--trace", o.trace, "the workers' trace (worker i shifted by 20*i s)");
  app.add_option("--setting", o.setting,
                 "similar; straggler (the last worker on --straggler-trace); robot-team (make run's job: the "
                 "walk-away traces 1 and 2 in turn, and unless given, --batch 64 --step-ms 6 --lr 0.001 --cap 60)")
      ->check(CLI::IsMember({"similar", "straggler", "robot-team"}));
  CLI::Option* step_ms =
      app.add_option("--step-ms", o.step_ms, "a step's compute time, instead of --ratio's")->check(AboveZero);
  app.add_option("--straggler-trace", o.straggler_trace);
  app.add_option("--links", o.links, "trace: the trace with its outages; mean: held at its mean; unlimited: none")
      ->check(CLI::IsMember({"trace", "mean", "unlimited"}));
  // Ranges checked: a scale of 0 made every step infinite (a reader's check).
  app.add_option("--scale", o.scale)->check(AboveZero);
  app.add_option("--ratio", o.ratio, "a step's compute over a full model's float32 transfer at the trace's mean")
      ->check(AboveZero);
  const std::string known = "POLICY[-sS][-CODEC][-qQ][-kK]: rog, ssp, bsp or deadline; a staleness bound; fp16, int8, "
                            "int4 or sign; deadline's quorum and slack in percent (bsp-int8, rog-s4-int8, deadline-int8, "
                            "deadline-int8-q50-k50), or rog-paper";
  app.add_option("--modes", o.modes, "comma-separated, each " + known);
  app.add_option("--seeds", o.seeds)->check(CLI::Range(1, 1000));
  app.add_option("--first-seed", o.first_seed);
  app.add_option("--target", o.target);
  CLI::Option* cap =
      app.add_option("--cap", o.cap, "simulated seconds a run may last at most")->check(AboveZero);
  app.add_option("--budget", o.budget, "also report the accuracy at this many seconds");
  CLI::Option* lr = app.add_option("--lr", o.lr, "Adam's learning rate");
  CLI::Option* batch = app.add_option("--batch", o.batch);
  app.add_option("--eval-every", o.eval_every);
  app.add_option("--out", o.out, "runs' folders")->required();
  // A flag CLI11 refuses exits 2, as the refusals below do (it exited 105,
  // which the benches read as a failed run: a reader's check).
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (o.setting == "robot-team") {
    // examples/robot-team.yaml's batch, rate and budget, and its robots'
    // compute: the figures data-parallelism.md gives for this setting were of
    // this job, and the setting alone ran dp-links' (a reader's trial).
    if (!step_ms->count()) o.step_ms = 6;
    if (!lr->count()) o.lr = 0.001;
    if (!batch->count()) o.batch = 64;
    if (!cap->count()) o.cap = 60;
  }

  auto data = agent::LoadDataset(DatasetName::kFashionMnist, agent::DefaultDataSearchPath());
  if (!data.ok()) {
    std::cerr << data.status().message() << "\n";
    return 1;
  }
  auto trace = LoadTrace(o.trace);
  // Read only where it is used: run from outside the source tree, the
  // default's relative path failed every setting.
  auto straggler = o.setting == "straggler" ? LoadTrace(o.straggler_trace) : trace;
  if (!trace.ok() || !straggler.ok()) {
    std::cerr << (trace.ok() ? straggler.status() : trace.status()).message() << "\n";
    return 2;
  }
  JobSpec model_spec;  // the example's MLP on Fashion-MNIST
  model_spec.model.hidden = kHidden;
  model_spec.data.dataset = DatasetName::kFashionMnist;
  const int64_t model_bytes = 4 * StepCostOf(model_spec).parameters;
  Setting setting;
  setting.mean_mbps = trace->Scaled(o.scale).MeanMbps();
  setting.transfer_s = static_cast<double>(model_bytes) * 8 / (setting.mean_mbps * 1e6);
  setting.step = o.step_ms > 0 ? FromSeconds(o.step_ms / 1000) : FromSeconds(o.ratio * setting.transfer_s);
  auto second = LoadTrace(std::filesystem::path(o.trace).parent_path().string() + "/wifi-walk-away-2.csv");
  for (int w = 0; w < kWorkers; ++w) {
    if (o.setting == "robot-team" && !second.ok()) {
      std::cerr << second.status().message() << "\n";
      return 2;
    }
    const BandwidthTrace& base = o.setting == "straggler" && w == kWorkers - 1 ? *straggler
                                 : o.setting == "robot-team" && w % 2 == 1  ? *second
                                                                            : *trace;
    BandwidthTrace link = base.Scaled(o.scale).Shifted(20.0 * w);
    setting.traces.push_back(link);
    if (o.links == "trace") setting.links.push_back(link);
    if (o.links == "mean") setting.links.push_back(BandwidthTrace::Constant(link.MeanMbps()));
    if (o.links == "unlimited") setting.links.push_back(std::nullopt);
  }
  if (o.links != "trace") setting.traces.assign(kWorkers, std::nullopt);  // no outages to tell apart

  std::vector<std::string> modes;
  std::stringstream list(o.modes);
  for (std::string m; std::getline(list, m, ',');) {
    if (!ModeSpec(m)) {
      std::cerr << "unknown mode " << m << "; modes: " << known << "\n";
      return 2;
    }
    modes.push_back(m);
  }
  Json detail = {{"workers", kWorkers},       {"model", "mlp [128, 64]"},      {"model_bytes", model_bytes},
                 {"trace", o.trace},          {"setting", o.setting},          {"links", o.links},
                 {"scale", o.scale},          {"ratio", o.ratio},              {"trace_mean_mbps", setting.mean_mbps},
                 {"step_s", ToSeconds(setting.step)}, {"batch", o.batch},      {"optimizer", "adam lr " + std::to_string(o.lr)},
                 {"partition", "dirichlet alpha 0.5"}, {"target", o.target}, {"cap_s", o.cap},
                 {"clock", "simulated (agent/testing/simulated_team.h)"}};
  std::cerr << "setting: " << detail.dump() << "\n";
  std::map<std::string, std::vector<Json>> runs;
  // Runs that ended in an error: named, kept out of their mode's medians (they
  // had counted as misses of the target), and the benchmark exits 1.
  Json failed_runs = Json::array();
  for (int seed = o.first_seed; seed < o.first_seed + o.seeds; ++seed) {
    for (const std::string& mode : modes) {
      Json run = RunOne(mode, *ModeSpec(mode), static_cast<uint64_t>(seed), o, setting, *data);
      Json brief = run;
      brief.erase("evaluations");
      std::cerr << brief.dump() << "\n";
      if (run.contains("error")) failed_runs.push_back(mode + "-seed" + std::to_string(seed));
      runs[mode].push_back(std::move(run));
    }
  }
  Json summary;
  summary["detail"] = detail;
  summary["failed_runs"] = failed_runs;
  for (const auto& [mode, all] : runs) {
    std::vector<Json> list;
    std::copy_if(all.begin(), all.end(), std::back_inserter(list), [](const Json& r) { return !r.contains("error"); });
    Json m;
    for (const char* key : {"time_to_target_s", "steps_to_target", "s_per_step", "energy_to_target_j",
                            "accuracy_at_budget", "final_accuracy", "samples_per_s", "stall_fraction",
                            "stall_outside_outages", "stall_inside_outages", "mb_up", "mb_down"}) {
      std::vector<std::optional<double>> values;
      for (const Json& r : list) {
        values.push_back(r.contains(key) && r[key].is_number() ? std::optional<double>(r[key].get<double>())
                                                                : std::nullopt);
      }
      const bool to_target = std::string_view(key).find("_to_target") != std::string_view::npos;
      m[key] = Nullable(to_target ? MedianToTarget(values) : Median(values));
    }
    summary["modes"][mode] = m;
  }
  std::ofstream(o.out + "/results.json") << Json{{"summary", summary}, {"runs", runs}}.dump(1) << "\n";
  std::cout << summary.dump() << std::endl;
  return failed_runs.empty() ? 0 : 1;
}

}  // namespace
}  // namespace edgetrain::bench

int main(int argc, char** argv) { return edgetrain::bench::Main(argc, argv); }

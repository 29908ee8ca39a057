// bench/streams (built as build/bin/edgetrain-streams-sim; docs/benchmarks.md):
// a team whose samples arrive as streams, on the simulated clock. The whole
// data-parallel engine (job driver, coordinator, its service, workers) runs
// as threads of a DeterministicClock over the in-memory transport
// (agent/testing/simulated_team.h), training the real model on the real data;
// each worker's samples arrive at its stream's rate in simulated time, and
// each batch costs its worker a fixed step plus a time per sample, times the
// worker's slowdown. A run is a function of its inputs.
//
// Modes, the same policy and codec for each:
//   fixed     conventional synchronous SGD: a worker waits until a whole
//             batch has arrived (minBatchSize = batchSize);
//   adaptive  edgetrain's: a batch is what has arrived, from the default
//             minimum up to batchSize, its gradient weighted by its samples;
//   weighted  adaptive, each batch's cap dealt by its device's measured
//             compute (spec.data.computeWeighted), so that no device's
//             compute holds the team's round;
//   injected  adaptive, its batches topped up with samples of labels the
//             worker lacks, sent by the coordinator (spec.data.injection);
//   int8, topk, compressed
//             injected, its pushes int8, top-k, or as each worker chooses
//             between them (spec.sync.compression adaptive): what the
//             codec saves shows on links (--link-mbps).
// Every mode runs with every learning rate of the grid, and its time to the
// sustained target is its best one's. One JSON line per run goes to stderr,
// and a final JSON line to stdout.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "agent/data/dataset.h"
#include "agent/testing/simulated_team.h"
#include "agent/torch/trainer.h"
#include "bench/sim_evaluations.h"

namespace edgetrain::bench {
namespace {

using agent::TrainTestSplit;
using agent::testing::RealModel;
using agent::testing::SimulatedTeam;
using agent::testing::TeamSetup;
using Json = nlohmann::json;

const std::vector<int> kHidden = {128, 64};

struct Options {
  std::vector<double> rates = {92, 22, 62, 42};  // ScaDLES's proportions
  std::vector<double> slowdowns = {1, 2, 4, 8};
  double rate_scale = 1;
  double sample_ms = 1;  // a sample's compute at slowdown 1
  double step_ms = 2;    // a batch's fixed cost at slowdown 1
  int batch = 32;
  int min_batch = 0;  // the adaptive modes' minBatchSize; 0: the default
  std::string policy = "bsp";
  std::string modes = "fixed,adaptive,injected";
  double link_mbps = 0;  // every worker's link, both ways; 0: unshaped
  InjectionSpec injection;  // the injected mode's
  std::string partitions = "iid,labels2,dirichlet0.3";
  std::vector<double> lrs = {0.001, 0.002, 0.004};
  std::map<std::string, double> targets = {{"iid", 0.80}, {"labels2", 0.60}, {"dirichlet0.3", 0.75}};
  double cap = 300;
  double budget = 120;
  double eval_every = 2;
  uint64_t seed = 1;
  std::string out;
};

// A partition's name, within the ranges the CRD allows (labelsPerWorker
// 1-100000, alpha in (0, 1000]); none for any other: labels0 crashed the
// simulator, labelsx aborted it, dirichlet-1 ran (a reader's check).
std::optional<PartitionSpec> PartitionNamed(const std::string& name) {
  if (name == "iid") return PartitionSpec{};
  const auto number = [](std::string_view text) -> std::optional<double> {
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
    return value;
  };
  if (name.rfind("labels", 0) == 0) {
    const std::optional<double> k = number(std::string_view(name).substr(6));
    if (!k || *k < 1 || *k > 100000 || *k != std::floor(*k)) return std::nullopt;
    return PartitionSpec{PartitionKind::kLabels, std::nullopt, static_cast<int>(*k)};
  }
  if (name.rfind("dirichlet", 0) == 0) {
    const std::optional<double> alpha = number(std::string_view(name).substr(9));
    if (!alpha || !(*alpha > 0) || *alpha > 1000) return std::nullopt;
    return PartitionSpec{PartitionKind::kDirichlet, *alpha};
  }
  return std::nullopt;
}

std::vector<std::string> Split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

Json RunOne(const std::string& mode, const std::string& partition, double lr, const Options& o,
            const TrainTestSplit& data) {
  const int workers = static_cast<int>(o.rates.size());
  TeamSetup setup;
  setup.workers = workers;
  SyncSpec sync;
  sync.policy = o.policy == "deadline" ? SyncPolicy::kDeadline : SyncPolicy::kBsp;
  setup.sync = sync;
  setup.partition = *PartitionNamed(partition);
  StreamSpec stream;
  for (double r : o.rates) stream.rates_per_second.push_back(r * o.rate_scale);
  if (mode == "fixed") {
    stream.min_batch_size = o.batch;
  } else if (o.min_batch > 0) {
    stream.min_batch_size = o.min_batch;
  }
  setup.compute_weighted = mode == "weighted";
  setup.stream = stream;
  const std::map<std::string, Compression> codecs = {
      {"int8", Compression::kInt8}, {"topk", Compression::kTopK}, {"compressed", Compression::kAdaptive}};
  if (mode == "injected" || codecs.contains(mode)) setup.injection = o.injection;
  if (codecs.contains(mode)) setup.sync->compression = codecs.at(mode);
  if (o.link_mbps > 0) setup.links.assign(static_cast<size_t>(workers), BandwidthTrace::Constant(o.link_mbps));
  setup.optimizer = {OptimizerKind::kAdam, lr, std::nullopt, 0};
  setup.batch_size = o.batch;
  setup.budget.wall_clock = FromSeconds(o.cap);
  setup.evaluate_every = 1000000;
  setup.evaluate_every_seconds = o.eval_every;
  for (double s : o.slowdowns) {
    setup.step_times.push_back(FromSeconds(s * o.step_ms / 1000));
    setup.sample_times.push_back(FromSeconds(s * o.sample_ms / 1000));
  }
  RealModel real;
  real.data = &data;
  real.dataset = DatasetName::kFashionMnist;
  real.spec.kind = ModelKind::kMlp;
  real.spec.hidden = kHidden;
  real.seed = o.seed;
  const uint64_t seed = o.seed;
  real.make = [&data, seed]() { return agent::CreateTrainer({{ModelKind::kMlp, kHidden, {}}, data.train.info, seed, 1}); };
  setup.real = real;
  std::ostringstream name;
  name << mode << "-" << partition << "-lr" << lr;
  setup.output_dir = o.out + "/" + name.str();
  std::filesystem::remove_all(setup.output_dir);
  std::filesystem::create_directories(setup.output_dir);

  const double target = o.targets.at(partition);
  SimulatedTeam team(setup);
  const std::string evaluations = setup.output_dir + "/evaluations.csv";
  std::optional<Evaluated> reached;
  team.Run([&](SimulatedTeam& t) {
    for (;;) {
      t.clock().SleepFor(std::chrono::milliseconds(500));
      if (t.progress().stop_reason) break;
      // Past the budget too, for the accuracy there.
      const std::vector<Evaluated> evals = ReadEvaluations(evaluations);
      if (!reached) reached = Sustained(evals, target);
      if (reached && !evals.empty() && evals.back().seconds >= o.budget) {
        t.Stop();
        break;
      }
    }
  });
  std::ofstream(setup.output_dir + "/team.log") << team.log();
  const std::vector<Evaluated> evals = ReadEvaluations(evaluations);
  if (!reached) reached = Sustained(evals, target);
  Json run = {{"mode", mode}, {"partition", partition}, {"lr", lr}, {"target", target}};
  if (!team.result().ok()) {
    run["error"] = team.result().status().message();
    return run;
  }
  const JobProgress& p = *team.result();
  std::optional<double> at_budget;
  for (const Evaluated& e : evals) {
    if (e.seconds <= o.budget) at_budget = e.accuracy;
  }
  int64_t arrived = 0, dropped = 0, injected = 0, up = 0, pushes = 0, topk_pushes = 0;
  for (const WorkerProgress& w : p.workers) {
    injected += w.injected;
    up += w.bytes_sent;
    if (w.stream) {
      arrived += w.stream->arrived;
      dropped += w.stream->dropped;
    }
    if (w.compression) {
      pushes += w.compression->pushes;
      topk_pushes += w.compression->topk_pushes;
    }
  }
  run["time_to_target_s"] = reached ? Json(reached->seconds) : Json(nullptr);
  run["accuracy_at_budget"] = Nullable(at_budget);
  run["final_accuracy"] = evals.empty() ? Json(nullptr) : Json(evals.back().accuracy);
  run["elapsed_s"] = p.elapsed_s;
  run["samples_per_s"] = p.elapsed_s > 0 ? static_cast<double>(p.samples) / p.elapsed_s : 0.0;
  run["arrived"] = arrived;
  run["dropped"] = dropped;
  run["injected"] = injected;
  run["bytes_up"] = up;
  // Adaptive compression: the share of the team's pushes that went as top-k.
  if (pushes > 0) run["topk_share"] = static_cast<double>(topk_pushes) / static_cast<double>(pushes);
  run["trained_share"] = arrived > 0 ? static_cast<double>(p.samples) / static_cast<double>(arrived) : 0.0;
  run["evaluations"] = Json::array();
  for (const Evaluated& e : evals) run["evaluations"].push_back({e.seconds, e.accuracy});
  return run;
}

// The best run of a mode over the learning-rate grid: the soonest to its
// target, or, when none reached it, the most accurate at the budget.
const Json& Best(const std::vector<Json>& runs) {
  auto key = [](const Json& r) {
    const bool reached = r.contains("time_to_target_s") && r["time_to_target_s"].is_number();
    const double t = reached ? r["time_to_target_s"].get<double>() : 1e18;
    const double a = r.contains("accuracy_at_budget") && r["accuracy_at_budget"].is_number()
                         ? r["accuracy_at_budget"].get<double>()
                         : 0.0;
    return std::make_pair(t, -a);
  };
  return *std::min_element(runs.begin(), runs.end(), [&](const Json& a, const Json& b) { return key(a) < key(b); });
}

int Main(int argc, char** argv) {
  Options o;
  std::string lrs = "0.001,0.002,0.004";
  CLI::App app{"A team training on streams, on the simulated clock: conventional fixed batches against edgetrain's "
               "adaptive ones, time to the sustained target per partition"};
  // Out-of-range values are refused here: a batch of 0 divided by zero, and
  // runs of no time reported figures of nothing, exit 0 (a sceptic's trial).
  const CLI::Validator positive(
      [](std::string& text) {
        double v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        return ec == std::errc() && end == text.data() + text.size() && v > 0 && std::isfinite(v) ? std::string()
                                                                            : "must be more than 0, not " + text;
      },
      "POSITIVE");
  app.add_option("--rates", o.rates, "samples a second per worker, before --rate-scale")
      ->delimiter(',')
      ->check(positive);
  app.add_option("--rate-scale", o.rate_scale)->check(positive);
  app.add_option("--slowdowns", o.slowdowns, "per worker, as many as --rates")->delimiter(',')->check(CLI::Range(1.0, 1e6));
  app.add_option("--sample-ms", o.sample_ms, "a sample's compute at slowdown 1, simulated")->check(CLI::NonNegativeNumber);
  app.add_option("--step-ms", o.step_ms, "a batch's fixed compute at slowdown 1, simulated")->check(CLI::NonNegativeNumber);
  app.add_option("--batch", o.batch)->check(CLI::Range(1, 1 << 20));
  app.add_option("--min-batch", o.min_batch, "the adaptive modes' minBatchSize (default: an eighth of --batch)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--policy", o.policy)->check(CLI::IsMember({"bsp", "deadline"}));
  app.add_option("--modes", o.modes, "comma-separated: fixed, adaptive, weighted, injected, int8, topk, compressed");
  app.add_option("--link-mbps", o.link_mbps, "every worker's link, both ways, in Mbit/s; 0: unshaped")
      ->check(CLI::NonNegativeNumber);
  // In (0, 1], as the CRD's spec.data.injection has them: a share of -1 or
  // inf crashed the simulator, one of nan or 5 ran as none (a reader's check).
  const CLI::Validator share(
      [](const std::string& text) {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        return end != text.c_str() && *end == '\0' && v > 0 && v <= 1 ? std::string()
                                                                       : "must be in (0, 1], got " + text;
      },
      "(0, 1]");
  app.add_option("--label-share", o.injection.label_share,
                 "injected: the share of the labels a worker lacks it is sent")
      ->check(share);
  app.add_option("--batch-share", o.injection.batch_share, "injected: samples on top of a batch, as a share of it")
      ->check(share);
  app.add_option("--partitions", o.partitions, "comma-separated: iid, labelsK, dirichletALPHA");
  app.add_option("--lrs", lrs, "Adam's learning rates, the grid every mode is searched over");
  app.add_option("--cap", o.cap, "simulated seconds a run may last at most")->check(positive);
  app.add_option("--budget", o.budget, "the accuracy at this many seconds is reported too (at most --cap)")
      ->check(positive);
  app.add_option("--eval-every", o.eval_every)->check(positive);
  app.add_option("--seed", o.seed);
  app.add_option("--out", o.out, "runs' folders")->required();
  // A flag CLI11 refuses exits 2, as the refusals below do (it exited 105,
  // which the benches read as a failed run: a reader's check).
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (o.slowdowns.size() != o.rates.size()) {
    std::cerr << "--slowdowns needs one per rate\n";
    return 2;
  }
  for (const std::string& mode : Split(o.modes)) {
    if (!std::set<std::string>{"fixed", "adaptive", "weighted", "injected", "int8", "topk", "compressed"}.contains(mode)) {
      std::cerr << "--modes: unknown mode " << mode << "\n";
      return 2;
    }
  }
  if (o.budget > o.cap && app.count("--budget") > 0) {
    std::cerr << "--budget " << o.budget << " is past --cap " << o.cap << ": no run lasts that long\n";
    return 2;
  }
  o.budget = std::min(o.budget, o.cap);  // the default's 120 s, under a shorter cap
  o.lrs.clear();
  for (const std::string& lr : Split(lrs)) {
    double rate = 0;
    const auto [end, ec] = std::from_chars(lr.data(), lr.data() + lr.size(), rate);
    if (ec != std::errc() || end != lr.data() + lr.size() || !(rate > 0)) {
      std::cerr << "--lrs: " << lr << " is no learning rate above 0\n";
      return 2;
    }
    o.lrs.push_back(rate);
  }
  for (const std::string& p : Split(o.partitions)) {
    if (!PartitionNamed(p)) {
      std::cerr << "unknown partition " << p << " (iid, labelsK with K from 1 to 100000, dirichletALPHA with ALPHA "
                << "above 0 and at most 1000)\n";
      return 2;
    }
    if (!o.targets.contains(p)) o.targets[p] = o.targets["iid"];
  }

  auto data = agent::LoadDataset(DatasetName::kFashionMnist, agent::DefaultDataSearchPath());
  if (!data.ok()) {
    std::cerr << data.status().message() << "\n";
    return 1;
  }
  double aggregate = 0, slowest = o.rates[0];
  for (double r : o.rates) {
    aggregate += r * o.rate_scale;
    slowest = std::min(slowest, r * o.rate_scale);
  }
  // What a fixed batch waiting for the slowest stream consumes is the
  // slowest rate for every worker: the aggregate rate over that bounds what
  // any batching can gain by consuming more.
  const double ceiling = aggregate / (slowest * static_cast<double>(o.rates.size()));
  Json detail = {{"workers", o.rates.size()},
                 {"rates", o.rates},
                 {"rate_scale", o.rate_scale},
                 {"slowdowns", o.slowdowns},
                 {"sample_ms", o.sample_ms},
                 {"step_ms", o.step_ms},
                 {"batch", o.batch},
                 {"min_batch", o.min_batch > 0 ? Json(o.min_batch) : Json("default")},
                 {"policy", o.policy},
                 {"link_mbps", o.link_mbps},
                 {"injection", {{"label_share", o.injection.label_share}, {"batch_share", o.injection.batch_share}}},
                 {"model", "mlp [128, 64] on fashion-mnist"},
                 {"optimizer", "adam"},
                 {"lrs", o.lrs},
                 {"targets", o.targets},
                 {"cap_s", o.cap},
                 {"budget_s", o.budget},
                 {"clock", "simulated (agent/testing/simulated_team.h)"}};
  std::cerr << "setting: " << detail.dump() << "\n";

  Json summary = {{"detail", detail}, {"ceiling", ceiling}};
  Json all = Json::object();
  for (const std::string& partition : Split(o.partitions)) {
    for (const std::string& mode : Split(o.modes)) {
      std::vector<Json> runs;
      for (double lr : o.lrs) {
        Json run = RunOne(mode, partition, lr, o, *data);
        Json brief = run;
        brief.erase("evaluations");
        std::cerr << brief.dump() << "\n";
        runs.push_back(std::move(run));
      }
      const Json& best = Best(runs);
      Json m;
      // A run that failed counts as a miss in Best: said, with how many, not
      // left to read as a learning rate that trained too slowly.
      const auto failed = std::count_if(runs.begin(), runs.end(), [](const Json& r) { return r.contains("error"); });
      if (failed > 0) {
        m["failed_runs"] = failed;
        std::cerr << partition << " " << mode << ": " << failed << " of " << runs.size()
                  << " runs failed (said above), counted as misses\n";
      }
      for (const char* key :
           {"lr", "time_to_target_s", "accuracy_at_budget", "samples_per_s", "trained_share", "injected", "bytes_up",
            "topk_share"}) {
        m[key] = best.contains(key) ? best[key] : Json(nullptr);
      }
      // Accuracy at equal time is each mode at its best there: the learning
      // rate soonest to the target need not be the most accurate at the budget.
      double at_budget = -1, at_budget_lr = 0;
      for (const Json& r : runs) {
        if (!r.contains("accuracy_at_budget") || !r["accuracy_at_budget"].is_number()) continue;
        if (r["accuracy_at_budget"].get<double>() > at_budget) {
          at_budget = r["accuracy_at_budget"].get<double>();
          at_budget_lr = r["lr"].get<double>();
        }
      }
      if (at_budget >= 0) {
        m["accuracy_at_budget"] = at_budget;
        m["accuracy_at_budget_lr"] = at_budget_lr;
      }
      summary["partitions"][partition][mode] = m;
      all[partition][mode] = runs;
    }
    // Each mode's time to the target against conventional fixed batches,
    // and that as a share of the ceiling.
    Json& modes = summary["partitions"][partition];
    for (const char* mode : {"adaptive", "weighted", "injected", "int8", "topk", "compressed"}) {
      if (!modes.contains("fixed") || !modes.contains(mode) || !modes["fixed"]["time_to_target_s"].is_number() ||
          !modes[mode]["time_to_target_s"].is_number()) {
        continue;
      }
      const double speedup =
          modes["fixed"]["time_to_target_s"].get<double>() / modes[mode]["time_to_target_s"].get<double>();
      modes["speedup"][mode] = speedup;
      modes["of_ceiling"][mode] = speedup / ceiling;
    }
  }
  // How much a skewed split costs at equal time (the budget): adaptive
  // batching's accuracy there on IID data less, for each non-IID partition,
  // adaptive's and injected's.
  const Json& parts = summary["partitions"];
  if (parts.contains("iid") && parts["iid"].contains("adaptive") &&
      parts["iid"]["adaptive"]["accuracy_at_budget"].is_number()) {
    const double iid = parts["iid"]["adaptive"]["accuracy_at_budget"].get<double>();
    for (const auto& [partition, modes] : parts.items()) {
      if (partition == "iid") continue;
      for (const char* mode : {"adaptive", "weighted", "injected", "int8", "topk", "compressed"}) {
        if (!modes.contains(mode) || !modes[mode]["accuracy_at_budget"].is_number()) continue;
        summary["iid_vs_noniid_gap"][partition][mode] = iid - modes[mode]["accuracy_at_budget"].get<double>();
      }
    }
  }
  std::ofstream(o.out + "/results.json") << Json{{"summary", summary}, {"runs", all}}.dump(1) << "\n";
  std::cout << summary.dump() << std::endl;
  return 0;
}

}  // namespace
}  // namespace edgetrain::bench

int main(int argc, char** argv) { return edgetrain::bench::Main(argc, argv); }

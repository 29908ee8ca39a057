#include "cli/pipeline_view.h"

#include <cmath>
#include <cstdio>

#include "cli/progress_display.h"
#include "core/number_text.h"
#include "core/pipeline_planner.h"

namespace edgetrain::cli {
namespace {

constexpr double kMbpsPerBytePerSecond = 8 / 1e6;

std::string Bytes(double bytes) { return BinaryBytes(bytes); }

std::string Ms(double seconds, int decimals = 1) { return Fixed(seconds * 1000, decimals); }

std::string DeviceNames(const PipelineProblem& problem, const PipelineStage& stage) {
  std::string names;
  for (int d : stage.devices) names += (names.empty() ? "" : ", ") + problem.devices[d].name;
  return names;
}

// The planner's input: what it weighs, so a surprising plan can be traced.
void PrintInputs(const PipelineProblem& problem, std::ostream& out) {
  char line[256];
  out << "layers, per sample in a pass of the batch (" << problem.batch_size
      << "), measured on this machine (edgetrain-agent profile-layers); a pass of one sample, forward and back, "
         "for how much more a small pass costs; the optimizer's step of its weights, once a step (#: the layer "
         "as a layout by hand counts it, --stages and spec.parallelism.stages):\n";
  std::snprintf(line, sizeof line, "  %3s %-12s %11s %12s %13s %13s %12s %12s\n", "#", "LAYER", "FORWARD ms",
                "BACKWARD ms", "1-SAMPLE ms", "OPTIMIZER ms", "PARAMETERS", "ACTIVATIONS");
  out << line;
  for (size_t i = 0; i < problem.layers.size(); ++i) {
    const LayerCost& l = problem.layers[i];
    std::snprintf(line, sizeof line, "  %3zu %-12s %11s %12s %13s %13s %12s %12s\n", i, l.name.c_str(),
                  Ms(l.forward_s, 3).c_str(), Ms(l.backward_s, 3).c_str(), Ms(PassSeconds(l, 1), 3).c_str(),
                  Ms(l.optimizer_s, 3).c_str(),
                  Bytes(static_cast<double>(l.parameter_bytes)).c_str(),
                  Bytes(static_cast<double>(l.activation_bytes)).c_str());
    out << line;
  }
  if (const StagePassCost& own = problem.stage_pass; !own.passes.empty()) {
    // What every stage pays besides: with cheap layers, most of its pass.
    const int most = own.passes.back().samples;
    // A pass of 1 and one of the most samples timed: the two ends.
    auto ends = [&](std::span<const LayerPass> passes) {
      std::string said = Ms(StagePassSeconds(passes, 1), 3) + " ms a pass of 1";
      if (most > 1) said += " and " + Ms(StagePassSeconds(passes, most), 3) + " ms of " + std::to_string(most);
      return said;
    };
    out << "and each stage's own cost of a pass, whatever its layers (its input and output, the loss, caches cold "
           "after a pause), once a stage: "
        << ends(own.passes) << " after a pause of " << Ms(own.pause_s) << " ms (an emulated device's sleep)";
    if (!own.back_to_back.empty()) out << ", " << ends(own.back_to_back) << " back to back";
    out << "\n";
  }
  out << "devices, the workers' nodes (speed against this machine):\n";
  std::snprintf(line, sizeof line, "  %-16s %6s %10s %12s\n", "DEVICE", "SPEED", "MEMORY", "LINK Mbit/s");
  out << line;
  for (const PipelineDevice& d : problem.devices) {
    std::snprintf(line, sizeof line, "  %-16s %6s %10s %12s\n", d.name.c_str(), Fixed(d.speed, 2).c_str(),
                  d.memory_bytes > 0 ? Bytes(static_cast<double>(d.memory_bytes)).c_str() : "-",
                  d.up_bytes_per_s > 0 ? Fixed(d.up_bytes_per_s * kMbpsPerBytePerSecond, 1).c_str() : "wired");
    out << line;
  }
}

void PrintStages(const PipelineProblem& problem, const PipelinePlan& plan, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof line, "  %-5s %-22s %-28s %9s %10s %8s %11s %12s  %s\n", "STAGE", "LAYERS", "DEVICES",
                "PERIOD ms", "COMPUTE ms", "LINK ms", "EXCHANGE ms", "OPTIMIZER ms", "MEMORY/DEVICE");
  out << line;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const StageCost& cost = plan.cost.stages[s];
    std::string memory;
    for (int64_t bytes : cost.memory_bytes) memory += (memory.empty() ? "" : ", ") + Bytes(static_cast<double>(bytes));
    std::snprintf(line, sizeof line, "  %-5zu %-22s %-28s %9s %10s %8s %11s %12s  %s\n", s + 1,
                  StageLayerNames(problem, plan.stages[s]).c_str(), DeviceNames(problem, plan.stages[s]).c_str(),
                  Ms(cost.period_s).c_str(), Ms(cost.compute_s).c_str(), Ms(cost.link_s).c_str(),
                  Ms(cost.exchange_s).c_str(), Ms(cost.commit_s).c_str(), memory.c_str());
    out << line;
  }
}

void PrintComparisonRow(const char* name, const PipelinePlan& plan, std::ostream& out) {
  char line[512];
  if (plan.cost.fits) {
    std::snprintf(line, sizeof line, "  %-20s %10s %10s\n", name,
                  WithThousands(std::llround(plan.cost.samples_per_s)).c_str(), Ms(plan.cost.step_s).c_str());
  } else {
    std::snprintf(line, sizeof line, "  %-20s %10s %10s  does not fit: %s\n", name, "-", "-", plan.cost.misfit.c_str());
  }
  out << line;
}

nlohmann::json PlanJson(const PipelineProblem& problem, const PipelinePlan& plan) {
  nlohmann::json stages = nlohmann::json::array();
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PipelineStage& stage = plan.stages[s];
    const StageCost& cost = plan.cost.stages[s];
    nlohmann::json layers = nlohmann::json::array(), devices = nlohmann::json::array();
    for (int l = stage.first_layer; l < stage.end_layer; ++l) layers.push_back(problem.layers[l].name);
    for (int d : stage.devices) devices.push_back(problem.devices[d].name);
    stages.push_back({{"layers", layers},
                      {"devices", devices},
                      {"periodSeconds", cost.period_s},
                      {"computeSeconds", cost.compute_s},
                      {"linkSeconds", cost.link_s},
                      {"exchangeSeconds", cost.exchange_s},
                      {"optimizerSeconds", cost.commit_s},
                      {"memoryBytes", cost.memory_bytes}});
  }
  nlohmann::json out = {{"description", DescribePlan(problem, plan)},
                        {"fits", plan.cost.fits},
                        {"microBatches", plan.micro_batches},
                        {"microBatchSize", plan.micro_batch_size},
                        {"stages", stages}};
  if (plan.cost.fits) {
    out["predictedSamplesPerSecond"] = plan.cost.samples_per_s;
    out["stepSeconds"] = plan.cost.step_s;
  } else {
    out["misfit"] = plan.cost.misfit;
  }
  return out;
}

}  // namespace

void PrintPipelineChoice(const PipelineProblem& problem, const ParallelismChoice& choice, std::ostream& out) {
  const PipelinePlan& plan = choice.planned.plan;
  const std::string asked(NameOf(choice.asked));
  PrintInputs(problem, out);
  out << "\nthe planner's best for mode " << asked << " ("
      << (choice.asked == ParallelismMode::kPipeline ? "one device a stage" : "a stage may be a group of devices")
      << (choice.planned.exact ? "; every subset of devices searched" : "; devices searched in runs, not exact")
      << "):\n  " << NameOf(choice.plan_mode) << ", " << DescribePlan(problem, plan) << "\n";
  PrintStages(problem, plan, out);
  // The devices it gives no work: the placement above still lists their
  // workers (a new user's trial read on for a device that sits idle). A
  // device here is a node, which may hold more than one worker.
  std::vector<bool> used(problem.devices.size(), false);
  for (const PipelineStage& stage : plan.stages) {
    for (int d : stage.devices) used[static_cast<size_t>(d)] = true;
  }
  std::string idle;
  size_t idle_devices = 0;
  for (size_t d = 0; d < used.size(); ++d) {
    if (used[d]) continue;
    idle += (idle.empty() ? "" : ", ") + problem.devices[d].name;
    ++idle_devices;
  }
  if (idle_devices > 0) {
    const bool one = idle_devices == 1;
    out << "left out: " << idle << ": the plan is predicted faster without " << (one ? "it" : "them")
        << "; no layer goes to " << (one ? "its workers" : "their workers") << "\n";
  }
  out << "predicted: " << WithThousands(std::llround(plan.cost.samples_per_s)) << " samples/s, a step of "
      << Ms(plan.cost.step_s) << " ms; the cost model's, not a promise (docs/pipeline.md)\n\n";
  out << "against, on the same devices and links:\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-20s %10s %10s\n", "PLAN", "SAMPLES/S", "STEP ms");
  out << line;
  PrintComparisonRow(("planned " + std::string(NameOf(choice.plan_mode))).c_str(), plan, out);
  PrintComparisonRow("even split", choice.even_split, out);
  PrintComparisonRow("data parallel", choice.data_parallel, out);
  PrintComparisonRow("fastest alone", choice.fastest_alone, out);
  // Not the data-parallel engine: a user read 277 samples/s here against the
  // 13,700 the same job trained at as mode dataParallel, with sign rows.
  out << "data parallel: one stage on every device, as a pipeline runs it (the batch of " << problem.batch_size
      << " dealt among them, gradients summed through the head uncompressed); mode dataParallel trains with the "
         "data-parallel engine instead (a batch of "
      << problem.batch_size << " a worker, spec.sync's rows and compression)\n";
  out << "ideal: " << WithThousands(std::llround(choice.ideal_samples_per_s))
      << " samples/s, every device computing all the time and nothing else\n\n";
  if (choice.asked == ParallelismMode::kAuto) {
    out << HowChosen(choice) << ": " << choice.reason << "\n";
  } else {
    out << "mode " << asked;
    if (choice.plan_mode != choice.asked) out << " (its best plan shaped as " << NameOf(choice.plan_mode) << ")";
    out << ": " << choice.reason << "\n";
  }
}

void PrintStagesGiven(const PipelineProblem& problem, const PipelinePlan& plan, const StagesAsked& asked,
                      int micro_batches, std::ostream& out) {
  const std::string at = micro_batches > 0 ? " at --micro-batches " + std::to_string(micro_batches) : "";
  if (!asked.given()) {
    out << "\nthe planner's stages" << at << ":\n  ";
  } else if (asked.by_flag) {
    out << "\nwith " << asked.said() << at << " the job would run these stages, not the planner's:\n  ";
  } else {
    out << "\nthe job runs the stages its spec.parallelism.stages gives (" << asked.stages << ")" << at
        << ", not the planner's:\n  ";
  }
  out << NameOf(ModeOf(problem, plan)) << ", " << DescribePlan(problem, plan) << "\n";
  PrintStages(problem, plan, out);
  if (!plan.cost.fits) {
    out << "it does not fit: " << plan.cost.misfit << "\n";
    return;
  }
  out << "predicted: " << WithThousands(std::llround(plan.cost.samples_per_s)) << " samples/s, a step of "
      << Ms(plan.cost.step_s) << " ms" << (asked.given() ? "; kept as given, no layers moved between its stages" : "")
      << "\n";
}

nlohmann::json StagesGivenJson(const PipelineProblem& problem, const PipelinePlan& plan, const StagesAsked& asked) {
  nlohmann::json given = PlanJson(problem, plan);
  given["spec"] = asked.stages;
  given["from"] = asked.by_flag ? "--stages" : "spec.parallelism.stages";
  given["mode"] = NameOf(ModeOf(problem, plan));
  return given;
}

nlohmann::json PipelineChoiceJson(const PipelineProblem& problem, const ParallelismChoice& choice) {
  nlohmann::json devices = nlohmann::json::array();
  for (const PipelineDevice& d : problem.devices) {
    nlohmann::json device = {{"name", d.name}, {"speed", d.speed}};
    if (d.memory_bytes > 0) device["memoryBytes"] = d.memory_bytes;
    if (d.up_bytes_per_s > 0) device["linkMbps"] = d.up_bytes_per_s * kMbpsPerBytePerSecond;
    devices.push_back(device);
  }
  nlohmann::json plan = PlanJson(problem, choice.planned.plan);
  plan["mode"] = NameOf(choice.plan_mode);
  plan["exact"] = choice.planned.exact;
  const nlohmann::json measured = nlohmann::json::parse(EncodeLayerCosts(problem.layers, problem.transport, problem.stage_pass));
  nlohmann::json out = {{"mode", NameOf(choice.asked)},
          {"chosen", NameOf(choice.chosen)},
          {"reason", choice.reason},
          {"batchSize", problem.batch_size},
          {"layers", measured["layers"]},
          {"devices", devices},
          {"plan", plan},
          {"evenSplit", PlanJson(problem, choice.even_split)},
          {"dataParallel", PlanJson(problem, choice.data_parallel)},
          {"fastestAlone", PlanJson(problem, choice.fastest_alone)},
          {"idealSamplesPerSecond", choice.ideal_samples_per_s}};
  for (const char* key : kKeysBesideTheLayers) {
    if (measured.contains(key)) out[key] = measured[key];
  }
  return out;
}

}  // namespace edgetrain::cli

#include "core/parallelism_choice.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "core/edit_distance.h"
#include "core/number_text.h"

namespace edgetrain {
namespace {

std::string Times(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1fx", ratio);
  return text;
}

std::string SamplesPerSecond(double rate) { return WithThousands(std::llround(rate)) + " samples/s"; }

// The plan against data parallelism on every device, as the reason says it.
std::string AgainstDataParallelism(const PipelinePlan& plan, const PipelinePlan& data_parallel) {
  if (!data_parallel.cost.fits) return "data parallelism does not fit: " + data_parallel.cost.misfit;
  // Under half a sample a second, data parallelism is said as training
  // next to nothing, not as a ratio: a link whose trace ends at 0 averaged
  // it to 0.007 samples/s, and "129378.7x ... against 0 samples/s" was read
  // (a new user's trial).
  if (data_parallel.cost.samples_per_s < 0.5) {
    return "predicted " + SamplesPerSecond(plan.cost.samples_per_s) + " where data parallelism on the same devices "
           "and links trains next to nothing (0 samples/s: a link that is down, say)";
  }
  const double ratio = plan.cost.samples_per_s / data_parallel.cost.samples_per_s;
  return "predicted " + Times(ratio) + " data parallelism's samples/s on the same devices and links (" +
         SamplesPerSecond(plan.cost.samples_per_s) + " against " + SamplesPerSecond(data_parallel.cost.samples_per_s) +
         ")";
}

// The whole model on the fastest device, at its best micro-batch count, as a
// one-stage pipeline runs it: passes of a micro-batch may cost less a sample
// than one of the whole batch, which is what a job of one (edgetrain run
// without a pipeline) computes.
PipelinePlan FastestAlone(const PipelineProblem& problem) {
  int fastest = 0;
  for (int d = 1; d < static_cast<int>(problem.devices.size()); ++d) {
    if (problem.devices[d].speed > problem.devices[fastest].speed) fastest = d;
  }
  return AtBestMicroBatches(problem, {{0, static_cast<int>(problem.layers.size()), {fastest}}});
}

// Every device computing the whole model all the time, in passes of the size
// it computes fastest a sample.
double IdealSamplesPerSecond(const PipelineProblem& problem) {
  const PipelineCostModel model(problem);
  double samples_per_s = 0;
  for (size_t d = 0; d < problem.devices.size(); ++d) {
    const double work_s = model.BestWorkSeconds(0, static_cast<int>(problem.layers.size()), static_cast<int>(d));
    if (work_s > 0) samples_per_s += problem.devices[d].speed / work_s;
  }
  return samples_per_s;
}

}  // namespace

ParallelismMode ModeOf(const PipelineProblem& problem, const PipelinePlan& plan) {
  if (plan.stages.size() == 1 && plan.stages[0].devices.size() == problem.devices.size()) {
    return ParallelismMode::kDataParallel;
  }
  for (const PipelineStage& stage : plan.stages) {
    if (stage.devices.size() > 1) return ParallelismMode::kHybrid;
  }
  return ParallelismMode::kPipeline;
}

std::string WholeModelNote(const PipelineProblem& problem) {
  for (const LayerCost& layer : problem.layers) {
    if (!layer.cannot_cut.empty()) return layer.cannot_cut + ", so it runs whole";
  }
  return "";
}

StatusOr<ParallelismChoice> ChooseParallelism(const PipelineProblem& problem, ParallelismMode mode) {
  if (mode == ParallelismMode::kDataParallel) {
    return InvalidArgumentError("dataParallel is not planned by the pipeline planner");
  }
  ParallelismChoice choice;
  choice.asked = mode;
  EDGETRAIN_ASSIGN_OR_RETURN(choice.planned,
                             PlanPipeline(problem, {.one_device_per_stage = mode == ParallelismMode::kPipeline}));
  const PipelinePlan& plan = choice.planned.plan;
  choice.plan_mode = ModeOf(problem, plan);
  choice.even_split = EvenSplitPlan(problem);
  choice.data_parallel = DataParallelPlan(problem);
  choice.fastest_alone = FastestAlone(problem);
  choice.ideal_samples_per_s = IdealSamplesPerSecond(problem);
  const PipelinePlan& dp = choice.data_parallel;
  // Why the plan is not the fastest the planner found, when it is not.
  const std::string note = choice.planned.transient_note.empty() ? "" : "; " + choice.planned.transient_note;
  // A model taken whole has nothing to split: said first, not left for a
  // prediction to explain.
  const std::string whole = WholeModelNote(problem).empty() ? "" : WholeModelNote(problem) + ": ";
  if (mode != ParallelismMode::kAuto) {
    choice.chosen = mode;
    choice.reason = choice.plan_mode == ParallelismMode::kDataParallel
                        ? "no split is predicted faster than one stage on every device: as data parallelism"
                        : AgainstDataParallelism(plan, dp);
    choice.reason += note;
    return choice;
  }
  // The plan's prediction against data parallelism's, on the same problem; a
  // tie goes to data parallelism, the simpler to run.
  const bool split_wins = choice.plan_mode != ParallelismMode::kDataParallel &&
                          (!dp.cost.fits || plan.cost.samples_per_s > dp.cost.samples_per_s);
  if (split_wins) {
    choice.chosen = choice.plan_mode;
    // Why the split is not the fastest found: of the split alone, not of data
    // parallelism where that is chosen (found in review).
    choice.reason = whole + AgainstDataParallelism(plan, dp) + note;
  } else if (!whole.empty()) {
    choice.chosen = ParallelismMode::kDataParallel;
    choice.reason = whole + "as data parallelism on every device, predicted " + SamplesPerSecond(dp.cost.samples_per_s);
  } else {
    choice.chosen = ParallelismMode::kDataParallel;
    choice.reason = "no split is predicted faster than data parallelism on the same devices and links (" +
                    SamplesPerSecond(dp.cost.samples_per_s) + ")";
  }
  return choice;
}

std::string AgainstDataParallelism(const PipelineProblem& problem, const PipelinePlan& plan,
                                   const ParallelismChoice& choice) {
  if (ModeOf(problem, plan) == ParallelismMode::kDataParallel) return "";
  // As a pipeline runs it, one stage on every device: mode dataParallel's
  // engine is another, and a user set this figure against its own (3,218
  // here, about 13,000 there: a user's trial).
  std::string said = " against data parallelism's " +
                     WithThousands(std::llround(choice.data_parallel.cost.samples_per_s)) +
                     " as a pipeline runs it, on the same devices and links";
  // A faster prediction that cannot run: why auto chose the slower (it read
  // as auto picking against its own rule: a user's trial). Its stage 1 is
  // the whole model on every device, not the pick's (a user read it as the
  // chosen plan not fitting).
  if (!choice.data_parallel.cost.fits) {
    said += ", which does not fit: as one stage of the whole model on every device, " +
            choice.data_parallel.cost.misfit;
  }
  return said;
}

std::string HowChosen(const ParallelismChoice& choice) {
  // One stage on one device is a pipeline by the modes' names, and read as a
  // split where nothing was split (users' trials): said as what it is.
  const std::vector<PipelineStage>& stages = choice.planned.plan.stages;
  if (choice.asked == ParallelismMode::kAuto && choice.chosen == ParallelismMode::kPipeline && stages.size() == 1) {
    return "auto picks one device (the whole model as one stage)";
  }
  if (choice.asked == ParallelismMode::kAuto) return "auto picks " + std::string(NameOf(choice.chosen));
  std::string said = std::string(NameOf(choice.asked)) + " as asked";
  // Asked for a split, the planner may still find one device fastest: said
  // so, not "pipeline as asked" alone of a plan that splits nothing.
  if (stages.size() == 1 && stages[0].devices.size() == 1) {
    return said + " (planned as one device: the whole model as one stage)";
  }
  if (choice.plan_mode != choice.asked) said += " (planned as " + std::string(NameOf(choice.plan_mode)) + ")";
  return said;
}

const PipelinePlan& PlanToRun(const ParallelismChoice& choice, std::string_view stages) {
  if (stages == "even") return choice.even_split;
  if (stages == "data-parallel" || choice.chosen == ParallelismMode::kDataParallel) return choice.data_parallel;
  return choice.planned.plan;
}

bool NamesAPlan(std::string_view stages) {
  return stages == kPlannedStages || stages == "even" || stages == "data-parallel";
}

namespace {

// A whole number of `text`, or none; written as one is, without a leading
// 0: "01" had been read as rank 1, and a layout that named it twice said
// "rank 1" of what the user had typed otherwise (a user's trial).
std::optional<int> Whole(std::string_view text) {
  if (text.empty() || text.size() > 6 || (text.size() > 1 && text[0] == '0') ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoi(std::string(text));
}

// `text` in lower case: a plan's name as compared with one mistyped
// ("dataParallel" is then one edit from data-parallel).
std::string Lowered(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string_view> Split(std::string_view text, char by) {
  std::vector<std::string_view> parts;
  for (size_t from = 0;;) {
    const size_t at = text.find(by, from);
    parts.push_back(text.substr(from, at == std::string_view::npos ? std::string_view::npos : at - from));
    if (at == std::string_view::npos) return parts;
    from = at + 1;
  }
}

}  // namespace

StatusOr<std::vector<PipelineStage>> ParseStageLayout(std::string_view text, std::optional<int> layers, int devices) {
  const std::string form = " (stages as LAYERS:RANKS separated by /, e.g. 0-1:0,1/2:2; or planned, even, data-parallel)";
  // A word, not a layout: a plan's name mistyped (a new user's "evn", and
  // "dataParallel" as spec.parallelism.mode spells it).
  if (text.find(':') == std::string_view::npos && text.find('/') == std::string_view::npos) {
    const std::string near = Nearest(Lowered(text), {std::string(kPlannedStages), "even", "data-parallel"});
    return InvalidArgumentError("expected planned, even, data-parallel, or a layout such as 0-1:0,1/2:2, got \"" +
                                std::string(text) + "\"" + (near.empty() ? "" : " (did you mean " + near + "?)"));
  }
  std::vector<PipelineStage> stages;
  std::vector<int> stage_of(static_cast<size_t>(devices), -1);  // by rank: the stage it is in, from 1
  for (std::string_view part : Split(text, '/')) {
    if (part.empty()) {
      return InvalidArgumentError("stage " + std::to_string(stages.size() + 1) + " is empty" + form);
    }
    const size_t colon = part.find(':');
    if (colon == std::string_view::npos) return InvalidArgumentError("\"" + std::string(part) + "\" has no ':'" + form);
    const std::string_view span = part.substr(0, colon);
    const size_t dash = span.find('-');
    const auto first = Whole(span.substr(0, dash));
    const auto last = dash == std::string_view::npos ? first : Whole(span.substr(dash + 1));
    if (!first || !last) return InvalidArgumentError("\"" + std::string(span) + "\" is not layers" + form);
    const int next = stages.empty() ? 0 : stages.back().end_layer;
    if (*first != next || *last < *first) {
      return InvalidArgumentError("stage " + std::to_string(stages.size() + 1) + " must begin at layer " +
                                  std::to_string(next) +
                                  // Layer spans are inclusive: "0-4:0/4-8:1" read "must begin at layer 5, where
                                  // the one before ends" (a new user's trial).
                                  (stages.empty() ? "" : ", the one after layer " + std::to_string(next - 1) +
                                                             ", where the one before ends") +
                                  ", and end no earlier than it begins");
    }
    if (layers && *last >= *layers) {
      return InvalidArgumentError("the model has layers 0-" + std::to_string(*layers - 1) +
                                  " (edgetrain plan lists them)");
    }
    PipelineStage stage{*first, *last + 1, {}};
    for (std::string_view r : Split(part.substr(colon + 1), ',')) {
      const auto rank = Whole(r);
      if (!rank || *rank >= devices) {
        return InvalidArgumentError("\"" + std::string(r) + "\" is not a rank of the job's " +
                                    std::to_string(devices) + " devices (0-" + std::to_string(devices - 1) + ")");
      }
      int& in = stage_of[static_cast<size_t>(*rank)];
      const int here = static_cast<int>(stages.size()) + 1;
      if (in == here) {
        return InvalidArgumentError("rank " + std::to_string(*rank) + " is twice in stage " +
                                    std::to_string(here));
      }
      if (in > 0) {
        return InvalidArgumentError("rank " + std::to_string(*rank) + " is in stage " + std::to_string(in) +
                                    " and stage " + std::to_string(here) + "; a device holds one stage's layers");
      }
      in = here;
      stage.devices.push_back(*rank);
    }
    stages.push_back(std::move(stage));
  }
  if (layers && stages.back().end_layer != *layers) {
    const int first_left = stages.back().end_layer;
    return InvalidArgumentError(first_left == *layers - 1
                                    ? "layer " + std::to_string(first_left) + " is in no stage"
                                    : "layers " + std::to_string(first_left) + "-" + std::to_string(*layers - 1) +
                                          " are in no stage");
  }
  return stages;
}

StatusOr<std::vector<PipelineStage>> ParseStageLayout(std::string_view text, const PipelineProblem& problem) {
  return ParseStageLayout(text, static_cast<int>(problem.layers.size()), static_cast<int>(problem.devices.size()));
}

StatusOr<PipelinePlan> PlanOfStages(const PipelineProblem& problem, const StatusOr<ParallelismChoice>& chosen,
                                    std::string_view stages, std::string_view said) {
  if (NamesAPlan(stages) || (!chosen.ok() && chosen.status().code() != StatusCode::kFailedPrecondition)) {
    if (!chosen.ok()) return chosen.status();
    return PlanToRun(*chosen, stages);
  }
  StatusOr<std::vector<PipelineStage>> by_hand = ParseStageLayout(stages, problem);
  if (!by_hand.ok()) return InvalidArgumentError(std::string(said) + ": " + by_hand.status().message());
  return AtBestMicroBatches(problem, *by_hand);
}

PipelineLayout LayoutOf(const PipelinePlan& plan, const PipelineProblem& problem) {
  PipelineLayout layout;
  layout.micro_batches = plan.micro_batches;
  for (const PipelineStage& stage : plan.stages) layout.stages.push_back({stage.first_layer, stage.end_layer, stage.devices});
  layout.planned_from = PlannedFrom{problem.layers, problem.devices, problem.state_factor, problem.max_micro_batches,
                                    problem.transport, problem.stage_pass};
  return layout;
}

}  // namespace edgetrain

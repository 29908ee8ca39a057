#pragma once
// How `edgetrain plan` shows a pipeline, hybrid or auto job: the layers as
// measured, the devices, the planned stages with their predictions, the even
// split and data parallelism beside them, and what auto picks; as text, or as
// the `pipeline` object of --json.

#include <ostream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cli/stages_asked.h"
#include "core/parallelism_choice.h"
#include "core/pipeline_cost.h"

namespace edgetrain::cli {

void PrintPipelineChoice(const PipelineProblem& problem, const ParallelismChoice& choice, std::ostream& out);

nlohmann::json PipelineChoiceJson(const PipelineProblem& problem, const ParallelismChoice& choice);

// The stages the job runs instead of the planner's (`asked`, StagesOf: its
// spec.parallelism.stages or --stages, other than planned), or the planner's
// at --micro-batches (`micro_batches` above 0); as text after
// PrintPipelineChoice, or as the `given` object beside its JSON.
void PrintStagesGiven(const PipelineProblem& problem, const PipelinePlan& plan, const StagesAsked& asked,
                      int micro_batches, std::ostream& out);
nlohmann::json StagesGivenJson(const PipelineProblem& problem, const PipelinePlan& plan, const StagesAsked& asked);

}  // namespace edgetrain::cli

#pragma once
// The stages a pipeline, hybrid or auto job is asked to run: --stages when
// given (edgetrain run's and plan's), else its spec.parallelism.stages.

#include <string>

#include "core/parallelism_choice.h"

namespace edgetrain::cli {

struct StagesAsked {
  std::string stages;
  bool by_flag = false;
  // Where they were asked for, before what is said of them: "--stages
  // 0-9:0" or "spec.parallelism.stages" (an error); named, with the value
  // ("spec.parallelism.stages even instead of the planner's").
  std::string said() const { return by_flag ? "--stages " + stages : "spec.parallelism.stages"; }
  std::string named() const { return by_flag ? said() : said() + " " + stages; }
  bool given() const { return StagesFixed(stages); }
};

}  // namespace edgetrain::cli

#include "core/job_plan.h"

#include <nlohmann/json.hpp>

namespace edgetrain {

using Json = nlohmann::json;

std::string EncodeJobPlan(const JobPlan& plan) {
  Json j = {
      {"job", plan.job},
      {"generation", plan.generation},
      {"spec", Json::parse(plan.spec_json)},
      {"outputDir", plan.output_dir},
      {"intraOpThreads", plan.intra_op_threads},
  };
  return j.dump(2) + "\n";
}

StatusOr<JobPlan> DecodeJobPlan(std::string_view json) {
  Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError("plan: not a JSON object");
  JobPlan plan;
  try {
    plan.job = j.at("job").get<std::string>();
    plan.generation = j.at("generation").get<int64_t>();
    plan.spec_json = j.at("spec").dump();
    plan.output_dir = j.at("outputDir").get<std::string>();
    plan.intra_op_threads = j.at("intraOpThreads").get<int>();
  } catch (const Json::exception& e) {
    return InvalidArgumentError(std::string("plan: ") + e.what());
  }
  if (plan.intra_op_threads < 1) return InvalidArgumentError("plan: intraOpThreads must be >= 1");
  EDGETRAIN_ASSIGN_OR_RETURN(plan.spec, DecodeJobSpec(plan.spec_json));
  return plan;
}

}  // namespace edgetrain

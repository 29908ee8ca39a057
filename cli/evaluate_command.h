#pragma once
// `edgetrain evaluate MODEL --dataset NAME | --job JOB.yaml`: the test-set
// accuracy of a trained model.pt, on a built-in set or on a job's own test
// files. The runner does not link LibTorch: the agent evaluates (`edgetrain-agent
// evaluate`), the runner reports.

#include <ostream>
#include <string>

namespace edgetrain::cli {

struct EvaluateOptions {
  std::string model_path;
  std::string dataset;       // digits, fashion-mnist; or
  std::string job_path;      // a TrainingJob whose spec.data's test set to evaluate on
  std::string agent_binary;  // found beside the runner when empty
  bool json = false;         // the agent's result as one JSON line
};

int EvaluateModel(const EvaluateOptions& options, std::ostream& out, std::ostream& err);

}  // namespace edgetrain::cli

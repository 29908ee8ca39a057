#pragma once
// `edgetrain-agent evaluate --model=PATH --dataset=NAME [--data-dir=DIR]`: the
// test-set accuracy of a model an agent saved (model.pt). What the model is —
// an mlp's widths, a cnn's channels, a vgg's widths — is read from the file itself. Prints one
// line, `result {"model": ..., "dataset": ..., "accuracy": ..., "loss": ...,
// "samples": ...}`, or a failed result line (agent/failure_report.h).

#include <ostream>
#include <string>
#include <vector>

namespace edgetrain::agent {

// `args` follow the word `evaluate`; returns the exit code.
int RunEvaluateModel(const std::vector<std::string>& args, std::ostream& lines, std::ostream& log);

}  // namespace edgetrain::agent

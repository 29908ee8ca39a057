#pragma once
// `edgetrain-agent check-model --model=JSON --data=JSON [--repetitions=N]
// [--termination-log=PATH]`: loads a TorchScript module as an agent about to
// train it would, runs every check (agent/torch/torchscript_trainer.h), and
// measures what a step of it costs. The operator runs it in a pod before it
// places a team, for two reasons: a module that cannot be trained is refused
// before any node is held, with the field at fault; and placement ranks nodes
// by a step's cost, which a module's layers, known only to LibTorch, do not
// give from the manifest (core/step_cost.h).
//
// --model is the manifest's spec.model as JSON, its path as this pod sees it;
// --data its spec.data (its samples' shape and classes only: no data file is
// read). Prints one line, `result {"parameters":..,"multiplyAdds":..,
// "secondsPerSample":..,"referenceSecondsPerSample":..}`, or `result
// {"error":"..."}` with a non-zero exit code; the same JSON goes to
// --termination-log, where the kubelet puts it in the pod's status.

#include <ostream>
#include <string>
#include <vector>

#include "core/step_cost.h"

namespace edgetrain::agent {

// `args` follow the word `check-model`; returns the exit code.
int RunCheckModel(const std::vector<std::string>& args, std::ostream& lines, std::ostream& log);

// The multiply-adds a sample's forward of the module does, as an equivalent of
// the reference model's: `model_seconds` a sample of a step (forward, backward)
// of a module of `parameters` trained in batches of `batch`, against
// `reference_seconds` a sample of the model kReferenceFlopsPerSecond was
// calibrated with, timed on the same machine (core/step_cost.h). The machine's
// speed cancels out: any node measures the same size.
int64_t EquivalentMultiplyAdds(double model_seconds, double reference_seconds, int64_t parameters, int batch);

}  // namespace edgetrain::agent

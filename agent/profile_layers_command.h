#pragma once
// `edgetrain-agent profile-layers --model=JSON --data=JSON [--batch=N]
// [--repetitions=N] [--threads=N]`: each layer of a built-in model with its
// measured costs on this machine (agent/torch/layer_profile.h), for `edgetrain
// plan`, which does not link LibTorch and so runs the agent for them, as it does
// for `evaluate`. --model is the manifest's spec.model as JSON
// ({"name":"vgg","widths":[16,32]}), --data its spec.data, whose samples'
// shape the layers take: the CLI hands over what it read, and the
// agent decodes it as it decodes a plan's spec. Prints one line,
// `result {"layers":[{"name":..,"forwardSeconds":..,"backwardSeconds":..,
// "parameterBytes":..,"activationBytes":..},...]}` (core/layer_cost.h), or
// `result {"error":"..."}` with a non-zero exit code.

#include <ostream>
#include <string>
#include <vector>

namespace edgetrain::agent {

// `args` follow the word `profile-layers`; returns the exit code.
int RunProfileLayers(const std::vector<std::string>& args, std::ostream& lines, std::ostream& log);

}  // namespace edgetrain::agent

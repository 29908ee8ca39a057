#pragma once
// What a TrainingJob asks of placement: its pods' requests and tolerations, the
// nodes it may use, and what a step of its model costs. The operator and
// `edgetrain plan` read a manifest through this one function, so both place it
// alike.

#include <optional>
#include <string>
#include <vector>

#include "api/trainingjob.h"
#include "core/cluster_placement.h"
#include "core/step_cost.h"
#include "core/status.h"

namespace edgetrain::api {

// What a pod gets when spec.template says nothing.
struct PodDefaults {
  // An agent training a built-in model: one core, and room for LibTorch and a
  // data set.
  ResourceAmounts requests{.cpu_millis = 1000, .memory_bytes = int64_t{512} << 20, .pods = 1};
  // The platforms the agent's image is built for (kubernetes.io/arch).
  std::vector<std::string> architectures{"amd64", "arm64"};
};

// A job of one worker is a job of one (`solo`): a single agent trains it. An
// InvalidArgument names the field when a request is not a quantity. A
// TorchScript module's step is costed by `measured`, its size as an agent
// found it (status.modelCheck); without it, at nothing.
StatusOr<TeamRequest> TeamRequestOf(const TrainingJobManifest& job, const PodDefaults& defaults,
                                    const std::optional<ModelSize>& measured = std::nullopt);

}  // namespace edgetrain::api

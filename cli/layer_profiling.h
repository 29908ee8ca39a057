#pragma once
// A model's layers with their costs measured on this machine, for the
// pipeline planner. The runner does not link LibTorch: the agent measures
// (`edgetrain-agent profile-layers`), the runner reads its result line, as
// `edgetrain evaluate` does.

#include <atomic>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/trainingjob.h"
#include "core/job_spec.h"
#include "core/layer_cost.h"
#include "core/step_cost.h"
#include "core/status.h"

namespace edgetrain::cli {

struct LayerProfileRequest {
  std::string agent_binary;  // found beside the runner when empty
  nlohmann::json model;      // a manifest's spec.model, defaulted
  nlohmann::json data;       // a manifest's spec.data, defaulted: its samples' shape
  nlohmann::json optimizer;  // a manifest's spec.optimizer: its step is timed; null: not timed
  int batch_size = 32;
  int repetitions = 5;  // as the agent's default (agent/torch/layer_profile.h)
  // Threads, as the job's agents compute with (`edgetrain run --threads`):
  // LibTorch's, and OpenBLAS's, which reads its count from the environment
  // and otherwise takes every core. Measured with both of this machine's,
  // the MLP's layers ran 1.65x faster than the agents then ran them.
  int threads = 1;
  const std::atomic<bool>* interrupted = nullptr;  // when set, the measuring stops (Cancelled)
};

// What the agent measured: each layer, its own messages on a loopback
// stream (core/transport_cost.h), and a stage's own cost of a pass.
struct ProfiledModel {
  std::vector<LayerCost> layers;
  TransportCost transport;
  StagePassCost stage_pass;
};

// The agent's layers, or why not: InvalidArgument when it refused the model
// (its own words), else the failure to start it or its exit without a result.
StatusOr<ProfiledModel> ProfileLayersWithAgent(const LayerProfileRequest& request);

// A job's model on its data set, at its batch size, with its optimizer and the
// threads its agents compute with: what the planner plans with.
StatusOr<ProfiledModel> ProfileJobLayers(const api::TrainingJobManifest& job, const std::string& agent_binary,
                                         int threads = 1, const std::atomic<bool>* interrupted = nullptr);

// A job's TorchScript module loaded and checked by the agent as the
// operator's check pod does (`edgetrain-agent check-model`), on this
// machine: its size, which placement ranks nodes by (core/step_cost.h).
// InvalidArgument, in the agent's words, for a module it refuses.
StatusOr<ModelSize> CheckJobModule(const api::TrainingJobManifest& job, const std::string& agent_binary);

}  // namespace edgetrain::cli

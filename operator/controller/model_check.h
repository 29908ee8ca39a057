#pragma once
// A user's TorchScript module, looked at before its team is placed. Its
// layers are known only to LibTorch, which the operator does not link, so an
// agent in a pod of its own loads it (`edgetrain-agent check-model`): a module
// that cannot be trained is refused before any node is held, naming the field
// at fault, and one that can is measured, for placement to rank nodes by its
// step (core/step_cost.h). The size is kept in status.modelCheck, with which
// check measured it: the check runs again only when the job's would differ.
// Read from the pod alone, as gang.h reads a team's, and table-tested.
//
// A pipeline job's model is looked at the same way, by the same pod: an agent
// times each of its layers (`edgetrain-agent profile-layers`), which the
// pipeline planner cuts into stages once the team's nodes are chosen. The
// layers are kept in status.modelCheck, with the node they were timed on.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/layer_cost.h"
#include "core/step_cost.h"
#include "operator/controller/job_objects.h"

namespace edgetrain::operator_ {

enum class ModelCheckState {
  kChecking,  // the pod waits, starts or runs
  kMeasured,  // the module trains: its size is known; or a pipeline's layers were timed
  kRefused,   // the agent refused the module (exit 2): the job is invalid as written
  kFailed,    // the check ended otherwise (a crash, out of memory): no size, no verdict
};

struct ModelCheck {
  ModelCheckState state = ModelCheckState::kChecking;
  ModelSize size;       // kMeasured, a module's check
  std::vector<LayerCost> layers;  // kMeasured, a pipeline's check: its layers, timed on `node`
  TransportCost transport;        // and the agent's messages, timed there beside them
  StagePassCost stage_pass;       // and a stage's own cost of a pass
  std::string node;
  std::string message;  // where the pod is, the agent's refusal, or how it failed
};

ModelCheck ReadModelCheck(const Json& pod);

// What status.modelCheck names the module by: its path in the pods (`job`'s
// paths resolved for them, api::ResolveClusterPaths), and the ConfigMap it is
// in, when one holds it.
std::string ModuleOf(const api::TrainingJobManifest& job);

// status.modelCheck for `module` of `size`, measured by the check `check`
// (ModelCheckOf), and back: the size when it is of the check `check`, or of
// any when `check` is empty.
Json ModelCheckStatus(const std::string& module, const std::string& check, const ModelSize& size);
std::optional<ModelSize> CheckedSizeOf(const Json& status, const std::string& check = "");

// status.modelCheck for a pipeline's layers, the agent's messages and a
// stage's own cost of a pass, timed by the check `check` on `node`, and
// back: the layers, the messages, the stage's passes and the node, when
// they are of the check `check`.
Json LayersCheckStatus(const std::string& check, const std::vector<LayerCost>& layers, const TransportCost& transport,
                       const StagePassCost& stage_pass, const std::string& node);
struct CheckedLayers {
  std::vector<LayerCost> layers;
  TransportCost transport;
  StagePassCost stage_pass;
  std::string node;
};
std::optional<CheckedLayers> CheckedLayersOf(const Json& status, const std::string& check);

}  // namespace edgetrain::operator_

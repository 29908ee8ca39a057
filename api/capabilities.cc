#include "api/capabilities.h"

#include <algorithm>
#include <functional>

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;

// The manifest as written, at `path` ("spec.output.volume"): null when it
// did not write it.
const Json& Written(const Json& raw, const std::string& path) {
  static const Json absent;
  const Json* at = &raw;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = std::min(path.find('.', start), path.size());
    const std::string key = path.substr(start, dot - start);
    if (!at->is_object() || !at->contains(key)) return absent;
    at = &(*at)[key];
    start = dot + 1;
  }
  return *at;
}

enum class Effect { kRefuse, kNote };

struct Capability {
  const char* field;
  Effect effect;
  std::vector<Runner> where;  // where the rule applies
  // Whether the job asks for it; `raw` is the manifest as written.
  std::function<bool(const JobSpec& spec, const Json& raw)> asks;
  std::string reason;
};

const std::vector<Runner> kEverywhere = {Runner::kLocal, Runner::kKubernetes, Runner::kPlanning};
const std::vector<Runner> kKubernetesOnly = {Runner::kKubernetes};
const std::vector<Runner> kLocalOnly = {Runner::kLocal};
const std::vector<Runner> kPlanningOnly = {Runner::kPlanning};

auto WroteField(const char* path) {
  return [path](const JobSpec&, const Json& raw) { return !Written(raw, path).is_null(); };
}

const std::vector<Capability>& Capabilities() {
  static const std::vector<Capability> table = {
      // Pipeline, hybrid and auto jobs are planned (core/parallelism_choice.h)
      // and run by edgetrain run (agent/pipeline/); the operator does not
      // make stage pods yet.
      {"spec.parallelism.mode", Effect::kRefuse, kKubernetesOnly,
       [](const JobSpec& s, const Json&) { return s.parallelism.mode != ParallelismMode::kDataParallel; }, ""},
      {"spec.parallelism.mode", Effect::kNote, kPlanningOnly,
       [](const JobSpec& s, const Json&) { return s.parallelism.mode != ParallelismMode::kDataParallel; },
       "runs with edgetrain run; the operator does not run a pipeline, hybrid or auto job yet"},
      // A user's own model and data train under edgetrain run. The operator
      // places workers by the model's cost, which a TorchScript module's is not
      // known until an agent loads it, and its pods mount no data volume yet.
      {"spec.model.torchscript", Effect::kRefuse, {Runner::kKubernetes, Runner::kPlanning},
       [](const JobSpec& s, const Json&) { return s.model.kind == ModelKind::kTorchScript; },
       "is not supported on Kubernetes yet (edgetrain run trains it)"},
      {"spec.data.format", Effect::kRefuse, {Runner::kKubernetes, Runner::kPlanning},
       [](const JobSpec& s, const Json&) { return s.data.files.has_value(); },
       "data from files is not supported on Kubernetes yet (edgetrain run trains on it)"},
      // A TorchScript model is cut into stages between the children of its
      // nn.Sequential; any other module is refused, with the reason, when the
      // agent measures its layers for the plan (ScriptedLayers, agent/torch/models.h).
      {"spec.sync.compression", Effect::kRefuse, kEverywhere,
       [](const JobSpec& s, const Json&) { return s.sync.compression == Compression::kTopK; },
       "topk is not supported yet (none, fp16, int8 and sign are)"},
      {"spec.data.stream", Effect::kRefuse, kEverywhere, [](const JobSpec& s, const Json&) { return s.data.stream.has_value(); },
       "streaming data is not supported yet"},
      {"spec.budget.energyJoules", Effect::kRefuse, kEverywhere,
       [](const JobSpec& s, const Json&) { return s.budget.energy_joules > 0; }, "energy budgets are not supported yet"},
      // Meaningful on a cluster only.
      {"spec.placement", Effect::kNote, kLocalOnly, WroteField("spec.placement"),
       "applies on Kubernetes only; edgetrain run ignores it"},
      {"spec.template", Effect::kNote, kLocalOnly, WroteField("spec.template"),
       "applies on Kubernetes only; edgetrain run ignores it"},
      {"spec.cleanPodPolicy", Effect::kNote, kLocalOnly, WroteField("spec.cleanPodPolicy"),
       "applies on Kubernetes only; edgetrain run ignores it"},
      {"spec.ttlSecondsAfterFinished", Effect::kNote, kLocalOnly, WroteField("spec.ttlSecondsAfterFinished"),
       "applies on Kubernetes only; edgetrain run ignores it"},
      {"spec.output.volume", Effect::kNote, kLocalOnly, WroteField("spec.output.volume"),
       "applies on Kubernetes only; edgetrain run writes to spec.output.path on this machine"},
      // nodeLossGrace bounds how long a data-parallel worker waits for a lost coordinator; these wait for pipelines.
      {"spec.faultTolerance.replicateEvery", Effect::kNote, kLocalOnly, WroteField("spec.faultTolerance.replicateEvery"),
       "applies to pipelines and Kubernetes; edgetrain run ignores it"},
      // edgetrain run replays a pipeline's step without a device lost from a stage of several.
      {"spec.faultTolerance.replay", Effect::kNote, kLocalOnly,
       [](const JobSpec& s, const Json& raw) {
         return s.parallelism.mode == ParallelismMode::kDataParallel &&
                !Written(raw, "spec.faultTolerance.replay").is_null();
       },
       "applies to pipelines only; a data-parallel team trains on without a lost worker"},
      {"spec.faultTolerance.maxRecoveries", Effect::kNote, kLocalOnly, WroteField("spec.faultTolerance.maxRecoveries"),
       "applies to pipelines and Kubernetes; edgetrain run ignores it"},
      // Without effect on a job of one worker, anywhere.
      {"spec.sync", Effect::kNote, kEverywhere,
       [](const JobSpec& s, const Json& raw) { return s.parallelism.workers == 1 && !Written(raw, "spec.sync").is_null(); },
       "has no effect on a job of one worker"},
      {"spec.data.partition", Effect::kNote, kEverywhere,
       [](const JobSpec& s, const Json& raw) {
         return s.parallelism.workers == 1 && !Written(raw, "spec.data.partition").is_null();
       },
       "has no effect on a job of one worker: it trains on all the data"},
  };
  return table;
}

}  // namespace

SupportCheck CheckSupport(const TrainingJobManifest& job, Runner runner) {
  SupportCheck check;
  for (const Capability& c : Capabilities()) {
    if (std::find(c.where.begin(), c.where.end(), runner) == c.where.end() || !c.asks(job.spec, job.raw)) continue;
    if (c.effect == Effect::kNote) {
      check.notes.push_back(std::string(c.field) + " " + c.reason);
    } else if (c.reason.empty()) {  // the mode's name is the reason
      check.unsupported.push_back({c.field, std::string(NameOf(job.spec.parallelism.mode)) + " is not supported yet"});
    } else {
      check.unsupported.push_back({c.field, c.reason});
    }
  }
  return check;
}

}  // namespace edgetrain::api

#include "cli/local_support.h"

namespace edgetrain::cli {
namespace {

using Json = nlohmann::json;

bool Written(const Json& raw_spec, const char* field) {
  return raw_spec.is_object() && raw_spec.contains(field) && !raw_spec[field].is_null();
}

}  // namespace

LocalSupport CheckLocalSupport(const api::TrainingJobManifest& job) {
  LocalSupport s;
  const JobSpec& spec = job.spec;
  if (spec.parallelism.mode != ParallelismMode::kDataParallel) {
    s.unsupported.push_back({"spec.parallelism.mode", std::string(NameOf(spec.parallelism.mode)) + " is not supported yet"});
  }
  if (spec.sync.compression == Compression::kTopK) {
    s.unsupported.push_back({"spec.sync.compression", "topk is not supported yet (none, fp16 and int8 are)"});
  }
  if (spec.data.stream) s.unsupported.push_back({"spec.data.stream", "streaming data is not supported yet"});
  if (spec.budget.energy_joules > 0) {
    s.unsupported.push_back({"spec.budget.energyJoules", "energy budgets are not supported yet"});
  }

  // Only what the manifest wrote, not what the CRD defaulted, earns a note.
  const Json raw = job.raw.value("spec", Json::object());
  for (const char* field : {"placement", "template", "cleanPodPolicy", "ttlSecondsAfterFinished"}) {
    if (Written(raw, field)) s.notes.push_back("spec." + std::string(field) + " applies on Kubernetes only; edgetrain run ignores it");
  }
  if (Written(raw, "output") && Written(raw["output"], "volume")) {
    s.notes.push_back("spec.output.volume applies on Kubernetes only; edgetrain run writes to spec.output.path on this machine");
  }
  if (Written(raw, "faultTolerance")) {
    // nodeLossGrace bounds how long a data-parallel worker waits for a lost coordinator.
    for (const char* field : {"replicateEvery", "replay", "maxRecoveries"}) {
      if (Written(raw["faultTolerance"], field)) {
        s.notes.push_back("spec.faultTolerance." + std::string(field) + " applies to pipelines and Kubernetes; edgetrain run ignores it");
      }
    }
  }
  if (spec.parallelism.workers == 1) {
    if (Written(raw, "sync")) s.notes.push_back("spec.sync has no effect on a job of one worker");
    if (Written(raw, "data") && Written(raw["data"], "partition")) {
      s.notes.push_back("spec.data.partition has no effect on a job of one worker: it trains on all the data");
    }
  }
  return s;
}

}  // namespace edgetrain::cli

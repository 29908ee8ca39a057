#include "api/team_request.h"

#include "api/yaml_scalars.h"
#include "core/quantity.h"
#include "core/round_deadline.h"

namespace edgetrain::api {

using Json = nlohmann::json;

StatusOr<TeamRequest> TeamRequestOf(const TrainingJobManifest& job, const PodDefaults& defaults,
                                    const std::optional<ModelSize>& measured) {
  const Json& spec = job.object.at("spec");
  TeamRequest request;
  // One worker is a job of one on a cluster: a single agent, no team to sync.
  request.solo = job.spec.parallelism.workers == 1;
  request.workers = request.solo ? 0 : job.spec.parallelism.workers;
  request.step = measured ? StepCostOf(job.spec, *measured) : StepCostOf(job.spec);
  request.minimise_energy = job.spec.budget.energy_joules > 0;
  if (job.spec.sync.policy == SyncPolicy::kDeadline) {
    request.round_quorum = job.spec.sync.quorum.value_or(kDefaultQuorum);
  }
  request.architectures = defaults.architectures;
  const auto& stream = job.spec.data.stream;
  request.workers_need_stream = stream && !stream->directory && stream->rates_per_second.empty();

  ResourceAmounts pod = defaults.requests;
  // What the pods ask: a request left out is its limit, as the Pod API
  // defaults it (a GPU is given as a limit alone, as NVIDIA's device plugin
  // documents it).
  Json requests = spec.value("/template/resources/limits"_json_pointer, Json::object());
  requests.update(spec.value("/template/resources/requests"_json_pointer, Json::object()));
  if (requests.contains("cpu")) {
    StatusOr<int64_t> cpu = ParseQuantityMillis(QuantityText(requests["cpu"]));
    if (!cpu.ok()) return cpu.status().WithContext("spec.template.resources.requests.cpu");
    pod.cpu_millis = *cpu;
  }
  if (requests.contains("memory")) {
    StatusOr<int64_t> memory = ParseQuantityUnits(QuantityText(requests["memory"]));
    if (!memory.ok()) return memory.status().WithContext("spec.template.resources.requests.memory");
    pod.memory_bytes = *memory;
  }
  // A GPU or any extended resource (a name with its vendor's domain) asked
  // for: placement counts it against each node's (a node that lists none has
  // none). Ephemeral storage and huge pages are not counted, as before: every
  // node lists them, and carrying them through placement cost an allocation
  // a node each time a team is placed.
  for (auto it = requests.begin(); it != requests.end(); ++it) {
    if (!IsExtendedResource(it.key())) continue;
    StatusOr<int64_t> amount = ParseQuantityMillis(QuantityText(it.value()));
    if (!amount.ok()) return amount.status().WithContext("spec.template.resources.requests." + it.key());
    if (*amount > 0) pod.AddOther(it.key(), *amount);
  }
  // The template is the workers' and the coordinator's alike: the coordinator
  // trains nothing, but aggregates every worker's rows.
  request.worker_requests = pod;
  request.coordinator_requests = pod;

  const Json placement = spec.value("placement", Json::object());
  request.allow_transient = placement.value("allowTransient", true);
  request.node_selector = placement.value("nodeSelector", std::map<std::string, std::string>{});
  for (const Json& t : spec.value("/template/tolerations"_json_pointer, Json::array())) {
    Toleration toleration;
    toleration.key = t.value("key", "");
    toleration.op = t.value("operator", "Equal");
    toleration.value = t.value("value", "");
    toleration.effect = t.value("effect", "");
    if (t.contains("tolerationSeconds")) toleration.seconds = t["tolerationSeconds"].get<int64_t>();
    request.tolerations.push_back(toleration);
  }
  return request;
}

}  // namespace edgetrain::api

#pragma once
// The names and labels of what the operator makes for a TrainingJob, in one
// place: the reconciler finds a job's pods by these, `kubectl get pods -l
// edgetrain.dev/job=NAME` shows them, and docs/operator.md lists them.

#include <cstdint>
#include <string>

namespace edgetrain::operator_ {

inline constexpr const char* kJobLabel = "edgetrain.dev/job";    // the TrainingJob's name
inline constexpr const char* kRoleLabel = "edgetrain.dev/role";  // coordinator | worker | model-check
inline constexpr const char* kRankLabel = "edgetrain.dev/rank";  // a worker's rank
// The plan generation a pod was made for; pods of another one are replaced.
inline constexpr const char* kGenerationLabel = "edgetrain.dev/plan-generation";
inline constexpr const char* kManagedBy = "app.kubernetes.io/managed-by";
inline constexpr const char* kOperatorName = "edgetrain-operator";

// The ports every agent listens on, in its pod's own network namespace.
inline constexpr int kPeerPort = 7000;
inline constexpr int kHttpPort = 8080;

// The headless Service (and the coordinator pod's subdomain) is named after the job.
inline std::string ServiceName(const std::string& job) { return job; }
inline std::string PlanConfigMapName(const std::string& job) { return job + "-plan"; }
// A team's identity (operator/controller/job_credentials.h): the Secret its
// agents mount (kubernetes.io/tls), and the one holding its authority's key,
// which no pod mounts.
inline std::string AgentTlsSecretName(const std::string& job) { return job + "-tls"; }
inline std::string AuthoritySecretName(const std::string& job) { return job + "-ca"; }
// (An agent's pod mounts the former at api::kTlsMountPath.)
// The coordinator's pod, named like a worker's after the plan generation it
// was given its node at: one placed anew (its node lost or leaving) has a
// name of its own while the one it replaces may still be Terminating.
inline std::string CoordinatorPodName(const std::string& job, int64_t since_generation = 1) {
  return job + "-coordinator" + (since_generation > 1 ? "-g" + std::to_string(since_generation) : std::string());
}
// A worker's pod is named after the plan generation its slot was given at, so a
// replacement has a name of its own while the pod it replaces may still be
// Terminating on a node that went silent.
inline std::string WorkerPodName(const std::string& job, int rank, int64_t since_generation = 1) {
  return job + "-worker-" + std::to_string(rank) +
         (since_generation > 1 ? "-g" + std::to_string(since_generation) : std::string());
}
// The pod that loads a TorchScript module before its team is placed
// (operator/controller/model_check.h), role kModelCheckRole.
inline constexpr const char* kModelCheckRole = "model-check";
inline std::string ModelCheckPodName(const std::string& job) { return job + "-model-check"; }
// Which check a check pod is: a digest of its spec (ModelCheckOf).
inline constexpr const char* kModelCheckAnnotation = "edgetrain.dev/model-check";
// Where the plan's coordinator runs, on the plan's ConfigMap, and the plan
// generation it was given that node at (none: 1).
inline constexpr const char* kCoordinatorNodeAnnotation = "edgetrain.dev/coordinator-node";
inline constexpr const char* kCoordinatorSinceAnnotation = "edgetrain.dev/coordinator-since-generation";

}  // namespace edgetrain::operator_

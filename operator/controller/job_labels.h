#pragma once
// The names and labels of what the operator makes for a TrainingJob, in one
// place: the reconciler finds a job's pods by these, `kubectl get pods -l
// edgetrain.dev/job=NAME` shows them, and docs/operator.md lists them.

#include <string>

namespace edgetrain::operator_ {

inline constexpr const char* kJobLabel = "edgetrain.dev/job";    // the TrainingJob's name
inline constexpr const char* kRoleLabel = "edgetrain.dev/role";  // coordinator | worker
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
inline std::string CoordinatorPodName(const std::string& job) { return job + "-coordinator"; }
inline std::string WorkerPodName(const std::string& job, int rank) { return job + "-worker-" + std::to_string(rank); }

}  // namespace edgetrain::operator_

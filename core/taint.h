#pragma once
// Taints on nodes and the tolerations of pods, with Kubernetes' matching rule:
// shared by cluster profiles (which give nodes taints) and placement (which
// checks a job's pods tolerate them).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace edgetrain {

struct Taint {
  std::string key, value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
};

struct Toleration {
  std::string key;            // empty with Exists: every taint
  std::string op = "Equal";   // Equal or Exists
  std::string value;
  std::string effect;         // empty: every effect
  std::optional<int64_t> seconds;  // NoExecute only: how long the pod stays once tainted
};

// k8s.io/api/core/v1 Toleration.ToleratesTaint.
bool Tolerates(const Toleration& toleration, const Taint& taint);
bool ToleratesAll(const std::vector<Toleration>& tolerations, const Taint& taint);

}  // namespace edgetrain

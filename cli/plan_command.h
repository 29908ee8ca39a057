#pragma once
// `edgetrain plan JOB.yaml --nodes PROFILE.yaml` (or `--kubeconfig FILE`): where
// the operator would put the job's pods on that site (or live cluster), and why - every node's verdict, the prediction that
// ranked it, and what kept the others out (docs/placement.md).

#include <ostream>
#include <string>

namespace edgetrain::cli {

struct PlanOptions {
  std::string manifest_path;
  std::string nodes_path;  // a cluster profile, or
  std::string kubeconfig;  // a live cluster's Nodes and bound pods, as the operator sees them
  bool json = false;       // one JSON document instead of the table
};

// 0 when the team is placed; 1 when it does not fit the site (the reason
// printed); 2 for a bad manifest or profile.
int PrintPlan(const PlanOptions& options, std::ostream& out, std::ostream& err);

}  // namespace edgetrain::cli

#pragma once
// `edgetrain plan JOB.yaml --nodes PROFILE.yaml` (or `--kubeconfig FILE`): where
// the operator would put the job's pods on that site (or live cluster), and why - every node's verdict, the prediction that
// ranked it, and what kept the others out (docs/placement.md). For a pipeline,
// hybrid or auto job, also how it would split the model over the workers'
// nodes: the layers measured by the agent, the planner's stages and
// predictions against the even split and data parallelism, and auto's pick
// (docs/pipeline.md). edgetrain run trains such a job, and the operator runs
// it from the same plan (docs/pipeline.md, "On Kubernetes").

#include <ostream>
#include <string>

namespace edgetrain::cli {

struct PlanOptions {
  std::string manifest_path;
  std::string nodes_path;  // a cluster profile, or
  std::string kubeconfig;  // a live cluster's Nodes and bound pods, as the operator sees them
  bool json = false;       // one JSON document instead of the table
  std::string agent_binary;  // measures a pipeline job's layers; found beside the runner when empty
  // A pipeline, hybrid or auto job's stages in place of its
  // spec.parallelism.stages, and its micro-batches in place of the cost
  // model's best (0), as edgetrain run takes them.
  std::string stages;
  int micro_batches = 0;
};

// 0 when the team is placed (and a pipeline job planned); 1 when it does not
// fit the site, or no plan fits the devices' memory (the reason printed); 2 for
// a bad manifest or profile.
int PrintPlan(const PlanOptions& options, std::ostream& out, std::ostream& err);

}  // namespace edgetrain::cli

#pragma once

#include <ostream>
#include <string>

namespace edgetrain::cli {

// `edgetrain partition JOB.yaml`: how many training samples of each label
// every worker of the job gets (spec.data.partition), and the labels no worker
// sees. With `json`, one document that also holds each worker's sample
// indices, so another framework (a benchmark's DDP peer) trains on exactly the
// same parts.
int PrintPartition(const std::string& manifest_path, bool json, std::ostream& out, std::ostream& err);

}  // namespace edgetrain::cli

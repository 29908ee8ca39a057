#pragma once

#include <ostream>
#include <string>

namespace edgetrain::cli {

// `edgetrain partition JOB.yaml`: the training-sample indices each worker of the
// job gets, as JSON — so another framework (a benchmark's DDP peer) trains on
// exactly the same parts.
int PrintPartition(const std::string& manifest_path, std::ostream& out, std::ostream& err);

}  // namespace edgetrain::cli

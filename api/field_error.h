#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace edgetrain::api {

// One thing wrong with a manifest, where: "spec.parallelism.workers: must be >= 1 (got 0)".
struct FieldError {
  std::string path;
  std::string reason;
  std::string ToString() const { return path.empty() ? reason : path + ": " + reason; }
};

// All errors in one InvalidArgument status, one per line, in the order found.
Status ToStatus(const std::vector<FieldError>& errors);

}  // namespace edgetrain::api

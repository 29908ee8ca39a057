#pragma once

#include <map>
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

// Where each field of a document was written: its path as a FieldError names
// it (spec.data.batchSize, spec.nodes[2].link) to its key's line, from 1
// (api/yaml_json.h fills it).
using FieldLines = std::map<std::string, int>;

// "job.yaml:12: " for the line `path` was written on, or the nearest field
// it is under (a missing field's parent); "" where no line is known.
std::string LinePrefix(const FieldLines* lines, const std::string& source, std::string path);

// All errors in one InvalidArgument status, one per line: in the order found,
// or with `lines` in the file's order (those of no known line last, as
// found), each led by `source` and the line of its field, or of the
// nearest field it is under (a missing one's), as "job.yaml:12: spec...": a
// manifest's content errors named the field alone where its syntax errors
// named the line (a new user's trial).
Status ToStatus(const std::vector<FieldError>& errors, const FieldLines* lines = nullptr,
                const std::string& source = "");

}  // namespace edgetrain::api

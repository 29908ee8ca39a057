#pragma once
// Manifests are YAML; everything after parsing works on JSON values, as the API
// server does. Plain scalars get their types the way kubectl's YAML decoder gives
// them (api/yaml_scalars.h: YAML 1.1's, octal and y/n included), quoted scalars
// stay strings, merge keys (<<: *defaults) merge as kubectl merges them, and
// duplicate keys are refused as a strict server would.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/field_error.h"
#include "core/status.h"

namespace edgetrain::api {

// Every document in `text`, in order; empty documents are kept as null.
// Syntax errors name `source`, line and column: "job.yaml:3:7: ...". With
// `lines`, where each document's fields were written, one map a document;
// empty maps for a text of one line, whose fields are all on its line 1 (the
// operator's manifests, the API server's objects as JSON).
StatusOr<std::vector<nlohmann::json>> ParseYamlDocuments(std::string_view text, const std::string& source,
                                                         std::vector<FieldLines>* lines = nullptr);

// `documents` without the empty ones (null), and `lines`, ParseYamlDocuments',
// in step with them.
void DropEmptyDocuments(std::vector<nlohmann::json>& documents, std::vector<FieldLines>& lines);

}  // namespace edgetrain::api

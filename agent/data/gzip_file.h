#pragma once

#include <string>

#include "core/status.h"

namespace edgetrain::agent {

// The whole decompressed content of a .gz file (plain files pass through).
StatusOr<std::string> ReadGzipFile(const std::string& path);

// A data file named by a manifest, whole, gunzipped when it starts with gzip's
// magic (1f 8b) whatever its name. Every failure is the user's to fix, so all
// are InvalidArgument: "<path>: no such file", "<path>: a folder, not a file",
// a corrupt gzip stream.
StatusOr<std::string> ReadDataFile(const std::string& path);

}  // namespace edgetrain::agent

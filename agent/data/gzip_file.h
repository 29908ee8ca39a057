#pragma once

#include <string>

#include "core/status.h"

namespace edgetrain::agent {

// The whole decompressed content of a .gz file (plain files pass through).
StatusOr<std::string> ReadGzipFile(const std::string& path);

}  // namespace edgetrain::agent

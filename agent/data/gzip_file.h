#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace edgetrain::agent {

// The whole decompressed content of a .gz file (plain files pass through), or
// an InvalidArgument error once it would pass `most_bytes`: a file of a
// megabyte can unpack to gigabytes (a user's mistake or a gzip bomb), and
// the agent would be killed for its memory before anything said which file.
StatusOr<std::string> ReadGzipFile(const std::string& path, uint64_t most_bytes);

// The most a data file may hold, unpacked, on this machine: a quarter of its
// memory, or of its container's (cgroup v2 memory.max) when less. The
// content's buffer doubles as it grows (a copy of the old beside the new),
// it is parsed into a copy of up to its own size, and the agent needs the rest.
uint64_t DataFileLimit();

// A data file named by a manifest, whole, gunzipped when it starts with gzip's
// magic (1f 8b) whatever its name, of at most `most_bytes` unpacked. Every
// failure is the user's to fix, so all are InvalidArgument: "<path>: no such
// file", "<path>: a folder, not a file", not a regular file (a pipe or a
// device, read forever), too large, a corrupt gzip stream.
StatusOr<std::string> ReadDataFile(const std::string& path, uint64_t most_bytes = DataFileLimit());

}  // namespace edgetrain::agent

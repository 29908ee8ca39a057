#pragma once
// Files that are either wholly the old version or wholly the new one: written to
// a temporary of a name of its own beside the target (NAME.tmp-XXXXXX), flushed
// to disk, renamed over it, and the directory flushed so the rename itself
// survives a power cut. A crash mid-write leaves the previous file intact, and
// the temporary beside it.

#include <string>
#include <string_view>

#include "core/status.h"

namespace edgetrain::agent {

// Writes `content` to `path` atomically.
Status WriteFileAtomically(const std::string& path, std::string_view content);

// The whole content of a file.
StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace edgetrain::agent

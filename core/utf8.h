#pragma once
// UTF-8, the only encoding JSON carries: edgetrain's plans, progress lines and
// results are JSON, and its encoder throws on a byte that is not (a Latin-1
// file name aborted `edgetrain run`). Text from outside — a manifest, a path on
// this machine — is checked here before it reaches one.

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace edgetrain {

// Where `text` stops being UTF-8, or npos.
size_t FirstInvalidUtf8(std::string_view text);

// `text` with every byte that is not UTF-8 shown as \xNN, for a message about it.
std::string ShowInvalidUtf8(std::string_view text);

// A path edgetrain is to hand on in JSON (to its agents, in its plans): Ok, or
// InvalidArgument naming `field` and saying what to do. A path cannot be
// re-encoded without naming another file, so it is refused, not repaired.
Status CheckUtf8Path(std::string_view path, std::string_view field);

}  // namespace edgetrain

#pragma once
// How edgetrain and edgetrain-agent end (docs/launch-contract.md): the exit
// codes, and the one table from a failure's Status code to its exit code that
// both binaries use.

#include "core/status.h"

namespace edgetrain {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;        // the work could not be done: data missing, I/O, a peer lost
inline constexpr int kExitInvalid = 2;       // the input is wrong: flags, manifest, profile, plan
inline constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as shells report Ctrl-C
inline constexpr int kExitTerminated = 143;   // 128 + SIGTERM: the same stop, asked by a supervisor rather than Ctrl-C
inline constexpr int kExitHungUp = 129;       // 128 + SIGHUP: the same stop, its terminal closed or ssh dropped

int ExitCodeFor(StatusCode code);
inline int ExitCodeFor(const Status& status) { return ExitCodeFor(status.code()); }

}  // namespace edgetrain

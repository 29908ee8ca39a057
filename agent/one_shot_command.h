#pragma once
// What edgetrain-agent's one-shot commands (check-model, profile-layers,
// evaluate) share, so that they answer the same way: --help on the result
// stream and exit 0; a bad argument refused through the command's own
// failure; and check-model's and profile-layers' failures said as one
// `result {"error": ...}` line, also written as the pod's termination message
// the operator reads.

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/status.h"

namespace edgetrain::agent {

// Parses `args` (in order) into `app`. The exit code when parsing ends the
// command: 0 once the help asked for is printed on `lines`, or what `fail`
// returns for an argument CLI11 refused; nullopt to go on.
std::optional<int> ParseOneShot(CLI::App& app, const std::vector<std::string>& args, std::ostream& lines,
                                const std::function<int(const Status&)>& fail);

// `command`'s failure: why on `log`, {"error": why} as its result line on
// `lines` and (fitted to the kubelet's limit) in `termination_log` when
// given; the failure's exit code (core/exit_codes.h).
int FailOneShot(std::string_view command, const Status& status, const std::string& termination_log,
                std::ostream& lines, std::ostream& log);

}  // namespace edgetrain::agent

#pragma once
// One agent's life: read the plan, serve its endpoints, load its data, train its
// part, report. `lines` receives the launch contract's stdout lines (`http ADDR`,
// `result {...}`); diagnostics go to `log`.

#include <atomic>
#include <ostream>

#include "agent/agent_flags.h"
#include "core/exit_codes.h"

namespace edgetrain::agent {

int RunAgent(const AgentFlags& flags, std::ostream& lines, std::ostream& log, const std::atomic<bool>& cancel);

}  // namespace edgetrain::agent

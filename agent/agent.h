#pragma once
// One agent's life: read the plan, serve its endpoints, load its data, train its
// part, report. `lines` receives the launch contract's stdout lines (`http ADDR`,
// `result {...}`); diagnostics go to `log`.

#include <atomic>
#include <ostream>

#include "agent/agent_flags.h"

namespace edgetrain::agent {

// Exit codes of edgetrain-agent.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;   // a runtime failure (data missing, I/O, ...)
inline constexpr int kExitInvalid = 2;  // bad flags or plan

int RunAgent(const AgentFlags& flags, std::ostream& lines, std::ostream& log, const std::atomic<bool>& cancel);

}  // namespace edgetrain::agent

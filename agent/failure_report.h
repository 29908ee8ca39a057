#pragma once
// An agent that cannot do its part still ends with the launch contract's last
// line, `result {...}` — state "failed", stopReason "failed", error <why> — so
// that whoever started it reads the same line from every agent, whatever went
// wrong.

#include <ostream>

#include "core/job_progress.h"
#include "core/status.h"

namespace edgetrain::agent {

// Prints the failed result line on `lines` — `so_far`, the job's progress until
// then, marked failed — and why on `log`; returns the failure's exit code
// (core/exit_codes.h).
int ReportFailure(const Status& status, std::ostream& lines, std::ostream& log, JobProgress so_far = {});

}  // namespace edgetrain::agent

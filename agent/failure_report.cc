#include "agent/failure_report.h"

#include "core/exit_codes.h"

namespace edgetrain::agent {

int ReportFailure(const Status& status, std::ostream& lines, std::ostream& log, JobProgress so_far) {
  JobProgress& failed = so_far;
  failed.state = JobState::kFailed;
  failed.stop_reason = StopReason::kFailed;
  failed.error = status.message();
  log << "edgetrain-agent: " << status.message() << "\n";
  lines << "result " << EncodeJobProgress(failed) << std::endl;
  return ExitCodeFor(status);
}

}  // namespace edgetrain::agent

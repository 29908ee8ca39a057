#include "agent/failure_report.h"

#include "core/exit_codes.h"
#include "core/job_progress.h"

namespace edgetrain::agent {

int ReportFailure(const Status& status, std::ostream& lines, std::ostream& log) {
  JobProgress failed;
  failed.state = JobState::kFailed;
  failed.stop_reason = "failed: " + status.message();
  log << "edgetrain-agent: " << status.message() << "\n";
  lines << "result " << EncodeJobProgress(failed) << std::endl;
  return ExitCodeFor(status);
}

}  // namespace edgetrain::agent

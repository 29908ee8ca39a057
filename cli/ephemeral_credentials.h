#pragma once
// The local runner's mutual TLS for one run (pki/job_identity.h): an authority
// made in memory for the job and dropped (its key is never written), and one
// certificate from it that every agent of the run presents, in a folder of the
// runner's own (mode 0700) that goes when the run ends. The folder is a run
// folder (cli/run_folder.h), locked while the runner lives: a runner killed
// outright leaves it, key and all, and the next one removes it, as it does
// the run's other folder.

#include <optional>
#include <string>

#include "cli/run_folder.h"
#include "core/clock.h"
#include "core/status.h"

namespace edgetrain::cli {

class EphemeralCredentials {
 public:
  // Valid from an hour ago (a clock a little behind is no reason to refuse)
  // for `validity`.
  static StatusOr<EphemeralCredentials> Make(const std::string& job, Duration validity);

  EphemeralCredentials(EphemeralCredentials&& other) noexcept;
  EphemeralCredentials& operator=(EphemeralCredentials&&) = delete;
  ~EphemeralCredentials();

  // The folder the agents' --tls-dir names.
  const std::string& dir() const { return dir_; }

 private:
  explicit EphemeralCredentials(RunFolder folder) : folder_(std::move(folder)), dir_(folder_->path().string()) {}
  std::optional<RunFolder> folder_;  // empty once moved from
  std::string dir_;
};

}  // namespace edgetrain::cli

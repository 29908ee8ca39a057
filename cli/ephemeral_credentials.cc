#include "cli/ephemeral_credentials.h"

#include <filesystem>

#include "pki/tls_folder.h"

namespace edgetrain::cli {

StatusOr<EphemeralCredentials> EphemeralCredentials::Make(const std::string& job, Duration validity) {
  StatusOr<std::filesystem::path> temporary = SafeTemporaryFolder("the run's TLS credentials");
  if (!temporary.ok()) return temporary.status();
  // edgetrain-tls-JOB-XXXXXX, 0700 (mkdtemp): the key is the runner's user's alone.
  StatusOr<RunFolder> folder = RunFolder::Create(*temporary, "tls-" + job);
  if (!folder.ok()) {
    return UnavailableError("cannot make a folder for the run's TLS credentials: " + folder.status().message());
  }
  EphemeralCredentials made(std::move(*folder));
  const auto now = std::chrono::system_clock::now();
  EDGETRAIN_RETURN_IF_ERROR(pki::WriteNewJobCredentials(
      made.dir_, job, now - std::chrono::hours(1),
      now + std::chrono::duration_cast<std::chrono::system_clock::duration>(validity)));
  return made;
}

EphemeralCredentials::EphemeralCredentials(EphemeralCredentials&& other) noexcept
    : folder_(std::move(other.folder_)), dir_(std::move(other.dir_)) {
  other.folder_.reset();
  other.dir_.clear();
}

EphemeralCredentials::~EphemeralCredentials() {
  if (folder_) folder_->Remove();
}

}  // namespace edgetrain::cli

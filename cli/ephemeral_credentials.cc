#include "cli/ephemeral_credentials.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "pki/tls_folder.h"

namespace edgetrain::cli {

StatusOr<EphemeralCredentials> EphemeralCredentials::Make(const std::string& job, Duration validity) {
  std::error_code ec;
  std::string pattern = (std::filesystem::temp_directory_path(ec) / ("edgetrain-tls-" + job + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {  // 0700: the key is the runner's user's alone
    return UnavailableError("cannot make a folder for the run's TLS credentials (" + pattern +
                            "): " + std::strerror(errno));
  }
  EphemeralCredentials made(pattern);
  const auto now = std::chrono::system_clock::now();
  EDGETRAIN_RETURN_IF_ERROR(pki::WriteNewJobCredentials(
      made.dir_, job, now - std::chrono::hours(1),
      now + std::chrono::duration_cast<std::chrono::system_clock::duration>(validity)));
  return made;
}

EphemeralCredentials::EphemeralCredentials(EphemeralCredentials&& other) noexcept : dir_(std::move(other.dir_)) {
  other.dir_.clear();
}

EphemeralCredentials::~EphemeralCredentials() {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace edgetrain::cli

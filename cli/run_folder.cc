#include "cli/run_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "pki/tls_folder.h"

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLockName = "runner.lock";
constexpr const char* kFolderPrefix = "edgetrain-";

}  // namespace

StatusOr<RunFolder> RunFolder::Create(const fs::path& parent, const std::string& job) {
  std::string pattern = (parent / (kFolderPrefix + job + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data())) {
    return FailedPreconditionError("cannot create a run folder in " + parent.string() + ": " + std::strerror(errno));
  }
  fs::path folder = pattern;
  // Locked under another name, then renamed: a cleaner never sees the lock file
  // in the instant before it is locked.
  const fs::path staged = folder / (std::string(kLockName) + ".new");
  int fd = ::open(staged.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0 || ::rename(staged.c_str(), (folder / kLockName).c_str()) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    std::error_code ec;
    fs::remove_all(folder, ec);
    return FailedPreconditionError("cannot lock the run folder " + folder.string() + ": " + why);
  }
  return RunFolder(std::move(folder), fd);
}

RunFolder::RunFolder(RunFolder&& other) noexcept : path_(std::move(other.path_)), lock_fd_(other.lock_fd_) {
  other.lock_fd_ = -1;
}

RunFolder::~RunFolder() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void RunFolder::Keep() {
  std::error_code ec;
  fs::remove(path_ / kLockName, ec);
}

void RunFolder::Remove() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

StatusOr<fs::path> SafeTemporaryFolder(const std::string& what) {
  std::error_code ec;
  const fs::path temporary = fs::temp_directory_path(ec);
  if (ec || temporary.empty()) {
    const char* set = std::getenv("TMPDIR");
    const std::string why = " (" + (ec ? ec.message() : std::string("empty")) + ")";
    if (!set) return InvalidArgumentError(what + " go in the temporary folder, and /tmp is none" + why);
    return InvalidArgumentError(what + " go in the temporary folder, and TMPDIR=" + set + " names none" + why +
                                "; set TMPDIR to a folder of your own, or unset it for /tmp");
  }
  // A folder of ours there is ours alone, but one it sits in that another
  // may write without the sticky bit lets them rename it and put their own
  // in its place (a security review ran with TMPDIR a folder of mode 0777).
  if (const std::string unsafe = pki::WhoElseMayReplace(temporary.string()); !unsafe.empty()) {
    return InvalidArgumentError(what + " go in the temporary folder " + temporary.string() + ", and " + unsafe +
                                ", who could swap them; set TMPDIR to a folder of your own");
  }
  return temporary;
}

std::vector<fs::path> RemoveAbandonedRunFolders(const fs::path& parent) {
  std::vector<fs::path> removed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    if (entry.path().filename().string().rfind(kFolderPrefix, 0) != 0 || !entry.is_directory(ec)) continue;
    int fd = ::open((entry.path() / kLockName).c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;  // not a runner's, or kept on purpose
    // Free only once its runner is gone; held while the folder goes.
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && fs::remove_all(entry.path(), ec) > 0) removed.push_back(entry.path());
    ::close(fd);
  }
  return removed;
}

}  // namespace edgetrain::cli

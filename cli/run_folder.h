#pragma once
// The folder of one local run: its plan and every agent's log, under the
// temporary directory ($TMPDIR, else /tmp) as edgetrain-JOB-XXXXXX.
//
// The runner holds a lock on the folder (flock on its runner.lock) for as long
// as it lives; the kernel lets go of it when the runner dies, even by SIGKILL.
// So a later runner tells a folder in use from one whose runner was killed, and
// removes the latter. A folder kept on purpose (a failed run's logs) has no
// lock file and is left alone.

#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"

namespace edgetrain::cli {

class RunFolder {
 public:
  // A new folder for `job` in `parent`, locked.
  static StatusOr<RunFolder> Create(const std::filesystem::path& parent, const std::string& job);
  RunFolder(RunFolder&& other) noexcept;
  RunFolder& operator=(RunFolder&&) = delete;
  ~RunFolder();  // unlocks, leaving the folder where it is unless Remove()d

  const std::filesystem::path& path() const { return path_; }
  // Keeps the folder for a person to read: no later runner removes it.
  void Keep();
  void Remove();

 private:
  RunFolder(std::filesystem::path path, int lock_fd) : path_(std::move(path)), lock_fd_(lock_fd) {}

  std::filesystem::path path_;
  int lock_fd_ = -1;
};

// The temporary folder ($TMPDIR, else /tmp) that `what` goes in, once it is
// one: InvalidArgument for a TMPDIR that names no folder (its files had gone,
// unchecked, into the folder the run was started in), or one where another
// user of this machine could swap folders (pki::WhoElseMayReplace), saying so
// of `what`.
StatusOr<std::filesystem::path> SafeTemporaryFolder(const std::string& what);

// Removes the run folders in `parent` whose runner is gone without cleaning up
// after itself; returns them.
std::vector<std::filesystem::path> RemoveAbandonedRunFolders(const std::filesystem::path& parent);

}  // namespace edgetrain::cli

#include "cli/output_folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace edgetrain::cli {

StatusOr<OutputFolderLock> OutputFolderLock::Take(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return FailedPreconditionError("cannot open " + folder + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK) {
      return FailedPreconditionError("another edgetrain run is using " + folder +
                                     " (training into it, or serving its series with --observe): let it end, or "
                                     "give this run another folder (--output)");
    }
    return FailedPreconditionError("cannot lock " + folder + ": " + std::strerror(error));
  }
  return OutputFolderLock(fd);
}

OutputFolderLock::~OutputFolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the lock
}

}  // namespace edgetrain::cli

#include "agent/storage/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace edgetrain::agent {
namespace {

std::string DirectoryOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// `tmp_path`, written and flushed, renamed over `path`, and the directory
// flushed so the rename itself survives a power cut.
Status RenameIntoPlace(const std::string& tmp_path, const std::string& path) {
  if (std::rename(tmp_path.c_str(), path.c_str()) != 0) {
    return InternalError("cannot rename " + tmp_path + " to " + path + ": " + std::strerror(errno));
  }
  // Its failure said: the rename may not survive a power cut, and the caller
  // goes on as if it would (a file system that cannot flush a directory
  // says EINVAL, and has nothing to flush).
  const int dir = ::open(DirectoryOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return InternalError("cannot open " + DirectoryOf(path) + " to flush it: " + std::strerror(errno));
  const bool flushed = ::fsync(dir) == 0 || errno == EINVAL;
  const std::string why = flushed ? "" : std::strerror(errno);
  ::close(dir);
  if (!flushed) return InternalError("cannot flush " + DirectoryOf(path) + ": " + why);
  return Status::Ok();
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  const std::string tmp = path + ".tmp";
  // Written with the system's calls, whose errno says why (a full disk: the
  // stream's failure said only "cannot write"), and a part written removed:
  // left behind, it kept the disk full for the next attempt.
  auto failed = [&](const char* doing, int fd) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return InternalError(std::string("cannot ") + doing + " " + tmp + ": " + why);
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return failed("create", -1);
  for (size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return failed("write", fd);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return failed("flush", fd);
  if (::close(fd) != 0) return failed("close", -1);
  if (Status committed = RenameIntoPlace(tmp, path); !committed.ok()) {
    ::unlink(tmp.c_str());
    return committed;
  }
  return Status::Ok();
}

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFoundError("cannot read " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return NotFoundError("cannot read " + path + ": it is a folder");
  }
  // Read with the system's calls: a read that failed midway (a network
  // volume gone) is not a damaged file. Its bytes, cut short, would fail a
  // checkpoint's CRC and be refused for good (exit 2) where reading again
  // may succeed (exit 1), and an evaluation log would be written back
  // without its last rows. A stream's `<< rdbuf()` took the failure for the
  // file's end, and the check of it after never saw it (found in review).
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return UnavailableError("reading " + path + " failed midway: " + why);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace edgetrain::agent

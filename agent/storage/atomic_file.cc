#include "agent/storage/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

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

// The process's umask, read where it is not changed to be read (umask()
// sets it, a race with any thread creating a file meanwhile); 022 where
// /proc does not say.
mode_t ProcessUmask() {
  static const mode_t kUmask = [] {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
    }
    return static_cast<mode_t>(022);
  }();
  return kUmask;
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  // The temporary is new, of a name no one could know (mkostemp: O_EXCL):
  // at the fixed "NAME.tmp" it had been opened as found, so a link planted
  // there was followed, writing the model into whatever it named, and two
  // writers of one checkpoint (a pod stopping beside its replacement on a
  // shared volume) wrote into each other's, and the CRC refused the result
  // for good (found in review). A crash mid-write leaves one NAME.tmp-XXXXXX
  // beside the file.
  std::string tmp = path + ".tmp-XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    return InternalError("cannot create a temporary beside " + path + ": " + std::strerror(errno));
  }
  // Written with the system's calls, whose errno says why (a full disk: the
  // stream's failure said only "cannot write"), and a part written removed:
  // left behind, it kept the disk full for the next attempt.
  auto failed = [&](const char* doing, int open_fd) {
    const std::string why = std::strerror(errno);
    if (open_fd >= 0) ::close(open_fd);
    ::unlink(tmp.c_str());
    return InternalError(std::string("cannot ") + doing + " " + tmp + ": " + why);
  };
  // Readable as a file open() makes is, under the process's umask (mkostemp makes it 0600).
  if (::fchmod(fd, 0644 & ~ProcessUmask()) != 0) return failed("set the mode of", fd);
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

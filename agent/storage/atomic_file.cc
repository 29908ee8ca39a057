#include "agent/storage/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

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
  int dir = ::open(DirectoryOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
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
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  // A read that failed midway (a network volume gone) is not a damaged file:
  // its bytes, cut short, would fail a checkpoint's CRC and be refused for
  // good (exit 2) where reading again may succeed (exit 1).
  if (in.bad()) return UnavailableError("reading " + path + " failed midway");
  return s.str();
}

}  // namespace edgetrain::agent

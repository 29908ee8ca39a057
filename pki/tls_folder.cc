#include "pki/tls_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace edgetrain::pki {
namespace {

// Written to a temporary beside it, synced, renamed over: a reader (gRPC's
// file watcher) sees the old file or the new, whole. The temporary is new,
// of a name no one could know (mkostemp: O_EXCL, 0600 from the start), so a
// link planted at a name known beforehand is never followed: "tls.key.tmp",
// opened as it was, wrote the job's key into another user's file (a
// security review).
Status WriteFileWhole(const std::string& path, const std::string& text, mode_t mode) {
  std::string tmp = path + ".XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return UnavailableError("cannot write a temporary beside " + path + ": " + std::strerror(errno));
  const auto fail = [&](const std::string& what) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return UnavailableError(what + ": " + why);
  };
  if (::fchmod(fd, mode) != 0) return fail("cannot set the mode of " + tmp);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot write " + tmp);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("cannot write " + tmp);
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return UnavailableError("cannot write " + path + ": " + why);
  }
  return Status::Ok();
}

StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  // Why, said: a key only root may read gave "cannot read .../tls.key" alone
  // to an agent run as another user (a user's trial).
  if (!in) return NotFoundError("cannot read " + path + ": " + std::strerror(errno));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TlsFolder TlsFolderAt(const std::string& dir) {
  const std::filesystem::path d(dir);
  return {(d / kAuthorityFile).string(), (d / kCertificateFile).string(), (d / kKeyFile).string()};
}

std::string WhoElseMayReplace(const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path whole = std::filesystem::weakly_canonical(std::filesystem::absolute(dir, ec), ec);
  if (ec) return "";
  const uid_t me = ::geteuid();
  for (std::filesystem::path at = whole;; at = at.parent_path()) {
    struct stat st {};
    if (::stat(at.c_str(), &st) == 0) {
      if (st.st_uid != me && st.st_uid != 0) {
        return at.string() + " belongs to another user (uid " + std::to_string(st.st_uid) + ")";
      }
      if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
        return at.string() + " may be written by every user of this machine";
      }
    }
    if (at == at.parent_path()) return "";
  }
}

std::string WhoElseMayTouch(const std::string& dir) {
  if (std::string why = WhoElseMayReplace(dir); !why.empty()) return why;
  const TlsFolder at = TlsFolderAt(dir);
  const uid_t me = ::geteuid();
  for (const std::string* path : {&at.ca_path, &at.cert_path, &at.key_path}) {
    struct stat st {};
    if (::stat(path->c_str(), &st) != 0) continue;  // missing: ReadTlsFolder says so
    // A link (a mounted Secret's files are links into its own folder) is
    // judged where it leads too: a key linked from a folder every user may
    // write, which passed, could be swapped there (a security review).
    std::error_code ec;
    if (std::filesystem::is_symlink(*path, ec)) {
      const std::filesystem::path target = std::filesystem::canonical(*path, ec);
      if (!ec) {
        if (std::string why = WhoElseMayReplace(target.parent_path().string()); !why.empty()) {
          return *path + " is a link to " + target.string() + ", and " + why;
        }
      }
    }
    if (st.st_uid != me && st.st_uid != 0) {
      return *path + " belongs to another user (uid " + std::to_string(st.st_uid) + ")";
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) return *path + " may be written by other users of this machine";
  }
  return "";
}

std::string WhoElseMayRead(const std::string& dir) {
  const std::string key = TlsFolderAt(dir).key_path;
  struct stat st {};
  if (::stat(key.c_str(), &st) != 0 || !(st.st_mode & S_IROTH)) return "";
  return key + " may be read by every user of this machine";
}

Status WriteTlsFolder(const std::string& dir, const std::string& ca_pem, const KeyPair& agent) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    // A link to a folder not made yet is not followed to make it: named, it
    // read "cannot make DIR: File exists" (a new user's trial).
    if (std::filesystem::is_symlink(dir, ec)) {
      return InvalidArgumentError(dir + " is a link to " + std::filesystem::read_symlink(dir, ec).string() +
                                  ", which does not exist: make that folder first, or name another");
    }
    std::filesystem::create_directories(dir, ec);
    if (ec) return UnavailableError("cannot make " + dir + ": " + ec.message());
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  }
  const TlsFolder at = TlsFolderAt(dir);
  // One after the other, each whole: a reader between two renames sees the new
  // key beside the old certificate, and reads them again at its next reload.
  EDGETRAIN_RETURN_IF_ERROR(WriteFileWhole(at.key_path, agent.key_pem, 0600));
  EDGETRAIN_RETURN_IF_ERROR(WriteFileWhole(at.cert_path, agent.cert_pem, 0644));
  EDGETRAIN_RETURN_IF_ERROR(WriteFileWhole(at.ca_path, ca_pem, 0644));
  // The three renames flushed with the folder, so that once this returns
  // they survive a power cut: without it, one could lose a later rename and
  // keep an earlier, the new key beside the old certificate, for good (found
  // in review). A cut between the renames still leaves such a pair until the
  // next write, as a reader between them sees one (above). A file system
  // that cannot flush a folder says EINVAL, and has nothing to flush.
  const int folder = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder < 0) return UnavailableError("cannot open " + dir + " to flush it: " + std::strerror(errno));
  const bool flushed = ::fsync(folder) == 0 || errno == EINVAL;
  const std::string why = flushed ? "" : std::strerror(errno);
  ::close(folder);
  if (!flushed) return UnavailableError("cannot flush " + dir + ": " + why);
  return Status::Ok();
}

Status WriteNewJobCredentials(const std::string& dir, const std::string& job, WallTime not_before,
                              WallTime not_after) {
  EDGETRAIN_ASSIGN_OR_RETURN(JobAuthority authority, MakeJobAuthority(job, not_before, not_after));
  EDGETRAIN_ASSIGN_OR_RETURN(KeyPair agent, IssueAgentCertificate(authority, not_before, not_after));
  return WriteTlsFolder(dir, authority.ca.cert_pem, agent);
}

StatusOr<TlsFiles> ReadTlsFolder(const TlsFolder& folder) {
  TlsFiles files;
  EDGETRAIN_ASSIGN_OR_RETURN(files.ca_pem, ReadText(folder.ca_path));
  EDGETRAIN_ASSIGN_OR_RETURN(files.cert_pem, ReadText(folder.cert_path));
  EDGETRAIN_ASSIGN_OR_RETURN(files.key_pem, ReadText(folder.key_path));
  return files;
}

StatusOr<std::string> ReadAuthority(const TlsFolder& folder) { return ReadText(folder.ca_path); }

}  // namespace edgetrain::pki

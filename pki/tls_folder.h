#pragma once
// An agent's credentials as files, laid out as a kubernetes.io/tls Secret
// mounted as a volume (cert-manager's layout too): ca.crt, the job's authority;
// tls.crt and tls.key, the agent's certificate and key. The transport reads
// them from there, and again when they are replaced (a rotation).

#include <string>

#include "core/status.h"
#include "pki/job_identity.h"

namespace edgetrain::pki {

inline constexpr const char* kAuthorityFile = "ca.crt";
inline constexpr const char* kCertificateFile = "tls.crt";
inline constexpr const char* kKeyFile = "tls.key";

struct TlsFolder {
  std::string ca_path, cert_path, key_path;
};
TlsFolder TlsFolderAt(const std::string& dir);

// Writes the three files into `dir` (made 0700 if missing), each replaced
// whole by a rename; the key is readable by its owner alone.
Status WriteTlsFolder(const std::string& dir, const std::string& ca_pem, const KeyPair& agent);

// Why another user of this machine could swap credentials kept in `dir`, or
// "" when none could: it, or a folder above it, is owned by someone other
// than this user and root, or may be written by every user without the
// sticky bit (which keeps each entry its owner's). As ssh's StrictModes
// judges a key's folders; a folder not made yet is judged by those above it.
std::string WhoElseMayReplace(const std::string& dir);

// Why another user of this machine could swap the credentials an agent is
// given in `dir`, or "" when none could: the folder as WhoElseMayReplace
// judges it, and each file there owned by another user than this one and
// root, or writable by its group or by every user. A mounted Secret's files
// pass: root's, and 0440 under the pod's group or Kubernetes' default 0644
// (a key readable by the container's other users is the pod's to decide).
std::string WhoElseMayTouch(const std::string& dir);

// "DIR/tls.key may be read by every user of this machine" where its mode
// lets them, "" otherwise: anyone who reads it can present the job's
// certificate. Said, not refused, as a Secret's default mode (0644) is the
// pod's to decide; the operator mounts it 0440 (a user's trial found a key
// of 0644 taken without a word).
std::string WhoElseMayRead(const std::string& dir);
// What follows from it, as the agent's start and its folder watch both say.
inline constexpr const char* kReadableKeyRisk = "who could present this job's certificate as its own (chmod o-r on it)";

// A new authority of `job` and one agent certificate of it, valid over
// [not_before, not_after), written into `dir` (WriteTlsFolder). The
// authority's key is not kept: the folder's certificate is the only one it
// ever issues.
Status WriteNewJobCredentials(const std::string& dir, const std::string& job, WallTime not_before,
                              WallTime not_after);

// The three files' text; an error naming the file that is missing.
struct TlsFiles {
  std::string ca_pem, cert_pem, key_pem;
};
StatusOr<TlsFiles> ReadTlsFolder(const TlsFolder& folder);
// The authority's certificate alone: what a coordinator judges peers by.
StatusOr<std::string> ReadAuthority(const TlsFolder& folder);

}  // namespace edgetrain::pki

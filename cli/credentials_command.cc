#include "cli/credentials_command.h"

#include <filesystem>

#include "core/exit_codes.h"
#include "core/status.h"
#include "core/utc_time_text.h"
#include "pki/tls_folder.h"

namespace edgetrain::cli {
namespace {

// A job's name as Kubernetes has it (a DNS label): it becomes the certificate's
// DNS name, JOB.job.edgetrain.dev.
bool IsJobName(const std::string& name) {
  // As metadata.name (api/trainingjob.cc): 52, to leave room for "-worker-NNNN".
  if (name.empty() || name.size() > 52 || name.front() == '-' || name.back() == '-') return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

}  // namespace

int MakeCredentials(const CredentialsOptions& options, std::ostream& out, std::ostream& err) {
  if (!IsJobName(options.job)) {
    err << "edgetrain credentials: \"" << options.job
        << "\" is not a job's name: lower-case letters, digits and '-', starting and ending with a letter or digit, "
           "at most 52 characters, as metadata.name\n";
    return kExitInvalid;
  }
  // A new authority over the old one turns away every agent that holds the
  // old: a second run over the same folder replaced a running team's trust
  // without a word (a new user's trial).
  const pki::TlsFolder files = pki::TlsFolderAt(options.dir);
  std::error_code ec;
  // Said of the folder, not of a temporary file in it (a user's trial).
  if (std::filesystem::exists(options.dir, ec) && !std::filesystem::is_directory(options.dir, ec)) {
    err << "edgetrain credentials: " << options.dir << " is a file, not a folder to write the credentials into\n";
    return kExitInvalid;
  }
  // A key alone is credentials too: the openssl recipe's folder holds one
  // before its certificate is signed, and it was written over (a security trial).
  if (!options.replace && (std::filesystem::exists(files.ca_path, ec) || std::filesystem::exists(files.cert_path, ec) ||
                           std::filesystem::exists(files.key_path, ec))) {
    err << "edgetrain credentials: " << options.dir
        << " holds credentials already; agents that hold them would refuse a new authority's. Pass --replace to "
           "write over them\n";
    return kExitInvalid;
  }
  // Anyone who may replace the folder, or write in it, may swap the
  // authority or the key the team trusts: one writable by all was used
  // without a word, then one inside such a folder and one owned by another
  // user (two security reviews).
  if (const std::string unsafe = pki::WhoElseMayReplace(options.dir); !unsafe.empty()) {
    err << "edgetrain credentials: " << unsafe << ", who could replace the job's authority or key in "
        << options.dir << "; give a folder of your own, in folders of your own (it is made, mode 0700)\n";
    return kExitInvalid;
  }
  const auto now = std::chrono::system_clock::now();
  // Valid from an hour ago: a machine whose clock is a little behind takes them too.
  const auto until = now + std::chrono::duration_cast<std::chrono::system_clock::duration>(options.validity);
  Status made = pki::WriteNewJobCredentials(options.dir, options.job, now - std::chrono::hours(1), until);
  if (!made.ok()) {
    err << "edgetrain credentials: " << made.message() << "\n";
    return ExitCodeFor(made);
  }
  out << options.dir << ": ca.crt, tls.crt and tls.key of job " << options.job << ", valid until " << UtcText(until)
      << "; give every agent of the team --tls-dir=" << options.dir << "\n";
  return kExitOk;
}

}  // namespace edgetrain::cli

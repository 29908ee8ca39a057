#pragma once
// What becomes of --tls-dir while the agent runs, said in its log. gRPC reads
// the three files again every --tls-reload and hands new connections what it
// finds; an open stream keeps its handshake. A rotation by hand that copies
// tls.crt and then tls.key leaves, between the two, a pair that does not
// match, and gRPC then fails every new handshake with lines of its own
// ("Invalid private key") and nothing in edgetrain's log (a user's trial).
// The watch looks at the files as often and says when they cannot be used
// together, why and what to do, when they can again, and when a new
// certificate came, until when it is valid.

#include <optional>
#include <ostream>
#include <string>

#include "agent/periodic_look.h"
#include "core/clock.h"
#include "pki/tls_folder.h"

namespace edgetrain::agent {

class CredentialsWatch {
 public:
  // `files` were checked whole when the agent started.
  CredentialsWatch(pki::TlsFolder files, Clock& clock, Duration every, std::ostream& log);

 private:
  void Look();
  // Why the files cannot be used together as they are now, "" when they can
  // (and then `cert_pem` is the certificate's).
  std::string Unusable(std::string& cert_pem) const;

  const pki::TlsFolder files_;
  const std::string dir_;
  const Duration every_;
  std::ostream& log_;
  std::string cert_pem_;  // the certificate last found usable
  std::string unusable_;  // why the files could not be used at the last look; "": they could
  std::optional<PeriodicLook> looks_;  // last: stopped before what it looks with goes
};

}  // namespace edgetrain::agent

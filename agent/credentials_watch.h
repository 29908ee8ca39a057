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

#include <mutex>
#include <ostream>
#include <string>

#include "core/clock.h"
#include "pki/tls_folder.h"

namespace edgetrain::agent {

class CredentialsWatch {
 public:
  // `files` were checked whole when the agent started.
  CredentialsWatch(pki::TlsFolder files, Clock& clock, Duration every, std::ostream& log);
  ~CredentialsWatch();  // stops watching

 private:
  void Watch();
  // Why the files cannot be used together as they are now; "" when they can.
  std::string Unusable(std::string& cert_pem) const;

  const pki::TlsFolder files_;
  const std::string dir_;
  Clock& clock_;
  const Duration every_;
  std::ostream& log_;
  std::mutex mu_;
  ClockCondition stopped_;
  bool stop_ = false;  // guarded by mu_
  ClockThread thread_;
};

}  // namespace edgetrain::agent

#pragma once
// What becomes of --tls-dir while the agent runs, said in its log. gRPC reads
// the three files again every --tls-reload and hands new connections what it
// finds; an open stream keeps its handshake. A rotation by hand that copies
// tls.crt and then tls.key leaves, between the two, a pair that does not
// match, and gRPC then fails every new handshake with lines of its own
// ("Invalid private key") and nothing in edgetrain's log (a user's trial).
// The watch looks at the files as often and says when they cannot be used
// together, why and what to do, when they can again, and when a new
// certificate came, until when it is valid, and whether the job would refuse
// it, as the agent's start says (another job's swapped in mid-run had been
// taken up unsaid: a user's trial). It also says, at its first look after,
// when the certificate, or the authority, it holds runs out while the agent
// runs: the team's agents then refuse every new connection it makes or
// serves, and nothing had said why (a user's trial). And it says when other
// users of the machine come to be able to swap the files or read the key,
// which the start refuses or warns of: a key rotated in as a new file takes
// the mode of whatever wrote it (the umask's 0644, often), and nothing had
// said so mid-run.

#include <functional>
#include <optional>
#include <ostream>
#include <set>
#include <string>

#include "agent/periodic_look.h"
#include "core/clock.h"
#include "core/utc_time_text.h"
#include "pki/tls_folder.h"

namespace edgetrain::agent {

class CredentialsWatch {
 public:
  // `files`, `job`'s, were checked whole when the agent started. `wall`: the
  // time of day certificates are dated by (the system clock's unless given).
  CredentialsWatch(pki::TlsFolder files, std::string job, Clock& clock, Duration every, std::ostream& log,
                   std::function<WallTime()> wall = nullptr);

 private:
  void Look();
  // Said once of each certificate held, as its end passes.
  void SayWhatRanOut();
  // Why the files cannot be used together as they are now, "" when they can
  // (and then `cert_pem` and `ca_pem` are the certificate's and authority's).
  std::string Unusable(std::string& cert_pem, std::string& ca_pem) const;
  // Who else may swap the files or read the key, and what follows; "": no one.
  std::string Exposed() const;

  const pki::TlsFolder files_;
  const std::string job_;
  const std::string dir_;
  const Duration every_;
  std::ostream& log_;
  const std::function<WallTime()> wall_;
  std::string cert_pem_;  // the certificate last found usable
  std::string ca_pem_;    // and the authority beside it
  std::string unusable_;  // why the files could not be used at the last look; "": they could
  std::string exposed_;   // who else could swap or read them at the last look; "": no one
  std::set<std::string> ran_out_said_;  // the certificates (PEM) whose end was said
  std::optional<PeriodicLook> looks_;  // last: stopped before what it looks with goes
};

}  // namespace edgetrain::agent

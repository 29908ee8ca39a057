#pragma once
// A job's identity on the wire: its own certificate authority, one certificate
// its agents present both ways (mutual TLS), and the check a coordinator makes
// of whoever connects. OpenSSL lives in pki/ alone; what crosses is PEM text.
//
// Why one authority per job: a certificate issued for one job cannot be turned
// against another, even by a node that held it; nothing is shared between jobs
// to revoke. The certificate names its job twice: as its subject's common name,
// which the coordinator compares with its own job, and as a DNS name the
// workers check the coordinator's certificate against (TlsServerName).

#include <chrono>
#include <string>

#include "core/status.h"

namespace edgetrain::pki {

using WallTime = std::chrono::system_clock::time_point;

// PEM text of a certificate and its private key.
struct KeyPair {
  std::string cert_pem;
  std::string key_pem;
};

// The authority of one job: signs its certificates, is trusted by its agents.
// Its key never leaves whoever made it (the operator, the local runner).
struct JobAuthority {
  std::string job;
  KeyPair ca;
};

// The name an agent's certificate carries for `job` and a worker checks its
// coordinator against, whatever address it dialled.
std::string TlsServerName(const std::string& job);

// A fresh authority for `job`, valid over [not_before, not_after).
StatusOr<JobAuthority> MakeJobAuthority(const std::string& job, WallTime not_before, WallTime not_after);

// A certificate of the authority's job (client and server use), valid over
// [not_before, not_after), with a fresh key.
StatusOr<KeyPair> IssueAgentCertificate(const JobAuthority& authority, WallTime not_before, WallTime not_after);

// Why a peer is turned away; kAccepted when it is not.
enum class PeerVerdict { kAccepted, kNoCertificate, kOtherJob, kExpired, kNotYetValid, kUntrusted };

// The metric's label: no_certificate, other_job, expired, not_yet_valid, untrusted.
const char* ReasonOf(PeerVerdict verdict);

struct PeerCheck {
  PeerVerdict verdict = PeerVerdict::kAccepted;
  std::string detail;  // for the log line: what the certificate said
  // The job's authority (ca.crt), not the peer's certificate, is what failed
  // (its dates): new credentials for the whole job mend it, not the peer's.
  bool authority_at_fault = false;
  bool accepted() const { return verdict == PeerVerdict::kAccepted; }
};

// What the peer is to the agent that judges it: a worker that connected (its
// certificate's use as a client is checked), or the coordinator it dialled
// (its use as a server).
enum class PeerRole { kWorker, kCoordinator };

// Judges the certificate a peer presented (PEM; empty when it presented none)
// for `job`, whose authority is `ca_pem`, at time `now`. The TLS handshake has
// already proven the peer holds the certificate's key.
PeerCheck CheckPeer(const std::string& peer_pem, const std::string& job, const std::string& ca_pem, WallTime now,
                    PeerRole role = PeerRole::kWorker);

// Why `job`'s agents would refuse an agent presenting `cert_pem` as it
// dials (a worker, a stage) or as it serves (a coordinator, a head), "" when
// neither: what the agent says of its own credentials, at its start and when
// they change. Either use is checked, since an agent's role may change (a
// head placed anew) and a coordinator lacking serverAuth was refused by
// every worker, unsaid on its side (a user's trial).
std::string WouldBeRefused(const std::string& cert_pem, const std::string& job, const std::string& ca_pem,
                           WallTime now);

// Whether `pair` is a certificate and the private key of its public key; the
// error says which of tls.crt and tls.key is at fault.
Status CheckKeyPair(const KeyPair& pair);

// When a certificate is valid: [not_before, not_after).
struct Validity {
  WallTime not_before, not_after;
};
StatusOr<Validity> ValidityOf(const std::string& cert_pem);

}  // namespace edgetrain::pki

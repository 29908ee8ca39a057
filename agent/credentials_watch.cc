#include "agent/credentials_watch.h"

#include <filesystem>

#include "core/utc_time_text.h"
#include "pki/job_identity.h"

namespace edgetrain::agent {

CredentialsWatch::CredentialsWatch(pki::TlsFolder files, std::string job, Clock& clock, Duration every,
                                   std::ostream& log, std::function<WallTime()> wall)
    : files_(std::move(files)),
      job_(std::move(job)),
      dir_(std::filesystem::path(files_.cert_path).parent_path().string()),
      every_(every),
      log_(log),
      wall_(wall ? std::move(wall) : [] { return std::chrono::system_clock::now(); }) {
  unusable_ = Unusable(cert_pem_, ca_pem_);  // as the agent checked them: usable
  exposed_ = Exposed();                       // and as its start said of them
  looks_.emplace(clock, "credentials watch", every, [this] { Look(); });
}

std::string CredentialsWatch::Unusable(std::string& cert_pem, std::string& ca_pem) const {
  StatusOr<pki::TlsFiles> files = pki::ReadTlsFolder(files_);
  if (!files.ok()) return std::string(files.status().message());
  if (!pki::ValidityOf(files->ca_pem).ok()) return "ca.crt is not a PEM certificate";
  if (Status pair = pki::CheckKeyPair({files->cert_pem, files->key_pem}); !pair.ok()) return pair.message();
  cert_pem = files->cert_pem;
  ca_pem = files->ca_pem;
  return "";
}

std::string CredentialsWatch::Exposed() const {
  // In the words of the agent's start, which refuses the first and warns of the second.
  if (const std::string swap = pki::WhoElseMayTouch(dir_); !swap.empty()) {
    return swap + ", who could swap the job's credentials in it (chmod go-w on it and its files)";
  }
  if (const std::string read = pki::WhoElseMayRead(dir_); !read.empty()) {
    return read + ", " + pki::kReadableKeyRisk;
  }
  return "";
}

void CredentialsWatch::SayWhatRanOut() {
  const WallTime now = wall_();
  auto ended = [&](const std::string& pem) -> std::optional<WallTime> {
    if (pem.empty() || ran_out_said_.count(pem)) return std::nullopt;
    StatusOr<pki::Validity> valid = pki::ValidityOf(pem);
    if (!valid.ok() || now < valid->not_after) return std::nullopt;
    ran_out_said_.insert(pem);
    return valid->not_after;
  };
  const std::optional<WallTime> authority_ended = ended(ca_pem_);
  if (authority_ended) {
    log_ << "tls: the job's authority in --tls-dir " << dir_ << " (ca.crt) expired at " << UtcText(*authority_ended)
         << ": every certificate of it is refused since, in new connections; open ones go on; the job needs new "
            "credentials, an authority and every agent's certificate of it\n";
  }
  // Its own end said with the authority's is no remedy of its own: a new
  // certificate of an authority that has ended is refused all the same.
  if (std::optional<WallTime> at = ended(cert_pem_); at && !authority_ended) {
    log_ << "tls: this agent's certificate in --tls-dir " << dir_ << " expired at " << UtcText(*at)
         << ": the team's agents refuse the new connections it makes or serves since, open ones go on; give it a "
            "new certificate of the job's authority (under the operator, its Secret is renewed before it ends)\n";
  }
}

void CredentialsWatch::Look() {
  std::string cert_now, ca_now;
  std::string why = Unusable(cert_now, ca_now);
  // Read again once before it is said: a folder swapped (the kubelet's
  // ..data) between this look's reads of two files is whole at the next.
  if (!why.empty()) why = Unusable(cert_now, ca_now);
  if (!why.empty() && why != unusable_) {
    log_ << "tls: --tls-dir " << dir_ << " cannot be used as it is now (" << why
         << "): new connections are refused until it can, open ones go on; replace each file whole (write it "
            "beside, then rename it over) or swap the folder, as the kubelet does\n";
  } else if (why.empty() && !unusable_.empty()) {
    log_ << "tls: --tls-dir " << dir_ << " can be used again\n";
  }
  if (why.empty() && cert_now != cert_pem_) {
    StatusOr<pki::Validity> valid = pki::ValidityOf(cert_now);
    log_ << "tls: --tls-dir " << dir_ << " holds a new certificate"
         << (valid.ok() ? ", valid until " + UtcText(valid->not_after) : std::string())
         << ": new connections take it up within "
         << std::max<int64_t>(1, std::chrono::ceil<std::chrono::seconds>(every_).count()) << " s\n";
  }
  if (why.empty() && (cert_now != cert_pem_ || ca_now != ca_pem_)) {
    if (const std::string refused = pki::WouldBeRefused(cert_now, job_, ca_now, wall_()); !refused.empty()) {
      log_ << "tls: --tls-dir " << dir_ << " now holds a certificate its job would refuse: " << refused << "\n";
    }
  }
  if (why.empty()) {
    cert_pem_ = cert_now;
    ca_pem_ = ca_now;
  }
  unusable_ = why;
  if (const std::string exposed = Exposed(); exposed != exposed_) {
    if (!exposed.empty()) {
      log_ << "tls: WARNING: --tls-dir " << dir_ << ": " << exposed << "\n";
    } else {
      log_ << "tls: --tls-dir " << dir_ << " is kept from other users again\n";
    }
    exposed_ = exposed;
  }
  SayWhatRanOut();
}

}  // namespace edgetrain::agent

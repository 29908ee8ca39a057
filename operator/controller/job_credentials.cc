#include "operator/controller/job_credentials.h"

#include <algorithm>

#include "core/base64.h"
#include "operator/controller/job_labels.h"
#include "pki/job_identity.h"

namespace edgetrain::operator_ {
namespace {

// A little before now: a node whose clock is behind the operator's still
// takes a fresh certificate as valid.
constexpr std::chrono::minutes kClockSkew{5};

// A Secret of the job's with `data` ({key: bytes}), base64 as the API carries it.
Json SecretFor(const JobObject& job, const std::string& name, const char* type,
               const std::vector<std::pair<const char*, std::string>>& data) {
  Json encoded = Json::object();
  for (const auto& [key, bytes] : data) encoded[key] = Base64Encode(bytes);
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", Metadata(job, name, LabelsOf(job))},
          {"type", type},
          {"data", encoded}};
}

// Creates `secret`, or replaces `current` (an earlier job's, or one due) with it.
StatusOr<Json> Write(kube::KubeClient& client, const JobObject& job, const StatusOr<Json>& current, Json secret) {
  if (!current.ok()) return client.Create(kube::kSecrets, job.namespace_, secret);
  secret["metadata"]["resourceVersion"] = (*current)["metadata"]["resourceVersion"];
  return client.Update(kube::kSecrets, job.namespace_, secret);
}

StatusOr<std::string> Field(const Json& secret, const char* key) {
  const Json* value = secret.contains("data") ? &secret["data"] : nullptr;
  if (value == nullptr || !value->contains(key) || !(*value)[key].is_string()) {
    return InvalidArgumentError("Secret " + secret.value("/metadata/name"_json_pointer, std::string()) + " has no " +
                                key);
  }
  return Base64Decode((*value)[key].get<std::string>());
}

// When a certificate of `validity` is renewed: two thirds into its life,
// counted from when it was issued (its notBefore is set back by kClockSkew).
kube::WallTime RenewalOf(const pki::Validity& validity) {
  const kube::WallTime issued = validity.not_before + kClockSkew;
  return issued + (validity.not_after - issued) * 2 / 3;
}

Json StatusOf(const std::string& job, const pki::Validity& validity) {
  return {{"secretName", AgentTlsSecretName(job)},
          {"notAfter", kube::FormatKubeTime(validity.not_after)},
          {"renewAfter", kube::FormatKubeTime(RenewalOf(validity))}};
}

// What a Secret not read is taken for: one that is not there.
StatusOr<Json> Absent(const std::string& name) { return NotFoundError("Secret " + name + " taken for absent"); }

// The job's authority: read from its Secret, or made and stored when there is
// none (`absent`: taken to be none without asking; a create that finds one
// fails AlreadyExists). A Secret of its name that is another's is left
// alone, said in `taken`.
StatusOr<pki::JobAuthority> AuthorityOf(kube::KubeClient& client, const JobObject& job, kube::WallTime now,
                                        const CredentialsOptions& options, bool absent, std::string* taken) {
  const std::string name = AuthoritySecretName(job.name);
  StatusOr<Json> stored = absent ? Absent(name) : client.Get(kube::kSecrets, job.namespace_, name);
  if (!stored.ok() && stored.status().code() != StatusCode::kNotFound) return stored.status();
  if (stored.ok() && !JobMayWrite(*stored, job.name)) {
    *taken = NameTakenMessage("Secret", *stored, job);
    return Status(StatusCode::kAlreadyExists, *taken);
  }
  if (!stored.ok() || !OwnedByJob(*stored, job)) {
    // None, or an earlier job's of the same name: a new job has a new authority.
    EDGETRAIN_ASSIGN_OR_RETURN(pki::JobAuthority made,
                               pki::MakeJobAuthority(job.name, now - kClockSkew, now + options.authority_validity));
    StatusOr<Json> written = Write(client, job, stored, SecretFor(job, name, "Opaque", {{"ca.crt", made.ca.cert_pem},
                                                                                         {"ca.key", made.ca.key_pem}}));
    if (written.ok()) return made;
    // Another replica wrote it first: the next reconcile reads theirs.
    return written.status().WithContext("writing Secret " + name);
  }
  EDGETRAIN_ASSIGN_OR_RETURN(std::string cert, Field(*stored, "ca.crt"));
  EDGETRAIN_ASSIGN_OR_RETURN(std::string key, Field(*stored, "ca.key"));
  return pki::JobAuthority{job.name, {std::move(cert), std::move(key)}};
}

}  // namespace

bool CredentialsDue(const Json& status, kube::WallTime now) {
  const std::optional<kube::WallTime> renew =
      kube::ParseKubeTime(status.value("/credentials/renewAfter"_json_pointer, std::string()));
  return !renew || now >= *renew;
}

Duration TlsReloadFor(Duration certificate_validity) {
  return std::clamp<Duration>(certificate_validity / 20, std::chrono::seconds(1), std::chrono::seconds(60));
}

namespace {

// KeepCredentials, its Secrets read first, or (`absent`) taken to be none.
StatusOr<CredentialsKept> Keep(kube::KubeClient& client, const JobObject& job, kube::WallTime now,
                               const CredentialsOptions& options, bool absent) {
  const std::string name = AgentTlsSecretName(job.name);
  StatusOr<Json> current = absent ? Absent(name) : client.Get(kube::kSecrets, job.namespace_, name);
  if (!current.ok() && current.status().code() != StatusCode::kNotFound) return current.status();
  if (current.ok() && !JobMayWrite(*current, job.name)) {
    return CredentialsKept{Json(), "", "", NameTakenMessage("Secret", *current, job)};
  }
  const bool ours = current.ok() && OwnedByJob(*current, job);
  if (ours) {
    StatusOr<std::string> cert = Field(*current, "tls.crt");
    StatusOr<pki::Validity> validity = cert.ok() ? pki::ValidityOf(*cert) : StatusOr<pki::Validity>(cert.status());
    // A certificate that still has a third of its life left is kept; one that
    // cannot be read is replaced like one that is due.
    if (validity.ok() && now < RenewalOf(*validity)) return CredentialsKept{StatusOf(job.name, *validity), "", ""};
  }
  std::string taken;
  StatusOr<pki::JobAuthority> authority_read = AuthorityOf(client, job, now, options, absent, &taken);
  if (!taken.empty()) return CredentialsKept{Json(), "", "", taken};
  EDGETRAIN_ASSIGN_OR_RETURN(pki::JobAuthority authority, std::move(authority_read));
  // No certificate outlives the authority that vouches for it.
  EDGETRAIN_ASSIGN_OR_RETURN(pki::Validity authority_life, pki::ValidityOf(authority.ca.cert_pem));
  const kube::WallTime until = std::min(now + options.certificate_validity, authority_life.not_after);
  EDGETRAIN_ASSIGN_OR_RETURN(pki::KeyPair agent, pki::IssueAgentCertificate(authority, now - kClockSkew, until));
  StatusOr<Json> written = Write(client, job, current,
                                 SecretFor(job, name, "kubernetes.io/tls",
                                           {{"ca.crt", authority.ca.cert_pem}, {"tls.crt", agent.cert_pem},
                                            {"tls.key", agent.key_pem}}));
  // Written meanwhile by another replica (AlreadyExists, a conflict): the next
  // reconcile reads theirs.
  if (!written.ok()) return written.status().WithContext("writing Secret " + name);
  EDGETRAIN_ASSIGN_OR_RETURN(pki::Validity validity, pki::ValidityOf(agent.cert_pem));
  CredentialsKept kept{StatusOf(job.name, validity), ours ? "CertificateRotated" : "CredentialsIssued", ""};
  kept.message = (ours ? "the agents' certificate in Secret " : "mutual TLS for the team: Secret ") + name +
                 (ours ? " replaced" : "") + ", valid until " + kept.status["notAfter"].get<std::string>() +
                 ", renewed after " + kept.status["renewAfter"].get<std::string>();
  return kept;
}

}  // namespace

StatusOr<CredentialsKept> KeepCredentials(kube::KubeClient& client, const JobObject& job, kube::WallTime now,
                                          const CredentialsOptions& options, bool none_issued) {
  if (none_issued) {
    // A job whose status names no credentials almost never has their
    // Secrets: they are made without reading first, two GETs a new job fewer
    // (a seventh of the requests of placing 1,000 jobs, bench/operator-scale).
    // Ones written by a reconcile that then failed to write the status make
    // the create fail AlreadyExists, and are read as always.
    StatusOr<CredentialsKept> made = Keep(client, job, now, options, /*absent=*/true);
    if (made.ok() || made.status().code() != StatusCode::kAlreadyExists) return made;
  }
  return Keep(client, job, now, options, /*absent=*/false);
}

}  // namespace edgetrain::operator_

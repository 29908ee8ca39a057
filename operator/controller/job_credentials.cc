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

// The job's authority: read from its Secret, or made and stored when there is none.
StatusOr<pki::JobAuthority> AuthorityOf(kube::KubeClient& client, const JobObject& job, kube::WallTime now,
                                        const CredentialsOptions& options) {
  const std::string name = AuthoritySecretName(job.name);
  StatusOr<Json> stored = client.Get(kube::kSecrets, job.namespace_, name);
  if (!stored.ok() && stored.status().code() != StatusCode::kNotFound) return stored.status();
  if (!stored.ok()) {
    EDGETRAIN_ASSIGN_OR_RETURN(pki::JobAuthority made,
                               pki::MakeJobAuthority(job.name, now - kClockSkew, now + options.authority_validity));
    stored = client.Create(kube::kSecrets, job.namespace_,
                           SecretFor(job, name, "Opaque", {{"ca.crt", made.ca.cert_pem}, {"ca.key", made.ca.key_pem}}));
    if (stored.ok()) return made;
    // Another replica made it first: its authority is the job's.
    if (stored.status().code() != StatusCode::kAlreadyExists) return stored.status().WithContext("creating Secret " + name);
    EDGETRAIN_ASSIGN_OR_RETURN(stored, client.Get(kube::kSecrets, job.namespace_, name));
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

StatusOr<CredentialsKept> KeepCredentials(kube::KubeClient& client, const JobObject& job, kube::WallTime now,
                                          const CredentialsOptions& options) {
  const std::string name = AgentTlsSecretName(job.name);
  StatusOr<Json> current = client.Get(kube::kSecrets, job.namespace_, name);
  if (!current.ok() && current.status().code() != StatusCode::kNotFound) return current.status();
  if (current.ok()) {
    StatusOr<std::string> cert = Field(*current, "tls.crt");
    StatusOr<pki::Validity> validity = cert.ok() ? pki::ValidityOf(*cert) : StatusOr<pki::Validity>(cert.status());
    // A certificate that still has a third of its life left is kept; one that
    // cannot be read is replaced like one that is due.
    if (validity.ok() && now < RenewalOf(*validity)) return CredentialsKept{StatusOf(job.name, *validity), "", ""};
  }
  EDGETRAIN_ASSIGN_OR_RETURN(pki::JobAuthority authority, AuthorityOf(client, job, now, options));
  EDGETRAIN_ASSIGN_OR_RETURN(pki::KeyPair agent, pki::IssueAgentCertificate(authority, now - kClockSkew,
                                                                           now + options.certificate_validity));
  Json secret = SecretFor(job, name, "kubernetes.io/tls",
                          {{"ca.crt", authority.ca.cert_pem}, {"tls.crt", agent.cert_pem}, {"tls.key", agent.key_pem}});
  StatusOr<Json> written = [&]() -> StatusOr<Json> {
    if (!current.ok()) return client.Create(kube::kSecrets, job.namespace_, secret);
    secret["metadata"]["resourceVersion"] = (*current)["metadata"]["resourceVersion"];
    return client.Update(kube::kSecrets, job.namespace_, secret);
  }();
  if (!written.ok() && (written.status().code() == StatusCode::kAlreadyExists ||
                        written.status().code() == StatusCode::kAborted)) {
    // Another replica wrote it meanwhile: the next reconcile reads theirs.
    return written.status().WithContext("writing Secret " + name + " (written meanwhile; read again)");
  }
  if (!written.ok()) return written.status().WithContext("writing Secret " + name);
  EDGETRAIN_ASSIGN_OR_RETURN(pki::Validity validity, pki::ValidityOf(agent.cert_pem));
  CredentialsKept kept{StatusOf(job.name, validity), current.ok() ? "CertificateRotated" : "CredentialsIssued", ""};
  kept.message = (current.ok() ? "the agents' certificate in Secret " : "mutual TLS for the team: Secret ") + name +
                 (current.ok() ? " replaced" : "") + ", valid until " + kept.status["notAfter"].get<std::string>() +
                 ", renewed after " + kept.status["renewAfter"].get<std::string>();
  return kept;
}

}  // namespace edgetrain::operator_

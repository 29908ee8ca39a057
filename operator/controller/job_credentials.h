#pragma once
// A team's identity on the cluster: the operator is the job's certificate
// authority (pki/job_identity.h). Secret NAME-ca holds the authority's
// certificate and key and is mounted by no pod; Secret NAME-tls
// (kubernetes.io/tls: ca.crt, tls.crt, tls.key) holds the certificate every
// agent of the team presents, mounted read-only in each agent's pod. Both are
// owned by the job and go with it. The certificate is replaced once two thirds
// of its life have passed; the kubelet brings the new files into the running
// pods and the agents take them up for their next connections.

#include <string>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/status.h"
#include "operator/controller/job_objects.h"
#include "operator/kube/kube_client.h"
#include "operator/kube/kube_time.h"

namespace edgetrain::operator_ {

struct CredentialsOptions {
  Duration certificate_validity = std::chrono::hours(24 * 30);  // an agent certificate's life
  Duration authority_validity = std::chrono::hours(24 * 365);   // the job's authority's
};

// What keeping a job's credentials did: what its status says of them
// (status.credentials: secretName, notAfter, renewAfter; no key material),
// and an Event to record when they were issued or rotated ("" when neither).
struct CredentialsKept {
  Json status;
  std::string reason;  // CredentialsIssued | CertificateRotated | ""
  std::string message;
  // A Secret of the job's names is another's (JobMayWrite): nothing was
  // written, and this says so; `status` is then empty.
  std::string name_taken = {};
};

// Issues the job's credentials when its Secrets are missing, and a new agent
// certificate when the one there is due for renewal at `now`. An API failure
// is returned for the reconcile to retry. `none_issued`: the job's status
// names none, so its Secrets are made without being read first (those there
// after all are read once the create finds them).
StatusOr<CredentialsKept> KeepCredentials(kube::KubeClient& client, const JobObject& job, kube::WallTime now,
                                          const CredentialsOptions& options, bool none_issued = false);

// Whether a job's credentials need looking at by `now`: none issued yet, or
// past the renewal its status names.
bool CredentialsDue(const Json& status, kube::WallTime now);

// How often an agent reads its credentials again, for a certificate of this
// life: a rotation is taken up long before the old one ends.
Duration TlsReloadFor(Duration certificate_validity);

}  // namespace edgetrain::operator_

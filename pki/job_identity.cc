#include "pki/job_identity.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>

#include "core/quoted_text.h"
#include "core/utc_time_text.h"

namespace edgetrain::pki {
namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using Certificate = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Store = std::unique_ptr<X509_STORE, Deleter<X509_STORE, X509_STORE_free>>;
using StoreContext = std::unique_ptr<X509_STORE_CTX, Deleter<X509_STORE_CTX, X509_STORE_CTX_free>>;

// OpenSSL keeps errors in a queue per thread, and gRPC reads the same queue
// (one libssl) on the threads that call into here: whatever a check leaves
// there could fail a later TLS read. Every entry point empties it on the way out.
struct ClearOpenSslErrors {
  ~ClearOpenSslErrors() { ERR_clear_error(); }
};

// OpenSSL's last error, for a message; its queue is left empty.
std::string OpenSslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

Status Failed(const std::string& what) { return InternalError(what + ": " + OpenSslError()); }

Certificate ParseCertificate(const std::string& pem) {
  Bio in(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!in) return nullptr;
  return Certificate(PEM_read_bio_X509(in.get(), nullptr, nullptr, nullptr));
}

Key ParseKey(const std::string& pem) {
  Bio in(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!in) return nullptr;
  return Key(PEM_read_bio_PrivateKey(in.get(), nullptr, nullptr, nullptr));
}

std::string ToPem(X509* cert) {
  Bio out(BIO_new(BIO_s_mem()));
  if (!out || PEM_write_bio_X509(out.get(), cert) != 1) return {};
  char* data = nullptr;
  const long n = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string ToPem(EVP_PKEY* key) {
  Bio out(BIO_new(BIO_s_mem()));
  if (!out || PEM_write_bio_PrivateKey(out.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) return {};
  char* data = nullptr;
  const long n = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string CommonNameOf(X509* cert) {
  X509_NAME* subject = X509_get_subject_name(cert);
  const int at = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (at < 0) return {};
  const ASN1_STRING* value = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at));
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(value)),
                     static_cast<size_t>(ASN1_STRING_length(value)));
}

// A certificate's date as UtcText says it, or "?" where it cannot be read.
std::string DateSaid(const ASN1_TIME* date) {
  std::tm when{};
  if (date == nullptr || ASN1_TIME_to_tm(date, &when) != 1) return "?";
  return UtcText(std::chrono::system_clock::from_time_t(timegm(&when)));
}

// An EC P-256 key: small certificates, fast handshakes on small devices.
Key NewKey() { return Key(EVP_EC_gen("P-256")); }

Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return Failed("extension " + value);
  const int added = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return added == 1 ? Status::Ok() : Failed("extension " + value);
}

// A certificate of `job` (subject O=edgetrain, OU=`unit`, CN=`job`), its key
// `key`, valid over the given span, not yet signed nor extended. The authority
// and its agents differ in `unit`: a subject equal to its issuer's would make
// an agent's certificate look self-signed.
StatusOr<Certificate> NewCertificate(const std::string& job, const char* unit, EVP_PKEY* key, WallTime not_before,
                                     WallTime not_after) {
  if (job.empty()) return InvalidArgumentError("a certificate needs its job's name");
  if (not_after <= not_before) return InvalidArgumentError("a certificate's validity must end after it begins");
  Certificate cert(X509_new());
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1) return Failed("new certificate");
  // A random 128-bit serial, as RFC 5280 asks of an authority's certificates.
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof(serial)) != 1) return Failed("serial");
  serial[0] &= 0x7f;  // positive
  std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>> bn(BN_bin2bn(serial, sizeof(serial), nullptr));
  if (!bn || BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get())) == nullptr) return Failed("serial");
  if (ASN1_TIME_set(X509_getm_notBefore(cert.get()), std::chrono::system_clock::to_time_t(not_before)) == nullptr ||
      ASN1_TIME_set(X509_getm_notAfter(cert.get()), std::chrono::system_clock::to_time_t(not_after)) == nullptr) {
    return Failed("validity");
  }
  X509_NAME* subject = X509_get_subject_name(cert.get());
  auto add = [&](const char* field, const std::string& value) {
    return X509_NAME_add_entry_by_txt(subject, field, MBSTRING_UTF8,
                                      reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1, 0) == 1;
  };
  if (!add("O", "edgetrain") || !add("OU", unit) || !add("CN", job)) return Failed("subject");
  if (X509_set_pubkey(cert.get(), key) != 1) return Failed("public key");
  return cert;
}

}  // namespace

std::string TlsServerName(const std::string& job) { return job + ".job.edgetrain.dev"; }

StatusOr<JobAuthority> MakeJobAuthority(const std::string& job, WallTime not_before, WallTime not_after) {
  ClearOpenSslErrors clear;
  Key key = NewKey();
  if (!key) return Failed("authority key");
  EDGETRAIN_ASSIGN_OR_RETURN(Certificate cert, NewCertificate(job, "job authority", key.get(), not_before, not_after));
  // Self-signed: its issuer is its subject.
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get())) != 1) return Failed("issuer");
  EDGETRAIN_RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  EDGETRAIN_RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign"));
  EDGETRAIN_RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash"));
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) return Failed("signing the authority");
  return JobAuthority{job, {ToPem(cert.get()), ToPem(key.get())}};
}

StatusOr<KeyPair> IssueAgentCertificate(const JobAuthority& authority, WallTime not_before, WallTime not_after) {
  ClearOpenSslErrors clear;
  Certificate ca = ParseCertificate(authority.ca.cert_pem);
  Key ca_key = ParseKey(authority.ca.key_pem);
  if (!ca || !ca_key) return InvalidArgumentError("job \"" + authority.job + "\"'s authority is not a certificate and key");
  Key key = NewKey();
  if (!key) return Failed("agent key");
  EDGETRAIN_ASSIGN_OR_RETURN(Certificate cert, NewCertificate(authority.job, "agent", key.get(), not_before, not_after));
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(ca.get())) != 1) return Failed("issuer");
  EDGETRAIN_RETURN_IF_ERROR(AddExtension(cert.get(), ca.get(), NID_basic_constraints, "critical,CA:FALSE"));
  EDGETRAIN_RETURN_IF_ERROR(AddExtension(cert.get(), ca.get(), NID_key_usage, "critical,digitalSignature"));
  // Every agent both serves (a coordinator, a pipeline head) and dials (a worker).
  EDGETRAIN_RETURN_IF_ERROR(AddExtension(cert.get(), ca.get(), NID_ext_key_usage, "serverAuth,clientAuth"));
  EDGETRAIN_RETURN_IF_ERROR(
      AddExtension(cert.get(), ca.get(), NID_subject_alt_name, "DNS:" + TlsServerName(authority.job)));
  EDGETRAIN_RETURN_IF_ERROR(AddExtension(cert.get(), ca.get(), NID_authority_key_identifier, "keyid:always"));
  if (X509_sign(cert.get(), ca_key.get(), EVP_sha256()) == 0) return Failed("signing the agent certificate");
  return KeyPair{ToPem(cert.get()), ToPem(key.get())};
}

const char* ReasonOf(PeerVerdict verdict) {
  switch (verdict) {
    case PeerVerdict::kAccepted: return "accepted";
    case PeerVerdict::kNoCertificate: return "no_certificate";
    case PeerVerdict::kOtherJob: return "other_job";
    case PeerVerdict::kExpired: return "expired";
    case PeerVerdict::kNotYetValid: return "not_yet_valid";
    case PeerVerdict::kUntrusted: return "untrusted";
  }
  return "untrusted";
}

PeerCheck CheckPeer(const std::string& peer_pem, const std::string& job, const std::string& ca_pem, WallTime now,
                    PeerRole role) {
  ClearOpenSslErrors clear;
  if (peer_pem.empty()) return {PeerVerdict::kNoCertificate, "it presented no certificate"};
  Certificate peer = ParseCertificate(peer_pem);
  if (!peer) return {PeerVerdict::kUntrusted, "its certificate cannot be read"};
  Certificate ca = ParseCertificate(ca_pem);
  if (!ca) return {PeerVerdict::kUntrusted, "this job's authority cannot be read"};
  const std::string named = CommonNameOf(peer.get());
  Store store(X509_STORE_new());
  StoreContext ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca.get()) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), peer.get(), nullptr) != 1) {
    return {PeerVerdict::kUntrusted, "cannot check its certificate: " + OpenSslError()};
  }
  X509_STORE_CTX_set_time(ctx.get(), 0, std::chrono::system_clock::to_time_t(now));
  X509_STORE_CTX_set_purpose(ctx.get(), role == PeerRole::kWorker ? X509_PURPOSE_SSL_CLIENT : X509_PURPOSE_SSL_SERVER);
  const bool verified = X509_verify_cert(ctx.get()) == 1;
  const int error = X509_STORE_CTX_get_error(ctx.get());
  ERR_clear_error();
  // The name as the peer wrote it, escaped and cut: any host may present a
  // certificate before it is judged, and a name of "x\ntime=... FORGED"
  // made a line of the agent's log of its own (a security review).
  const std::string whose = "a certificate of job " + QuotedExcerpt(named, 80);
  if (!verified) {
    // The certificate found wanting: the peer's, or the authority above it.
    X509* failed = X509_STORE_CTX_get_current_cert(ctx.get());
    const bool authority_failed = failed != nullptr && X509_cmp(failed, peer.get()) != 0;
    const std::string ended = DateSaid(failed != nullptr ? X509_get0_notAfter(failed) : nullptr);
    switch (error) {
      case X509_V_ERR_CERT_HAS_EXPIRED:
        if (authority_failed) return {PeerVerdict::kExpired, whose + ", whose authority expired at " + ended, true};
        return {PeerVerdict::kExpired, whose + " that expired at " + ended};
      case X509_V_ERR_CERT_NOT_YET_VALID:
        // With its date, as an expired one says when it ended.
        return {PeerVerdict::kNotYetValid,
                whose + (authority_failed ? ", whose authority is" : "") + " not valid until " +
                    DateSaid(failed != nullptr ? X509_get0_notBefore(failed) : nullptr),
                authority_failed};
      case X509_V_ERR_INVALID_PURPOSE:
        // Issued by the authority, for another use: "not issued by this job's
        // authority" sent a user to look for another authority (a user's
        // trial of a certificate without clientAuth).
        return {PeerVerdict::kUntrusted,
                whose + " not for use as a TLS " + (role == PeerRole::kWorker ? "client" : "server") +
                    ": its extended key usage lacks " + (role == PeerRole::kWorker ? "clientAuth" : "serverAuth") +
                    " (an agent both dials and serves: edgetrain credentials issues both)"};
      default:
        // Its issuer named as itself: OpenSSL calls it self-signed, or finds
        // no issuer where the signer's key identifier is named (openssl x509
        // -req writes it). Another agent's certificate of the job signed it
        // where its own key did not: said as such (users' trials). Another
        // job's is said as such, below.
        if (named == job &&
            X509_NAME_cmp(X509_get_issuer_name(peer.get()), X509_get_subject_name(peer.get())) == 0) {
          return {PeerVerdict::kUntrusted,
                  whose + " not issued by this job's authority: " +
                      (X509_verify(peer.get(), X509_get0_pubkey(peer.get())) == 1
                           ? "it is self-signed"
                           : "signed by another certificate of its own name (an agent's, not the authority's)")};
        }
        // Issued by some other authority: another job's, when it names another job.
        if (named != job) return {PeerVerdict::kOtherJob, whose + ", not issued by job \"" + job + "\"'s authority"};
        return {PeerVerdict::kUntrusted, whose + " not issued by this job's authority (" +
                                             X509_verify_cert_error_string(error) + ")"};
    }
  }
  // An authority shared by several jobs (cert-manager's) vouches for each: the
  // name tells them apart.
  if (named != job) return {PeerVerdict::kOtherJob, whose + ", not of job \"" + job + "\""};
  return {PeerVerdict::kAccepted, whose};
}

std::string WouldBeRefused(const std::string& cert_pem, const std::string& job, const std::string& ca_pem,
                           WallTime now) {
  for (const PeerRole role : {PeerRole::kWorker, PeerRole::kCoordinator}) {
    const PeerCheck check = CheckPeer(cert_pem, job, ca_pem, now, role);
    if (!check.accepted()) return check.detail + " (" + ReasonOf(check.verdict) + ")";
  }
  return "";
}

Status CheckKeyPair(const KeyPair& pair) {
  ClearOpenSslErrors clear;
  Certificate cert = ParseCertificate(pair.cert_pem);
  if (!cert) return InvalidArgumentError("tls.crt is not a PEM certificate");
  Key key = ParseKey(pair.key_pem);
  if (!key) return InvalidArgumentError("tls.key is not a PEM private key");
  const bool matches = X509_check_private_key(cert.get(), key.get()) == 1;
  ERR_clear_error();
  if (!matches) return InvalidArgumentError("tls.key is not the key of tls.crt");
  return Status::Ok();
}

StatusOr<Validity> ValidityOf(const std::string& cert_pem) {
  ClearOpenSslErrors clear;
  Certificate cert = ParseCertificate(cert_pem);
  if (!cert) return InvalidArgumentError("not a PEM certificate");
  std::tm begin{}, end{};
  if (ASN1_TIME_to_tm(X509_get0_notBefore(cert.get()), &begin) != 1 ||
      ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &end) != 1) {
    return InvalidArgumentError("a certificate with an unreadable validity");
  }
  return Validity{std::chrono::system_clock::from_time_t(timegm(&begin)),
                  std::chrono::system_clock::from_time_t(timegm(&end))};
}

}  // namespace edgetrain::pki

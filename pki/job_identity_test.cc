#include "pki/job_identity.h"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

namespace edgetrain::pki {
namespace {

using std::chrono::hours;

// A fixed instant, so that what is expired or not yet valid does not depend on
// when the test runs (certificates carry whole seconds).
const WallTime kNow = std::chrono::system_clock::from_time_t(1'800'000'000);

JobAuthority Authority(const std::string& job) {
  auto a = MakeJobAuthority(job, kNow - hours(24), kNow + hours(24 * 365));
  EXPECT_TRUE(a.ok()) << a.status().message();
  return *a;
}

KeyPair Agent(const JobAuthority& a, WallTime from = kNow - hours(1), WallTime to = kNow + hours(1)) {
  auto c = IssueAgentCertificate(a, from, to);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return *c;
}

TEST(JobIdentityTest, AnAgentCertificateOfTheJobIsAccepted) {
  const JobAuthority digits = Authority("digits");
  const KeyPair agent = Agent(digits);
  EXPECT_NE(agent.cert_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_NE(agent.key_pem.find("PRIVATE KEY"), std::string::npos);
  const PeerCheck check = CheckPeer(agent.cert_pem, "digits", digits.ca.cert_pem, kNow);
  EXPECT_TRUE(check.accepted()) << check.detail;
  EXPECT_EQ(check.detail, "a certificate of job \"digits\"");
  // Each certificate has a key of its own.
  EXPECT_NE(Agent(digits).key_pem, agent.key_pem);
}

TEST(JobIdentityTest, NoCertificateIsRefused) {
  const PeerCheck check = CheckPeer("", "digits", Authority("digits").ca.cert_pem, kNow);
  EXPECT_EQ(check.verdict, PeerVerdict::kNoCertificate);
  EXPECT_STREQ(ReasonOf(check.verdict), "no_certificate");
}

TEST(JobIdentityTest, AnotherJobsCertificateIsRefusedAndNamed) {
  const JobAuthority digits = Authority("digits");
  const KeyPair intruder = Agent(Authority("fashion"));
  const PeerCheck check = CheckPeer(intruder.cert_pem, "digits", digits.ca.cert_pem, kNow);
  EXPECT_EQ(check.verdict, PeerVerdict::kOtherJob);
  EXPECT_STREQ(ReasonOf(check.verdict), "other_job");
  EXPECT_EQ(check.detail, "a certificate of job \"fashion\", not issued by job \"digits\"'s authority");
}

// A name is the peer's own, read before it is judged: shown escaped, so that
// one holding a newline makes no line of the log of its own (a security
// review forged "time=... coordinator: FORGED" so), and cut.
TEST(JobIdentityTest, AnIntrudersNameIsShownEscaped) {
  const JobAuthority digits = Authority("digits");
  const KeyPair intruder = Agent(Authority("x\ntime=2026-12-05T14:00:00.000Z coordinator: FORGED"));
  const PeerCheck check = CheckPeer(intruder.cert_pem, "digits", digits.ca.cert_pem, kNow);
  EXPECT_EQ(check.verdict, PeerVerdict::kOtherJob);
  EXPECT_EQ(check.detail, "a certificate of job \"x\\ntime=2026-12-05T14:00:00.000Z coordinator: FORGED\", not issued "
                          "by job \"digits\"'s authority");
}

TEST(JobIdentityTest, AnAuthoritySharedByJobsStillTellsThemApart) {
  // cert-manager's one issuer for every job: the certificate's name decides.
  const JobAuthority digits = Authority("digits");
  const KeyPair other = Agent(JobAuthority{"fashion", digits.ca});
  const PeerCheck check = CheckPeer(other.cert_pem, "digits", digits.ca.cert_pem, kNow);
  EXPECT_EQ(check.verdict, PeerVerdict::kOtherJob);
  EXPECT_EQ(check.detail, "a certificate of job \"fashion\", not of job \"digits\"");
}

TEST(JobIdentityTest, AJobOfTheSameNameWithAnotherAuthorityIsUntrusted) {
  // A job deleted and made again has a new authority: its old certificates are worthless.
  const KeyPair old = Agent(Authority("digits"));
  const PeerCheck check = CheckPeer(old.cert_pem, "digits", Authority("digits").ca.cert_pem, kNow);
  EXPECT_EQ(check.verdict, PeerVerdict::kUntrusted);
  EXPECT_NE(check.detail.find("not issued by this job's authority"), std::string::npos) << check.detail;
}

TEST(JobIdentityTest, AnExpiredCertificateIsRefusedWithItsEnd) {
  const JobAuthority digits = Authority("digits");
  const KeyPair stale = Agent(digits, kNow - hours(3), kNow - hours(1));
  const PeerCheck check = CheckPeer(stale.cert_pem, "digits", digits.ca.cert_pem, kNow);
  EXPECT_EQ(check.verdict, PeerVerdict::kExpired);
  EXPECT_STREQ(ReasonOf(check.verdict), "expired");
  EXPECT_EQ(check.detail, "a certificate of job \"digits\" that expired at 2027-01-15T07:00:00Z");
  // The same certificate was good while it lasted.
  EXPECT_TRUE(CheckPeer(stale.cert_pem, "digits", digits.ca.cert_pem, kNow - hours(2)).accepted());
  const PeerCheck early = CheckPeer(stale.cert_pem, "digits", digits.ca.cert_pem, kNow - hours(4));
  EXPECT_EQ(early.verdict, PeerVerdict::kNotYetValid);
  // With its date, as an expired one has its end.
  EXPECT_EQ(early.detail, "a certificate of job \"digits\" not valid until 2027-01-15T05:00:00Z");
}

TEST(JobIdentityTest, AnExpiredAuthorityIsNamedAsWhatExpired) {
  auto brief = MakeJobAuthority("digits", kNow - hours(3), kNow - hours(1));
  ASSERT_TRUE(brief.ok());
  const KeyPair agent = Agent(*brief, kNow - hours(2), kNow + hours(1));
  const PeerCheck check = CheckPeer(agent.cert_pem, "digits", brief->ca.cert_pem, kNow);
  EXPECT_EQ(check.verdict, PeerVerdict::kExpired);
  EXPECT_EQ(check.detail, "a certificate of job \"digits\", whose authority expired at 2027-01-15T07:00:00Z");
  EXPECT_TRUE(check.authority_at_fault) << "new credentials for the job mend it, not the peer's alone";
  EXPECT_FALSE(CheckPeer(Agent(Authority("digits"), kNow - hours(3), kNow - hours(1)).cert_pem, "digits",
                         Authority("digits").ca.cert_pem, kNow)
                   .authority_at_fault);
}

// `cert_pem` signed again by `signer` (its certificate and key), its issuer
// named as the signer's subject, after `edit`.
template <typename Edit>
std::string Resigned(const std::string& cert_pem, const KeyPair& signer, Edit edit) {
  auto read = [](const std::string& pem, auto parse) {
    std::unique_ptr<BIO, decltype(&BIO_free)> in(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
    return parse(in.get(), nullptr, nullptr, nullptr);
  };
  std::unique_ptr<X509, decltype(&X509_free)> cert(read(cert_pem, PEM_read_bio_X509), X509_free);
  std::unique_ptr<X509, decltype(&X509_free)> issuer(read(signer.cert_pem, PEM_read_bio_X509), X509_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(read(signer.key_pem, PEM_read_bio_PrivateKey),
                                                           EVP_PKEY_free);
  edit(cert.get());
  X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer.get()));
  X509_sign(cert.get(), key.get(), EVP_sha256());
  std::unique_ptr<BIO, decltype(&BIO_free)> out(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_X509(out.get(), cert.get());
  char* data = nullptr;
  const long size = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

// `pair`'s certificate with its extended key usage made `usage`, signed again
// by `authority`: issued by the job's authority, for another use.
std::string WithKeyUsage(const KeyPair& pair, const JobAuthority& authority, const char* usage) {
  return Resigned(pair.cert_pem, authority.ca, [usage](X509* cert) {
    X509_EXTENSION_free(X509_delete_ext(cert, X509_get_ext_by_NID(cert, NID_ext_key_usage, -1)));
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, nullptr, NID_ext_key_usage, usage);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  });
}

// Issued by the job's authority for another use is said as such, not as
// issued by another authority (a user's trial went looking for one).
TEST(JobIdentityTest, ACertificateForAnotherUseSaysWhichUseItLacks) {
  const JobAuthority digits = Authority("digits");
  const std::string server_only = WithKeyUsage(Agent(digits), digits, "serverAuth");
  const PeerCheck as_worker = CheckPeer(server_only, "digits", digits.ca.cert_pem, kNow, PeerRole::kWorker);
  EXPECT_EQ(as_worker.verdict, PeerVerdict::kUntrusted);
  EXPECT_EQ(as_worker.detail, "a certificate of job \"digits\" not for use as a TLS client: its extended key usage "
                              "lacks clientAuth (an agent both dials and serves: edgetrain credentials issues both)");
  EXPECT_TRUE(CheckPeer(server_only, "digits", digits.ca.cert_pem, kNow, PeerRole::kCoordinator).accepted());
  const std::string client_only = WithKeyUsage(Agent(digits), digits, "clientAuth");
  EXPECT_NE(CheckPeer(client_only, "digits", digits.ca.cert_pem, kNow, PeerRole::kCoordinator)
                .detail.find("not for use as a TLS server: its extended key usage lacks serverAuth"),
            std::string::npos);
}

// What an agent says of its own certificate: refused for either use it may
// be put to (a coordinator lacking serverAuth had said nothing on its side).
TEST(JobIdentityTest, AnAgentsOwnCertificateIsJudgedForBothUses) {
  const JobAuthority digits = Authority("digits");
  EXPECT_EQ(WouldBeRefused(Agent(digits).cert_pem, "digits", digits.ca.cert_pem, kNow), "");
  EXPECT_NE(WouldBeRefused(WithKeyUsage(Agent(digits), digits, "clientAuth"), "digits", digits.ca.cert_pem, kNow)
                .find("not for use as a TLS server: its extended key usage lacks serverAuth"),
            std::string::npos);
  EXPECT_NE(WouldBeRefused(WithKeyUsage(Agent(digits), digits, "serverAuth"), "digits", digits.ca.cert_pem, kNow)
                .find("not for use as a TLS client: its extended key usage lacks clientAuth (an agent both dials "
                      "and serves: edgetrain credentials issues both) (untrusted)"),
            std::string::npos);
}

// An agent's certificate used as an authority signs certificates whose issuer
// is their own name: OpenSSL's "self-signed", said as what it is.
TEST(JobIdentityTest, ACertificateSignedByAnAgentsIsNotCalledSelfSigned) {
  const JobAuthority digits = Authority("digits");
  // Its authority key identifier, which names the authority's key, goes too,
  // as a certificate made with an agent's for its authority has none.
  const std::string by_agent = Resigned(Agent(digits).cert_pem, Agent(digits), [](X509* cert) {
    X509_EXTENSION_free(X509_delete_ext(cert, X509_get_ext_by_NID(cert, NID_authority_key_identifier, -1)));
  });
  const PeerCheck check = CheckPeer(by_agent, "digits", digits.ca.cert_pem, kNow);
  EXPECT_EQ(check.verdict, PeerVerdict::kUntrusted);
  EXPECT_EQ(check.detail, "a certificate of job \"digits\" not issued by this job's authority: signed by another "
                          "certificate of its own name (an agent's, not the authority's)");
  // So is one whose authority key identifier names the signer's, as
  // openssl x509 -req writes it: OpenSSL then finds no issuer at all.
  const std::string with_key_id = Resigned(Agent(digits).cert_pem, Agent(digits), [](X509*) {});
  EXPECT_EQ(CheckPeer(with_key_id, "digits", digits.ca.cert_pem, kNow).detail, check.detail);
  // One that is: another authority's own certificate, presented as a peer's.
  const PeerCheck self = CheckPeer(Authority("digits").ca.cert_pem, "digits", digits.ca.cert_pem, kNow);
  EXPECT_EQ(self.verdict, PeerVerdict::kUntrusted);
  EXPECT_NE(self.detail.find("not issued by this job's authority"), std::string::npos) << self.detail;
}

TEST(JobIdentityTest, NoOpenSslErrorIsLeftForTheNextTlsRead) {
  // gRPC shares this thread's OpenSSL error queue: a refusal leaves it empty.
  EXPECT_EQ(CheckPeer("garbage", "digits", "garbage", kNow).verdict, PeerVerdict::kUntrusted);
  EXPECT_FALSE(ValidityOf("garbage").ok());
  EXPECT_FALSE(CheckKeyPair({"garbage", "garbage"}).ok());
  EXPECT_EQ(ERR_peek_error(), 0u);
}

TEST(JobIdentityTest, TheValidityIsReadBack) {
  const KeyPair agent = Agent(Authority("digits"), kNow, kNow + hours(5));
  auto validity = ValidityOf(agent.cert_pem);
  ASSERT_TRUE(validity.ok()) << validity.status().message();
  EXPECT_EQ(validity->not_before, kNow);
  EXPECT_EQ(validity->not_after, kNow + hours(5));
  EXPECT_FALSE(ValidityOf("not a certificate").ok());
}

TEST(JobIdentityTest, GarbageIsRefusedNotCrashedOn) {
  const JobAuthority digits = Authority("digits");
  EXPECT_EQ(CheckPeer("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "digits",
                      digits.ca.cert_pem, kNow).verdict,
            PeerVerdict::kUntrusted);
  EXPECT_EQ(CheckPeer(Agent(digits).cert_pem, "digits", "", kNow).verdict, PeerVerdict::kUntrusted);
  EXPECT_FALSE(IssueAgentCertificate(JobAuthority{"digits", {"x", "y"}}, kNow, kNow + hours(1)).ok());
}

TEST(JobIdentityTest, BadRequestsAreRefused) {
  EXPECT_EQ(MakeJobAuthority("", kNow, kNow + hours(1)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeJobAuthority("digits", kNow, kNow).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(IssueAgentCertificate(Authority("digits"), kNow, kNow - hours(1)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(JobIdentityTest, AKeyPairIsCheckedWhole) {
  const JobAuthority digits = Authority("digits");
  const KeyPair a = Agent(digits), b = Agent(digits);
  EXPECT_TRUE(CheckKeyPair(a).ok());
  EXPECT_EQ(CheckKeyPair({a.cert_pem, b.key_pem}).message(), "tls.key is not the key of tls.crt");
  EXPECT_EQ(CheckKeyPair({"x", a.key_pem}).message(), "tls.crt is not a PEM certificate");
  EXPECT_EQ(CheckKeyPair({a.cert_pem, ""}).message(), "tls.key is not a PEM private key");
}

TEST(JobIdentityTest, TheServerNameIsTheJobs) {
  EXPECT_EQ(TlsServerName("digits"), "digits.job.edgetrain.dev");
}

}  // namespace
}  // namespace edgetrain::pki

#include "operator/controller/job_credentials.h"

#include <gtest/gtest.h>

#include "core/base64.h"
#include "operator/controller/job_labels.h"
#include "operator/kube/testing/fake_kube_client.h"
#include "pki/job_identity.h"

namespace edgetrain::operator_ {
namespace {

using kube::testing::FakeKubeClient;
using std::chrono::hours;

const kube::WallTime kNow = std::chrono::system_clock::from_time_t(1'800'000'000);

JobObject Job() {
  nlohmann::json m = {{"apiVersion", "edgetrain.dev/v1alpha1"},
                      {"kind", "TrainingJob"},
                      {"metadata", {{"name", "team"}, {"namespace", "robots"}}},
                      {"spec", {{"model", {{"name", "mlp"}}}, {"data", {{"dataset", "digits"}}},
                                {"parallelism", {{"workers", 2}}}}}};
  StatusOr<api::TrainingJobManifest> manifest = api::ParseTrainingJob(m.dump(), "team");
  EXPECT_TRUE(manifest.ok()) << manifest.status().ToString();
  return {m, *manifest, "robots", "team", "uid-7"};
}

std::string Data(const Json& secret, const char* key) {
  auto bytes = Base64Decode(secret["data"][key].get<std::string>());
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : "";
}

CredentialsOptions Lives() {
  CredentialsOptions o;
  o.certificate_validity = hours(30);
  o.authority_validity = hours(24 * 365);
  return o;
}

TEST(JobCredentialsTest, ATeamGetsAnAuthorityAndACertificateOfItsJobOwnedByTheJob) {
  FakeKubeClient api;
  auto kept = KeepCredentials(api, Job(), kNow, Lives());
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->reason, "CredentialsIssued");
  auto tls = api.Get(kube::kSecrets, "robots", "team-tls");
  auto ca = api.Get(kube::kSecrets, "robots", "team-ca");
  ASSERT_TRUE(tls.ok() && ca.ok());
  EXPECT_EQ((*tls)["type"], "kubernetes.io/tls");
  for (const Json* s : {&*tls, &*ca}) {
    EXPECT_EQ((*s)["metadata"]["ownerReferences"][0]["uid"], "uid-7") << "deleted with the job";
    EXPECT_EQ((*s)["metadata"]["labels"][kJobLabel], "team");
  }
  // What the agents mount: the authority's certificate, never its key.
  EXPECT_EQ(Data(*tls, "ca.crt"), Data(*ca, "ca.crt"));
  EXPECT_FALSE((*tls)["data"].contains("ca.key"));
  EXPECT_NE(Data(*ca, "ca.key").find("PRIVATE KEY"), std::string::npos);
  EXPECT_TRUE(pki::CheckKeyPair({Data(*tls, "tls.crt"), Data(*tls, "tls.key")}).ok());
  EXPECT_TRUE(pki::CheckPeer(Data(*tls, "tls.crt"), "team", Data(*tls, "ca.crt"), kNow).accepted());
  // Its life in the status: 30 h, renewed 20 h in. No key material there.
  EXPECT_EQ(kept->status["secretName"], "team-tls");
  EXPECT_EQ(kept->status["notAfter"], kube::FormatKubeTime(kNow + hours(30)));
  EXPECT_EQ(kept->status["renewAfter"], kube::FormatKubeTime(kNow + hours(20)));
  // Valid from a little earlier: a node whose clock is behind takes it too.
  EXPECT_TRUE(pki::CheckPeer(Data(*tls, "tls.crt"), "team", Data(*tls, "ca.crt"), kNow - std::chrono::minutes(4))
                  .accepted());
  EXPECT_EQ(kept->status.dump().find("PRIVATE"), std::string::npos);
}

// A job whose status names no credentials has its Secrets made without a
// read; ones there after all (a reconcile that wrote them and failed to write
// the status) are found by the create and read, not made twice.
TEST(JobCredentialsTest, ANewJobsSecretsAreMadeWithoutReadingFirstAndFoundWhenThereAfterAll) {
  FakeKubeClient api;
  auto made = KeepCredentials(api, Job(), kNow, Lives(), /*none_issued=*/true);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(made->reason, "CredentialsIssued");
  EXPECT_EQ(api.Reads("Secret"), 0);
  EXPECT_EQ(api.Writes("create Secret"), 2);
  const std::string issued = Data(*api.Get(kube::kSecrets, "robots", "team-tls"), "tls.crt");

  api.ResetWrites();
  auto again = KeepCredentials(api, Job(), kNow + hours(1), Lives(), /*none_issued=*/true);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->reason, "") << "the certificate there is kept";
  EXPECT_EQ(again->status["notAfter"], made->status["notAfter"]);
  EXPECT_EQ(Data(*api.Get(kube::kSecrets, "robots", "team-tls"), "tls.crt"), issued);
  EXPECT_EQ(api.Writes("update Secret"), 0);
  EXPECT_EQ(api.All(kube::kSecrets).size(), 2u);
}

TEST(JobCredentialsTest, AShortLivedCertificateIsRenewedTwoThirdsIntoItsLife) {
  // The kube suite's operator gives certificates seconds: renewal must not count
  // the clock-skew margin as part of their life.
  FakeKubeClient api;
  CredentialsOptions brief = Lives();
  brief.certificate_validity = std::chrono::seconds(24);
  auto kept = KeepCredentials(api, Job(), kNow, brief);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->status["renewAfter"], kube::FormatKubeTime(kNow + std::chrono::seconds(16)));
  EXPECT_EQ(KeepCredentials(api, Job(), kNow + std::chrono::seconds(15), brief)->reason, "");
  EXPECT_EQ(KeepCredentials(api, Job(), kNow + std::chrono::seconds(16), brief)->reason, "CertificateRotated");
}

TEST(JobCredentialsTest, ACertificateIsKeptUntilDueThenReplacedFromTheSameAuthority) {
  FakeKubeClient api;
  auto first = KeepCredentials(api, Job(), kNow, Lives());
  ASSERT_TRUE(first.ok());
  const std::string issued = Data(*api.Get(kube::kSecrets, "robots", "team-tls"), "tls.crt");
  EXPECT_FALSE(CredentialsDue(Json{{"credentials", first->status}}, kNow + hours(19)));
  EXPECT_TRUE(CredentialsDue(Json{{"credentials", first->status}}, kNow + hours(20)));
  EXPECT_TRUE(CredentialsDue(Json::object(), kNow)) << "none issued yet";

  auto early = KeepCredentials(api, Job(), kNow + hours(19), Lives());
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(early->reason, "") << "a third of its life left: kept";
  EXPECT_EQ(Data(*api.Get(kube::kSecrets, "robots", "team-tls"), "tls.crt"), issued);

  auto due = KeepCredentials(api, Job(), kNow + hours(21), Lives());
  ASSERT_TRUE(due.ok()) << due.status().ToString();
  EXPECT_EQ(due->reason, "CertificateRotated");
  const Json tls = *api.Get(kube::kSecrets, "robots", "team-tls");
  EXPECT_NE(Data(tls, "tls.crt"), issued);
  // The authority stays: agents that have not yet read the new files still trust it.
  EXPECT_TRUE(pki::CheckPeer(Data(tls, "tls.crt"), "team", Data(*api.Get(kube::kSecrets, "robots", "team-ca"), "ca.crt"),
                             kNow + hours(21))
                  .accepted());
  EXPECT_TRUE(pki::CheckPeer(issued, "team", Data(tls, "ca.crt"), kNow + hours(21)).accepted());
  EXPECT_EQ(due->status["notAfter"], kube::FormatKubeTime(kNow + hours(51)));
}

TEST(JobCredentialsTest, AnUnreadableCertificateIsReplaced) {
  FakeKubeClient api;
  ASSERT_TRUE(KeepCredentials(api, Job(), kNow, Lives()).ok());
  Json tls = *api.Get(kube::kSecrets, "robots", "team-tls");
  tls["data"]["tls.crt"] = Base64Encode("garbage");
  ASSERT_TRUE(api.Update(kube::kSecrets, "robots", tls).ok());
  auto kept = KeepCredentials(api, Job(), kNow + hours(1), Lives());
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->reason, "CertificateRotated");
  EXPECT_TRUE(pki::ValidityOf(Data(*api.Get(kube::kSecrets, "robots", "team-tls"), "tls.crt")).ok());
}

TEST(JobCredentialsTest, AnEarlierJobOfTheSameNamesSecretsAreReplacedNotTakenOver) {
  // A job deleted and made again before the garbage collector took its Secrets:
  // the new one has an authority of its own, and Secrets it owns.
  FakeKubeClient api;
  ASSERT_TRUE(KeepCredentials(api, Job(), kNow, Lives()).ok());
  const Json old_tls = *api.Get(kube::kSecrets, "robots", "team-tls");
  JobObject again = Job();
  again.uid = "uid-8";
  auto kept = KeepCredentials(api, again, kNow + hours(1), Lives());
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->reason, "CredentialsIssued");
  const Json tls = *api.Get(kube::kSecrets, "robots", "team-tls");
  const Json ca = *api.Get(kube::kSecrets, "robots", "team-ca");
  EXPECT_EQ(tls["metadata"]["ownerReferences"][0]["uid"], "uid-8");
  EXPECT_EQ(ca["metadata"]["ownerReferences"][0]["uid"], "uid-8");
  EXPECT_NE(Data(tls, "ca.crt"), Data(old_tls, "ca.crt"));
  EXPECT_EQ(pki::CheckPeer(Data(old_tls, "tls.crt"), "team", Data(tls, "ca.crt"), kNow + hours(1)).verdict,
            pki::PeerVerdict::kUntrusted)
      << "the earlier job's certificate is worthless to the new one";
}

TEST(JobCredentialsTest, NoCertificateOutlivesItsAuthority) {
  FakeKubeClient api;
  CredentialsOptions o = Lives();
  o.authority_validity = hours(10);
  auto kept = KeepCredentials(api, Job(), kNow, o);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->status["notAfter"], kube::FormatKubeTime(kNow + hours(10)));
}

TEST(JobCredentialsTest, AgentsReadTheirFilesAgainOftenEnoughForARotation) {
  EXPECT_EQ(TlsReloadFor(hours(24 * 30)), std::chrono::seconds(60));
  EXPECT_EQ(TlsReloadFor(std::chrono::seconds(60)), std::chrono::seconds(3));
  EXPECT_EQ(TlsReloadFor(std::chrono::seconds(10)), std::chrono::seconds(1));
}

}  // namespace
}  // namespace edgetrain::operator_

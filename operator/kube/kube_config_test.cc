#include "operator/kube/kube_config.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "core/base64.h"

namespace edgetrain::kube {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKubeconfig = R"(apiVersion: v1
kind: Config
current-context: edge
contexts:
  - name: edge
    context: {cluster: site, user: operator, namespace: robots}
  - name: other
    context: {cluster: nowhere, user: nobody}
clusters:
  - name: site
    cluster:
      server: https://10.0.0.1:6443
      certificate-authority-data: %CA%
users:
  - name: operator
    user: {token: abc.def}
)";

std::string WithCa(const std::string& ca_data) {
  std::string text = kKubeconfig;
  text.replace(text.find("%CA%"), 4, ca_data);
  return text;
}

TEST(KubeConfigTest, ReadsTheCurrentContextsClusterAndUser) {
  auto kc = ParseKubeConfig(WithCa(Base64Encode("-----BEGIN CERTIFICATE-----\nX\n")), "kc", "/");
  ASSERT_TRUE(kc.ok()) << kc.status().ToString();
  EXPECT_EQ(kc->server, "https://10.0.0.1:6443");
  EXPECT_EQ(kc->ca_pem, "-----BEGIN CERTIFICATE-----\nX\n");
  EXPECT_EQ(kc->token, "abc.def");
  EXPECT_EQ(kc->namespace_, "robots");
}

TEST(KubeConfigTest, FilesNamedInItAreRelativeToIt) {
  const fs::path dir = fs::path(::testing::TempDir()) / "kubeconfig-files";
  fs::create_directories(dir);
  std::ofstream(dir / "ca.crt") << "CA PEM";
  std::ofstream(dir / "client.crt") << "CERT PEM";
  std::ofstream(dir / "client.key") << "KEY PEM";
  std::string text = WithCa("");
  text.replace(text.find("certificate-authority-data: "), 28, "certificate-authority: ca.crt #");
  text.replace(text.find("{token: abc.def}"), 16, "{client-certificate: client.crt, client-key: client.key}");
  auto kc = ParseKubeConfig(text, "kc", dir.string());
  ASSERT_TRUE(kc.ok()) << kc.status().ToString();
  EXPECT_EQ(kc->ca_pem, "CA PEM");
  EXPECT_EQ(kc->client_cert_pem, "CERT PEM");
  EXPECT_EQ(kc->client_key_pem, "KEY PEM");
  EXPECT_EQ(kc->token, "");
  // A token file too, as client-go reads it: it had been read from where
  // the operator was started.
  std::ofstream(dir / "token") << "file-token\n";
  text = WithCa("");
  text.replace(text.find("{token: abc.def}"), 16, "{tokenFile: token}");
  auto by_file = ParseKubeConfig(text, "kc", dir.string());
  ASSERT_TRUE(by_file.ok()) << by_file.status().ToString();
  EXPECT_EQ(by_file->token, "file-token");
  EXPECT_EQ(by_file->token_file, (dir / "token").string());
}

TEST(KubeConfigTest, RefusesWhatItCannotUseWithTheReason) {
  struct Case {
    std::string text;
    const char* error;
  } cases[] = {
      {"apiVersion: v1\nkind: Config\n", "no current-context"},
      {"current-context: gone\ncontexts: []\n", "current-context \"gone\" is not among its contexts"},
      {"current-context: c\ncontexts: [{name: c, context: {cluster: x, user: u}}]\nclusters: []\n",
       "names cluster \"x\", which it does not define"},
      {"current-context: c\ncontexts: [{name: c, context: {cluster: x}}]\n"
       "clusters: [{name: x, cluster: {server: https://h, insecure-skip-tls-verify: true}}]\n",
       "asks to skip TLS verification"},
      {"current-context: c\ncontexts: [{name: c, context: {cluster: x, user: u}}]\n"
       "clusters: [{name: x, cluster: {server: https://h}}]\n"
       "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}}}]\n",
       "user \"u\" signs in by `exec`, which this operator does not do"},
      {"current-context: c\ncontexts: [{name: c, context: {cluster: x, user: u}}]\n"
       "clusters: [{name: x, cluster: {server: https://h}}]\n"
       "users: [{name: u, user: {auth-provider: {name: oidc}}}]\n",
       "user \"u\" signs in by `auth-provider`"},
  };
  for (const auto& c : cases) {
    auto kc = ParseKubeConfig(c.text, "kc", "/");
    ASSERT_FALSE(kc.ok()) << c.error;
    EXPECT_NE(kc.status().message().find(c.error), std::string::npos) << kc.status().message();
  }
}

// A way of signing in it does not take is no matter beside one it does: the
// token is used.
TEST(KubeConfigTest, AUserWithATokenBesideACredentialPluginUsesTheToken) {
  std::string text = WithCa("");
  text.replace(text.find("{token: abc.def}"), 16, "{token: abc.def, exec: {command: aws}}");
  auto kc = ParseKubeConfig(text, "kc", "/");
  ASSERT_TRUE(kc.ok()) << kc.status().ToString();
  EXPECT_EQ(kc->token, "abc.def");
}

TEST(KubeConfigTest, FindsItsConfigurationInClientGosOrder) {
  const fs::path dir = fs::path(::testing::TempDir()) / "kubeconfig-order";
  fs::create_directories(dir / "sa");
  fs::create_directories(dir / "home/.kube");
  std::ofstream(dir / "explicit") << WithCa("");
  std::ofstream(dir / "home/.kube/config") << WithCa("");
  std::ofstream(dir / "sa/token") << "pod-token\n";
  std::ofstream(dir / "sa/ca.crt") << "POD CA";
  std::ofstream(dir / "sa/namespace") << "jobs";
  std::map<std::string, std::string> vars;
  Environment env = [&](const char* name) { return vars.count(name) ? vars[name] : std::string(); };

  EXPECT_EQ(LoadKubeConfig((dir / "explicit").string(), env, (dir / "sa").string())->source, (dir / "explicit").string());
  vars["KUBERNETES_SERVICE_HOST"] = "10.43.0.1";
  vars["KUBERNETES_SERVICE_PORT"] = "443";
  auto in_cluster = LoadKubeConfig("", env, (dir / "sa").string());
  ASSERT_TRUE(in_cluster.ok()) << in_cluster.status().ToString();
  EXPECT_EQ(in_cluster->server, "https://10.43.0.1:443");
  EXPECT_EQ(in_cluster->token, "pod-token");
  EXPECT_EQ(in_cluster->token_file, (dir / "sa/token").string()) << "read again as the kubelet rotates it";
  EXPECT_EQ(in_cluster->ca_pem, "POD CA");
  EXPECT_EQ(in_cluster->namespace_, "jobs");
  vars["KUBECONFIG"] = (dir / "explicit").string();
  EXPECT_EQ(LoadKubeConfig("", env, (dir / "sa").string())->server, "https://10.0.0.1:6443") << "$KUBECONFIG first";
  // A file the variable names but that is not there yet says where its name came from.
  vars["KUBECONFIG"] = (dir / "not-yet").string();
  EXPECT_EQ(LoadKubeConfig("", env, (dir / "sa").string()).status().message(),
            "$KUBECONFIG: cannot read " + (dir / "not-yet").string());
  vars.clear();
  vars["HOME"] = (dir / "home").string();
  EXPECT_EQ(LoadKubeConfig("", env, (dir / "sa").string())->source, (dir / "home/.kube/config").string());
  vars.clear();
  EXPECT_EQ(LoadKubeConfig("", env, (dir / "sa").string()).status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace edgetrain::kube

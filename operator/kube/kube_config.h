#pragma once
// Where the API server is and how to prove who we are, the way client-go
// finds out: an explicit kubeconfig file, else $KUBECONFIG, else the pod's
// service account when running in a cluster, else ~/.kube/config. A
// kubeconfig's current context names the cluster (server, CA) and the user
// (a bearer token, or a client certificate and key).

#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace edgetrain::kube {

struct KubeConfig {
  std::string server;           // "https://10.0.0.1:6443" or "http://127.0.0.1:8080"
  std::string ca_pem;           // the server's CA; empty: the system's roots
  std::string token;            // a bearer token; empty: none
  // Where the token was read from, when from a file: read again as it is
  // rotated (ReadTokenFile). A pod's bound token is replaced by the kubelet
  // before it expires, about hourly; read once, it was sent stale.
  std::string token_file;
  std::string client_cert_pem;  // mutual TLS, with client_key_pem
  std::string client_key_pem;
  std::string namespace_ = "default";
  std::string source;           // where this came from, for messages
};

// A token file's token, without the line end a file ends in.
StatusOr<std::string> ReadTokenFile(const std::string& path);

// Reads a kubeconfig's current context. Relative file names in it are
// relative to `base_dir` (the file's folder).
StatusOr<KubeConfig> ParseKubeConfig(std::string_view yaml, const std::string& source, const std::string& base_dir);

// A pod's own: the service account's token, CA and namespace under `dir`,
// the API server at KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT.
StatusOr<KubeConfig> InClusterConfig(const std::string& dir, const std::string& host, const std::string& port);

// The environment, as a function (a test's, or getenv).
using Environment = std::function<std::string(const char* name)>;
inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

// client-go's order: `explicit_path`, $KUBECONFIG, in-cluster, ~/.kube/config.
StatusOr<KubeConfig> LoadKubeConfig(const std::string& explicit_path, const Environment& env,
                                    const std::string& service_account_dir = kServiceAccountDir);

}  // namespace edgetrain::kube

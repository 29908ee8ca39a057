#include "operator/kube/kube_config.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "api/yaml_json.h"
#include "core/base64.h"

namespace edgetrain::kube {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A string field; empty when absent or null (as YAML leaves `key:` with nothing after it).
std::string Text(const Json& section, const std::string& key) {
  if (!section.is_object() || !section.contains(key) || !section[key].is_string()) return "";
  return section[key].get<std::string>();
}

// The entry of `list` (clusters, users, contexts) called `name`.
const Json* Named(const Json& config, const char* list, const std::string& name) {
  if (!config.contains(list) || !config[list].is_array()) return nullptr;
  for (const Json& entry : config[list]) {
    if (Text(entry, "name") == name) return &entry;
  }
  return nullptr;
}

// A value given inline (`<key>-data`, base64) or as a file (`<key>`).
StatusOr<std::string> DataOrFile(const Json& section, const std::string& key, const std::string& base_dir,
                                 const std::string& where) {
  if (const std::string data = Text(section, key + "-data"); !data.empty()) {
    auto decoded = Base64Decode(data);
    if (!decoded.ok()) return InvalidArgumentError(where + "." + key + "-data: " + decoded.status().message());
    return *decoded;
  }
  if (const std::string file = Text(section, key); !file.empty()) {
    fs::path path = file;
    if (path.is_relative()) path = fs::path(base_dir) / path;
    return ReadFile(path.string());
  }
  return std::string();
}

}  // namespace

StatusOr<KubeConfig> ParseKubeConfig(std::string_view yaml, const std::string& source, const std::string& base_dir) {
  EDGETRAIN_ASSIGN_OR_RETURN(std::vector<Json> docs, api::ParseYamlDocuments(yaml, source));
  if (docs.empty() || !docs[0].is_object()) return InvalidArgumentError(source + ": not a kubeconfig");
  const Json& config = docs[0];
  KubeConfig kc;
  kc.source = source;
  const std::string current = Text(config, "current-context");
  if (current.empty()) return InvalidArgumentError(source + ": no current-context");
  const Json* context = Named(config, "contexts", current);
  if (!context || !context->contains("context")) {
    return InvalidArgumentError(source + ": current-context \"" + current + "\" is not among its contexts");
  }
  const Json& ctx = (*context)["context"];
  const std::string cluster_name = Text(ctx, "cluster"), user_name = Text(ctx, "user");
  if (const std::string ns = Text(ctx, "namespace"); !ns.empty()) kc.namespace_ = ns;
  const Json* cluster = Named(config, "clusters", cluster_name);
  if (!cluster || !cluster->contains("cluster")) {
    return InvalidArgumentError(source + ": context \"" + current + "\" names cluster \"" + cluster_name +
                                "\", which it does not define");
  }
  const Json& c = (*cluster)["cluster"];
  kc.server = Text(c, "server");
  if (kc.server.empty()) return InvalidArgumentError(source + ": cluster \"" + cluster_name + "\" has no server");
  if (c.contains("insecure-skip-tls-verify") && c["insecure-skip-tls-verify"] == true) {
    return InvalidArgumentError(source + ": cluster \"" + cluster_name +
                                "\" asks to skip TLS verification, which this operator does not do");
  }
  EDGETRAIN_ASSIGN_OR_RETURN(kc.ca_pem, DataOrFile(c, "certificate-authority", base_dir, "cluster"));
  if (const Json* user = Named(config, "users", user_name); user && user->contains("user")) {
    const Json& u = (*user)["user"];
    kc.token = Text(u, "token");
    if (const std::string file = Text(u, "tokenFile"); kc.token.empty() && !file.empty()) {
      // Relative to the kubeconfig's folder, as its other files are (and
      // as client-go reads it), not to where the operator was started.
      fs::path path = file;
      if (path.is_relative()) path = fs::path(base_dir) / path;
      kc.token_file = path.string();
      EDGETRAIN_ASSIGN_OR_RETURN(kc.token, ReadTokenFile(kc.token_file));
    }
    EDGETRAIN_ASSIGN_OR_RETURN(kc.client_cert_pem, DataOrFile(u, "client-certificate", base_dir, "user"));
    EDGETRAIN_ASSIGN_OR_RETURN(kc.client_key_pem, DataOrFile(u, "client-key", base_dir, "user"));
    if (kc.client_cert_pem.empty() != kc.client_key_pem.empty()) {
      return InvalidArgumentError(source + ": user \"" + user_name + "\" has a client certificate without its key, "
                                  "or a key without its certificate");
    }
    // A user that signs in only by a way this operator does not take would
    // have had every request refused, 401 after 401, with nothing said of why
    // (a cloud's kubeconfig runs a credential plugin).
    if (kc.token.empty() && kc.client_cert_pem.empty()) {
      for (const char* way : {"exec", "auth-provider", "username"}) {
        if (!u.contains(way)) continue;
        return InvalidArgumentError(source + ": user \"" + user_name + "\" signs in by `" + way +
                                    "`, which this operator does not do; give it a token, a tokenFile or a client "
                                    "certificate and key (a ServiceAccount's token, say), or run the operator in the "
                                    "cluster under its own ServiceAccount");
      }
    }
  }
  while (!kc.token.empty() && (kc.token.back() == '\n' || kc.token.back() == ' ')) kc.token.pop_back();
  return kc;
}

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  EDGETRAIN_ASSIGN_OR_RETURN(std::string token, ReadFile(path));
  while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
  return token;
}

StatusOr<KubeConfig> InClusterConfig(const std::string& dir, const std::string& host, const std::string& port) {
  KubeConfig kc;
  kc.source = "the pod's service account (" + dir + ")";
  kc.token_file = dir + "/token";
  EDGETRAIN_ASSIGN_OR_RETURN(kc.token, ReadTokenFile(kc.token_file));
  EDGETRAIN_ASSIGN_OR_RETURN(kc.ca_pem, ReadFile(dir + "/ca.crt"));
  if (auto ns = ReadFile(dir + "/namespace"); ns.ok() && !ns->empty()) kc.namespace_ = *ns;
  // An IPv6 address goes in brackets in a URL.
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  kc.server = "https://" + h + ":" + port;
  return kc;
}

StatusOr<KubeConfig> LoadKubeConfig(const std::string& explicit_path, const Environment& env,
                                    const std::string& service_account_dir) {
  auto from_file = [](const std::string& path) -> StatusOr<KubeConfig> {
    EDGETRAIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    return ParseKubeConfig(text, path, fs::path(path).parent_path().string());
  };
  if (!explicit_path.empty()) return from_file(explicit_path);
  if (const std::string path = env("KUBECONFIG"); !path.empty()) {
    // A list of files: the first one holds the context (merging is not done).
    // Named as where it came from: a user who gave no flag read "cannot read"
    // of a path they had set in their shell and forgotten.
    StatusOr<KubeConfig> config = from_file(path.substr(0, path.find(':')));
    if (!config.ok()) return config.status().WithContext("$KUBECONFIG");
    return config;
  }
  const std::string host = env("KUBERNETES_SERVICE_HOST"), port = env("KUBERNETES_SERVICE_PORT");
  if (!host.empty() && !port.empty()) return InClusterConfig(service_account_dir, host, port);
  if (const std::string home = env("HOME"); !home.empty() && fs::exists(home + "/.kube/config")) {
    return from_file(home + "/.kube/config");
  }
  return FailedPreconditionError(
      "no Kubernetes configuration: give --kubeconfig FILE, set KUBECONFIG, run in a pod, or write ~/.kube/config");
}

}  // namespace edgetrain::kube

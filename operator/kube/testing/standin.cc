#include "operator/kube/testing/standin.h"

#include <csignal>
#include <cstdlib>
#include <filesystem>

#include <cpprest/http_client.h>

#include <boost/asio/ssl.hpp>

#include "agent/storage/atomic_file.h"

namespace edgetrain::kube::testing {

namespace fs = std::filesystem;

StatusOr<std::unique_ptr<Standin>> Standin::Start(const std::vector<std::string>& args) {
  std::string folder = (fs::temp_directory_path() / "standin-cxx-XXXXXX").string();
  if (!::mkdtemp(folder.data())) return UnavailableError("cannot create a folder for the stand-in");
  const std::string kubeconfig = folder + "/kubeconfig";
  std::vector<std::string> argv = {std::string(EDGETRAIN_SOURCE_DIR) + "/tests/kube/standin", "--kubeconfig",
                                   kubeconfig};
  argv.insert(argv.end(), args.begin(), args.end());
  EDGETRAIN_ASSIGN_OR_RETURN(cli::ChildProcess process, cli::ChildProcess::Spawn(argv, folder + "/standin.log"));
  auto line = process.ReadLine(std::chrono::seconds(30));
  if (!line || *line != "ready") {
    auto log = agent::ReadWholeFile(folder + "/standin.log");
    return UnavailableError("the stand-in did not start: " + (log.ok() ? *log : std::string("(no log)")));
  }
  EDGETRAIN_ASSIGN_OR_RETURN(std::string text, agent::ReadWholeFile(kubeconfig));
  EDGETRAIN_ASSIGN_OR_RETURN(KubeConfig config, ParseKubeConfig(text, kubeconfig, folder));
  return std::unique_ptr<Standin>(new Standin(folder, kubeconfig, std::move(process), std::move(config)));
}

Standin::~Standin() {
  process_.Signal(SIGTERM);
  process_.Wait(std::chrono::seconds(10));
  std::error_code ec;
  fs::remove_all(folder_, ec);
}

StatusOr<std::string> Standin::Hook(const std::string& hook, const std::string& method) {
  web::http::client::http_client_config cfg;
  const std::string ca = config_.ca_pem;
  cfg.set_ssl_context_callback([ca](boost::asio::ssl::context& ctx) {
    if (!ca.empty()) ctx.add_certificate_authority(boost::asio::buffer(ca.data(), ca.size()));
  });
  try {
    web::http::client::http_client client(config_.server, cfg);
    web::http::http_request request(method);
    request.set_request_uri("/_standin/" + hook);
    if (!config_.token.empty()) request.headers().add("Authorization", "Bearer " + config_.token);
    auto response = client.request(request).get();
    const std::string body = response.extract_utf8string(true).get();
    if (response.status_code() >= 300) return UnavailableError("hook " + hook + ": HTTP " +
                                                               std::to_string(response.status_code()) + " " + body);
    return body;
  } catch (const std::exception& e) {
    return UnavailableError("hook " + hook + ": " + e.what());
  }
}

}  // namespace edgetrain::kube::testing

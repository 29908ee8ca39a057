#pragma once
// The Kubernetes API stand-in (tests/kube/standin) as a child process of a
// C++ test: started with its kubeconfig written to a fresh folder, stopped
// with SIGTERM. Its private test hooks (/_standin/...) provoke what a real
// cluster does rarely: compaction (410), dropped watches, a hung server.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/child_process.h"
#include "operator/kube/kube_config.h"

namespace edgetrain::kube::testing {

class Standin {
 public:
  // `args`: more of the stand-in's flags (--tls, --serviceaccount-dir DIR, ...).
  static StatusOr<std::unique_ptr<Standin>> Start(const std::vector<std::string>& args = {});
  ~Standin();

  const KubeConfig& config() const { return config_; }
  const std::string& kubeconfig_path() const { return kubeconfig_; }
  const std::string& folder() const { return folder_; }
  // POST (or GET) /_standin/<hook>; e.g. Hook("compact"), Hook("latency?ms=50").
  StatusOr<std::string> Hook(const std::string& hook, const std::string& method = "POST");

 private:
  Standin(std::string folder, std::string kubeconfig, cli::ChildProcess process, KubeConfig config)
      : folder_(std::move(folder)), kubeconfig_(std::move(kubeconfig)), process_(std::move(process)),
        config_(std::move(config)) {}

  std::string folder_;
  std::string kubeconfig_;
  cli::ChildProcess process_;
  KubeConfig config_;
};

}  // namespace edgetrain::kube::testing

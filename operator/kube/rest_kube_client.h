#pragma once
// The Kubernetes API over HTTP(S), with cpprestsdk: the only file that speaks
// HTTP to the API server. TLS is always verified, against the kubeconfig's CA
// (or the system's roots); a bearer token or a client certificate proves who
// we are. Requests wait for a token of the client-side rate limit first.

#include <memory>

#include "core/clock.h"
#include "operator/kube/kube_client.h"
#include "operator/kube/kube_config.h"

namespace edgetrain::kube {

struct RestOptions {
  double qps = 20;     // client-side rate limit (client-go's default is 5; a
  int burst = 40;      //  job's reconcile makes a few requests at once)
  Duration request_timeout = std::chrono::seconds(30);
};

StatusOr<std::unique_ptr<KubeClient>> MakeRestKubeClient(const KubeConfig& config, const RestOptions& options,
                                                         Clock& clock);

}  // namespace edgetrain::kube

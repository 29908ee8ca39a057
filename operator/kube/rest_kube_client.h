#pragma once
// The Kubernetes API over HTTP(S), with cpprestsdk: the only file that speaks
// HTTP to the API server. TLS is always verified, against the kubeconfig's CA
// (or the system's roots); a bearer token or a client certificate proves who
// we are. Requests wait for a token of the client-side rate limit first,
// unless the server protects itself (below).

#include <functional>
#include <memory>

#include "core/clock.h"
#include "operator/kube/kube_client.h"
#include "operator/kube/kube_config.h"

namespace edgetrain::kube {

struct RestOptions {
  double qps = 20;     // client-side rate limit (client-go's default is 5; a
  int burst = 40;      //  job's reconcile makes a few requests at once)
  // Lift that limit once a response shows the server does API Priority and
  // Fairness (its X-Kubernetes-PF-* headers; on by default since Kubernetes
  // 1.20): the server then queues and sheds load itself, fairly between
  // clients, and SIG API Machinery advises clients to rely on it
  // (controller-runtime dropped its limit in 2025). A fixed limit of 20 a
  // second held 1,000 jobs 608 s in line for tokens. Off when --qps is given.
  bool lift_under_flow_control = true;
  // Told the limit in force, at the start and when it is lifted (0: none).
  std::function<void(double qps)> on_limit;
  Duration request_timeout = std::chrono::seconds(30);
  // A 429 (APF's answer when a priority level's queues are full) is asked
  // again after the server's Retry-After, as client-go does, this many times
  // at most. The Lease's client asks none again: its renewal must end within
  // the renew deadline, and the elector tries again every retry period.
  int max_throttled_retries = 10;
  // A watch that asked for bookmarks and has heard nothing for this long is
  // taken for a dead connection, past three of the minutes between the
  // bookmarks a server's watch cache sends. A connection left half-open by a
  // link that flapped had gone unnoticed for the watch's whole 5-10 minutes,
  // every change meanwhile missed (found in review).
  Duration bookmarked_watch_silence = std::chrono::minutes(3);
};

StatusOr<std::unique_ptr<KubeClient>> MakeRestKubeClient(const KubeConfig& config, const RestOptions& options,
                                                         Clock& clock);

}  // namespace edgetrain::kube

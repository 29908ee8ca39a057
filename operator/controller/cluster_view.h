#pragma once
// The cluster as placement sees it, read from the informers' Node and Pod
// objects: each Node becomes a NodeView (docs/placement.md, docs/cluster-profiles.md
// name the labels and annotations read), with the requests of the pods already
// bound to it, as the scheduler counts them.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/node_view.h"
#include "core/status.h"
#include "operator/kube/kube_time.h"

namespace edgetrain::operator_ {

using Json = nlohmann::json;

// What the operator learned of a node's link from a team that trained there
// (the coordinator's estimates of the worker's uplink and downlink), published
// on the Node; the operator is their only writer.
inline constexpr const char* kMeasuredUplink = "edgetrain.dev/measured-uplink-bps";
inline constexpr const char* kMeasuredDownlink = "edgetrain.dev/measured-downlink-bps";
inline constexpr const char* kMeasuredAt = "edgetrain.dev/measured-at";
// An emulated site's node's own stream of samples a second (the node
// emulator's, from its cluster profile); a real node has none.
inline constexpr const char* kEmulatedStreamRate = "edgetrain.dev/emulated-stream-rate";

// Measured links are preferred to the site's declared edgetrain.dev/link-mbps
// while younger than `max_age` at `now`; older ones are forgotten. With no
// `now`, only what is declared counts.
struct MeasuredLinks {
  kube::WallTime now{};
  Duration max_age = std::chrono::minutes(10);
};

// A Node object as a NodeView; `bound` is left empty. An annotation that is not a
// number is InvalidArgument naming it (the node is then left out, with that reason).
StatusOr<NodeView> NodeViewOfNode(const Json& node, const MeasuredLinks& measured = {});

// What a pod asks of its node: its containers' requests summed, one pod.
// Malformed quantities count as zero (the API server refuses them on a real
// cluster, so only a hand-edited object has them).
ResourceAmounts PodRequests(const Json& pod);

// Whether a pod still holds its node's resources: bound, and neither Succeeded
// nor Failed.
bool HoldsNode(const Json& pod);

// Every node, with what the pods other than `except_job`'s hold on it (the job's
// own pods are left out, so that re-planning a job can move them). Nodes that
// cannot be read are returned in `unreadable` with the reason.
struct ClusterView {
  std::vector<NodeView> nodes;
  std::vector<std::string> unreadable;  // "NAME: why"
  // The job's own pods bound to nodes, left out of what the nodes hold: a
  // re-plan may move them.
  int own_pods = 0;
};
ClusterView ClusterViewOf(const std::vector<Json>& nodes, const std::vector<Json>& pods,
                          const std::string& except_namespace, const std::string& except_job,
                          const MeasuredLinks& measured = {});

}  // namespace edgetrain::operator_

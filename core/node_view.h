#pragma once
// A node as placement sees it: what Kubernetes says of it (readiness, cordon,
// labels, taints, allocatable, what is already bound there) and what the site
// publishes under edgetrain.dev/ (compute score, power, measured link). The
// operator reads it from Node objects, `edgetrain plan --nodes` from a cluster
// profile; both hand placement the same values (docs/placement.md).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster_profile.h"
#include "core/status.h"
#include "core/taint.h"

namespace edgetrain {

// An extended resource, named with its vendor's domain ("nvidia.com/gpu"),
// which only the Pod API's native ones (cpu, memory, ephemeral-storage,
// hugepages-*) are not.
inline bool IsExtendedResource(const std::string& name) { return name.find('/') != std::string::npos; }

// An extended resource that a pod may ask for and a node may have
// (nvidia.com/gpu), in milli-units.
struct OtherResource {
  std::string name;
  int64_t millis = 0;
  // "insufficient NAME": placement's word when it does not fit, made once
  // here, not every time a node is judged.
  std::string misfit;
  bool operator==(const OtherResource&) const = default;
};

// Amounts as the scheduler counts them: CPU in millicores, memory in bytes.
struct ResourceAmounts {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
  int64_t pods = 0;
  // Every extended resource named, by name. A node that lists none of one
  // has none: a pod asking for a GPU fits no node without one, as its kubelet
  // would refuse it (a new user's GPU job was placed on a gateway with none).
  std::vector<OtherResource> others{};

  // How much of `name` (milli-units); 0 for one not named.
  int64_t Other(const std::string& name) const;
  // Adds `millis` of `name` (negative takes away).
  void AddOther(const std::string& name, int64_t millis);
  // Adds `r`, or takes it away (sign -1).
  void Add(const ResourceAmounts& r, int sign = 1);
  bool operator==(const ResourceAmounts&) const = default;
};

struct NodeView {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  bool ready = true;
  std::string not_ready_since;  // while not ready: its Ready condition's lastTransitionTime (RFC 3339)
  bool cordoned = false;  // spec.unschedulable
  ResourceAmounts allocatable;
  ResourceAmounts bound;  // requests of the pods already bound there, other than the job's own
  double compute_score = 1;                  // edgetrain.dev/compute-score; this project's reference machine is 1
  std::optional<double> link_mbps;           // edgetrain.dev/link-mbps; none: no wireless link measured (wired)
  PowerProfile power;                        // edgetrain.dev/{compute,communicate,idle}-watts
  // Set by an emulated site only (edgetrain.dev/emulated-slowdown): agents on the
  // node slow themselves down this much, since its processes run at this machine's
  // speed. A real node's compute is its own, and this stays 1.
  double emulated_slowdown = 1;
  // Set by an emulated site only (edgetrain.dev/emulated-stream-rate), or by
  // a cluster profile's `stream`: the samples the node's own stream delivers,
  // for a job whose spec.data.stream names no rates. A real device's samples
  // arrive in a folder (spec.data.stream.directory) and this stays unset.
  std::optional<StreamSource> emulated_stream;
  // A cluster profile's node whose stream is a rate trace, which no Node
  // publishes: as placement sees it, no stream, and said so by its reason.
  bool stream_only_traced = false;
  // Why the node is about to leave, if it is: a cloud's interruption notice or
  // out-of-service taint, a cordon (the first step of a drain), or the site's
  // edgetrain.dev/leaving annotation. Empty: not leaving. A job's workers there
  // are moved before it goes, and no new one is placed there.
  std::string leaving;
};

// The warnings of a node about to leave that placement and the operator act on
// (docs/operator.md lists them): the reason, or empty.
std::string LeavingReason(const NodeView& node, const std::map<std::string, std::string>& annotations);

// A node of a cluster profile as its Node would show it (docs/cluster-profiles.md,
// "As Kubernetes Nodes"): what `edgetrain plan --nodes` places on. Every node of
// a profile is emulated, so its slowdown is the agents' to apply.
StatusOr<NodeView> NodeViewOf(const NodeProfile& node);

// The label that makes a node transient, "edgetrain.dev/transient=true" or a
// cloud's spot label (docs/placement.md lists them); empty for a stable node.
std::string TransientLabel(const std::map<std::string, std::string>& labels);

}  // namespace edgetrain

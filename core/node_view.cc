#include "core/node_view.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

#include "core/quantity.h"

namespace edgetrain {

int64_t ResourceAmounts::Other(const std::string& name) const {
  for (const OtherResource& o : others) {
    if (o.name == name) return o.millis;
  }
  return 0;
}

void ResourceAmounts::AddOther(const std::string& name, int64_t millis) {
  for (OtherResource& o : others) {
    if (o.name == name) {
      o.millis += millis;
      return;
    }
  }
  others.push_back({name, millis, "insufficient " + name});
}

void ResourceAmounts::Add(const ResourceAmounts& r, int sign) {
  cpu_millis += sign * r.cpu_millis;
  memory_bytes += sign * r.memory_bytes;
  pods += sign * r.pods;
  for (const OtherResource& o : r.others) AddOther(o.name, sign * o.millis);
}

StatusOr<NodeView> NodeViewOf(const NodeProfile& node) {
  NodeView view;
  view.name = node.name;
  view.labels = {{"kubernetes.io/hostname", node.name},
                 {"kubernetes.io/arch", node.arch.empty() ? "amd64" : node.arch},
                 {"kubernetes.io/os", "linux"},
                 {"edgetrain.dev/transient", node.transient ? "true" : "false"}};
  for (const auto& [key, value] : node.labels) view.labels[key] = value;
  view.taints = node.taints;
  StatusOr<int64_t> cpu = ParseQuantityMillis(node.cpu);
  if (!cpu.ok()) return cpu.status().WithContext(node.name + ": cpu");
  StatusOr<int64_t> memory = ParseQuantityUnits(node.memory.empty() ? "4Gi" : node.memory);
  if (!memory.ok()) return memory.status().WithContext(node.name + ": memory");
  view.allocatable = {.cpu_millis = *cpu, .memory_bytes = *memory, .pods = node.pods};
  view.compute_score = 1 / node.slowdown;
  view.emulated_slowdown = node.slowdown;
  // As the node emulator publishes it (edgetrain.dev/emulated-stream-rate):
  // a constant rate; a rate trace, a file of this machine, is not. plan
  // placed a job on trace nodes the operator would not have (a user's trial).
  if (node.stream && node.stream->trace_path.empty()) view.emulated_stream = node.stream;
  view.stream_only_traced = node.stream && !node.stream->trace_path.empty();
  if (node.link) view.link_mbps = node.link->mean_mbps;
  view.power = node.power;
  return view;
}

std::string LeavingReason(const NodeView& node, const std::map<std::string, std::string>& annotations) {
  // Taints clouds and people put on a node that is going (docs/cluster-profiles.md).
  static constexpr std::array<std::string_view, 5> kNotices{
      "cloud.google.com/impending-node-termination", "aws-node-termination-handler/spot-itn",
      "node.kubernetes.io/out-of-service", "ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler"};
  for (const Taint& taint : node.taints) {
    if (std::find(kNotices.begin(), kNotices.end(), taint.key) != kNotices.end()) return "taint " + taint.key;
  }
  if (auto it = annotations.find("edgetrain.dev/leaving"); it != annotations.end()) {
    return "annotation edgetrain.dev/leaving" + (it->second.empty() ? std::string() : "=" + it->second);
  }
  if (node.cordoned) return "cordoned";
  return "";
}

std::string TransientLabel(const std::map<std::string, std::string>& labels) {
  // Each key with the value that means spot.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kTransient{{
      {"edgetrain.dev/transient", "true"},
      {"node.kubernetes.io/lifecycle", "spot"},
      {"cloud.google.com/gke-spot", "true"},
      {"eks.amazonaws.com/capacityType", "SPOT"},
      {"kubernetes.azure.com/scalesetpriority", "spot"},
  }};
  for (const auto& [key, value] : kTransient) {
    auto it = labels.find(std::string(key));
    if (it != labels.end() && it->second == value) return std::string(key) + "=" + it->second;
  }
  return "";
}

}  // namespace edgetrain

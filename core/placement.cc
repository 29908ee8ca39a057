#include "core/placement.h"

#include <string>

namespace edgetrain {

StatusOr<std::vector<WorkerSlot>> SlotsInProfileOrder(int workers, const std::optional<ClusterProfile>& profile) {
  if (profile && static_cast<int>(profile->nodes.size()) < workers) {
    // On one machine each worker emulates a node of its own; on Kubernetes the
    // operator may put several on a node (edgetrain plan shows where).
    return InvalidArgumentError("the cluster profile " + profile->name + " has " + std::to_string(profile->nodes.size()) +
                                " node(s) for " + std::to_string(workers) +
                                " workers: on this machine each worker emulates a node of its own, so give the "
                                "profile a node a worker or lower spec.parallelism.workers (on Kubernetes, several "
                                "share a node: edgetrain plan shows where)");
  }
  std::vector<WorkerSlot> slots;
  for (int rank = 0; rank < workers; ++rank) {
    WorkerSlot slot;
    slot.rank = rank;
    if (profile) {
      const NodeProfile& node = profile->nodes[static_cast<size_t>(rank)];
      slot.node = node.name;
      slot.slowdown = node.slowdown;
      slot.slowdown_changes = node.slowdown_changes;
      slot.link = node.link;
      slot.stream = node.stream;
      slot.power = node.power;
    } else {
      slot.node = "local-" + std::to_string(rank);
    }
    slots.push_back(slot);
  }
  return slots;
}

}  // namespace edgetrain

#pragma once
// A set of edge devices described once (docs/cluster-profiles.md): per node its
// compute (as a slowdown against this machine), memory, architecture, power,
// whether it is transient, and its link as a bandwidth trace. `edgetrain run
// --nodes` emulates them; the planner and the node emulator read the same file.

#include <optional>
#include <string>
#include <vector>

namespace edgetrain {

// An emulated device's link: a bandwidth trace replayed from `offset_s` seconds
// in, scaled by `scale`; both directions follow it.
struct LinkSpec {
  std::string trace_path;  // absolute
  double offset_s = 0;
  double scale = 1;
  // Shaped by the kernel (network namespaces and tbf, `--links netns`), not by
  // the agents: they leave it alone, and only read the trace to know the most
  // it ever carries.
  bool kernel_shaped = false;
};

// Watts in each state, for the energy model. The defaults approximate a Jetson
// Xavier NX-class robot computer in its 15 W mode (docs/energy.md).
struct PowerProfile {
  double compute_watts = 15;
  double communicate_watts = 7;
  double idle_watts = 5;
};

struct NodeProfile {
  std::string name;
  double slowdown = 1;       // 10: a step takes ten times as long as on this machine
  std::string memory;        // a Kubernetes quantity, e.g. "4Gi"; informational for now
  std::string arch;          // e.g. "arm64"
  bool transient = false;    // spot or otherwise liable to vanish
  PowerProfile power;
  std::optional<LinkSpec> link;
};

struct ClusterProfile {
  std::string name;
  std::vector<NodeProfile> nodes;
};

}  // namespace edgetrain

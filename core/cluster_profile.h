#pragma once
// A set of edge devices described once (docs/cluster-profiles.md): per node its
// compute (as a slowdown against this machine), memory, architecture, power,
// whether it is transient, and its link as a bandwidth trace. `edgetrain run
// --nodes` emulates them; the planner and the node emulator read the same file.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/device_slowdown.h"
#include "core/taint.h"

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
  // The trace's time-weighted mean over one period, after `scale`: what a site
  // that measures its links publishes for the node (edgetrain.dev/link-mbps).
  double mean_mbps = 0;
  // How long the link carries nothing from the run's start, its trace at 0
  // (after offset and scale): 0 when it carries from the start.
  double silent_until_s = 0;
};

// A device's own stream of samples, for a job whose spec.data.stream names no
// ratesPerSecond (docs/streams.md): a constant rate, or a rate trace.
struct StreamSource {
  double per_second = 0;   // the constant rate, when trace_path is empty
  std::string trace_path;  // absolute; CSV `seconds,samples_per_s` (core/stream_rate.h)
  // Seconds into the trace the stream starts at: a resumed run's goes on
  // where the run it resumes left it (GoneOnFor, core/job_plan.h).
  double offset_s = 0;
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
  std::vector<SlowdownChange> slowdown_changes;  // compute.changes: the slowdown from a time on
  std::string memory;        // a Kubernetes quantity, e.g. "4Gi": the Node's memory capacity
  std::string arch;          // e.g. "arm64"
  bool transient = false;    // spot or otherwise liable to vanish
  PowerProfile power;
  std::optional<LinkSpec> link;
  std::string cpu = "2";     // a Kubernetes quantity: the Node's cpu capacity
  int64_t pods = 110;        // pods the Node admits
  std::map<std::string, std::string> labels;  // besides those derived from the fields above
  std::vector<Taint> taints;
  std::optional<StreamSource> stream = {};  // its own stream of samples, if it has one
};

struct ClusterProfile {
  std::string name;
  std::vector<NodeProfile> nodes;
};

}  // namespace edgetrain

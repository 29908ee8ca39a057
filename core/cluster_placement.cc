#include "core/cluster_placement.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>

#include "core/quantity.h"

namespace edgetrain {
namespace {

// A node that publishes no link measurement is taken as wired to the site's
// network (a site publishes edgetrain.dev/link-mbps for its wireless nodes):
// Gigabit Ethernet.
constexpr double kWiredMbps = 1000;
// Why a node takes no worker of a team whose samples come from its nodes.
constexpr char kNoStream[] = "no stream of its own";
// A profile's node of a rate trace: it has one, which a cluster's Node does
// not publish ("no stream of its own" read as false of it: found in review).
constexpr char kTracedStream[] = "a stream only as a rate trace, which a cluster's Node does not publish";

// Why a node that gives no stream takes no worker of a job whose stream
// names no rates.
const char* NoStreamOf(const NodeView& node) { return node.stream_only_traced ? kTracedStream : kNoStream; }

// Why no pod of the job may run on `node`, as a short category (counted in the
// unschedulable message) and in full (the node's verdict); both empty if it may.
struct Exclusion {
  std::string category, detail;
};

Exclusion Exclude(const NodeView& node, const TeamRequest& request, const std::string& transient) {
  if (!node.ready) return {"not ready", "not Ready"};
  if (node.cordoned) return {"cordoned", "cordoned (spec.unschedulable)"};
  for (const auto& [key, value] : request.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) {
      return {"not matching nodeSelector", "no label " + key + "=" + value + " (spec.placement.nodeSelector)"};
    }
  }
  if (!request.architectures.empty()) {
    auto it = node.labels.find("kubernetes.io/arch");
    std::string arch = it == node.labels.end() ? "" : it->second;
    if (std::find(request.architectures.begin(), request.architectures.end(), arch) == request.architectures.end()) {
      std::string images;
      for (const std::string& a : request.architectures) images += (images.empty() ? "" : ", ") + a;
      return {"another architecture", "kubernetes.io/arch " + (arch.empty() ? "unset" : arch) +
                                          ", the agent's image is built for " + images};
    }
  }
  for (const Taint& taint : node.taints) {
    if (taint.effect == "PreferNoSchedule" || ToleratesAll(request.tolerations, taint)) continue;
    return {"untolerated taint", "taint " + taint.key + (taint.value.empty() ? "" : "=" + taint.value) + ":" +
                                     taint.effect + " not tolerated (spec.template.tolerations)"};
  }
  if (!node.leaving.empty()) return {"leaving", "leaving (" + node.leaving + ")"};
  if (!transient.empty() && !request.allow_transient) {
    return {"transient", "transient (" + transient + ") and spec.placement.allowTransient is false"};
  }
  if (!(node.compute_score > 0)) return {"no compute", "edgetrain.dev/compute-score is not above 0"};
  // A link measured at nothing reaches no one: neither a worker there nor a
  // coordinator could exchange a row (and 0 must not read as "no link to cross").
  if (node.link_mbps && !(*node.link_mbps > 0)) return {"link cut", "link cut (edgetrain.dev/link-mbps is 0)"};
  return {};
}

ResourceAmounts Free(const NodeView& node) {
  ResourceAmounts free = node.allocatable;
  free.Add(node.bound, -1);
  return free;
}

// Whether `asked` fits in `free`, as a category of the scheduler's words
// (null if it fits): placement asks it of every node for every pod, so it
// formats nothing - formatting why a node is full, 5,000 times a pod, was most
// of what placing cost on a large cluster.
const char* MisfitOf(const ResourceAmounts& free, const ResourceAmounts& asked) {
  if (free.pods < 1) return "too many pods";
  if (asked.cpu_millis > free.cpu_millis) return "insufficient cpu";
  if (asked.memory_bytes > free.memory_bytes) return "insufficient memory";
  for (const OtherResource& o : asked.others) {
    if (o.millis > 0 && o.millis > free.Other(o.name)) return o.misfit.c_str();  // `asked` outlives the word
  }
  return nullptr;
}

// Every resource of `asked` that `free` lacks, each counted in `counts` as
// the scheduler counts them ("6 insufficient cpu, 6 insufficient memory"):
// the first alone had left memory unsaid of a team that asked too much of
// both (a user's trial). For the summary of a placement that failed only.
void CountMisfits(const ResourceAmounts& free, const ResourceAmounts& asked, std::map<std::string, int>& counts) {
  if (free.pods < 1) ++counts["too many pods"];
  if (asked.cpu_millis > free.cpu_millis) ++counts["insufficient cpu"];
  if (asked.memory_bytes > free.memory_bytes) ++counts["insufficient memory"];
  for (const OtherResource& o : asked.others) {
    if (o.millis > 0 && o.millis > free.Other(o.name)) ++counts[o.misfit];
  }
}

// What of `asked` does not fit in `free`, in the scheduler's words; empty if all fits.
Exclusion Shortfall(const ResourceAmounts& free, const ResourceAmounts& asked, const std::string& who) {
  const char* misfit = MisfitOf(free, asked);
  if (!misfit) return {};
  const std::string category = misfit;
  if (category == "too many pods") return {misfit, "no room for another pod (allocatable pods)"};
  if (category == "insufficient cpu") {
    return {misfit, "insufficient cpu: " + FormatCpuMillis(std::max<int64_t>(free.cpu_millis, 0)) + " free, " + who +
                        " asks " + FormatCpuMillis(asked.cpu_millis)};
  }
  if (category == "insufficient memory") {
    return {misfit, "insufficient memory: " + FormatBytes(std::max<int64_t>(free.memory_bytes, 0)) + " free, " + who +
                        " asks " + FormatBytes(asked.memory_bytes)};
  }
  for (const OtherResource& o : asked.others) {
    if (o.misfit != category) continue;
    return {misfit, category + ": " + FormatQuantityMillis(std::max<int64_t>(free.Other(o.name), 0)) + " free, " +
                        who + " asks " + FormatQuantityMillis(o.millis)};
  }
  return {misfit, category};
}

void Take(ResourceAmounts& free, const ResourceAmounts& asked) {
  free.Add(asked, -1);
  free.pods += asked.pods - 1;  // a pod, whatever the request says of pods
}

// "0/7 nodes fit the coordinator: 2 not ready, 1 transient."
std::string Summarise(const std::string& head, const std::map<std::string, int>& counts) {
  std::ostringstream out;
  out << head;
  const char* sep = ": ";
  for (const auto& [category, count] : counts) {
    out << sep << count << " " << category;
    sep = ", ";
  }
  return out.str();
}

}  // namespace

TeamPlacement PlaceTeam(const std::vector<NodeView>& nodes, const TeamRequest& request) {
  TeamPlacement placement;
  std::vector<ResourceAmounts> free;
  std::vector<bool> eligible;
  std::map<std::string, int> excluded_by;  // category -> nodes
  placement.verdicts.reserve(nodes.size());
  free.reserve(nodes.size());
  eligible.reserve(nodes.size());
  for (const NodeView& node : nodes) {
    NodeVerdict verdict;
    verdict.node = node.name;
    verdict.transient = TransientLabel(node.labels);
    Exclusion why = Exclude(node, request, verdict.transient);
    verdict.excluded = why.detail;
    if (!why.category.empty()) ++excluded_by[why.category];
    eligible.push_back(why.category.empty());
    free.push_back(Free(node));
    placement.verdicts.push_back(verdict);
  }
  const size_t n = nodes.size();

  // The coordinator: stable before transient (losing it restarts the team from
  // its checkpoint), then the best link (every exchange crosses it), then compute.
  std::optional<size_t> coordinator;
  std::map<std::string, int> coordinator_misfits = excluded_by;
  // A job of one trains on its coordinator: the stable node that computes best
  // (or spends least, under an energy budget).
  auto better_home = [&](size_t a, size_t b) {
    auto key = [&](size_t i) {
      const NodeView& node = nodes[i];
      double link = node.link_mbps.value_or(kWiredMbps);
      double energy = node.power.compute_watts / node.compute_score;
      double first = !request.solo ? -link : request.minimise_energy ? energy : -node.compute_score;
      double second = !request.solo ? -node.compute_score : request.minimise_energy ? -node.compute_score : energy;
      // The name by reference: copying it twice a comparison showed in profiles.
      return std::tuple<bool, double, double, const std::string&>(!placement.verdicts[i].transient.empty(), first,
                                                                    second, node.name);
    };
    return key(a) < key(b);
  };
  if (!request.coordinator_on.empty()) {
    for (size_t i = 0; i < n; ++i) {
      if (nodes[i].name == request.coordinator_on) coordinator = i;
    }
    if (!coordinator) {
      placement.unschedulable = "the coordinator's node " + request.coordinator_on + " is not in the cluster";
      return placement;
    }
  }
  for (size_t i = 0; i < n && request.coordinator_on.empty(); ++i) {
    if (request.coordinator_only_on && nodes[i].name != request.coordinator_only_on->node) continue;
    if (!eligible[i]) continue;
    if (const char* misfit = MisfitOf(free[i], request.coordinator_requests)) {
      CountMisfits(free[i], request.coordinator_requests, coordinator_misfits);
      // Each node's own reason, kept in case no node fits: the summary only
      // counts them, and plan's table was blank (a user's trial).
      placement.verdicts[i].coordinator_misfit = misfit;
      continue;
    }
    if (!coordinator || better_home(i, *coordinator)) coordinator = i;
  }
  if (!coordinator && request.coordinator_only_on) {
    const TeamRequest::Pin& pin = *request.coordinator_only_on;
    const auto on = std::find_if(nodes.begin(), nodes.end(), [&](const NodeView& v) { return v.name == pin.node; });
    const size_t i = static_cast<size_t>(on - nodes.begin());
    const std::string state = on == nodes.end()          ? "is not in the cluster"
                              : !placement.verdicts[i].excluded.empty() ? "cannot take it: " + placement.verdicts[i].excluded
                                                                        : "has no room for it now";
    placement.unschedulable = "the coordinator goes only to " + pin.node + " (" + pin.why + "), which " + state;
    return placement;
  }
  if (!coordinator) {
    placement.unschedulable =
        Summarise("0/" + std::to_string(n) + " nodes fit the coordinator", coordinator_misfits);
    return placement;
  }
  for (NodeVerdict& v : placement.verdicts) v.coordinator_misfit.clear();  // it went to one of them
  if (request.coordinator_on.empty()) Take(free[*coordinator], request.coordinator_requests);
  placement.coordinator_node = nodes[*coordinator].name;
  placement.verdicts[*coordinator].coordinator = true;

  // Each eligible node's prediction for one worker alone there; a job of
  // one, there instead of its coordinator, would cross no link either (its
  // nodes were shown at a team worker's rate, its link counted: 276 samples/s
  // on a robot where it computes 31,830).
  for (size_t i = 0; i < n; ++i) {
    if (!eligible[i]) continue;
    double link = i == *coordinator || request.solo ? 0 : nodes[i].link_mbps.value_or(kWiredMbps);
    NodeVerdict& v = placement.verdicts[i];
    v.step = PredictStep(request.step, nodes[i].compute_score, link);
    double samples = std::max(request.step.batch_size, 1);
    v.joules_per_sample = (nodes[i].power.compute_watts * v.step.compute_seconds +
                           nodes[i].power.communicate_watts * v.step.communicate_seconds) /
                          samples;
  }

  // Workers one at a time, each to the node with the fewest of the team so far
  // (spread: a device's own compute and link are not shared), and among those the
  // fastest (or the most frugal under an energy budget); stable before transient
  // when otherwise equal, then by name for a plan that does not depend on order.
  std::vector<int> count(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (auto it = request.workers_on.find(nodes[i].name); it != request.workers_on.end()) count[i] = it->second;
  }
  // Where a worker may draw its samples from, when they come from its node.
  std::vector<bool> streams(n, true);
  for (size_t i = 0; i < n && request.workers_need_stream; ++i) streams[i] = nodes[i].emulated_stream.has_value();
  // A node's rate does not change while the team is placed: worked out once.
  std::vector<double> rate(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (eligible[i]) rate[i] = placement.verdicts[i].step.samples_per_second(request.step.batch_size);
  }
  for (int rank = 0; rank < request.workers; ++rank) {
    std::optional<size_t> best;
    auto key = [&](size_t i) {
      const NodeVerdict& v = placement.verdicts[i];
      double first = request.minimise_energy ? v.joules_per_sample : -rate[i];
      double second = request.minimise_energy ? -rate[i] : v.joules_per_sample;
      return std::tuple<int, double, double, bool, const std::string&>(count[i], first, second,
                                                                       !v.transient.empty(), nodes[i].name);
    };
    for (size_t i = 0; i < n; ++i) {
      if (!eligible[i] || !streams[i] || MisfitOf(free[i], request.worker_requests)) continue;
      if (!best || key(i) < key(*best)) best = i;
    }
    if (!best) {
      std::map<std::string, int> misfits = excluded_by;
      for (size_t i = 0; i < n; ++i) {
        if (!eligible[i]) continue;
        if (streams[i]) {
          CountMisfits(free[i], request.worker_requests, misfits);  // none fit
        } else {
          ++misfits[NoStreamOf(nodes[i])];
        }
      }
      placement.unschedulable = Summarise(std::to_string(rank) + "/" + std::to_string(request.workers) +
                                              " workers fit, beside the coordinator on " + placement.coordinator_node +
                                              "; nodes that take no more",
                                          misfits);
      placement.coordinator_node.clear();
      placement.worker_nodes.clear();
      // Each node's own reason, which the summary only counts: every node's
      // verdict was blank where a new user looked for it.
      for (size_t i = 0; i < n; ++i) {
        NodeVerdict& v = placement.verdicts[i];
        v.would_hold_coordinator = v.coordinator;
        v.would_hold_ranks = std::move(v.ranks);
        v.coordinator = false;
        v.ranks.clear();
        if (!eligible[i]) continue;
        const char* misfit = streams[i] ? MisfitOf(free[i], request.worker_requests) : NoStreamOf(nodes[i]);
        v.misfit = misfit ? misfit : "";
      }
      return placement;
    }
    Take(free[*best], request.worker_requests);
    ++count[*best];
    placement.verdicts[*best].ranks.push_back(rank);
    placement.worker_nodes.push_back(nodes[*best].name);
  }

  // Workers that share a node share its compute and link.
  if (request.solo) {
    placement.predicted_samples_per_second =
        placement.verdicts[*coordinator].step.samples_per_second(request.step.batch_size);
  }
  if (!request.solo && request.workers > 0) {
    // Each worker's step, its node's compute and link shared by the workers
    // there; a round lasts until the last worker it waits for has pushed.
    std::vector<double> steps;
    for (size_t i = 0; i < n; ++i) {
      if (count[i] == 0) continue;
      // Survivors on a node placement would not use now (cordoned, leaving,
      // tainted) still compute there, at its pace: no verdict was worked out
      // for it, and its 0 s steps read as rounds of nothing under a quorum
      // below 1 (92,441 samples/s predicted where 299 were: found in review).
      const PredictedStep step =
          eligible[i] ? placement.verdicts[i].step
                      : PredictStep(request.step, nodes[i].compute_score,
                                    i == *coordinator ? 0 : nodes[i].link_mbps.value_or(kWiredMbps));
      for (int k = 0; k < count[i]; ++k) steps.push_back(step.seconds() * count[i]);
    }
    std::sort(steps.begin(), steps.end());
    const double quorum = std::clamp(request.round_quorum, 0.0, 1.0);
    const size_t waits_for = std::clamp<size_t>(
        static_cast<size_t>(std::ceil(quorum * static_cast<double>(steps.size()) - 1e-9)), 1, steps.size());
    const double round_s = steps[waits_for - 1];
    if (round_s > 0) {
      placement.predicted_samples_per_second =
          static_cast<double>(request.step.batch_size) * static_cast<double>(steps.size()) / round_s;
    }
  }
  // Eligible nodes left out for room say so.
  for (size_t i = 0; i < n; ++i) {
    NodeVerdict& v = placement.verdicts[i];
    if (eligible[i] && count[i] == 0 && !(request.solo && v.coordinator)) {
      v.excluded = streams[i] ? Shortfall(free[i], request.worker_requests, "a worker").detail
                              : std::string(NoStreamOf(nodes[i])) + " for a worker (spec.data.stream names no rates)";
    }
  }
  placement.placed = true;
  return placement;
}

}  // namespace edgetrain

#include "operator/controller/cluster_view.h"

#include <cmath>
#include <cstdlib>
#include <map>

#include "core/quantity.h"
#include "operator/controller/job_labels.h"

namespace edgetrain::operator_ {
namespace {

// A quantity of the Node's status, in the scheduler's units; 0 when absent.
int64_t Amount(const Json& resources, const char* name, bool millis) {
  if (!resources.contains(name)) return 0;
  const Json& v = resources[name];
  const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  StatusOr<int64_t> amount = millis ? ParseQuantityMillis(text) : ParseQuantityUnits(text);
  return amount.ok() ? *amount : 0;
}

// Every extended resource of `resources` (a GPU), added to `into` (milli-units).
void AddOthers(const Json& resources, ResourceAmounts& into) {
  for (auto it = resources.begin(); it != resources.end(); ++it) {
    const std::string& name = it.key();
    if (!IsExtendedResource(name)) continue;
    const Json& v = it.value();
    StatusOr<int64_t> amount = ParseQuantityMillis(v.is_string() ? v.get<std::string>() : v.dump());
    if (amount.ok() && *amount != 0) into.AddOther(name, *amount);
  }
}

StatusOr<double> Number(const Json& annotations, const std::string& key) {
  const std::string text = annotations.at(key).get<std::string>();
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') {
    return InvalidArgumentError("annotation " + key + " is not a number (got \"" + text + "\")");
  }
  // Every figure a node is annotated with is a measure, none below 0: strtod
  // also reads "nan", "inf" and "-3", and a node of "nan" slowdown passed the
  // check of at least 1 into placement's sums (found in review).
  if (!std::isfinite(value) || value < 0) {
    return InvalidArgumentError("annotation " + key + " must be a finite number, 0 or more (got \"" + text + "\")");
  }
  return value;
}

}  // namespace

StatusOr<NodeView> NodeViewOfNode(const Json& node, const MeasuredLinks& measured) {
  NodeView view;
  const Json& meta = node.at("metadata");
  view.name = meta.at("name").get<std::string>();
  view.labels = meta.value("labels", std::map<std::string, std::string>{});
  const Json spec = node.value("spec", Json::object());
  view.cordoned = spec.value("unschedulable", false);
  for (const Json& t : spec.value("taints", Json::array())) {
    view.taints.push_back({t.value("key", ""), t.value("value", ""), t.value("effect", "")});
  }
  const Json status = node.value("status", Json::object());
  // A node whose Ready condition is not True - False or Unknown (its kubelet
  // silent) - takes no new pods.
  view.ready = false;
  for (const Json& c : status.value("conditions", Json::array())) {
    if (c.value("type", "") != "Ready") continue;
    view.ready = c.value("status", "") == "True";
    if (!view.ready) view.not_ready_since = c.value("lastTransitionTime", "");
  }
  // Ready again, a node keeps the NoExecute taints the node lifecycle
  // controller put on it while it was not until that controller next looks:
  // a pod made there meanwhile is evicted at once, its toleration's seconds
  // counted from the taint's (a pipeline device's pod made again on its node
  // back was, and the device lost for good: a new user's trial, 1 return in
  // 5). It is back once they are gone.
  for (const Taint& t : view.taints) {
    const bool lifecycle = t.key == "node.kubernetes.io/unreachable" || t.key == "node.kubernetes.io/not-ready";
    if (t.effect == "NoExecute" && lifecycle) view.ready = false;
  }
  const Json allocatable = status.value("allocatable", status.value("capacity", Json::object()));
  view.allocatable = {.cpu_millis = Amount(allocatable, "cpu", true),
                      .memory_bytes = Amount(allocatable, "memory", false),
                      .pods = Amount(allocatable, "pods", false)};
  AddOthers(allocatable, view.allocatable);

  const Json annotations = meta.value("annotations", Json::object());
  struct Read {
    const char* key;
    double* into;
  };
  std::optional<double> link;
  double link_value = 0;
  for (Read r : {Read{"edgetrain.dev/compute-score", &view.compute_score},
                 Read{"edgetrain.dev/compute-watts", &view.power.compute_watts},
                 Read{"edgetrain.dev/communicate-watts", &view.power.communicate_watts},
                 Read{"edgetrain.dev/idle-watts", &view.power.idle_watts},
                 Read{"edgetrain.dev/link-mbps", &link_value},
                 Read{"edgetrain.dev/emulated-slowdown", &view.emulated_slowdown}}) {
    if (!annotations.contains(r.key)) continue;
    StatusOr<double> value = Number(annotations, r.key);
    if (!value.ok()) return value.status();
    *r.into = *value;
    if (r.into == &link_value) link = *value;
  }
  view.link_mbps = link;
  // An emulated node's own stream of samples (the node emulator publishes its
  // profile's ratePerSecond): what a worker there draws when the job names no rates.
  if (annotations.contains(kEmulatedStreamRate)) {
    StatusOr<double> rate = Number(annotations, kEmulatedStreamRate);
    if (!rate.ok()) return rate.status();
    if (!(*rate > 0)) return InvalidArgumentError(std::string("annotation ") + kEmulatedStreamRate + " must be > 0");
    view.emulated_stream = StreamSource{*rate, "", 0};
  }
  // A measurement from the field, while fresh, says more than the declaration:
  // the slower direction bounds an exchange.
  if (measured.now != kube::WallTime{} && annotations.contains(kMeasuredAt)) {
    const std::optional<kube::WallTime> at = kube::ParseKubeTime(annotations[kMeasuredAt].get<std::string>());
    if (at && measured.now - *at <= measured.max_age) {
      std::optional<double> slowest;
      for (const char* key : {kMeasuredUplink, kMeasuredDownlink}) {
        if (!annotations.contains(key)) continue;
        StatusOr<double> bps = Number(annotations, key);
        if (!bps.ok()) return bps.status();
        slowest = std::min(slowest.value_or(*bps), *bps);
      }
      if (slowest) view.link_mbps = *slowest / 1e6;
    }
  }
  view.leaving = LeavingReason(view, annotations.get<std::map<std::string, std::string>>());
  if (view.emulated_slowdown < 1) {
    return InvalidArgumentError("annotation edgetrain.dev/emulated-slowdown must be >= 1");
  }
  return view;
}

ResourceAmounts PodRequests(const Json& pod) {
  ResourceAmounts sum{.pods = 1};
  for (const Json& c : pod.at("spec").value("containers", Json::array())) {
    const Json requests = c.value("/resources/requests"_json_pointer, Json::object());
    sum.cpu_millis += Amount(requests, "cpu", true);
    sum.memory_bytes += Amount(requests, "memory", false);
    AddOthers(requests, sum);
  }
  return sum;
}

bool HoldsNode(const Json& pod) {
  if (pod.value("/spec/nodeName"_json_pointer, std::string()).empty()) return false;
  const std::string phase = pod.value("/status/phase"_json_pointer, std::string());
  return phase != "Succeeded" && phase != "Failed";
}

ClusterView ClusterViewOf(const std::vector<Json>& nodes, const std::vector<Json>& pods,
                          const std::string& except_namespace, const std::string& except_job,
                          const MeasuredLinks& measured) {
  std::map<std::string, ResourceAmounts> bound;
  ClusterView view;
  for (const Json& pod : pods) {
    if (!HoldsNode(pod)) continue;
    const Json& meta = pod.at("metadata");
    if (meta.value("namespace", "") == except_namespace &&
        meta.value("/labels"_json_pointer, Json::object()).value(kJobLabel, "") == except_job) {
      ++view.own_pods;
      continue;
    }
    bound[pod["spec"]["nodeName"].get<std::string>()].Add(PodRequests(pod));
  }
  for (const Json& node : nodes) {
    StatusOr<NodeView> v = NodeViewOfNode(node, measured);
    if (!v.ok()) {
      view.unreadable.push_back(node.value("/metadata/name"_json_pointer, std::string("?")) + ": " +
                                v.status().message());
      continue;
    }
    if (auto it = bound.find(v->name); it != bound.end()) v->bound = it->second;
    view.nodes.push_back(*v);
  }
  return view;
}

}  // namespace edgetrain::operator_

#include "cli/plan_command.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "api/team_request.h"
#include "cli/job_loading.h"
#include "cli/progress_display.h"
#include "core/cluster_placement.h"
#include "core/exit_codes.h"
#include "core/node_view.h"
#include "operator/controller/cluster_view.h"
#include "operator/kube/kube_config.h"
#include "operator/kube/rest_kube_client.h"

namespace edgetrain::cli {
namespace {

std::string Fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// "coordinator, ranks 0 and 3"
std::string Pods(const NodeVerdict& v) {
  std::string pods = v.coordinator ? "coordinator" : "";
  for (size_t i = 0; i < v.ranks.size(); ++i) {
    pods += (pods.empty() ? "" : ", ") + std::string("worker ") + std::to_string(v.ranks[i]);
  }
  return pods.empty() ? "-" : pods;
}

nlohmann::json ToJson(const TeamPlacement& p, const std::vector<NodeView>& nodes, int batch) {
  nlohmann::json verdicts = nlohmann::json::array();
  for (size_t i = 0; i < p.verdicts.size(); ++i) {
    const NodeVerdict& v = p.verdicts[i];
    nlohmann::json j = {{"node", v.node}, {"coordinator", v.coordinator}, {"ranks", v.ranks},
                        {"computeScore", nodes[i].compute_score}};
    if (nodes[i].link_mbps) j["linkMbps"] = *nodes[i].link_mbps;
    if (!v.transient.empty()) j["transient"] = v.transient;
    if (!v.excluded.empty()) j["excluded"] = v.excluded;
    if (v.excluded.empty() || !v.ranks.empty() || v.coordinator) {
      j["predictedSamplesPerSecond"] = v.step.samples_per_second(batch);
      j["joulesPerSample"] = v.joules_per_sample;
    }
    verdicts.push_back(j);
  }
  nlohmann::json out = {{"placed", p.placed}, {"nodes", verdicts}};
  if (p.placed) {
    out["coordinator"] = p.coordinator_node;
    out["workers"] = p.worker_nodes;
    out["predictedSamplesPerSecond"] = p.predicted_samples_per_second;
  } else {
    out["unschedulable"] = p.unschedulable;
  }
  return out;
}

void PrintTable(const TeamPlacement& p, const std::vector<NodeView>& nodes, int batch, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof line, "%-16s %-24s %6s %11s %12s %10s  %s\n", "NODE", "PODS", "SCORE", "LINK Mbit/s",
                "SAMPLES/S", "mJ/SAMPLE", "NOTE");
  out << line;
  for (size_t i = 0; i < p.verdicts.size(); ++i) {
    const NodeVerdict& v = p.verdicts[i];
    const bool judged = v.excluded.empty() || !v.ranks.empty() || v.coordinator;
    std::string note = v.excluded;
    if (note.empty() && !v.transient.empty()) note = "transient (" + v.transient + ")";
    std::snprintf(line, sizeof line, "%-16s %-24s %6s %11s %12s %10s  %s\n", v.node.c_str(), Pods(v).c_str(),
                  Fixed(nodes[i].compute_score, 2).c_str(),
                  nodes[i].link_mbps ? Fixed(*nodes[i].link_mbps, 1).c_str() : "wired",
                  judged ? WithThousands(std::llround(v.step.samples_per_second(batch))).c_str() : "-",
                  judged ? Fixed(v.joules_per_sample * 1000, 3).c_str() : "-", note.c_str());
    out << line;
  }
}

// The live cluster as the operator reads it: every Node, and the requests of the
// pods bound to each (other than this job's own, which a re-plan may move).
StatusOr<operator_::ClusterView> ReadCluster(const std::string& kubeconfig, const api::TrainingJobManifest& job,
                                             std::string& site) {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  EDGETRAIN_ASSIGN_OR_RETURN(kube::KubeConfig config, kube::LoadKubeConfig(kubeconfig, env));
  RealClock clock;
  EDGETRAIN_ASSIGN_OR_RETURN(std::unique_ptr<kube::KubeClient> client,
                             kube::MakeRestKubeClient(config, kube::RestOptions{}, clock));
  EDGETRAIN_ASSIGN_OR_RETURN(nlohmann::json nodes, client->List(kube::kNodes, "", {}));
  EDGETRAIN_ASSIGN_OR_RETURN(nlohmann::json pods, client->List(kube::kPods, "", {}));
  site = config.server;
  const std::string ns = job.namespace_.empty() ? config.namespace_ : job.namespace_;
  return operator_::ClusterViewOf(nodes.value("items", std::vector<nlohmann::json>{}),
                                  pods.value("items", std::vector<nlohmann::json>{}), ns, job.name,
                                  {std::chrono::system_clock::now(), std::chrono::minutes(10)});
}

}  // namespace

int PrintPlan(const PlanOptions& options, std::ostream& out, std::ostream& err) {
  api::TrainingJobManifest job;
  api::SupportCheck support;
  if (int code = LoadJob(options.manifest_path, err, job, support, api::Runner::kKubernetes); code != kExitOk) {
    return code;
  }
  if (options.nodes_path.empty() == options.kubeconfig.empty()) {
    err << "edgetrain plan: which site? --nodes PROFILE.yaml or --kubeconfig FILE (see edgetrain plan --help)\n";
    return kExitInvalid;
  }
  std::string site;
  std::vector<NodeView> nodes;
  if (!options.kubeconfig.empty()) {
    StatusOr<operator_::ClusterView> cluster = ReadCluster(options.kubeconfig, job, site);
    if (!cluster.ok()) {
      err << "error: --kubeconfig " << options.kubeconfig << ": " << cluster.status().message() << "\n";
      // A cluster that does not answer is the moment's (1); a kubeconfig that
      // cannot be read or is refused is the input's (2).
      return cluster.status().code() == StatusCode::kUnavailable ? kExitFailed : kExitInvalid;
    }
    for (const std::string& bad : cluster->unreadable) err << "note: node " << bad << "; left out\n";
    nodes = cluster->nodes;
  } else {
    std::optional<ClusterProfile> profile = LoadProfile(options.nodes_path, err);
    if (!profile) return kExitInvalid;
    site = profile->name;
    for (const NodeProfile& node : profile->nodes) {
      StatusOr<NodeView> view = NodeViewOf(node);
      if (!view.ok()) {
        err << "error: --nodes: " << view.status().message() << "\n";
        return kExitInvalid;
      }
      nodes.push_back(*view);
    }
  }
  StatusOr<TeamRequest> request = api::TeamRequestOf(job, api::PodDefaults{});
  if (!request.ok()) {
    err << "error: " << options.manifest_path << ": " << request.status().message() << "\n";
    return kExitInvalid;
  }
  const TeamPlacement placement = PlaceTeam(nodes, *request);
  const int batch = job.spec.data.batch_size;
  if (options.json) {
    nlohmann::json doc = ToJson(placement, nodes, batch);
    doc["job"] = job.name;
    doc["site"] = site;
    out << doc.dump() << "\n";
  } else {
    const int workers = job.spec.parallelism.workers;
    out << job.name << " on " << site << " (" << nodes.size() << " nodes): "
        << (request->solo ? "a job of one, trained by its coordinator"
                          : "a coordinator and " + std::to_string(workers) + " workers")
        << "\n\n";
    PrintTable(placement, nodes, batch, out);
    out << "\n";
    if (placement.placed) {
      out << "predicted: " << WithThousands(std::llround(placement.predicted_samples_per_second))
          << " samples/s for the team; a ranking of nodes, not a promise (docs/placement.md)\n";
    }
  }
  for (const std::string& note : support.notes) err << "note: " << note << "\n";
  if (!placement.placed) {
    err << "error: " << job.name << " does not fit " << site << ": " << placement.unschedulable << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace edgetrain::cli

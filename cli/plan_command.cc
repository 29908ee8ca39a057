#include "cli/plan_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>

#include <nlohmann/json.hpp>

#include "api/result_json.h"
#include "api/team_request.h"
#include "cli/job_loading.h"
#include "cli/layer_profiling.h"
#include "cli/pipeline_view.h"
#include "cli/progress_display.h"
#include "cli/stage_planning.h"
#include "core/cluster_placement.h"
#include "core/device_slowdown.h"
#include "core/exit_codes.h"
#include "core/node_view.h"
#include "core/parallelism_choice.h"
#include "core/pipeline_planner.h"
#include "core/pipeline_problem.h"
#include "operator/controller/cluster_view.h"
#include "operator/controller/stage_plan.h"
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

// The samples a second a job's streams deliver: its own rates, or else
// those the nodes its workers were placed on publish (a node whose stream is
// a rate trace publishes none, and placement puts no such worker there);
// none for a stream from a folder. Where the nodes' went unsaid, plan
// headed 88,028 samples/s for a team fed 260 (a user's trial).
std::optional<double> StreamsDeliver(const JobSpec& spec, const TeamPlacement& placement,
                                     const std::vector<NodeView>& nodes) {
  if (!spec.data.stream || spec.data.stream->directory) return std::nullopt;
  double sum = 0;
  if (!spec.data.stream->rates_per_second.empty()) {
    for (double r : spec.data.stream->rates_per_second) sum += r;
    return sum;
  }
  for (const std::string& name : placement.worker_nodes) {
    const auto node = std::find_if(nodes.begin(), nodes.end(), [&](const NodeView& n) { return n.name == name; });
    if (node == nodes.end() || !node->emulated_stream) return std::nullopt;
    sum += node->emulated_stream->per_second;
  }
  return placement.worker_nodes.empty() ? std::nullopt : std::optional<double>(sum);
}

// A pipeline job's figures for each node: the whole model on that device
// alone, by the planner's cost model over the layers the agent measured, and
// its compute's joules a sample at that pace. Placement's own figures are of
// a data-parallel worker by the model's flops (docs/placement.md), which
// contradicted the planner's below them: 646 samples/s on the gateway in the
// table, 1,042 for the same device alone in the comparison (a new user's trial).
struct AloneOnNode {
  bool planned = false;      // false: a node the planner refuses (no compute, a cut link)
  double samples_per_s = 0;  // 0: the whole model does not fit the device
  double joules_per_sample = 0;
};

// The figures a node's row shows: placement's, or the planner's of the device alone.
struct RowFigures {
  double samples_per_s = 0;
  double joules_per_sample = 0;
};

// A node the planner refuses has no figure of its own: 0, shown "-".
RowFigures FiguresOf(const NodeVerdict& v, int batch, const std::vector<AloneOnNode>& alone, size_t i) {
  if (i < alone.size()) return {alone[i].samples_per_s, alone[i].joules_per_sample};
  return {v.step.samples_per_second(batch), v.joules_per_sample};
}

nlohmann::json ToJson(const TeamPlacement& p, const std::vector<NodeView>& nodes, int batch,
                      const std::vector<AloneOnNode>& alone) {
  nlohmann::json verdicts = nlohmann::json::array();
  for (size_t i = 0; i < p.verdicts.size(); ++i) {
    const NodeVerdict& v = p.verdicts[i];
    nlohmann::json j = {{"node", v.node}, {"coordinator", v.coordinator}, {"ranks", v.ranks},
                        {"computeScore", nodes[i].compute_score}};
    if (nodes[i].link_mbps) j["linkMbps"] = *nodes[i].link_mbps;
    if (!v.transient.empty()) j["transient"] = v.transient;
    if (!v.excluded.empty()) j["excluded"] = v.excluded;
    if (!v.misfit.empty()) j["misfit"] = v.misfit;
    if (!v.coordinator_misfit.empty()) j["coordinatorMisfit"] = v.coordinator_misfit;
    if (v.would_hold_coordinator) j["wouldHoldCoordinator"] = true;
    if (!v.would_hold_ranks.empty()) j["wouldHoldRanks"] = v.would_hold_ranks;
    if (v.excluded.empty() || !v.ranks.empty() || v.coordinator) {
      j["predictedSamplesPerSecond"] = v.step.samples_per_second(batch);
      j["joulesPerSample"] = v.joules_per_sample;
      // A pipeline job's: the whole model on the device alone, as the planner costs it.
      if (i < alone.size() && alone[i].planned) {
        j["aloneSamplesPerSecond"] = alone[i].samples_per_s;
        j["aloneJoulesPerSample"] = alone[i].joules_per_sample;
      }
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

void PrintTable(const TeamPlacement& p, const std::vector<NodeView>& nodes, int batch,
                const std::vector<AloneOnNode>& alone, bool by_energy, std::ostream& out) {
  char line[1024];
  // The names' columns as wide as their longest: a node holding three pods
  // pushed the figures after it out of their columns (a new user's trial).
  int node_width = 16, pods_width = 24;
  for (const NodeVerdict& v : p.verdicts) {
    node_width = std::max(node_width, static_cast<int>(v.node.size()));
    pods_width = std::max(pods_width, static_cast<int>(Pods(v).size()));
  }
  // COMPUTE: the node's speed against the fastest's (its compute score);
  // SAMPLES/S: a worker there, its link counted too, which is what placement
  // ranks by; of a pipeline job, the whole model on the device alone.
  std::snprintf(line, sizeof line, "%-*s %-*s %7s %11s %12s %10s  %s\n", node_width, "NODE", pods_width, "PODS", "COMPUTE",
                "LINK Mbit/s", "SAMPLES/S", "mJ/SAMPLE", "NOTE");
  out << line;
  // A job of one is its coordinator alone: no team went anywhere. One with
  // an energy budget went by joules a sample (it was said to go where a step
  // is quicker, beside a quicker node it left: a new user's trial).
  const char* went = by_energy ? (p.worker_nodes.empty()
                                      ? "the job, which has an energy budget, went where a sample is predicted to "
                                        "cost as few mJ or fewer"
                                      : "the team, which has an energy budget, went where a sample is predicted to "
                                        "cost as few mJ or fewer")
                     : p.worker_nodes.empty() ? "the job went where a step is predicted as quick or quicker"
                                              : "the team went where predicted as fast or faster";
  for (size_t i = 0; i < p.verdicts.size(); ++i) {
    const NodeVerdict& v = p.verdicts[i];
    const bool judged = v.excluded.empty() || !v.ranks.empty() || v.coordinator;
    std::string note = v.excluded;
    const bool holds = !v.ranks.empty() || v.coordinator;
    // Transient and eligible: said the same whether the node held pods or
    // was left out (a new user's trial), so each says which.
    if (note.empty() && !v.transient.empty()) {
      note = holds ? "transient (" + v.transient + "): its pods move if it warns before it leaves"
                   : p.placed ? "unused: " + std::string(went) + "; transient (" + v.transient + ")"
                              : "transient (" + v.transient + ")";
    }
    // Eligible and left empty: the team went where it is predicted to turn as many samples a second or more
    // (as a data-parallel worker, its link counted: a pipeline job's figures here are another prediction's).
    if (p.placed && note.empty() && !holds) {
      note = alone.empty() ? "unused: " + std::string(went)
                           : "unused: placement put the workers where a worker is predicted as fast or faster, links "
                             "counted";
    }
    if (!p.placed && v.excluded.empty()) {
      // What it would hold, then why no more: "no worker" of a node that
      // held one read as a contradiction of "3/4 workers fit" (a new user's trial).
      std::string held = v.would_hold_coordinator ? "the coordinator" : "";
      for (int rank : v.would_hold_ranks) held += (held.empty() ? "" : ", ") + ("worker " + std::to_string(rank));
      std::string verdict = held.empty() ? "" : "would hold " + held;
      if (!v.misfit.empty()) verdict += (held.empty() ? "no worker: " : "; no more: ") + v.misfit;
      if (!v.coordinator_misfit.empty()) verdict = "no coordinator: " + v.coordinator_misfit;
      if (!verdict.empty()) note = note.empty() ? verdict : note + "; " + verdict;
    }
    const RowFigures figures = FiguresOf(v, batch, alone, i);
    const bool shown = judged && figures.samples_per_s > 0;  // a device the whole model does not fit: "-"
    std::snprintf(line, sizeof line, "%-*s %-*s %7s %11s %12s %10s  %s\n", node_width, v.node.c_str(), pods_width,
                  Pods(v).c_str(),
                  Fixed(nodes[i].compute_score, 2).c_str(),
                  nodes[i].link_mbps ? Fixed(*nodes[i].link_mbps, 1).c_str() : "wired",
                  shown ? WithThousands(std::llround(figures.samples_per_s)).c_str() : "-",
                  shown ? Fixed(figures.joules_per_sample * 1000, 3).c_str() : "-", note.c_str());
    out << line;
  }
}

// The live cluster as the operator reads it: every Node, and the requests of the
// pods bound to each (other than this job's own, which a re-plan may move).
// `job_refused`: the error is the job's own field the cluster refuses.
StatusOr<operator_::ClusterView> ReadCluster(const std::string& kubeconfig, const api::TrainingJobManifest& job,
                                             std::string& site, bool& job_refused) {
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
  // As the operator refuses it (NoPriorityClass): plan placed a team the
  // operator kept Pending (a new user's trial).
  if (const std::string name = job.object.value("/spec/placement/priorityClassName"_json_pointer, std::string());
      !name.empty()) {
    StatusOr<nlohmann::json> found = client->Get(kube::kPriorityClasses, "", name);
    if (!found.ok() && found.status().code() == StatusCode::kNotFound) {
      job_refused = true;
      return InvalidArgumentError("spec.placement.priorityClassName: no PriorityClass named " + name +
                                  " exists on the cluster, and the API server refuses pods that name one: the "
                                  "operator keeps the job Pending (NoPriorityClass) until it is made");
    }
  }
  const std::string ns = job.namespace_.empty() ? config.namespace_ : job.namespace_;
  return operator_::ClusterViewOf(nodes.value("items", std::vector<nlohmann::json>{}),
                                  pods.value("items", std::vector<nlohmann::json>{}), ns, job.name,
                                  {std::chrono::system_clock::now(), std::chrono::minutes(10)});
}

struct PlannedPipeline {
  PipelineProblem problem;
  ParallelismChoice choice;
  PipelinePlan runs;  // the planner's, or the stages asked for (--stages, spec.parallelism.stages)
};

// The planner's devices: the node of each worker, in rank order, as
// edgetrain run and the operator plan a team (a worker is a device, and a
// layout by hand names devices by rank); for a job of one, its coordinator's
// node. Counted once a node, two workers on one node were one device here and
// two under run: a layout's ranks named other devices than they would train
// on, and the prediction was another team's (found in review).
std::vector<NodeView> DevicesOf(const TeamPlacement& placement, const std::vector<NodeView>& nodes) {
  std::vector<std::string> names = placement.worker_nodes;
  if (names.empty()) names.push_back(placement.coordinator_node);
  std::vector<NodeView> devices;
  for (const std::string& name : names) {
    const auto node = std::find_if(nodes.begin(), nodes.end(), [&](const NodeView& n) { return n.name == name; });
    if (node != nodes.end()) devices.push_back(*node);
  }
  return devices;
}

// How a pipeline, hybrid or auto job would split the model over the nodes
// placement chose, its layers measured by the agent at the job's batch size
// (`timed`, when they were already, to size a module for placement).
StatusOr<PlannedPipeline> PlanPipelineJob(const api::TrainingJobManifest& job, const StagesAsked& asked,
                                          int micro_batches, const TeamPlacement& placement,
                                          const std::vector<NodeView>& nodes, const std::string& agent,
                                          std::optional<ProfiledModel> timed) {
  if (!timed) {
    EDGETRAIN_ASSIGN_OR_RETURN(timed, ProfileJobLayers(job, agent));
  }
  ProfiledModel& measured = *timed;
  PlannedPipeline planned;
  EDGETRAIN_ASSIGN_OR_RETURN(planned.problem, PipelineProblemOf(job.spec, DevicesOf(placement, nodes),
                                                                std::move(measured.layers), measured.transport,
                                                                measured.stage_pass));
  // The planner's table is what this shows: where no plan of the mode fits,
  // it says so, even of stages by hand that might (edgetrain run tries them).
  EDGETRAIN_ASSIGN_OR_RETURN(planned.choice, ChooseParallelism(planned.problem, job.spec.parallelism.mode));
  EDGETRAIN_ASSIGN_OR_RETURN(planned.runs, PlanOfStages(planned.problem, planned.choice, asked.stages, asked.said()));
  RecutAtMicroBatches(planned.problem, micro_batches, job.spec.data.batch_size, planned.runs);
  return planned;
}

// Each node's device alone with the whole model, on the layers `problem` was
// planned with. A node the planner refuses (no compute, a cut link) is left
// out of every plan, and has none.
std::vector<AloneOnNode> AloneOnEachNode(const JobSpec& spec, const PipelineProblem& problem,
                                         const std::vector<NodeView>& nodes) {
  std::vector<AloneOnNode> alone;
  const int layers = static_cast<int>(problem.layers.size());
  for (const NodeView& node : nodes) {
    StatusOr<PipelineProblem> one = PipelineProblemOf(spec, std::span(&node, 1), problem.layers, problem.transport,
                                                       problem.stage_pass);
    AloneOnNode figures;
    if (!one.ok()) {
      alone.push_back(figures);
      continue;
    }
    figures.planned = true;
    const PipelinePlan plan = AtBestMicroBatches(*one, {{0, layers, {0}}});
    if (plan.cost.fits && plan.cost.samples_per_s > 0) {
      figures.samples_per_s = plan.cost.samples_per_s;
      // Alone, a device only computes: its radio carries nothing.
      figures.joules_per_sample = node.power.compute_watts / plan.cost.samples_per_s;
    }
    alone.push_back(figures);
  }
  return alone;
}

}  // namespace

int PrintPlan(const PlanOptions& options, std::ostream& out, std::ostream& err) {
  api::TrainingJobManifest job;
  api::SupportCheck support;
  // As the operator would take it, but pipeline, hybrid and auto are planned
  // though nothing runs them yet (a note says so).
  if (int code = LoadJob(options.manifest_path, err, job, support, api::Runner::kPlanning); code != kExitOk) {
    return code;
  }
  if (options.nodes_path.empty() == options.kubeconfig.empty()) {
    err << "edgetrain plan: which site? --nodes PROFILE.yaml or --kubeconfig FILE (see edgetrain plan --help)\n";
    return kExitInvalid;
  }
  std::string site;
  std::vector<NodeView> nodes;
  if (!options.kubeconfig.empty()) {
    bool the_jobs = false;  // the job's own field the cluster refuses: the manifest's to mend
    StatusOr<operator_::ClusterView> cluster = ReadCluster(options.kubeconfig, job, site, the_jobs);
    if (!cluster.ok()) {
      err << "error: " << (the_jobs ? options.manifest_path : "--kubeconfig " + options.kubeconfig) << ": "
          << cluster.status().message() << "\n";
      // A cluster that does not answer is the moment's (1); a kubeconfig that
      // cannot be read or is refused is the input's (2).
      return cluster.status().code() == StatusCode::kUnavailable ? kExitFailed : kExitInvalid;
    }
    for (const std::string& bad : cluster->unreadable) err << "note: node " << bad << "; left out\n";
    // A job already placed: its own pods are left out of what the nodes hold,
    // as a re-plan counts them, so the plan is where it would go now, not
    // where it is (a new user's trial read it as the latter).
    if (cluster->own_pods > 0) {
      err << "note: " << job.name << " has " << cluster->own_pods << (cluster->own_pods == 1 ? " pod" : " pods")
          << " on the cluster already, left out of what the nodes hold: this is where it would be placed now, "
             "not where it is (kubectl get pods -o wide)\n";
    }
    nodes = cluster->nodes;
  } else {
    std::optional<ClusterProfile> profile = LoadProfile(options.nodes_path, err);
    if (!profile) return kExitInvalid;
    site = profile->name;
    for (const NodeProfile& node : profile->nodes) {
      if (!node.slowdown_changes.empty()) {
        err << "note: " << node.name << "'s compute changes during a run ("
            << DeviceSlowdown{node.slowdown, node.slowdown_changes}.Said()
            << "): placed and planned by its slowdown at the start\n";
      }
      StatusOr<NodeView> view = NodeViewOf(node);
      if (!view.ok()) {
        err << "error: --nodes: " << view.status().message() << "\n";
        return kExitInvalid;
      }
      nodes.push_back(*view);
    }
  }
  const int batch = job.spec.data.batch_size;
  // A job that splits its model is planned on the nodes its team was given.
  const bool pipeline_job = job.spec.parallelism.mode != ParallelismMode::kDataParallel;
  // --stages and --micro-batches as edgetrain run takes them, judged before
  // the layers are measured.
  const StagesAsked asked = StagesOf(options.stages, job.spec);
  if (auto note = StageFlagsNotTaken(job, options.stages, options.micro_batches)) err << "note: " << *note << "\n";
  if (auto note = StagesOverridden(job.spec, options.stages)) err << "note: " << *note << "\n";
  if (pipeline_job) {
    const auto devices = static_cast<size_t>(job.spec.parallelism.workers);
    if (Status judged = CheckStagesAsked(job, asked, options.micro_batches, devices); !judged.ok()) {
      err << "error: " << job.name << ": " << judged.message() << "\n";
      return ExitCodeFor(judged);
    }
    // The plan of a cluster is the operator's, from its own timing: a new
    // user took these stages for the ones the cluster would run.
    if (!options.kubeconfig.empty()) {
      err << "note: the model's layers are timed here, on this machine; the operator times them again in a pod "
             "on the cluster (CheckingLayers) before it cuts the stages, which may then differ from these\n";
    }
  }
  // A user's module is sized by the agent here, as the operator's check pod
  // sizes it there, before placement ranks nodes by its step: a pipeline's
  // from its layers, timed once for both (plan had refused every such job,
  // where run measured the same module: a user's trial).
  std::optional<ProfiledModel> timed;
  std::optional<ModelSize> size;
  if (job.spec.model.kind == ModelKind::kTorchScript) {
    err << "measuring the module on this machine, as the operator's check pod would\n";
    Status measured = Status::Ok();
    if (pipeline_job) {
      StatusOr<ProfiledModel> layers = ProfileJobLayers(job, options.agent_binary);
      if (layers.ok()) {
        size = operator_::SizeOfLayers(layers->layers, batch, /*timed_on=*/nullptr);
        timed = std::move(*layers);
      }
      measured = layers.status();
    } else {
      StatusOr<ModelSize> checked = CheckJobModule(job, options.agent_binary);
      if (checked.ok()) size = *checked;
      measured = checked.status();
    }
    if (!measured.ok()) {
      err << "error: " << options.manifest_path << ": " << measured.message() << "\n";
      return ExitCodeFor(measured);
    }
  }
  StatusOr<TeamRequest> request = api::TeamRequestOf(job, api::PodDefaults{}, size);
  if (!request.ok()) {
    err << "error: " << options.manifest_path << ": " << request.status().message() << "\n";
    return kExitInvalid;
  }
  const TeamPlacement placement = PlaceTeam(nodes, *request);
  // Shown beside the planner's: the stages asked for, or its own at other micro-batches.
  const bool shown_beside = asked.given() || options.micro_batches > 0;
  std::optional<StatusOr<PlannedPipeline>> pipeline;
  if (pipeline_job && placement.placed) {
    pipeline = PlanPipelineJob(job, asked, options.micro_batches, placement, nodes, options.agent_binary,
                               std::move(timed));
  }
  const bool planned = pipeline && pipeline->ok();
  const std::vector<AloneOnNode> alone =
      planned ? AloneOnEachNode(job.spec, (*pipeline)->problem, nodes) : std::vector<AloneOnNode>{};
  if (options.json) {
    nlohmann::json doc = ToJson(placement, nodes, batch, alone);
    doc["job"] = job.name;
    doc["site"] = site;
    if (const std::optional<double> arriving = StreamsDeliver(job.spec, placement, nodes)) {
      doc["streamSamplesPerSecond"] = *arriving;
    }
    if (planned) {
      doc["pipeline"] = PipelineChoiceJson((*pipeline)->problem, (*pipeline)->choice);
      // The job's prediction is the plan it runs, as the text says; placement's,
      // of a data-parallel team on these nodes, is kept apart (a new user's
      // script read placement's 830 samples/s for a plan predicted at 702).
      doc["placementPredictedSamplesPerSecond"] = placement.predicted_samples_per_second;
      doc["predictedSamplesPerSecond"] = (*pipeline)->runs.cost.samples_per_s;
      if (shown_beside) doc["pipeline"]["given"] = StagesGivenJson((*pipeline)->problem, (*pipeline)->runs, asked);
    } else if (pipeline) {
      doc["pipeline"] = {{"mode", NameOf(job.spec.parallelism.mode)}, {"error", pipeline->status().message()}};
      // No plan, no prediction: placement's figure is a team's, kept apart
      // as for a plan (docs/placement.md), not given as the job's.
      doc["placementPredictedSamplesPerSecond"] = placement.predicted_samples_per_second;
      doc["predictedSamplesPerSecond"] = nullptr;
    }
    out << api::ResultJson(doc) << "\n";  // a name need not be UTF-8
  } else {
    const int workers = job.spec.parallelism.workers;
    out << job.name << " on " << site << " (" << nodes.size() << (nodes.size() == 1 ? " node): " : " nodes): ")
        << (request->solo ? "a job of one, trained by its coordinator"
                          : "a coordinator and " + std::to_string(workers) + " workers");
    // The team is placed first, then the pipeline planned over its devices,
    // and it may leave some out: said here, where "4 workers" read as four
    // that train beside the plan's "left out" below (a new user's trial).
    if (planned) {
      int training = 0;
      for (const PipelineStage& stage : (*pipeline)->runs.stages) {
        training += static_cast<int>(stage.devices.size());
      }
      // Against the devices the workers were placed on, one a worker.
      const int devices = static_cast<int>(DevicesOf(placement, nodes).size());
      // The layout run is the one given (--stages, spec.parallelism.stages)
      // when there is one, and the planner's plan is shown first: said as
      // the given layout's (a new user read the planner's plan's count).
      if (training < devices) {
        out << " placed; " << (asked.given() ? "the stages given train on " : "the plan below trains on ") << training
            << " of their " << devices << " devices";
      }
    }
    // The heading reads as a placement made: one that failed says so at
    // once, its reasons below (a user's trial).
    if (!placement.placed) out << "; the job does not fit these nodes (below)";
    out << "\n\n";
    PrintTable(placement, nodes, batch, alone, request->minimise_energy, out);
    if (!alone.empty()) {
      out << "SAMPLES/S and mJ/SAMPLE: the whole model on that device alone, by the planner's cost model over the "
             "layers measured below (\"-\": it does not fit the device's memory, or the planner takes no device "
             "there)\n";
    } else if (pipeline_job && !placement.placed) {
      // Its layers were not measured (the team was not placed): the column is
      // placement's, which had read as the planner's, by another measure (a
      // user's trial: 646 on a gateway shown 877 when placed).
      out << "SAMPLES/S and mJ/SAMPLE: placement's figures for a data-parallel worker on that node, by the "
             "job's model size; the pipeline planner's, over measured layers, come once the job fits\n";
    }
    out << "\n";
    // A pipeline job's prediction is the planner's, below: placement's, of a
    // data-parallel team, would contradict it.
    if (placement.placed && !pipeline_job) {
      out << "predicted: " << WithThousands(std::llround(placement.predicted_samples_per_second))
          << " samples/s for the " << (placement.worker_nodes.empty() ? "job" : "team")
          << "; a ranking of nodes, not a promise (docs/placement.md)\n";
      // A stream's samples come no faster than they arrive: the prediction
      // is of compute and links (a new user read 2,247,909 samples/s for a
      // team whose streams deliver 260).
      if (const std::optional<double> arriving = StreamsDeliver(job.spec, placement, nodes)) {
        const bool own = !job.spec.data.stream->rates_per_second.empty();
        out << "  its streams deliver " << WithThousands(std::llround(*arriving))
            << (own ? " samples/s (spec.data.stream.ratesPerSecond): the team trains on no more, wherever it runs\n"
                    : " samples/s (its nodes' streams): the team trains on no more\n");
      } else if (job.spec.data.stream) {
        out << "  it trains on what its streams deliver, which no prediction here knows\n";
      }
    }
    if (planned) {
      PrintPipelineChoice((*pipeline)->problem, (*pipeline)->choice, out);
      if (shown_beside) {
        PrintStagesGiven((*pipeline)->problem, (*pipeline)->runs, asked, options.micro_batches, out);
      }
    }
  }
  // A pipeline's stages name the devices placement chose, which edgetrain
  // run --nodes does not use (a new user's plan said "conv1-conv4 on
  // gateway" and the run put them on board).
  if (pipeline_job && placement.placed && !options.nodes_path.empty()) {
    // Each rank that lands elsewhere, named: a layout by hand (--stages) is
    // of ranks, and a new user read its prediction here for devices the run
    // then did not use ("may differ" alone).
    std::string elsewhere;
    for (size_t r = 0; r < placement.worker_nodes.size(); ++r) {
      if (r < nodes.size() && placement.worker_nodes[r] == nodes[r].name) continue;
      elsewhere += (elsewhere.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " on " +
                   placement.worker_nodes[r] + " here, on " + (r < nodes.size() ? nodes[r].name : "none") +
                   " under edgetrain run";
    }
    if (!elsewhere.empty()) {
      err << "note: these are the devices the operator would place the workers on; edgetrain run --nodes puts "
             "worker i on the profile's node i and plans its stages on those: "
          << elsewhere << "\n";
    }
  }
  for (const std::string& note : support.notes) err << "note: " << note << "\n";
  if (!placement.placed) {
    err << "error: " << job.name << " does not fit " << site << ": " << placement.unschedulable << "\n";
    return kExitFailed;
  }
  if (planned && !(*pipeline)->runs.cost.fits) {
    err << "error: " << job.name << " does not fit " << site << ": " << asked.named()
        << (options.micro_batches > 0 ? " at --micro-batches " + std::to_string(options.micro_batches) : "")
        << " does not fit: " << (*pipeline)->runs.cost.misfit << "\n";
    return kExitFailed;
  }
  if (pipeline && !pipeline->ok()) {
    const Status& why = pipeline->status();
    // No plan fits the devices' memory: the job does not fit, as above. A
    // model the agent refuses is the manifest's fault; the rest is the moment's.
    if (why.code() == StatusCode::kFailedPrecondition) {
      err << "error: " << job.name << " does not fit " << site << ": " << why.message() << "\n";
      return kExitFailed;
    }
    err << "error: planning the pipeline: " << why.message() << "\n";
    return why.code() == StatusCode::kInvalidArgument ? kExitInvalid : kExitFailed;
  }
  return kExitOk;
}

}  // namespace edgetrain::cli

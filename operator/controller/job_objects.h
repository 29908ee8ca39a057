#pragma once
// What a placed TrainingJob is on the cluster: a headless Service through which
// workers find the coordinator, a ConfigMap holding the plan every agent reads,
// and one Pod per agent, bound to the node placement chose
// (docs/launch-contract.md, "In pods"; docs/operator.md). Pure functions of the
// job and its placement: the reconciler creates what is missing and compares
// nothing else, so running it twice makes nothing twice.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/team_request.h"
#include "api/trainingjob.h"
#include "core/clock.h"
#include "core/cluster_placement.h"
#include "core/job_plan.h"
#include "core/node_view.h"

namespace edgetrain::operator_ {

using Json = nlohmann::json;

struct PodOptions {
  std::string default_image = "edgetrain/agent:dev";  // when spec.template.image is empty
  int termination_grace_seconds = 30;  // the agent saves its model on SIGTERM within this
  // How often a team's agents read their mounted credentials again
  // (TlsReloadFor the certificates' life): a rotation reaches them by then.
  Duration tls_reload = std::chrono::seconds(60);
  // How long a team's agent lets its stream to the coordinator (a stage's to
  // its head) go silent before pinging it, and as long for the answer
  // (the agent's --keepalive): a head lost with its node is heard of by its
  // stages after twice this, and its successor waits about as long for them.
  Duration agent_keepalive = std::chrono::seconds(10);
  // What a container requests when spec.template says nothing: the very
  // amounts placement counts, so that its fit and the scheduler's agree.
  api::PodDefaults defaults;
};

// A TrainingJob object as the API returned it, and what it reads as.
struct JobObject {
  Json object;                     // as stored (uid, generation, status)
  api::TrainingJobManifest manifest;
  std::string namespace_;
  std::string name;
  std::string uid;
};

// The plan the agents are given: each worker slot on its node, with the slowdown
// an emulated node asks for and the node's power profile.
JobPlan PlanOf(const JobObject& job, const TeamPlacement& placement, const std::vector<NodeView>& nodes,
               int64_t generation);
// Puts `slot` on `node`, with the slowdown and power profile of its view in
// `nodes` (none when the node is not there: no slowdown, the default power).
void PutSlotOn(WorkerSlot& slot, const std::string& node, const std::vector<NodeView>& nodes);

// The job as its plan placed it: the spec the plan was made from
// (plan.spec_json) in place of the one stored now. A pod made again mid-run (a
// worker replaced, a coordinator placed anew, a device's pod back on its node)
// is its team's: an edit not yet applied (docs/operator.md, observedGeneration)
// would give it another image, other resources or another model than the
// agents it joins. The job as stored when the plan keeps no spec.
JobObject AsPlaced(const JobObject& job, const JobPlan& plan);

// A pipeline, hybrid or auto job: its coordinator is the pipeline's head and
// its workers are stages (docs/pipeline.md), cut by the planner from the
// layers its model check timed. auto's pick of data parallelism runs through
// the head as one stage on every device, as under edgetrain run.
bool IsPipeline(const JobObject& job);

// spec.placement.gangTimeout (the CRD defaults it, and its pattern is a duration).
Duration GangTimeoutOf(const JobObject& job);

// Whether the coordinator writes on a claim (spec.output.volume) rather than
// an emptyDir of its pod's: a claim on a node stays with it.
bool HasOutputVolume(const JobObject& job);
// The view of node `name` among `nodes`; none when it is not among them.
const NodeView* NodeNamed(const std::vector<NodeView>& nodes, const std::string& name);
// The claim's name, when spec.output.volume names one.
std::optional<std::string> OutputClaimOf(const JobObject& job);

// Where the coordinator writes checkpoints and the model, inside its pod:
// spec.output.path, or /models/<job> on an emptyDir when it names none.
std::string OutputDirOf(const JobObject& job);

// Where a plan's coordinator runs: its node, and the plan generation it was
// given that node at (its pod is named for it, as a worker's for its slot's).
// The plan's ConfigMap keeps both, in annotations: the agents need neither.
struct CoordinatorSeat {
  std::string node;
  int64_t since_generation = 1;
};

Json ServiceFor(const JobObject& job);
Json PlanConfigMapFor(const JobObject& job, const JobPlan& plan, const CoordinatorSeat& coordinator);
// The seat a plan's ConfigMap says.
CoordinatorSeat CoordinatorSeatOf(const Json& plan_config_map);
// The coordinator's pod, on its seat's node, then one per worker rank, on
// its slot's node (each named for the generation it got its node at). A
// team's pods mount its credentials (Secret NAME-tls) and talk over mutual TLS.
std::vector<Json> PodsFor(const JobObject& job, const JobPlan& plan, const CoordinatorSeat& coordinator,
                          const PodOptions& options);

// The pod that loads the job's TorchScript module, checks it and measures its
// step (`edgetrain-agent check-model`), or, for a pipeline, times its layers
// (`edgetrain-agent profile-layers`), with the files mounted as the team's
// pods will have them; left to the scheduler, within the job's nodeSelector
// and tolerations, since no team is placed yet (operator/controller/model_check.h).
// A digest of its spec is written on it (ModelCheckOf): a job edited so that
// its check would differ (another module, shape, batch, image, volume or
// selector) is checked again.
Json ModelCheckPodFor(const JobObject& job, const PodOptions& options);
// Which check a check pod is: the digest of its spec.
std::string ModelCheckOf(const Json& pod);
// The volumes of the user's own files that every agent's pod and the check
// pod mount (spec.data.volume, spec.model.torchscript.configMap): pod volumes.
Json FileVolumesOf(const JobObject& job);

// The labels every object of the job carries.
Json LabelsOf(const JobObject& job);
// An object of the job's: in its namespace, owned by it (deleted with it).
Json Metadata(const JobObject& job, const std::string& name, Json labels);

// Whether `found`, an object under a name the job's objects take (its
// Service, plan ConfigMap, Secrets, pods) or with its job label, is the
// job's to write or delete: controlled by a TrainingJob named `job`, this one
// or an earlier one whose objects the garbage collector has not taken yet.
// Anything else is left alone: the operator wrote over a user's Secret named
// NAME-tls, took it for the job's, and deleted it with the job, and it
// deleted pods that only carried the job's label, so that a user allowed to
// create TrainingJobs alone could replace and delete what they had no right
// to touch (two security reviews).
bool JobMayWrite(const Json& found, const std::string& job);
// Whether `found` is this very job's, by its uid: an earlier job of the same
// name, deleted before the garbage collector took what it owned, left objects
// that JobMayWrite lets it write but that are not this one's.
bool OwnedByJob(const Json& found, const JobObject& job);
// What the job's status and Event say when one is not: `kind` NAME is taken.
std::string NameTakenMessage(const std::string& kind, const Json& found, const JobObject& job);

}  // namespace edgetrain::operator_

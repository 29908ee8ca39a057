#pragma once
// One TrainingJob brought one step closer to what its spec asks, from the world
// as it is (the informers' caches and the API): level-based, so running it twice
// has the effect of running it once, and a restarted operator carries on where
// the cluster shows the job to be. docs/operator.md tells the same story for users.
//
//   invalid spec or capability ....... Invalid; nothing is made
//   suspend .......................... no pods; Suspended
//   not placed ....................... place the gang (core placement), all or
//                                      nothing, behind waiting jobs of higher
//                                      priority or age; else Pending/Unschedulable
//   placed, not all running .......... Placing; past spec.placement.gangTimeout,
//                                      torn down, Pending/GangTimeout
//   running .......................... Running; progress from the coordinator
//   the coordinator ended ............ Succeeded or Failed; pods cleaned per
//                                      cleanPodPolicy; deleted after its TTL

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/team_request.h"
#include "core/clock.h"
#include "core/status.h"
#include "operator/controller/cluster_view.h"
#include "operator/controller/event_recorder.h"
#include "operator/controller/gang.h"
#include "operator/controller/job_credentials.h"
#include "operator/controller/job_objects.h"
#include "operator/controller/job_status.h"
#include "operator/controller/line_log.h"
#include "operator/controller/model_check.h"
#include "operator/controller/stage_plan.h"
#include "operator/controller/waiting_line.h"
#include "operator/kube/informer.h"
#include "operator/kube/kube_client.h"
#include "operator/kube/kube_time.h"

namespace edgetrain::operator_ {

using Json = nlohmann::json;

// Where the coordinator's GET /progress is read; HTTP in the operator, a table
// in tests.
class ProgressSource {
 public:
  virtual ~ProgressSource() = default;
  virtual StatusOr<Json> Progress(const std::string& pod_ip, int port) = 0;
};

struct ReconcilerOptions {
  PodOptions pods;  // its defaults are also what placement counts a pod as requesting
  Duration unschedulable_retry = std::chrono::seconds(30);  // also woken by any Node change
  Duration status_interval = std::chrono::seconds(5);       // how often a running job's progress is read
  // A job in passage (its pods ending, its gang timed out, a stage of its
  // pipeline lost) is looked at again this soon; a pod's change wakes it
  // sooner, so this is what a missed event costs.
  Duration recheck_after = std::chrono::seconds(1);
  // Links measured by running teams are published on their nodes at most this
  // often, and trusted by placement for this long.
  Duration measurement_interval = std::chrono::minutes(1);
  Duration measurement_max_age = std::chrono::minutes(10);
  CredentialsOptions credentials;  // a team's certificates' lives
  // What a team's links and progress say of it (BandwidthDegraded, Stalled).
  LinkRules links;
};

// What one reconcile did, for the controller's queue and metrics.
struct ReconcileOutcome {
  std::optional<Duration> requeue_after;  // look again then (level-based: or sooner, on a change)
  std::string placement;                  // "placed", "unschedulable" or empty: no attempt
  std::string replan;                     // why a running team got a new plan (WorkerLost, WorkerMoved, CoordinatorLost, CoordinatorMoved), or empty
  // A team whole again after recovering: how long since it stopped being whole.
  std::optional<Duration> recovered_after;
};

// The pod cache's index of pods by job: "namespace/job".
inline constexpr const char* kPodsByJob = "job";
kube::Store::IndexFunc PodsByJobIndex();

class Reconciler {
 public:
  Reconciler(kube::KubeClient& client, kube::Store& jobs, kube::Store& pods, kube::Store& nodes,
             ProgressSource& progress, EventRecorder& events, LineLog& log,
             std::function<kube::WallTime()> wall_now, ReconcilerOptions options = {},
             kube::Store* plans = nullptr);

  // `key` is "namespace/name". An error is an API failure, or a value of the
  // job's own agents (its /progress, a termination message) of a type no
  // agent of edgetrain's writes: the caller retries with back-off.
  StatusOr<ReconcileOutcome> Reconcile(const std::string& key);

  // For tests: reservation passes computed from scratch, and jobs added to one.
  uint64_t ReservationPasses() { return line_.passes(); }
  uint64_t ReservationExtensions() { return line_.extensions(); }

 private:
  // Reconcile, which may throw on such a value.
  StatusOr<ReconcileOutcome> ReconcileOnce(const std::string& key);
  struct Pass;  // one reconcile's state
  Status Validate(Pass& pass);
  // The job fails for what its spec says (`why`: InvalidSpec, NotSupported),
  // Invalid until the spec changes; said in an Event once a generation.
  void FailInvalid(Pass& pass, const std::string& why, const std::string& invalid);
  // A job that has ended: its pods cleaned as its cleanPodPolicy says, and the
  // job itself deleted once its TTL has passed.
  Status TidyFinishedJob(Pass& pass);
  // A finished job (Succeeded, Failed, or Failed as invalid) is deleted once
  // `spec`'s ttlSecondsAfterFinished has passed since its completionTime.
  Status ExpireAfterTtl(Pass& pass, const Json& spec);
  // How long ago condition `type` of `status` last changed; none when it has no
  // (readable) lastTransitionTime.
  std::optional<Duration> SinceTransition(const Json& status, const char* type) const;
  Status Suspend(Pass& pass);
  Status Place(Pass& pass);
  // Whether a TorchScript job's module size, as its check pod measured it for
  // the job as it is now, is in status.modelCheck: else the check is made,
  // followed, or read into the status (placed on the next pass), or it
  // refused the module (the status then says so).
  StatusOr<bool> CheckModel(Pass& pass);
  // A pipeline job's stages over the nodes `placement` chose (`views` holds
  // them), from `checked`, the layers its check timed (status.modelCheck).
  // A user's module's size, for placement: as its check measured it, or from
  // its layers as a pipeline's check timed them; none for a built-in model,
  // whose size the spec says, or before the check.
  std::optional<ModelSize> MeasuredSizeOf(const Pass& pass);
  StatusOr<StagePlan> CutStages(const Pass& pass, const CheckedLayers& checked, const TeamPlacement& placement,
                                const std::vector<NodeView>& views);
  // A placed job followed: what it lost mended, then its gang's state said.
  Status Follow(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator);
  struct Team;  // a placed job's team as one reconcile sees it
  // Its nodes, its pods as a gang (stale ones deleted), and which of a
  // pipeline's lost devices are out of it or on their way back.
  Status SeeTeam(Pass& pass, Team& team);
  // Each a loss mended, if there is one (its result), or nothing.
  std::optional<Status> FollowCoordinatorLoss(Pass& pass, Team& team);
  std::optional<Status> FollowStageDeviceLoss(Pass& pass, Team& team);
  std::optional<Status> FollowWorkerLoss(Pass& pass, Team& team);
  // By the gang's state: ended well, its pods starting, or training.
  Status Succeed(Pass& pass, Team& team);
  Status AwaitGang(Pass& pass, Team& team);
  Status FollowTraining(Pass& pass, Team& team);
  // A pipeline's devices as its head lists them: one let go of is lost, one
  // listed again has rejoined.
  std::optional<Status> FollowStageMembership(Pass& pass, Team& team, const Json& progress);
  // The coordinator's /progress unanswered after it once answered: said, and
  // Stalled past --stalled-after. Whether it was.
  bool SayProgressUnanswered(Pass& pass, const Team& team, const Json& progress, const std::string& unread);
  // Stalled and BandwidthDegraded from the links read (once `judged`) and the
  // team's nodes not ready.
  void JudgeLinks(Pass& pass, const Team& team, const Json& progress, const std::vector<Json>& gang_pods,
                  bool judged);
  // Creates `object`, one of the job's objects. One of its name already
  // there is taken as made when it is the job's to write (JobMayWrite);
  // another's is left alone, and the pass marked NameTaken.
  Status CreateOwn(Pass& pass, const kube::ResourceType& type, const Json& object);
  // Marks the pass: `found`, under a name of the job's, is another's.
  Status NameTaken(Pass& pass, const kube::ResourceType& type, const Json& found);
  // The job as the API server has it now, not the cache (which the pods'
  // watch can outrun); nullopt once it is gone.
  StatusOr<std::optional<Json>> JobAtTheServer(const Pass& pass);
  // Whether it is deleted, being deleted, or another job of its name.
  bool DeletedAtTheServer(const Pass& pass);
  // A pipeline's devices found lost (rank -> why): the head trains on
  // without them (replayed, or their stage rebuilt from its replica), so they
  // are not replaced; status.pipeline.lostRanks keeps them. `pods_gone`:
  // their pods failed or went, and are out of the gang (what is left of them
  // deleted); else their pods run on, and they may rejoin.
  Status LoseStageDevices(Pass& pass, const JobPlan& plan, const std::map<int, std::string>& lost, bool pods_gone);
  // The coordinator's /progress, into status.progress with its readTime when
  // it answers; an empty object, and why in `unread`, when it does not.
  Json ReadProgress(Pass& pass, const Gang& gang, std::string* unread = nullptr);
  // What a pipeline's head says of its replays: status.pipeline.replays and
  // the Replaying condition, with an Event for each new one.
  void ReportReplays(Pass& pass, const Json& progress);
  // Takes up a plan whose pods a replica made before it died, without saying
  // so in the status: the missing pods are made, none is made again.
  Status TakeUp(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator);
  // Replaces the workers `lost` (rank -> why) under a new plan generation.
  // `moves` are the ranks among them that are moved ahead of a warning.
  // Nothing when they are all moves and no node has room for them yet: the
  // team trains on where it is (MoveWaits).
  std::optional<Status> Recover(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator,
                                const std::map<int, std::string>& lost, const std::set<int>& moves);
  // Places the coordinator anew, under a new plan generation, its workers
  // staying where they are: its node was lost (`why`), or is leaving
  // (`moving`, ahead of the loss). The new one trains on from its workers'
  // copy of the model (core/model_takeover.h). Nothing when it is moving
  // and no node has room for it yet, as for Recover.
  std::optional<Status> MoveCoordinator(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator,
                                        const std::string& why, bool moving);
  // A move ahead of a warning that has no node to go to yet: nothing is lost
  // until the node goes, so the team trains on where it is, and the move
  // waits (said in the Running condition and, once, as an Event), looked at
  // again every --unschedulable-retry. Held Recovering instead, a cordon's
  // whole length read as a loss and was counted as a recovery's time
  // (found in review).
  void MoveWaits(Pass& pass, const char* event_reason, const std::string& message);
  // A running team given its next plan generation (`what` was lost or moved):
  // Recovering, with an Event, and Placed saying where `next` puts the team;
  // `recovery` counts against maxRecoveries, none for a move ahead of a loss.
  // `lost_since`: when the cluster says the team stopped being whole, which
  // the Running condition's transition (and so the recovery's time) keeps.
  Status Replanned(Pass& pass, const char* event_reason, std::optional<int> recovery, const std::string& what,
                   const JobPlan& next, const CoordinatorSeat& coordinator,
                   std::optional<kube::WallTime> lost_since = std::nullopt);
  // No node yet for what a recovery must place: Recovering with `message`
  // (an Event once), looked at again every --unschedulable-retry.
  Status AwaitRoom(Pass& pass, const char* event_reason, const std::string& message);
  // One more recovery, past spec.faultTolerance.maxRecoveries: the job is
  // Failed (RecoveriesExhausted) and true is returned.
  bool RecoveriesExhausted(Pass& pass, const std::string& what, int recoveries);
  // A running team that cannot go on: Failed for `why` (its reason), with a
  // Warning Event and a log line saying `message`.
  void EndFailed(Pass& pass, const char* why, const std::string& message);
  // A job that ended: Stalled and BandwidthDegraded no longer hold, and say what they last said.
  // Stalled and BandwidthDegraded, if True, turned False for `why` (the job
  // ended, or was suspended), saying what they last said.
  void SettleLinkConditions(Pass& pass, const char* why, const std::string& what);
  // A Warning Event for each worker the coordinator quarantined since the
  // status last said so (once: the status then carries it).
  void ReportQuarantines(Pass& pass);
  // Publishes on each worker's node what the coordinator measured of its link.
  void PublishMeasuredLinks(Pass& pass, const JobPlan& plan, const std::string& coordinator_node,
                            const Json& progress);
  MeasuredLinks Measured() const { return {wall_now_(), options_.measurement_max_age}; }
  // Creates the pods of `gang.missing` as `plan` places them.
  // They count on their nodes at once (the waiting line assumes them).
  Status CreateMissing(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator, const Gang& gang);
  // The same, a pod the API server refuses (a quota filled, a LimitRange)
  // said rather than returned: "" when every pod was made, else "a pod could
  // not be made: WHY" for the job's Running condition, with a Warning Event
  // where the stored status did not say it yet. The pass goes on and writes
  // the status, and the pods are made at a later look: returned as the
  // pass's error, nothing the pass had found was written - a recovery's
  // count, Recovering - and a job's status said nothing of the refusal
  // (found in review). A name another's object holds is still the pass's
  // error: the job fails for it.
  StatusOr<std::string> CreateMissingOrSay(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator,
                                           const Gang& gang);
  // "a pod could not be made: WHY" of `made`, failed, and its Event, as
  // above, where the server refused it (not a conflict, which back-off mends).
  std::string SayPodNotMade(Pass& pass, const Status& made);
  // The pods of an ended job that its cleanPodPolicy deletes.
  Status CleanPods(Pass& pass);
  // ... by `policy`, in `ns`: an invalid job's, which has no parsed spec.
  Status CleanPodsBy(Pass& pass, const std::string& policy, const std::string& ns);
  // In `ns`, or the job's.
  Status DeletePods(Pass& pass, const std::vector<std::string>& names, std::optional<std::string> ns = std::nullopt);
  // Every pod of the job not already going.
  Status DeleteAllPods(Pass& pass);
  // A gang that has not run torn down: its pods deleted, the job Pending
  // and holding nothing until it is placed again, `why` said (Placed and
  // Running, a Warning Event).
  Status TearDownGang(Pass& pass, const char* why, const std::string& message);
  // The objects a placed team's pods need: its Service, plan, output claim
  // and credentials.
  Status ApplyObjects(Pass& pass, const JobPlan& plan, const CoordinatorSeat& coordinator);
  // A pod waiting to mount a volume says nothing of it in its container's
  // state (the kubelet says so in an Event of the pod's): the job's files'
  // ConfigMap or claim missing, and the coordinator's output claim, are said
  // in `gang`'s held pods, as an image not pulled is; a claim made after the
  // pods is named their node.
  Status SayWhatThePodsLack(Pass& pass, const CoordinatorSeat& coordinator, Gang& gang);
  // The job's files' ConfigMaps and claims (FileVolumesOf) its namespace has
  // not, each as "FIELD's KIND NAME does not exist in namespace NS".
  StatusOr<std::vector<std::string>> MissingFileVolumes(const Pass& pass);
  // A FilesMissing Warning that `pod` waits for `missing`: once while the
  // words stay the same.
  void SayFilesMissing(Pass& pass, const std::vector<std::string>& missing, const std::string& pod);
  // The node a job's output volume is on, when on one: a claim not shared
  // (ReadWriteMany) that names its node (volume.kubernetes.io/selected-node,
  // as a local-path claim is given at its first placement). A job placed
  // anew, resumed, takes its coordinator there. An error: the claim could
  // not be read (not NotFound, which pins nothing).
  StatusOr<std::optional<TeamRequest::Pin>> OutputVolumeNode(const Pass& pass);
  Status ClaimOutputVolume(Pass& pass, const std::string& node);
  // A team's credentials (job_credentials.h): made sure of before any of its
  // pods is made (`making_pods`), else renewed when its status says they are
  // due; what they are goes into the status.
  Status KeepTeamCredentials(Pass& pass, const JobPlan& plan, bool making_pods);
  Status WriteStatus(Pass& pass);
  // The job's plan ConfigMap: from the plan informer's cache when there is
  // one (asking the API only when the job's status says it was placed and the
  // cache has none yet), else with a GET. NotFound when there is none.
  StatusOr<Json> PlanConfigMap(const JobObject& job, bool placed);
  // Writes the plan ConfigMap (create, or update from what is cached or read).
  Status WritePlanConfigMap(Pass& pass, const Json& config_map);
  // A PriorityClass's value; 0 for none, or one that does not exist. One
  // that cannot be read now is the value it last had: a lookup that failed
  // for a moment (a timeout, a 429) had put a job of a high class behind
  // every other until the next pass (found in review).
  int PriorityOfClass(const std::string& name);
  std::mutex priorities_mu_;
  std::map<std::string, int> priorities_;  // by PriorityClass: its value when last read

  kube::KubeClient& client_;
  kube::Store& jobs_;
  kube::Store& pods_;
  ProgressSource& progress_;
  EventRecorder& events_;
  LineLog& log_;
  std::function<kube::WallTime()> wall_now_;
  const ReconcilerOptions options_;
  // The waiting jobs in line and their reservation pass; placement's view of
  // the cluster, kept as the stores change.
  WaitingLine line_;
  kube::Store* plans_;  // the operator's ConfigMaps; null: read with a GET
  std::mutex published_mu_;
  // A reconcile that failed for a request the API server refused says so on
  // the job, once a refusal: `kubectl describe tj` showed nothing of a
  // PriorityClass that does not exist, the job stuck with no phase.
  void ReportRefusal(const Pass& pass, const Status& done);
  // A job that cannot be placed as its spec stands, and may be once the
  // cluster changes (a node labelled, a PriorityClass made): Pending,
  // Invalid for `why`, said once as a Warning Event, looked at again every
  // --unschedulable-retry.
  Status WaitInvalid(Pass& pass, const char* why, const std::string& message);
  // A placed job's spec edited: said once a generation (SpecNotApplied).
  void SayIfSpecNotApplied(Pass& pass, bool suspending);
  // What was said of a job before its status could record it: a reconcile
  // that fails is retried, and would say it again at every retry.
  std::mutex said_mu_;
  std::map<std::string, std::string> refused_;  // by job key: the refusal last said
  std::map<std::string, int64_t> noted_;        // by job key: the generation its notes were said of
  std::map<std::string, std::string> files_missing_said_;  // by job key: the FilesMissing last said
  // A status a pass that wrote the job's plan computed and could not store
  // (the API answered 5xx, the connection reset), by job key, with the job's
  // uid and the status it was computed on. The retry goes on from it while
  // the stored one is still that: it had started again from the stored
  // status, where the plan and pods were of the new generation, and with the
  // pods not yet in the cache placed the job again, two sets of workers
  // running until the cache caught up; a recovery's count was lost, past
  // maxRecoveries (found in review). Not an ended status: a job's pods go
  // by its cleanPodPolicy only once its end is stored.
  struct Unstored {
    std::string uid;
    Json stored, computed;
  };
  std::map<std::string, Unstored> unstored_;
  // Sets pass.status from unstored_ where it applies; keeps or forgets the
  // pass's own status by whether `written`.
  void TakeUnstored(Pass& pass);
  void KeepUnstored(const Pass& pass, const Status& written);
  // What each node's link measured since it was last published: the mean of
  // the readings goes on the node, not the one reading at the time (a
  // reading at a Wi-Fi trace's peak, 63 Mbit/s on a link of 32 on average,
  // was trusted for ten minutes: a new user's trial).
  struct LinkReadings {
    kube::WallTime published{};  // none yet: the epoch
    double up_sum = 0, down_sum = 0;
    int up_n = 0, down_n = 0;
  };
  std::map<std::string, LinkReadings> published_;
};

}  // namespace edgetrain::operator_

#pragma once
// A TrainingJob's status vocabulary: its phases, its condition types and the
// reasons the operator gives, named once for the operator, its tests and the
// docs (docs/operator.md). The CRD's status schema enumerates the same phases and
// types; a test holds the two together.

namespace edgetrain::api {

namespace phase {
inline constexpr const char* kPending = "Pending";       // not placed: waiting for room, or not runnable here
inline constexpr const char* kPlacing = "Placing";       // pods bound, not all running yet (the gang timeout runs)
inline constexpr const char* kRunning = "Running";       // the whole gang runs
inline constexpr const char* kRecovering = "Recovering"; // a member was lost; re-planning (the next issue)
inline constexpr const char* kSucceeded = "Succeeded";   // ended at its target or its budget
inline constexpr const char* kFailed = "Failed";
inline constexpr const char* kSuspended = "Suspended";   // spec.suspend: no pods, resumes from its checkpoint
}  // namespace phase

namespace condition {
inline constexpr const char* kPlaced = "Placed";
inline constexpr const char* kRunning = "Running";
inline constexpr const char* kStalled = "Stalled";
inline constexpr const char* kBandwidthDegraded = "BandwidthDegraded";
inline constexpr const char* kComplete = "Complete";
inline constexpr const char* kFailed = "Failed";
inline constexpr const char* kInvalid = "Invalid";
// A pipeline's head ran a step again without a lost device, or rebuilt a
// stage from its replica (docs/pipeline.md): True for the status interval
// that saw it, its message the totals since the job started.
inline constexpr const char* kReplaying = "Replaying";
}  // namespace condition

namespace reason {
// Invalid
inline constexpr const char* kInvalidSpec = "InvalidSpec";          // schema or cross-field rule; the message names the field
inline constexpr const char* kNotSupported = "NotSupported";        // valid, but asks what has not landed
inline constexpr const char* kNoMatchingNode = "NoMatchingNode";    // spec.placement.nodeSelector matches no node at all
inline constexpr const char* kNoPriorityClass = "NoPriorityClass";  // spec.placement.priorityClassName names none
inline constexpr const char* kInvalidModel = "InvalidModel";        // an agent loaded the module and refused it
// spec.parallelism.stages names layers the model, as its check timed it, has not
inline constexpr const char* kInvalidStages = "InvalidStages";
inline constexpr const char* kNameTaken = "NameTaken";              // a Service, ConfigMap, Secret or pod of the job's names is another's
// Placed
inline constexpr const char* kPlaced = "Placed";
inline constexpr const char* kUnschedulable = "Unschedulable";      // the gang does not fit now
inline constexpr const char* kGangTimeout = "GangTimeout";          // placed, but not all running in time: torn down
// placed, but a node of its pods was lost before the gang ran: torn down, placed again at once
inline constexpr const char* kNodeLost = "NodeLost";
// An Event: spec.output.volume's claim does not exist (its pod waits to mount it)
inline constexpr const char* kOutputClaimMissing = "OutputClaimMissing";
// An Event: a ConfigMap or claim with the job's own files (spec.data.volume,
// spec.model.torchscript.configMap) does not exist (its pods wait to mount it)
inline constexpr const char* kFilesMissing = "FilesMissing";
// An Event: a value the job's agents wrote (its /progress, a termination
// message) is of another type than edgetrain's agents write: its pass fails
inline constexpr const char* kAgentOutputUnreadable = "AgentOutputUnreadable";
inline constexpr const char* kSuspended = "Suspended";
inline constexpr const char* kCheckingModel = "CheckingModel";      // an agent is loading the TorchScript module first
inline constexpr const char* kModelChecked = "ModelChecked";        // (an Event) it loaded, and its size is known
inline constexpr const char* kCheckingLayers = "CheckingLayers";    // a pipeline's: an agent is timing the model's layers
inline constexpr const char* kLayersTimed = "LayersTimed";          // (an Event) they were timed: the stages can be cut
inline constexpr const char* kNoPipelineFits = "NoPipelineFits";    // no plan of the mode fits the placed devices' memory
inline constexpr const char* kPodsEnding = "PodsEnding";            // pods of an earlier plan (or a deleted job) still end
inline constexpr const char* kPlanDeleted = "PlanDeleted";          // (an Event) a placed job's plan ConfigMap is gone: placed again
// Running
inline constexpr const char* kStarting = "Starting";                // pods bound, not all running
inline constexpr const char* kTraining = "Training";
inline constexpr const char* kWaitingForTeam = "WaitingForTeam";  // every pod runs; the coordinator waits for its workers to connect
inline constexpr const char* kStopped = "Stopped";                  // the job has ended
// Stalled, BandwidthDegraded
inline constexpr const char* kWaitingOnLinks = "WaitingOnLinks";
inline constexpr const char* kLinksHealthy = "LinksHealthy";
inline constexpr const char* kLinkBelowPlan = "LinkBelowPlan";
inline constexpr const char* kLinkDown = "LinkDown";  // a worker out of its team, silent for the operator's --link-down-after
// The coordinator's /progress unanswered for --stalled-after: nothing says the team steps
inline constexpr const char* kProgressUnreadable = "ProgressUnreadable";
// Complete
inline constexpr const char* kTargetReached = "TargetReached";
inline constexpr const char* kBudgetSpent = "BudgetSpent";
inline constexpr const char* kEnded = "Ended";  // exit 0, but no result to say how
// Failed
inline constexpr const char* kCoordinatorFailed = "CoordinatorFailed";
inline constexpr const char* kRecoveriesExhausted = "RecoveriesExhausted";  // more losses than maxRecoveries
inline constexpr const char* kModelCheckFailed = "ModelCheckFailed";  // the module's check crashed, with no verdict
inline constexpr const char* kWorkersRefused = "WorkersRefused";  // every worker exited 2: its input is wrong (a NaN loss)
// Recovering
inline constexpr const char* kWorkerLost = "WorkerLost";    // a worker's pod failed, was evicted or its node lost
inline constexpr const char* kRecovering = "Recovering";    // a replacement is starting
inline constexpr const char* kRestarting = "Restarting";  // a pod runs, its agent is restarted in place by the kubelet
inline constexpr const char* kResuming = "Resuming";        // back from spec.suspend: its pods start again, no recovery
inline constexpr const char* kWorkerMoved = "WorkerMoved";  // moved off a node about to leave (a warning acted on)
inline constexpr const char* kCoordinatorLost = "CoordinatorLost";    // its pod was evicted or its node lost: placed anew
inline constexpr const char* kCoordinatorMoved = "CoordinatorMoved";  // moved off a node about to leave
inline constexpr const char* kNodeNotReady = "NodeNotReady";  // a node of the team is silent, within nodeLossGrace
// (an Event) the coordinator's /progress went back to an earlier iteration:
// what the team had trained since is lost (a coordinator placed anew whose
// workers' copy of the model went with their restarts, and no checkpoint).
inline constexpr const char* kProgressLost = "ProgressLost";
// (an Event) the coordinator took up the checkpoint its output folder held,
// at an iteration the job's status had not shown: a job applied again on the
// same volume and path goes on from the last one's, which nothing had said.
inline constexpr const char* kResumedFromCheckpoint = "ResumedFromCheckpoint";
// The team has left the node that was not ready (its pods replaced), and its
// links are not judged yet: BandwidthDegraded False until they are.
inline constexpr const char* kNodesReady = "NodesReady";
// A pipeline's device lost (its pod failed, went, or the head let it go):
// the head trains on without it, and it is not replaced.
inline constexpr const char* kStageDeviceLost = "StageDeviceLost";
inline constexpr const char* kStageDeviceRejoined = "StageDeviceRejoined";  // (an Event) back, in a stage again
inline constexpr const char* kStageDeviceReturning = "StageDeviceReturning";  // (an Event) its node is back: its pod made again
// Replaying
inline constexpr const char* kReplayed = "Replayed";      // (and an Event) a step run again, or a stage rebuilt
inline constexpr const char* kTrainingOn = "TrainingOn";  // no replay since the last status read
inline constexpr const char* kNothingLost = "NothingLost";
// (an Event) the coordinator turned a worker away for good: its pushes kept being refused
inline constexpr const char* kWorkerQuarantined = "WorkerQuarantined";
// (an Event) the API server refused what the operator asked for the job (a
// quota, its own RBAC): retried with back-off
inline constexpr const char* kRequestRefused = "RequestRefused";
// (an Event) what edgetrain validate says of the spec as a note, once a generation
inline constexpr const char* kSpecNote = "SpecNote";
// (an Event) the spec of a job that runs was changed: not applied until it is placed again
inline constexpr const char* kSpecNotApplied = "SpecNotApplied";
}  // namespace reason

}  // namespace edgetrain::api

#pragma once
// One stage of a synchronous pipeline (docs/pipeline.md): an agent with
// --role=stage that holds layers [first, end) of the model and trains them a
// step at a time, when the head says, over a stream to the head, which passes
// what it sends on to the neighbouring stages.
//
// A step is 1F1B over the step's micro-batches (core/pipeline_schedule.h):
// each forward takes the previous stage's output (the first stage reads its
// images from the data itself), each backward the next stage's gradient (the
// last stage starts from the loss on labels it reads itself); the first and
// last stages draw the same batches from the job's seed (core/batch_order.h).
// The stage's own optimizer moves its weights on the gradient of the whole
// batch, so every micro-batch saw the same weights and the pipeline trains as
// one device would; it does so when the head's next word commits the step,
// so that a step the head replays without a device lost elsewhere (a
// StageReplay: the same batch, this stage's group as it now is) starts from
// the same weights.
//
// Threads: the caller's computes; one receives and files what arrives; one
// sends, so a transfer on a slow link overlaps the next pass, and sends a
// Heartbeat when it has had nothing to send for a while.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <vector>

#include "agent/data/dataset.h"
#include "agent/telemetry/metrics.h"
#include "agent/torch/stage_trainer.h"
#include "agent/transport/link_gate.h"
#include "agent/transport/transport.h"
#include "core/bandwidth_trace.h"
#include "core/clock.h"
#include "core/job_plan.h"

namespace edgetrain::agent {

// Builds a device's trainer of layers [first, end): how it takes on the layers
// of a neighbouring stage whose only device was lost, or holds other layers
// when the head moves them between stages.
using LayerTaker = std::function<StatusOr<std::unique_ptr<StageTrainer>>(int first, int end)>;

// What a stage holds of its planned layers when its session with the head
// ends: the state committed at `step` and, if it had finished the next step
// and not yet been told to apply it, that step's gradient. A head that starts
// behind the stages (placed anew, or restarted on an older checkpoint)
// trains on from it (docs/pipeline.md, "A head that starts behind").
struct HeldLayers {
  int64_t step = 0;  // 0: nothing held
  v1::StageState state;
  std::vector<float> pending_gradient;  // empty: no step pending
  double job_elapsed_s = 0;  // the job's training time when the session ended, as the head last said and counted on
  double job_energy_j = 0;   // the job's energy, as the head last said it with a step
  // The replicas of neighbouring stages' layers it keeps, as the head
  // relayed them, by their layers [first, end): a head that starts behind
  // rebuilds such a stage from one when the stage's device was lost with the
  // old head.
  std::map<std::pair<int, int>, v1::StageReplica> replicas;
};

struct StageOptions {
  int rank = 0;
  CoordinatorConnector* head = nullptr;  // required
  // Its emulated uplink, stage to head, which it shapes; none: unshaped.
  std::optional<BandwidthTrace> uplink;
  // One try to reach the head (--connect-attempt), and how long it keeps
  // trying at the start (FaultToleranceSpec::ReachGrace, as a worker does).
  Duration connect_attempt = std::chrono::seconds(1);
  Duration connect_timeout = FaultToleranceSpec{}.ReachGrace();
  // How often a stage waiting for a neighbour looks whether it was told to
  // stop (SIGTERM), which no condition variable hears.
  Duration cancel_recheck = std::chrono::milliseconds(100);
  // A Heartbeat to the head whenever the stage has sent nothing for this
  // long (--heartbeat): how the head tells a device behind a dead link, whose
  // stream TCP would keep open for minutes, from one waiting on a neighbour.
  Duration heartbeat = std::chrono::milliseconds(250);
  // A message larger than this is announced by a Heartbeat that says its
  // size, so that the head does not take the time it is on the wire, when no
  // heartbeat can be sent, for silence.
  int64_t announce_bytes = 16 * 1024;
  // Builds this device's trainer of layers [first, end) when the head gives
  // it other layers (a lost neighbour's, or layers moved between stages);
  // none: it cannot, and the job ends there.
  LayerTaker take_layers;
  // A gate on its uplink that a fault-injection test cuts (a device behind a
  // wall); none: the link is never cut.
  LinkGate* gate = nullptr;
  // The CPU time the calling thread has used so far, in seconds, where the
  // passes run on it alone (one intra-op thread, the default: PassCpuClock).
  // The emulated device slows a pass by its cost on it (core/emulated_pass.h),
  // and a step's work (StepDone.work_seconds, what the head learns the
  // device's pace from) is measured on it, with what a device of its own
  // would take beyond it (its slowdown's share): on one machine whose cores
  // several emulated devices share, their wall time counts the others' work
  // as this one's (a stage beside two other agents on 2 cores held its steps
  // 2.2 times what the profile predicted; alone, 1.3), and it is the CPU time
  // that moves with the device. None: the clock's seconds (the simulated
  // clock's tests, and passes spread over several threads).
  std::function<double()> thread_cpu_seconds;
  // When the device's run began, which its link's trace and its profile's
  // slowdown changes count from; none: when RunStage is called. An agent
  // that says hello again after the head cut it off keeps its own.
  std::optional<TimePoint> started;
  // Told once the head has welcomed this device (its hello answered): an
  // agent says hello again only after a session the head took it into.
  std::function<void()> on_welcome;
  // What it holds of its planned layers from a session before, offered in
  // its hello; at the end of this session, what it then holds. None: a
  // stage that keeps nothing across sessions.
  HeldLayers* held = nullptr;
  // Its device's modelled energy by state, exported as each step is done;
  // none: not exported (the simulated clock's tests).
  DeviceEnergyMetrics* energy_metrics = nullptr;
};

struct StageSummary {
  int64_t steps = 0;
  double compute_s = 0;  // forward and backward passes, the emulated slowdown included
  double idle_s = 0;     // within steps, waiting for a neighbour's micro-batch: the bubbles
  int64_t activation_bytes_sent = 0;
  std::string stop_reason;
};

// The stage of `plan.pipeline` that holds `options.rank`, run until the head
// says stop or `cancel` is set. A stream that breaks ends the stage with
// Unavailable.
StatusOr<StageSummary> RunStage(const JobPlan& plan, const StageOptions& options, StageTrainer& stage,
                                const Dataset& train, Clock& clock, std::ostream& log,
                                const std::atomic<bool>& cancel);

// RunStage, and again whenever a session the head took it into ends with
// its stream broken (taken for lost while silent and cut off, or its head
// gone): with spec.faultTolerance.replay on, it says hello again on a fresh
// trainer of its planned layers (`fresh_trainer`), offering the state it
// held of them, and the head takes it back between steps, or, a head that
// started behind, trains on from that state (docs/pipeline.md). A head never reached, or that
// refuses it, ends it as RunStage does; after a session, the head is tried
// for `head_return_grace` (at least options.connect_timeout), which a head
// restarted in its pod outlasts. `options.started`, unset, is set to now, so
// that its link and slowdown count from its first session.
using TrainerMaker = std::function<StatusOr<std::unique_ptr<StageTrainer>>()>;
StatusOr<StageSummary> RunStageRejoining(const JobPlan& plan, StageOptions options, const TrainerMaker& fresh_trainer,
                                         const Dataset& train, Clock& clock, std::ostream& log,
                                         const std::atomic<bool>& cancel, Duration head_return_grace);

}  // namespace edgetrain::agent

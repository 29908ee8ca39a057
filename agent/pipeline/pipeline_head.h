#pragma once
// The head of a synchronous pipeline: the coordinator agent of a pipeline
// job (docs/pipeline.md). To the job driver it is the engine — a step per
// Advance, its evaluations, checkpoints and final model — and to the stages
// the other end of their streams: it gathers them, tells each when to run a
// step, and passes each micro-batch's activations on to the next stage and
// their gradients back to the one before. Between steps it can ask the
// stages for their weights and optimizer state, which together are a job of
// one's, in the same layout: so it evaluates and checkpoints the whole model,
// and a pipeline job resumes from its checkpoint as any job does.
//
// A stage on a group of devices (hybrid) has each micro-batch dealt among
// them by speed: the head joins the parts one group sends and deals the whole
// out to the next, and sums a group's gradients at the flush.
//
// Replay: a step is committed only when the head's next word reaches the
// stages, so when a device of a stage of several is lost, the other devices
// of its stage still hold its layers, and the head has every stage run the
// step again on the survivors, from the weights before it, under a new
// attempt number that fences off whatever of the old attempt is still on its
// way. A stage whose only device is lost is rebuilt on its neighbour (the
// stage before it, or after the first): those devices take its layers, their
// own weights kept and its from the replica each stage's first device sends
// the head every spec.faultTolerance.replicateEvery steps, and the step is
// replayed on the stages as they now are. What is lost is its layers'
// updates since the replica. With no replica yet, the run ends (Unavailable).
//
// A device is lost when its stream ends, when its pass runs far past what
// its passes have taken while its heartbeats still come (hung: a compute
// stuck behind a link that lives), or when it goes silent mid-step:
// nothing heard from it, not even the Heartbeat a stage sends when it has
// nothing else to send, past a deadline learned from the gaps between its
// messages (core/arrival_deadline.h), as behind a wall whose link drops
// everything without closing the stream, which TCP would take minutes to
// tell. A stage announces a large message (no heartbeat gets out while it is
// on the wire), and the head counts no silence for the time such transfers
// take on its uplink. A silent device's stream is cut.
//
// A head that starts behind its stages (placed anew, or restarted on an
// older checkpoint) trains on from what they hold: each stage keeps its
// committed state across a head that went away and offers it in its hello,
// and when every stage has a device at the same step, past the head's own,
// the head takes theirs, and the job's clock with it.
//
// Threads: each device's stream is served on its own (Serve), relaying as it
// reads; the driver's thread sends commands and waits for the stages' word.

#include <atomic>
#include <deque>
#include <map>
#include <functional>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "agent/data/dataset.h"
#include "agent/settled_buffers.h"
#include "agent/pipeline/stage_link.h"
#include "agent/pipeline/step_covers.h"
#include "agent/telemetry/metrics.h"
#include "agent/torch/trainer.h"
#include "agent/training_engine.h"
#include "agent/transport/transport.h"
#include "core/clock.h"
#include "core/job_plan.h"
#include "core/device_pace.h"
#include "core/pipeline_cost.h"
#include "core/stage_rebalance.h"
#include "core/step_window.h"
#include "core/step_orders.h"

namespace edgetrain::agent {

// Each stage's parameter tensors, in stage order (StageTrainer::ParameterShapes()).
using StageShapes = std::vector<std::vector<std::vector<int64_t>>>;

class PipelineHead final : public TrainingEngine, public WorkerSessions {
 public:
  // `model` is the whole model: it holds the weights the stages start from
  // (the same seed builds both) and evaluates and saves what they trained.
  PipelineHead(const JobPlan& plan, Trainer& model, const Dataset& test, int64_t train_size, StageShapes shapes,
               Clock& clock, std::ostream& log);
  ~PipelineHead() override;

  // TrainingEngine.
  int64_t SamplesPerEpoch() const override { return train_size_; }
  Status Restore(const JobCheckpoint& checkpoint) override;
  // Every stage, or Unavailable once nodeLossGrace has passed without one.
  Status Start(const std::atomic<bool>& cancel) override;
  // The job's clock as the stages it took over from counted it; none: it
  // took over from none.
  std::optional<TimePoint> JobClockStart() override;
  // One step of the whole pipeline: every stage's 1F1B over the batch's
  // micro-batches, replayed on the survivors as often as a device is lost.
  // Unavailable when a stage's only device is lost and cannot be restored.
  Status Advance() override;
  JobProgress Progress() override;
  StatusOr<double> Evaluate() override;
  // Training samples to settle the model's buffers on before each
  // evaluation and save (agent/settled_buffers.h): none, for a model
  // without buffers.
  void SettleBuffersOn(Dataset samples) { settled_.Use(std::move(samples), plan_.spec.data.batch_size); }
  int64_t TestSamples() const override { return test_.size(); }
  std::optional<double> EvaluationGuess() const override;
  void Snapshot(JobCheckpoint& into) override;
  Status Finish(FinalModel final) override;
  Status SaveModel(const std::string& path) override;

  // Where its per-stage metrics go (set before Start); none: not exported.
  void SetMetrics(PipelineMetrics* metrics) { metrics_ = metrics; }

  // Layers moving between stages as their devices drift (core/stage_rebalance.h).
  struct Rebalancing {
    // Each layer's parameter tensors, in order: a stage's are its layers'.
    std::vector<std::vector<std::vector<int64_t>>> layer_shapes;
    int every = 0;          // steps each measurement of the stages spans; 0: layers never move
    // ... unless this long passes first (at least two steps): a device
    // slowed eightfold made 100 steps outlast the rest of a run (a new
    // user's trial); zero: steps alone.
    Duration within = Duration::zero();
    double min_gain = 0.15;  // the least speed-up a move must promise the slowest stage (0.15: 15% faster)
  };
  // Set before Start.
  void SetRebalancing(Rebalancing rebalancing);

  // When a device whose heartbeats still come is taken for hung: the pass
  // its heartbeats say is under way has run past its deadline
  // (core/pass_deadline.h), `factor` times what its passes have taken and
  // at least `floor`; the grace (or the floor, if longer) before its first
  // step. Set before Start.
  struct HungPasses {
    double factor = 8;
    Duration floor = std::chrono::seconds(10);
  };
  void SetHungPasses(HungPasses hung) { hung_ = hung; }

  // A device of a group that runs its share `factor` times slower than the
  // group's fastest, against the speeds the shares are dealt by, in two
  // steps running (or `factor` squared in one), holds its whole stage back: it is let go of, as lost,
  // and the others of its group take its share (no layer is lost). It, or a
  // device taken for hung, may rejoin no sooner than `rejoin_after` later,
  // twice that after a second time, and so on: one that comes back as slow
  // would otherwise hold the stages back again at once. Set before Start.
  struct Stragglers {
    double factor = 8;
    Duration rejoin_after = std::chrono::minutes(1);
  };
  void SetStragglers(Stragglers stragglers) { stragglers_ = stragglers; }

  // How much longer than nodeLossGrace a head that starts again (a
  // checkpoint to resume, or a plan of a later generation: placed anew)
  // waits for its stages at Start: a stage whose old head's node died hears
  // of it only when its stream fails, by gRPC keepalive (AgentFlags::keepalive;
  // the gather's default is AgentFlags::RestartGather). Set before Start.
  void SetRestartGather(Duration more) { restart_gather_ = more; }

  // The mean training loss of the last step's batch.
  double LastStepLoss() const {
    std::lock_guard lock(mu_);
    return last_step_loss_;
  }

  // Steps the head has committed, and the step of its replica of stage `s`
  // (0: none yet): what a loss of the stage's only device would lose is the
  // difference. Replicas are paced so as never to stall the pipeline, so on
  // a busy machine one can be a step or more behind.
  std::pair<int64_t, int64_t> ReplicaLag(size_t s) const {
    std::lock_guard lock(mu_);
    const int64_t replica = s < replicas_.size() && replicas_[s] ? replicas_[s]->step() : 0;
    return {step_, replica};
  }

  // WorkerSessions.
  Status Admit(const v1::Hello& hello) override;
  Status Serve(const v1::Hello& hello, WorkerStream& stream) override;

 private:
  using Link = StageLink;
  // What the members of a group sent of one micro-batch or one gradient, until
  // every one has.
  struct Parts {
    std::vector<std::optional<v1::MicroBatch>> micro_batches;
    std::vector<std::optional<std::string>> gradients;
    // By member, under gradientEachMicroBatch: its parts summed until its last
    // gradient (`gradients`) completes them, and the micro-batches they were of.
    std::vector<std::vector<float>> early;
    std::vector<std::set<int>> early_micro_batches;
  };
  // Steps that make an epoch, each epoch's last short where the batch does
  // not divide the data (core/batch_order.h).
  int64_t StepsPerEpoch() const;
  // `from`, if given, is the device whose message this forwards: not
  // judged silent while the send waits on `rank`'s link.
  Status SendTo(int rank, const v1::CoordinatorMessage& message, std::optional<int> from = std::nullopt);
  // Each (rank, message) sent; a rank whose stream fails is lost. Without mu_.
  void SendOrLose(const std::vector<std::pair<int, v1::CoordinatorMessage>>& commands);
  // A device a send to failed: lost, and said so, once.
  void LoseOnSend(int rank, const Status& sent);
  // A micro-batch part from `rank`, bound for the next stage (forward) or the one before.
  Status Relay(int rank, bool forward, v1::MicroBatch part);
  Status SumGradient(int rank, v1::GroupGradient part);
  // Every stage's state, fetched and joined into the whole model's.
  StatusOr<JobCheckpoint> FetchState();
  // FetchState at most once a step: the driver often evaluates and
  // checkpoints at the same step, and Finish follows the last one.
  StatusOr<JobCheckpoint> StateNow();
  Status LostLocked() const;
  // Whether the stages here hold the model further along than the head
  // (placed anew, or restarted on an older checkpoint or none): the step
  // every stage has a device to train on from, the latest such, if past
  // step_. Each device offers the step its planned layers were committed at,
  // or the one after, its gradient pending (Hello.model_clock). A stage none
  // of whose devices is here (lost with the old head) is rebuilt on its
  // neighbour from the replica of it the neighbour's devices keep: `rebuilt`,
  // by stage, that replica's step.
  struct Takeover {
    int64_t step = 0;
    std::map<size_t, int64_t> rebuilt;
  };
  std::optional<Takeover> TakeoverLocked() const;
  // Trains on from the stages' state at `takeover`'s step (Start, the
  // stages gathered): its step, samples and clock are the stages', each
  // group keeps the devices that hold that step (and, hosting a stage to
  // rebuild, its replica), and the stages to rebuild are rebuilt from the
  // replica their neighbours keep when their state is next fetched.
  void TakeOverLocked(const Takeover& takeover);
  // Whether `link` can train on from step `at`, and, if stage `s` is to be
  // rebuilt on its stage from the replica it keeps, keeps that one (of step
  // `replica_step`).
  bool HoldsLocked(const Link& link, int64_t at, std::optional<size_t> s = std::nullopt,
                   int64_t replica_step = 0) const;
  // The job's training time now: the checkpoint's, or the stages' taken
  // over, counted on.
  double JobElapsedLocked() const { return ToSeconds(clock_.Now() - job_clock_start_); }
  // The job's modelled energy: every device's that trained, those lost
  // mid-run included (their joules were spent), and the runs' before that
  // this one's devices do not carry.
  double JobEnergyLocked() const;
  // Every lost device out of its stage, the others of which take its share
  // from the next attempt on; a stage left with none is restored.
  Status RegroupLocked();
  // Devices of a group lost mid-step of `step`, each covered by the fastest
  // of its group left: what to send it (the StageCover, then what the lost
  // one was dealt so far); a device that had sent all it owed is covered by
  // none. None when a loss cannot be covered, and the step runs again on
  // every stage: a stage's only device, one covering another, or one of the
  // last stage whose shares' loss went with it.
  std::optional<std::vector<std::pair<int, v1::CoordinatorMessage>>> CoverLostLocked(int64_t step);
  // Whether stage `s`, whose devices are all lost (`kept`: each stage's
  // left, `emptied`: the stages before it left with none), can be rebuilt:
  // Unavailable, saying why, when not.
  Status CanRestoreLocked(size_t s, const std::vector<std::vector<int>>& kept,
                          const std::vector<size_t>& emptied) const;
  // Stage `s`, whose only devices (`lost`) are gone, rebuilt on its
  // neighbour from the head's replica of it.
  void RestoreStageLocked(size_t s, const std::vector<int>& lost);
  // The stage that takes stage `s`'s layers: the one before, or after the first.
  static size_t NeighbourOf(size_t s) { return s > 0 ? s - 1 : s + 1; }
  // A message from `link` arrived: when it was last heard, and what an
  // announced transfer tells of its uplink.
  void HeardLocked(Link& link, const v1::WorkerMessage& message);
  // Whether `rank` is still in a stage (not let go of as lost).
  bool MemberLocked(int rank) const;
  // A part of a stage's replica: the replica is kept once its parts are all in.
  void TakeReplicaPartLocked(Link& link, v1::ReplicaPart part);
  // The devices that keep a copy of `link`'s stage's replicas: those of the
  // stage that would take its layers (NeighbourOf), once the stages are welcomed.
  std::vector<int> ReplicaKeepersLocked(const Link& link) const;
  // A stage's replica, kept if it is of the layers the stage holds and newer.
  void KeepReplicaLocked(const Link& link, v1::StageReplica replica);
  // Every member that `owes` the head a word and is silent past its deadline
  // is lost. Returns when to look again: the earliest deadline of the rest.
  TimePoint LoseSilentLocked(const std::function<bool(const Link&)>& owes);
  // Cuts the streams of members lost while their streams are open (silent).
  void CutLostLocked();
  // What losing `link` would cost, as a silence (or a pass) worth waiting
  // out: nothing for one of a group, whose others hold its layers; for a
  // stage's only device, the time its stage's updates since its replica took
  // to train (they are lost with it), at most the grace; the grace when its
  // loss would end the job (no replica, or no other stage to rebuild it on).
  // A 5 s pause of the only device of a one-stage pipeline failed the job
  // (a new user's trial).
  Duration LossCostLocked(const Link& link) const;
  // The devices of `stage`'s group not lost.
  int LiveInStageLocked(int stage) const;
  // What `link`'s passes take is learned afresh: its layers changed, or a
  // new session began (the grace until a step of it is learned).
  void RelearnPassesLocked(Link& link) const;
  // Device `rank` takes layers `now` where it held `was`: its pace carries
  // over as its own cost a step (core/device_pace.h, Carry).
  void CarryPaceLocked(int rank, std::pair<int, int> was, std::pair<int, int> now);
  // A device let go of for how it ran (hung, or a straggler): when it may
  // rejoin, each time twice as late (Stragglers::rejoin_after).
  void HoldBackLocked(Link& link);
  // `link` let go of for how it ran (a straggler, or left out of a layout),
  // from now, and held back; its stream is cut by the next CutLostLocked.
  void LetGoLocked(Link& link);
  // How far a device's compute must move within a measurement to end it:
  // twice the least gain a move must promise (drift, not noise).
  double DriftFactor() const { return 1 + 2 * rebalancing_.min_gain; }
  // A measurement of the stages' compute begins after this step.
  void StartMeasureLocked();
  // At the end of a measurement: the stages' compute a step since its start
  // (since `drifted`'s compute changed, when that ended it), and the cuts
  // that would pace them better (proposed_), or the planner's layout over
  // the same devices at the paces they measured, when it beats those cuts
  // (relayout_), if any.
  void MeasureStagesLocked(std::optional<int> drifted);
  // Moves layers to the proposed cuts: each stage whose layers change is
  // sent their state, as the stages committed it (`state`, the whole model's).
  void MoveLayersLocked(const JobCheckpoint& state);
  // Each stage's place and layers as they now are, with the state of layers it takes.
  v1::StageLayers LayersOfLocked(size_t s) const;
  // Between steps, what each member is told of the stages as they now are.
  std::vector<std::pair<int, v1::CoordinatorMessage>> LayersCommandsLocked() const;
  // Devices lost and back, between steps: each joins the stage that now
  // holds the first of the layers it was planned with, as one more device
  // of its group, from the stages' committed state; the next step goes to
  // the groups as they then are.
  void Rejoin();
  // Devices connected again that are in no stage.
  std::vector<int> ReturningLocked() const;
  // What each member is told to run: the step, or its replay on the groups as they now are.
  std::vector<std::pair<int, v1::CoordinatorMessage>> StepCommandsLocked(int64_t step, bool replay) const;
  // Once devices are lost, with what the plan was planned from: the
  // micro-batches a step is cut into chosen again by the planner's cost model
  // for the groups and layers as they now are, and its prediction for them.
  // A one-stage pipeline left of two no longer fills and drains, and its
  // passes of a few samples each would pay their fixed costs for nothing.
  void ReplanLocked();
  // "0-3 | 4-8 (conv1-conv4 | conv5-classifier)": each stage's layers, first
  // and last, and their names where the plan's profile gives them.
  std::string CutsSaidLocked(const std::vector<std::pair<int, int>>& cuts) const;
  // The stages as they are now: each one's layers and group.
  std::vector<PipelineStage> StagesLocked() const;
  // The planner's problem for the devices as they have run: each at its pace
  // in the run's steps against the profile's prediction, and the head's word
  // to the stages as the steps took it. `paces`: the paces it counted, by rank.
  PipelineProblem PacedProblemLocked(std::map<int, double>& paces) const;
  // After a loss or a device back, between steps: the planner over the
  // devices in the stages (groups and cuts, which a loss otherwise leaves as
  // the plan had them, a lost stage's layers on its neighbour), and, if its
  // best promises more than the stages as they are by the least gain a layer
  // move must (Rebalancing::min_gain) and uses every device in the stages,
  // the stages laid out so: every device sent its new stage's layers whole,
  // as the stages committed them.
  void RegroupByThePlanner();
  // A layout the planner (or a measurement) chose: the plan, the pace it
  // planned each device at, by rank, which deals its micro-batches, and
  // what it counted for the head's word and the stages' answers a step.
  struct Relayout {
    PipelinePlan plan;
    std::map<int, double> paces;
    double orders_s = 0;
  };
  // The planner's best over the members, its devices named by rank, if it
  // beats the stages as they are; none without what the plan was planned
  // from, or with layers that never move (Rebalancing::every 0).
  std::optional<Relayout> BetterPlanLocked();
  // The planner's best over the members of `problem` (the devices in the
  // stages), its devices named by rank; none, said why, if it has none.
  std::optional<PipelinePlan> PlanOverMembersLocked(const PipelineProblem& problem);
  // The layout measured fastest since the last drift, if it measured faster
  // than `now_s` a step by the least gain a move must promise and its
  // devices are all members, as a plan (its cost `model`'s).
  std::optional<PipelinePlan> FastestMeasuredLocked(const PipelineCostModel& model, double now_s) const;
  // The members in no stage of `plan`.
  std::vector<int> LeftOutLocked(const PipelinePlan& plan) const;
  // Whether every device of `plan` is a member, none lost, and no member lost.
  bool AllThereLocked(const PipelinePlan& plan) const;
  // The stages laid out as `relayout`'s plan says, every device sent its new
  // stage's layers whole from `state` and dealt micro-batches at its pace
  // there (1 where none); a member the plan leaves out is let go of as a
  // straggler, and may rejoin as stragglers do.
  void LayOutLocked(const Relayout& relayout, const JobCheckpoint& state);
  // "layers 0-1 on ranks 0,1 | layers 2-3 on rank 2".
  std::string DescribeStagesLocked() const;
  // The part of the whole model's state (a checkpoint, the stages' as fetched)
  // that floats [float_at, float_at + floats) and optimizer rows [row_at,
  // row_at + rows) hold: a stage's, as it installs it. Moments empty for an
  // optimizer without them stay empty; rows past the state's are left out.
  static v1::StageState SliceOf(const JobCheckpoint& whole, int64_t float_at, int64_t floats, size_t row_at,
                                size_t rows);
  // Layers [first, end)'s part of `state` (the whole model's), one row a tensor.
  v1::StageState LayersStateLocked(const JobCheckpoint& state, int first, int end) const;
  // Those layers, for a device to take whole.
  v1::StageLayers WholeLayersLocked(const JobCheckpoint& state, int first, int end) const;
  // A replica of `committed`, of the step last committed.
  v1::StageReplica ReplicaNowLocked(const v1::StageState& committed) const;
  // The parameter tensors of layers [first, end).
  StageShapes::value_type ShapesOfLayers(int first, int end) const;
  // Whether `state` is the whole model's, as the layers' offsets say.
  bool FitsLayersLocked(const JobCheckpoint& state) const;
  // A step as the stages deal it: by stage, by device of its group, the
  // samples of each micro-batch it passes.
  using Passes = std::vector<std::vector<std::vector<int64_t>>>;
  Passes PassesLocked(int64_t samples) const;
  // A step run plainly of `samples`: each member's work, as its answer said,
  // against the cost model's prediction for its layers and shares.
  void ObservePaceLocked(const Passes& passes);
  // At the end of a measurement, for each group of several devices whose
  // compute in the window (`computed`, by rank) of the shares they were
  // dealt (`passes`) says that dealing by what each computed a second would
  // make the group's slowest more than Rebalancing::min_gain faster: its
  // micro-batches are dealt so from the next step (a device slowed fourfold
  // in a group, under the straggler factor, paced its whole stage; a new
  // user's trial). Whether any was.
  bool RedealLocked(const Passes& passes, const std::map<int, double>& computed);
  // After a step done without a loss: every device of a group that ran its
  // share far slower than its group's fastest in two steps running (or far
  // slower still in one; not in its first steps of a session) is let
  // go of (Stragglers), its stream cut.
  void LetGoOfStragglersLocked(const Passes& passes);
  // Each device's share of the step, counted on its link; a lost device's
  // that another of its group covered, on the cover's.
  void CountSharesLocked(const Passes& passes);

  const JobPlan& plan_;
  Trainer& model_;
  const Dataset& test_;
  SettledBuffers settled_;
  const int64_t train_size_;
  StageShapes shapes_;  // by stage, as the stages now are
  Clock& clock_;
  // A line of the log, written whole at the end of the statement that makes
  // it: a stream shared by threads is corrupted by writes that interleave.
  class LogLine {
   public:
    LogLine(std::mutex& mu, std::ostream& out) : mu_(mu), out_(out) {}
    ~LogLine() {
      std::lock_guard lock(mu_);
      out_ << line_.str();
    }
    template <typename T>
    LogLine& operator<<(const T& value) {
      line_ << value;
      return *this;
    }

   private:
    std::mutex& mu_;
    std::ostream& out_;
    std::ostringstream line_;
  };
  LogLine Log() { return LogLine(log_mu_, log_); }

  std::ostream& log_;  // written through Log(): gRPC handlers and the driver write to it
  std::mutex log_mu_;

  mutable std::mutex mu_;
  ClockCondition changed_;
  std::vector<std::unique_ptr<Link>> links_;  // by rank
  std::vector<std::vector<int>> groups_;      // by stage: its ranks
  std::vector<int> members_;                  // every rank in a stage; a plan may leave devices out, a loss take them
  std::vector<std::vector<double>> speeds_;   // by stage: its devices' speeds, which deal micro-batches
  std::vector<std::pair<int, int>> layers_;   // by stage: its layers [first, end)
  // By stage: the head's copy of its weights and optimizer state, from its
  // replicas (spec.faultTolerance.replicateEvery), to rebuild it from.
  std::vector<std::optional<v1::StageReplica>> replicas_;
  // By stage: the layers it takes this step, of a stage whose only device was lost.
  std::vector<std::optional<v1::StageLayers>> taken_;
  bool relaid_ = false;  // the stages changed this step: its replays say how they now are
  // What the plan was planned from, for re-planning; none: a layout by hand.
  std::optional<PipelineProblem> problem_;
  std::optional<PipelineCostModel> cost_model_;  // of *problem_, which it refers to
  int micro_batches_ = 1;  // a step's, as last planned
  double step_s_ = 0;      // what a step has taken, smoothed
  Rebalancing rebalancing_;
  HungPasses hung_;
  Stragglers stragglers_;
  Duration restart_gather_ = std::chrono::seconds(30);
  // Where each layer's floats and optimizer rows begin in the whole model's
  // state, and where the last ends (from rebalancing_.layer_shapes).
  std::vector<int64_t> layer_float_at_, layer_row_at_;
  int64_t measured_from_ = 0;            // the step the stages' measurement began after
  TimePoint measured_since_{};           // and when
  double measured_step_s_ = 0;            // the steps' own seconds since
  // By rank: its compute seconds at the last step's end; empty while no
  // measurement runs (before the first step's end, and after a move until
  // the step that carries it has run).
  std::vector<double> last_compute_;
  std::vector<StepWindow> window_steps_;  // by rank: its compute each step since the measurement began
  bool after_drift_ = false;              // the last measurement was ended by a drift
  int64_t state_request_ = 0;             // the number of the stages' state last asked for
  std::optional<StageCuts> proposed_;     // cuts to move layers to before the next step
  std::optional<Relayout> relayout_;  // a measurement's layout, to lay out before the next step
  bool regroup_due_ = false;  // a loss or a device back since the last step: the planner runs again before the next
  // Each layout the stages were measured in since the last drift: their
  // seconds a step. A layout is the micro-batches a step is cut into, and
  // each stage's layers [first, end) and group.
  using Layout = std::pair<int, std::vector<std::tuple<int, int, std::vector<int>>>>;
  static Layout LayoutOf(std::span<const PipelineStage> stages, int micro_batches);
  std::map<Layout, double> measured_layouts_;
  std::vector<std::pair<int, int>> said_stay_for_;  // the cuts the log last said stay, and why
  std::map<std::tuple<bool, int64_t, int, int>, Parts> parts_;  // (forward, step, micro-batch, to stage)
  std::map<std::pair<int, int64_t>, Parts> gradients_;          // (stage, step)
  StepCovers covers_;  // of this attempt: what was dealt and sent, and who covers a device lost
  std::optional<JobCheckpoint> restored_;
  std::optional<JobCheckpoint> final_;  // the model and optimizer kept once finished
  std::optional<JobCheckpoint> fetched_;  // the stages' state as last fetched, at step fetched_step_
  int64_t fetched_step_ = -1;
  bool finished_ = false;
  // A stage's pass the user's module raised on (v1::StageFailed): the job's
  // fault, which Advance fails with, the step it came in or the next.
  std::optional<Status> module_failed_;
  bool welcomed_ = false;  // Start has welcomed the stages: a device lost after waits to be let go of
  TimePoint job_clock_start_{};  // when the job's training clock read 0, as Start found it
  // The step this run began at (a resumed one's checkpoint's, or the
  // stages' taken over): the head holds that step's model until it fetches
  // the stages' state.
  int64_t started_step_ = 0;
  bool taken_over_ = false;      // Start trained on from the stages' state, and their clock
  std::vector<int> rejoin_after_rebuild_;  // Start's: devices here of a stage it rebuilt, which rejoin after
  // Replica parts on their way to the devices that keep them, sent by a
  // thread of their own (RelayReplicas), at most kRelaysQueued at once: sent
  // from the Serve thread of the stage whose replica it is, a keeper's slow
  // or dead link held that thread, its stage's messages went unread, and
  // that stage was taken for lost in its keeper's place.
  struct Relayed {
    int rank = 0;
    v1::CoordinatorMessage message;
  };
  static constexpr size_t kRelaysQueued = 256;
  std::deque<Relayed> relays_;
  bool relays_end_ = false;
  ClockThread relayer_;
  void RelayReplicas();
  // Ends the relayer's thread, and waits for it (without mu_).
  void EndRelays();
  int64_t step_ = 0;
  int64_t samples_ = 0;
  // Of the job's energy in the checkpoint resumed, what no device of this
  // run carries on (the devices of another profile): the job's all the same.
  double departed_energy_j_ = 0;
  // And its bytes, which go on over every run as its energy does.
  int64_t departed_bytes_sent_ = 0, departed_bytes_received_ = 0;
  double smoothed_loss_ = -1;
  double last_step_loss_ = 0;
  int in_flight_ = 0;  // micro-batches between the first stage's forward and its backward
  int attempt_ = 0;    // of step_ + 1: what the stages send of another is dropped
  bool regrouped_ = false;  // since the last step: the next is sent as a replay, with the groups
  // What the head's word and the stages' answers cost a step in this run,
  // learned from the steps run without a loss or a change between them.
  StepOrders orders_;
  std::optional<TimePoint> last_word_at_;  // the last step's word, that step run plainly
  double last_held_s_ = 0;                 // that step's, of the stage that answered last
  // How each device has run its own part of the steps against the cost
  // model's prediction, learned from the same steps, for the re-plans too.
  DevicePace pace_;
  JobProgress::Replays replays_;
  PipelineMetrics* metrics_ = nullptr;
};

}  // namespace edgetrain::agent

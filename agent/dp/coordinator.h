#pragma once
// The coordinator of row-granular data parallelism — ROG's parameter server —
// as the TrainingEngine its job driver advances (agent/job_driver.h).
//
// It keeps the team's state under one mutex and leaves each decision on it to
// a policy of core/:
//   core/team_membership.h   who is in, from which iteration: the rendezvous,
//                            counting out, rejoining, stale streams and welcomes
//   core/model_takeover.h    which worker's copy of the model a coordinator
//                            that starts behind its team trains on from
//   core/row_aggregator.h    the global model: gradients gathered row by row,
//                            the optimizer's step when a row's clock moves
//   core/round_deadline.h    policy deadline: when a round closes without
//                            the workers still out
//   core/staleness_ledger.h  who has contributed what to every row
//   core/downlink_planner.h  which rows each worker is sent, and how
//   core/team_accounts.h     what each worker has done, for the job's progress
// Streams and threads are its service's (coordinator_service.h), which hands
// it what arrives as plain values and asks it what to send.
//
// Threads: each worker stream's own (Join, Receive, Left), a sender per stream
// (Next, Delivered), and the job driver's (the TrainingEngine calls). Every
// wait is on `changed_`, through the clock.

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "agent/data/dataset.h"
#include "agent/settled_buffers.h"
#include "agent/telemetry/metrics.h"
#include "agent/torch/trainer.h"
#include "agent/training_engine.h"
#include "core/arrival_rate.h"
#include "core/bandwidth_estimator.h"
#include "core/clock.h"
#include "core/downlink_planner.h"
#include "core/job_plan.h"
#include "core/model_takeover.h"
#include "core/row_aggregator.h"
#include "core/round_deadline.h"
#include "core/row_layout.h"
#include "core/staleness_ledger.h"
#include "core/team_accounts.h"
#include "core/team_membership.h"

namespace edgetrain::agent {

// The coordinator's waits; long in production, short where a test needs it.
struct CoordinatorTimings {
  // How often the team's state is looked at: deadlines, progress, schedules.
  Duration tick = std::chrono::milliseconds(20);
  // A job whose workers never come is a failed job, not a hung one.
  Duration first_worker_timeout = std::chrono::seconds(120);
  // Workers get this long to hear Stop; one behind a dead link is cut off by
  // the server's shutdown instead.
  Duration stop_grace = std::chrono::seconds(3);
  // Until a worker's pace is learned, its updates are budgeted for this long.
  Duration assumed_iteration = std::chrono::milliseconds(100);
  // Until the gaps between a worker's pushes are learned, it is counted out
  // after this long silent (core/team_membership.h).
  Duration first_push_deadline = kFirstArrivalDeadline;
};

// A push, or one part of it, as it arrived: rows still encoded, pointing into
// the message.
struct ArrivingPush {
  TimePoint arrived{};  // when the service read it, before it waited for anything
  int64_t iteration = 0;
  int64_t welcome = 0;  // the Welcome it builds on (core/team_membership.h)
  std::vector<PushedRow> rows;
  std::optional<WorkerReport> report;  // on a push's first part only
  int64_t bytes = 0;                   // on the wire
};

// A worker's copy of the model, as it arrived (a ModelCopy, asked for by Join):
// its rows, still encoded, pointing into the message, and each one's clock.
struct ArrivingCopy {
  std::vector<PushedRow> rows;
  std::vector<int64_t> clocks;  // of rows[i]
};

// What the coordinator sends a worker.
struct WelcomeMessage {
  std::vector<DownlinkRow> rows;
  int64_t resume_after = 0;  // its next iteration is this + 1
  int staleness_bound = 0;
  int64_t welcome = 0;
  std::string stream_read_through;  // a stream from a folder: the files it trained on before (a resume)
  double job_elapsed_s = 0;         // the job's training time, over every coordinator it has had
  // Its first Welcome's: its Hello's arrival after the team's start, or
  // before it (negative). Welcome.waited_seconds.
  double waited_s = 0;
};
struct UpdateMessage {
  DownlinkUpdate update;
  int staleness_bound = 0;      // in force now (core/staleness_ledger.h)
  double transfer_seconds = 0;  // how long our earlier messages took on its downlink
  double uplink_mbps = 0;       // its uplink, as its pushes arrive here; 0: not yet
  double downlink_mbps = 0;     // what sizes the update's parts
  double job_energy_j = 0;      // the job's modelled energy, as last counted
};
struct StopMessage {
  std::string reason;
  bool resumes = false;  // interrupted, not over: the worker reconnects
};
using OutgoingMessage = std::variant<WelcomeMessage, UpdateMessage, StopMessage>;

class Coordinator final : public TrainingEngine {
 public:
  // `model` holds the initial weights (seeded), evaluates and saves the
  // global model; `test` is the test set; `log` gets one line per notable event.
  Coordinator(const JobPlan& plan, Trainer& model, const Dataset& test, int64_t train_size, Clock& clock,
              std::ostream& log, CoordinatorMetrics& metrics, CoordinatorTimings timings = {});
  ~Coordinator() override;

  // TrainingEngine.
  int64_t SamplesPerEpoch() const override { return train_size_; }
  Status Restore(const JobCheckpoint& checkpoint) override;
  // The rendezvous: every worker, or nodeLossGrace after the first.
  Status Start(const std::atomic<bool>& cancel) override;
  Status Advance() override;
  void EndTicksAtSamples(int64_t samples, int64_t past_iteration) override;
  std::optional<TimePoint> JobClockStart() override;
  JobProgress Progress() override;
  StatusOr<double> Evaluate() override;
  // Training samples to settle the model's buffers on before each
  // evaluation and save (agent/settled_buffers.h): none, for a model
  // without buffers.
  void SettleBuffersOn(Dataset samples) { settled_.Use(std::move(samples), plan_.spec.data.batch_size); }
  int64_t TestSamples() const override { return test_.size(); }
  // What evaluating the test set takes here, timed once on a slice of it
  // (256 samples spread over it) and scaled to the whole: the
  // team's pace of training is its workers' waits, emulated slowdowns and
  // their changes, not the coordinator's, which evaluates unslowed. From it
  // a robot team stalled 88% of the time was guessed past 2 s, and its run
  // interrupted left its model unevaluated, where evaluating took 0.8 s (a
  // new user's trial).
  std::optional<double> EvaluationGuess() const override;
  void Snapshot(JobCheckpoint& into) override;
  void Interrupted() override;
  Status Finish(FinalModel final) override;
  Status SaveModel(const std::string& path) override;

  // The service's side. A stream `stream` of worker `w`, whose Hello says its
  // copy of the model is at `model_clock` (its least row clock) and is of
  // plan generation `generation`, is opened by Join, which waits for the team
  // to start and returns the stream number and the Welcome to send
  // (Cancelled once the job is over) — or, to the worker whose copy the team
  // is to train on from (core/model_takeover.h), `send_model`: ask it for its
  // copy, and hand that to TakeModel, which returns its Welcome. The others'
  // Welcomes wait for that. A Hello of a plan from before the worker's slot
  // was given anew is refused here too, under the lock.
  struct Joined {
    uint64_t stream = 0;
    WelcomeMessage welcome;
    bool send_model = false;
  };
  StatusOr<Joined> Join(int w, int64_t generation, int64_t model_clock, double job_elapsed_s, double job_energy_j);
  // The copy Join asked `w` for: the team trains on from it. An error (a row
  // missing, twice, of another length or not finite) passes `w` over, and the
  // next worker furthest along is asked, or the coordinator keeps its own; the
  // service ends w's stream.
  StatusOr<WelcomeMessage> TakeModel(int w, uint64_t stream, const ArrivingCopy& copy);
  // What arrived on a stream; an error ends the stream (a row that does not exist).
  Status Receive(int w, uint64_t stream, const ArrivingPush& push);
  // A message of `bytes`, larger than any `largest` a worker of this model
  // sends, arrived on a stream: refused, none of it applied, counted as a refused push
  // (too_big) toward the worker's quarantine; the service ends the stream.
  void RefuseOversized(int w, uint64_t stream, int64_t bytes, int64_t largest);
  const RowLayout& layout() const { return layout_; }
  // The next message for `w`: waits until there is one; nullopt once the
  // stream is over (the worker left, or a newer stream replaced it).
  std::optional<OutgoingMessage> Next(int w, uint64_t stream);
  // A message to `w` was sent in `took`; `opened_stream`: the Welcome that
  // Join returned. `shaped_here`: the link is shaped in our transport, so
  // `took` is the link's time. Under the kernel's shaping a send ends once
  // the socket and gRPC's window take it: a digits team's coordinator timed
  // 3,334 Mbit/s on a link of at most 65, and the operator published it as
  // the node's measured downlink, and placed the next job's coordinator
  // there (a new user's trial). Such times still size the updates as before;
  // they are not reported as a measurement.
  void Delivered(int w, int64_t bytes, int rows, Duration took, bool opened_stream = false,
                 bool shaped_here = false);
  void Left(int w, uint64_t stream);
  // Once the job is over and Stop had its chance: sends waiting on a dead link
  // give up, so shutdown never waits for a link to come back.
  bool abandoning_sends() const { return abandon_sends_.load(); }
  const std::vector<std::vector<int64_t>>& tensor_shapes() const { return shapes_; }
  // Pushes not applied, by reason (PushFate): every push is applied at most
  // once, and one not applied is counted here.
  std::vector<int64_t> PushFates() const;

  // A new generation of the job's plan, adopted without a restart
  // (docs/launch-contract.md, "Plans that change while a job runs"): from
  // now on only hellos of that generation are admitted, and every stream
  // opened under an older one is fenced out: it leaves the team's waits at
  // once, and ends at its next message. FailedPrecondition for a plan of
  // another job, another team size, or a generation not newer than this one.
  Status AdoptPlan(const JobPlan& next);
  int64_t plan_generation() const { return plan_generation_.load(); }
  // The oldest generation whose worker may hold rank `w` (the current one for
  // a rank outside the team, whose hello is refused anyway).
  int64_t slot_since(int w) const;

 private:
  // `c`'s workers' totals, their streams' files read through left out where
  // the checkpoint's run read another folder (spec.data.stream.directory).
  std::vector<WorkerTotals> ReadThroughOfThisFolder(const JobCheckpoint& c) const;
  // What the coordinator measures of a worker's link.
  struct LinkMeters {
    ArrivalRateMeter uplink;       // its pushes' arrivals: right under kernel shaping too
    BandwidthEstimator downlink;   // our sends' times: right only when we shape the link
    bool downlink_shaped_here = false;  // and whether we do
  };

  // With mu_ held.
  bool HasWork(int w) const;
  double DownlinkMbps(int w) const;
  // With mu_ held: what is reported of worker w's downlink: 0 until measured
  // (DownlinkMbps starts from a prior, which is no measurement).
  double MeasuredDownlinkMbps(int w) const;
  WelcomeMessage MakeWelcome(int w, bool whole_model);
  // How far along the coordinator's own model is: what a worker's copy must
  // be ahead of to be trained on from.
  int64_t OwnModelClock() const;
  // What a stream opened once the job is stopping is told.
  Status StoppingError() const;
  std::vector<bool> ActiveWorkers() const;
  // Policy deadline: notes the round that opened, and closes one whose
  // deadline has passed, excusing the workers not in.
  void FollowRounds(TimePoint now);
  // Policy deadline, after the counted workers changed (one left, was
  // counted out or fenced out): the rows only it held step, then FollowRounds.
  void FollowTeamChange(TimePoint now);

  const JobPlan& plan_;
  Trainer& model_;
  const Dataset& test_;
  mutable std::optional<double> evaluation_guess_;  // EvaluationGuess's, once timed
  SettledBuffers settled_;
  const int64_t train_size_;
  Clock& clock_;
  std::ostream& log_;
  CoordinatorMetrics& metrics_;  // thread-safe; bound once
  const CoordinatorTimings timings_;
  const int world_;
  const std::vector<std::vector<int64_t>> shapes_;
  const RowLayout layout_;

  mutable std::mutex mu_;
  ClockCondition changed_;  // anything a waiter looks at; notified under mu_
  StalenessLedger ledger_;        // guarded by mu_, as is all below
  RowAggregator aggregator_;
  DownlinkPlanner downlink_;
  TeamMembership members_;
  ModelTakeover takeover_;
  TimePoint copy_due_{};  // when the worker asked for its copy of the model is passed over
  TeamAccounts accounts_;
  std::vector<LinkMeters> links_;
  std::optional<RoundDeadline> rounds_;  // policy deadline only
  int64_t rounds_at_deadline_ = 0;       // rounds its deadline closed
  int64_t excusals_ = 0;                 // workers excused from a round
  std::vector<int64_t> push_fates_;  // by PushFate
  // Per worker: pushes refused, and the last one's reason; quarantined from
  // kRefusalsToQuarantine on.
  std::vector<int> refused_pushes_;
  std::vector<std::string> last_refusal_;
  std::vector<std::string> last_refusal_why_;  // the last refusal's words, for /progress
  // When each worker's last report (a push's figures) came: an energy
  // budget counts its draw since (WorkerProgress::unreported_s).
  std::vector<std::optional<TimePoint>> last_report_at_;
  std::string QuarantineLocked(int w) const;  // why `w` is quarantined; empty: it is not
  // A push's fate (counted once, on its first part), and the metric of a dropped one.
  void CountFateLocked(int w, PushFate fate);
  std::vector<int64_t> stream_generation_;  // per worker: the plan generation its stream opened under
  std::vector<int64_t> slot_since_;         // per worker: SlotSince of the current plan; guarded by mu_
  std::atomic<int64_t> plan_generation_;    // written under mu_
  bool stopping_ = false;
  bool interrupted_ = false;  // stopping, but the job resumes (Interrupted)
  int64_t resumed_iteration_ = 0;  // the checkpoint's, when one was restored
  // When the job's training clock read 0: the checkpoint's time before the
  // team started; a worker's copy taken over brings its own (Welcomes say it,
  // a new coordinator's takeover reads it back).
  double restored_elapsed_s_ = 0;
  std::optional<TimePoint> job_clock_start_;  // set once the team starts
  // The epochs budget's samples, and the iteration past which they end a tick (EndTicksAtSamples).
  std::optional<std::pair<int64_t, int64_t>> end_ticks_at_;
  std::optional<TimePoint> team_started_;     // this run's team, when it started
  // When each worker's first Hello came, until its first Welcome says how
  // far that was from the team's start (WelcomeMessage::waited_s).
  std::vector<std::optional<TimePoint>> first_hello_at_;
  bool clock_taken_over_ = false;
  double JobElapsedLocked() const;
  std::optional<std::vector<bool>> active_at_end_;  // who was in the team when training ended
  std::atomic<bool> abandon_sends_{false};
};

}  // namespace edgetrain::agent

// The pipeline runtime: its head and stages on a deterministic clock over the
// in-memory transport (fake stages whose passes take the simulated time a
// test gives them), and LibTorch stages over real gRPC held step for step to
// one device training the whole model.
#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "agent/data/dataset.h"
#include "agent/job_driver.h"
#include "agent/testing/digits.h"
#include "agent/pipeline/pipeline_head.h"
#include "agent/refusal_report.h"
#include "agent/pipeline/stage_inbox.h"
#include "agent/pipeline/stage_runner.h"
#include "agent/telemetry/metrics.h"
#include "agent/testing/fake_stage_trainer.h"
#include "agent/testing/fake_trainer.h"
#include "agent/torch/stage_trainer.h"
#include "agent/torch/trainer.h"
#include "agent/transport/in_memory_transport.h"
#include "core/batch_order.h"
#include "core/deterministic_clock.h"
#include "core/model_shape.h"
#include "core/pipeline_planner.h"
#include "core/pipeline_schedule.h"
#include "core/row_layout.h"
#include "core/row_optimizer.h"

namespace edgetrain::agent {
namespace {

using std::chrono::milliseconds;

std::string Spec(const std::string& model, const std::string& dataset, int batch, int workers,
                 const std::string& optimizer) {
  return R"({"model": )" + model + R"(,
    "data": {"dataset": ")" + dataset + R"(", "batchSize": )" + std::to_string(batch) + R"(, "partition": {"kind": "iid"}},
    "parallelism": {"mode": "pipeline", "workers": )" + std::to_string(workers) + R"(},
    "sync": {"granularity": "row", "policy": "bsp", "compression": "none"},
    "optimizer": )" + optimizer + R"(,
    "budget": {"epochs": 1, "energyJoules": 0},
    "evaluation": {"everyIterations": 1000},
    "faultTolerance": {"replicateEvery": 100, "replay": true, "checkpointEvery": 0, "maxRecoveries": 5,
                       "nodeLossGrace": "20s"},
    "seed": 11})";
}

// The simulated pipeline tests' job: the MLP on digits, plain SGD at 0.01
// and no weight decay.
std::string SgdMlpSpec(int batch, int workers) {
  return Spec(R"({"name": "mlp"})", "digits", batch, workers,
              R"({"name": "sgd", "learningRate": 0.01, "weightDecay": 0})");
}

// One stage a layer, on workers 0..stages-1.
JobPlan PipelinePlan(const std::string& spec_json, int stages, int micro_batches) {
  JobPlan plan;
  plan.job = "pipeline-test";
  plan.spec_json = spec_json;
  auto spec = DecodeJobSpec(spec_json);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  plan.spec = *spec;
  plan.output_dir = ::testing::TempDir() + "/pipeline-" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::remove_all(plan.output_dir);
  PipelineLayout layout;
  layout.micro_batches = micro_batches;
  for (int s = 0; s < stages; ++s) {
    plan.workers.push_back({s, "device-" + std::to_string(s), 1, std::nullopt, {}});
    layout.stages.push_back({s, s + 1, {s}});
  }
  plan.pipeline = layout;
  return plan;
}

// The head and one stage agent a trainer (its rank its index) on `clock` over
// the in-memory transport: `steps` steps or until one fails, the stages'
// weights fetched, the end. Each stage's fake holds one weight, and so does
// each stage of the head's whole model.
struct SimulatedRun {
  std::vector<StatusOr<StageSummary>> summaries;
  std::vector<double> step_s;   // each step's simulated time
  std::vector<double> losses;   // each step's
  Status ended = Status::Ok();  // the step that failed, if one did
  std::vector<float> weights;   // each stage's, from its first device left
  JobCheckpoint checkpoint;     // the whole model's state at the end, as the head snapshots it
  JobProgress progress;
  std::string log;
  std::map<int, StatusOr<StageSummary>> returned;  // of the devices that came back, by rank
};
// How a device fails: it dies, its stream closing; it goes silent, its
// stream open and its heartbeats held, as behind a wall whose link drops
// everything, and computes on; or its compute hangs, its link alive and its
// heartbeats going out; or the user's module raises on its share, the
// job's fault, its agent ending as a dead one's does.
enum class Fault { kDies, kSilent, kHangs, kPauses, kRaises };

// A device's trainer seen through a test's fault or timing: everything but
// its passes goes to `device` as it is.
class WrappedStageTrainer : public StageTrainer {
 public:
  explicit WrappedStageTrainer(StageTrainer& device) : device_(device) {}
  std::vector<int64_t> InputShape() const override { return device_.InputShape(); }
  std::vector<int64_t> OutputShape() const override { return device_.OutputShape(); }
  int64_t InputSize() const override { return device_.InputSize(); }
  int64_t OutputSize() const override { return device_.OutputSize(); }
  bool IsFirst() const override { return device_.IsFirst(); }
  bool IsLast() const override { return device_.IsLast(); }
  StatusOr<std::vector<float>> Forward(int64_t id, std::span<const float> input) override {
    return device_.Forward(id, input);
  }
  StatusOr<LossAndInputGradient> BackwardFromLoss(int64_t id, std::span<const int64_t> labels,
                                                  double scale) override {
    return device_.BackwardFromLoss(id, labels, scale);
  }
  StatusOr<std::vector<float>> Backward(int64_t id, std::span<const float> output_gradient) override {
    return device_.Backward(id, output_gradient);
  }
  int InFlight() const override { return device_.InFlight(); }
  void DropInFlight() override { device_.DropInFlight(); }
  std::span<float> Parameters() override { return device_.Parameters(); }
  std::span<const float> Gradients() const override { return device_.Gradients(); }
  void ZeroGradients() override { device_.ZeroGradients(); }
  std::vector<std::vector<int64_t>> ParameterShapes() const override { return device_.ParameterShapes(); }
  int64_t ParameterCount() const override { return device_.ParameterCount(); }

 protected:
  StageTrainer& device_;
};

// A device that dies at its nth pass, forward or backward, counted over the
// run: the pass fails, the stage agent ends, and its stream to the head closes.
// Or (`silent`, its uplink's gate) it goes silent there and computes on; or
// (`hangs_on`, the clock) that pass takes an hour; or, both given and
// `pause`, it stops whole for that long, link and compute, as a SIGSTOP
// would have it, and goes on.
class DyingStageTrainer final : public WrappedStageTrainer {
 public:
  DyingStageTrainer(StageTrainer& device, int dies_at_pass, LinkGate* silent = nullptr, Clock* hangs_on = nullptr,
                    Duration pause = Duration::zero(), bool raises = false)
      : WrappedStageTrainer(device),
        dies_at_(dies_at_pass),
        silent_(silent),
        hangs_on_(hangs_on),
        pause_(pause),
        raises_(raises) {}
  StatusOr<std::vector<float>> Forward(int64_t id, std::span<const float> input) override {
    if (AtItsPass() && Dies()) return Died();
    return device_.Forward(id, input);
  }
  StatusOr<LossAndInputGradient> BackwardFromLoss(int64_t id, std::span<const int64_t> labels,
                                                  double scale) override {
    if (AtItsPass() && Dies()) return Died();
    return device_.BackwardFromLoss(id, labels, scale);
  }
  StatusOr<std::vector<float>> Backward(int64_t id, std::span<const float> output_gradient) override {
    if (AtItsPass() && Dies()) return Died();
    return device_.Backward(id, output_gradient);
  }
  // Dies at its pass only once `ready` holds, waited for up to a second of
  // the real clock there; else at the same pass of a later step
  // (`passes_a_step` on). A test whose loss must cost nothing of the model
  // waits for the head's replica of the step before: replicas are paced not
  // to stall the pipeline, and on a busy machine one came a step late (3 runs
  // of 400 beside two busy loops).
  void DiesOnceReady(std::function<bool()> ready, int passes_a_step) {
    ready_ = std::move(ready);
    passes_a_step_ = passes_a_step;
  }

 private:
  // As StageTrainer says a module's raise (ModuleFailed), or a dead device.
  Status Died() const {
    if (raises_) {
      return InvalidArgumentError("forward of micro-batch 0 failed: ValueError: raised (the module's own code)");
    }
    return UnavailableError("the device died");
  }
  const int dies_at_;
  LinkGate* silent_;
  Clock* hangs_on_;
  Duration pause_;
  bool raises_;
  int passes_ = 0;
  std::function<bool()> ready_;
  int passes_a_step_ = 0;
  bool AtItsPass() {
    ++passes_;
    if (!ready_) return passes_ == dies_at_;
    if (passes_ < dies_at_ || (passes_ - dies_at_) % passes_a_step_ != 0) return false;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!ready_()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }
  // Dies, or goes silent, hangs or pauses, and computes on.
  bool Dies() {
    if (silent_ && hangs_on_ && pause_ > Duration::zero()) {
      silent_->Cut();
      hangs_on_->SleepFor(pause_);
      silent_->Restore();
      return false;
    }
    if (hangs_on_) {
      hangs_on_->SleepFor(std::chrono::hours(1));
      return false;
    }
    if (!silent_) return true;
    silent_->Cut();
    return false;
  }
};

// Devices that say hello again, as an agent does, once a session the head
// took them into ends with their stream cut (RunStageRejoining): `fresh`
// makes each rank's trainer of its planned layers for the sessions after its
// first; `reopen_after`, each rank's gate opened again once the head has done
// that step (its link back).
struct Rejoining {
  std::function<std::unique_ptr<StageTrainer>(int rank)> fresh;
  std::map<int, int> reopen_after;
};
// A device that comes back: its agent started again once the head has done `after_step`.
struct ComesBack {
  int after_step = 0;
  StageTrainer* trainer = nullptr;
};
using RankLayerTaker = std::function<StatusOr<std::unique_ptr<StageTrainer>>(int rank, int first, int end)>;
// What a simulated pipeline run has besides its plan and devices; each
// field's default is a run where nothing of it happens.
struct Disturbances {
  // Each rank's uplink gate, or none; every gate is opened again once the
  // job is over (the links come back).
  std::map<int, LinkGate*> gates{};
  // How device `rank` takes on other layers, or none.
  RankLayerTaker take_layers{};
  // The head's measurement of its stages, in steps (0: layers never move),
  // and the longest it may take.
  int rebalance_every = 0;
  Duration rebalance_within{};
  // Every device's emulated uplink.
  std::optional<BandwidthTrace> uplink{};
  // Devices that come back, by rank.
  std::map<int, ComesBack> back{};
  // The checkpoint the head resumes from, if any.
  const JobCheckpoint* resume = nullptr;
  // Devices that never come.
  std::set<int> absent{};
  // The driver's own turn between steps (its bookkeeping, a slow head's),
  // slept after each.
  Duration between_steps{};
  Rejoining rejoining{};
  // Devices told to stop (their agent's SIGTERM) once the head has done that
  // step, by rank: lost between steps, before the next one fetches anything.
  std::map<int, int> stop_after_step{};
  // Each rank's computing thread's CPU clock, by rank (none: its passes are
  // costed on the clock).
  std::map<int, std::function<double()>> cpu_clocks{};
  // The head's server shut down as soon as it has said stop, as the agent's
  // is (agent.cc), rather than once every device has left.
  bool serving_ends_with_the_job = false;
  // Devices slow to receive, by rank: each message the head sends one takes
  // this long on the clock (a downlink crawling, a device too busy to read).
  std::map<int, Duration> slow_to_receive{};
};

// The head's stream to a device, each send taking `delay` on the clock.
class SlowToReceive final : public WorkerStream {
 public:
  SlowToReceive(WorkerStream& inner, Duration delay, Clock& clock) : inner_(inner), delay_(delay), clock_(clock) {}
  Status Send(const v1::CoordinatorMessage& message) override {
    clock_.SleepFor(delay_);
    return inner_.Send(message);
  }
  StatusOr<v1::WorkerMessage> Receive() override { return inner_.Receive(); }
  void Cut() override { inner_.Cut(); }

 private:
  WorkerStream& inner_;
  const Duration delay_;
  Clock& clock_;
};

// The head's sessions, the devices of `slow` served through SlowToReceive.
class SlowDownlinks final : public WorkerSessions {
 public:
  SlowDownlinks(WorkerSessions& inner, const std::map<int, Duration>& slow, Clock& clock)
      : inner_(inner), slow_(slow), clock_(clock) {}
  Status Admit(const v1::Hello& hello) override { return inner_.Admit(hello); }
  Status Serve(const v1::Hello& hello, WorkerStream& stream) override {
    const auto slow = slow_.find(hello.rank());
    if (slow == slow_.end()) return inner_.Serve(hello, stream);
    SlowToReceive slowed(stream, slow->second, clock_);
    return inner_.Serve(hello, slowed);
  }
  int64_t LargestMessageRead() const override { return inner_.LargestMessageRead(); }

 private:
  WorkerSessions& inner_;
  const std::map<int, Duration>& slow_;
  Clock& clock_;
};
SimulatedRun RunPipeline(const JobPlan& plan, const std::vector<StageTrainer*>& trainers, const TrainTestSplit& data,
                         DeterministicClock& clock, int steps, const Disturbances& disturbances = {}) {
  const auto& [gates, take_layers, rebalance_every, rebalance_within, uplink, back, resume, absent, between_steps,
               rejoining, stop_after_step, cpu_clocks, serving_ends_with_the_job, slow_to_receive] = disturbances;
  InMemoryNetwork network(clock);
  // The whole model is the stages' tensors in order (one weight a layer, as
  // the fakes hold them, and any padding).
  const int layers = plan.pipeline->stages.back().end_layer;
  testing::FakeModel whole_model;
  whole_model.shapes.clear();
  StageShapes shapes;
  for (const PipelineStagePlan& s : plan.pipeline->stages) {
    shapes.push_back(trainers[static_cast<size_t>(s.ranks.front())]->ParameterShapes());
    whole_model.shapes.insert(whole_model.shapes.end(), shapes.back().begin(), shapes.back().end());
  }
  testing::FakeTrainer whole(whole_model, clock);
  std::ostringstream log;
  PipelineHead head(plan, whole, data.test, data.train.size(), shapes, clock, log);
  // Each layer's tensors: one weight, or, for a stage of one layer, all of
  // its fake's tensors (its padding with them, so that a replica of it
  // restores whole).
  std::vector<std::vector<std::vector<int64_t>>> layer_tensors(static_cast<size_t>(layers), {{1}});
  for (const PipelineStagePlan& s : plan.pipeline->stages) {
    if (s.end_layer - s.first_layer == 1) {
      layer_tensors[static_cast<size_t>(s.first_layer)] = trainers[static_cast<size_t>(s.ranks.front())]->ParameterShapes();
    }
  }
  PipelineHead::Rebalancing rebalancing;
  rebalancing.layer_shapes = layer_tensors;
  rebalancing.every = rebalance_every;
  rebalancing.within = rebalance_within;
  head.SetRebalancing(rebalancing);
  SimulatedRun run;
  run.summaries.assign(trainers.size(), InternalError("not run"));
  std::atomic<bool> cancel{false};
  std::vector<std::unique_ptr<std::atomic<bool>>> stop;  // each device's own, as its agent's signal
  for (size_t r = 0; r < trainers.size(); ++r) stop.push_back(std::make_unique<std::atomic<bool>>(false));
  clock.Run("test", [&] {
    SlowDownlinks sessions(head, slow_to_receive, clock);
    auto server = network.Serve("head", sessions);
    ASSERT_TRUE(server.ok());
    auto connector = network.Connector("head");
    std::vector<ClockThread> threads;
    auto start = [&](int r, StageTrainer& trainer, StatusOr<StageSummary>& summary, bool gated) {
      threads.push_back(clock.StartThread("device " + std::to_string(r), [&, r, gated] {
        StageOptions options;
        options.rank = r;
        options.head = connector.get();
        if (auto g = gates.find(r); gated && g != gates.end()) options.gate = g->second;
        options.uplink = uplink;
        if (auto c = cpu_clocks.find(r); c != cpu_clocks.end()) options.thread_cpu_seconds = c->second;
        if (take_layers) options.take_layers = [&, r](int first, int end) { return take_layers(r, first, end); };
        if (rejoining.fresh) {
          bool first = true;
          const TrainerMaker sessions = [&, r]() -> StatusOr<std::unique_ptr<StageTrainer>> {
            if (!first) return rejoining.fresh(r);
            first = false;
            return std::unique_ptr<StageTrainer>(std::make_unique<DyingStageTrainer>(trainer, 0));  // never dies
          };
          summary = RunStageRejoining(plan, options, sessions, data.train, clock, log, cancel, std::chrono::seconds(30));
        } else {
          summary = RunStage(plan, options, trainer, data.train, clock, log, *stop[static_cast<size_t>(r)]);
        }
      }));
    };
    for (size_t r = 0; r < trainers.size(); ++r) {
      if (!absent.count(static_cast<int>(r))) start(static_cast<int>(r), *trainers[r], run.summaries[r], true);
    }
    if (resume) {
      ASSERT_TRUE(head.Restore(*resume).ok());
    }
    for (const auto& [rank, b] : back) run.returned.emplace(rank, InternalError("not run"));
    run.ended = head.Start(cancel);
    for (int step = 0; step < steps && run.ended.ok(); ++step) {
      for (const auto& [rank, b] : back) {
        if (b.after_step == step) start(rank, *b.trainer, run.returned.at(rank), false);
      }
      for (const auto& [rank, after] : rejoining.reopen_after) {
        if (after == step) gates.at(rank)->Restore();
      }
      const TimePoint began = clock.Now();
      run.ended = head.Advance();
      if (!run.ended.ok()) break;
      run.step_s.push_back(ToSeconds(clock.Now() - began));
      run.losses.push_back(head.LastStepLoss());
      if (between_steps > Duration::zero()) clock.SleepFor(between_steps);
      for (const auto& [rank, after] : stop_after_step) {
        if (after != step + 1) continue;
        *stop[static_cast<size_t>(rank)] = true;
        clock.SleepFor(std::chrono::seconds(1));  // it leaves, its stream ends
      }
    }
    if (run.ended.ok()) {
      const auto evaluated = head.Evaluate();
      EXPECT_TRUE(evaluated.ok()) << evaluated.status().ToString();
      JobCheckpoint state;
      head.Snapshot(state);  // each stage's weights, from the devices left
      run.weights = state.parameters;
      state.iteration = static_cast<int64_t>(run.losses.size());
      run.checkpoint = state;
    }
    // Its error, where the stages' state could not be had (a device lost), is the driver's to report.
    (void)head.Finish(FinalModel::kCurrent);
    if (serving_ends_with_the_job) (*server)->Shutdown();
    for (const auto& [rank, gate] : gates) gate->Restore();
    for (auto& t : threads) t.Join();
    (*server)->Shutdown();
  });
  run.progress = head.Progress();
  run.log = log.str();
  return run;
}

SimulatedRun RunThreeSteps(const JobPlan& plan, std::vector<std::unique_ptr<testing::FakeStageTrainer>>& trainers,
                           const TrainTestSplit& data, DeterministicClock& clock) {
  std::vector<StageTrainer*> devices;
  for (auto& t : trainers) devices.push_back(t.get());
  SimulatedRun run = RunPipeline(plan, devices, data, clock, 3);
  EXPECT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  EXPECT_EQ(run.progress.iteration, 3);
  // Every device's link carried its micro-batches both ways, as the head
  // counts them (every stage's bytes were 0).
  // And its modelled energy, the team's the sum of its devices'.
  double energy_j = 0;
  for (const WorkerProgress& w : run.progress.workers) {
    EXPECT_GT(w.bytes_sent, 0) << "rank " << w.rank;
    EXPECT_GT(w.bytes_received, 0) << "rank " << w.rank;
    EXPECT_GT(w.energy_joules, 0) << "rank " << w.rank;
    energy_j += w.energy_joules;
  }
  EXPECT_DOUBLE_EQ(run.progress.energy_joules.value_or(-1), energy_j);
  return run;
}

v1::CoordinatorMessage Replay(int64_t step, int attempt) {
  v1::CoordinatorMessage m;
  m.mutable_command()->mutable_replay()->set_step(step);
  m.mutable_command()->mutable_replay()->set_attempt(attempt);
  return m;
}

v1::CoordinatorMessage Cover(int64_t step, int attempt, int rank) {
  v1::CoordinatorMessage m;
  v1::StageCover& c = *m.mutable_command()->mutable_cover();
  c.set_step(step);
  c.set_attempt(attempt);
  c.set_rank(rank);
  return m;
}

// A second device lost moments after the first: the cover of the attempt
// the first one's replay began comes while the stage still runs a pass of
// the attempt that replay ended. That attempt's last look for covers left
// it for the attempt it is of, where it had dropped it, the lost device's
// shares never computed and its group waiting for their gradient for ever.
TEST(StageInboxTest, ALaterAttemptsCoverIsKeptForItThroughAnEndedAttemptsLastLook) {
  DeterministicClock clock;
  std::atomic<bool> cancel{false};
  StageInbox inbox(clock, cancel, milliseconds(50));
  inbox.File(Cover(7, 0, 3));  // of the attempt given up
  inbox.File(Replay(7, 1));
  inbox.File(Cover(7, 1, 2));
  EXPECT_TRUE(inbox.TakeCovers(7, 0).empty()) << "the ended attempt's look takes none of the next one's";
  EXPECT_EQ(inbox.AwaitAny({}, 7, 0, false).code(), StatusCode::kAborted) << "and its wait ends, replayed";
  const std::vector<v1::StageCover> taken = inbox.TakeCovers(7, 1);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].rank(), 2);
  EXPECT_TRUE(inbox.TakeCovers(7, 1).empty()) << "each taken once";
  inbox.File(Cover(8, 0, 2));
  EXPECT_TRUE(inbox.TakeCovers(7, 1).empty());
  EXPECT_EQ(inbox.TakeCovers(8, 0).size(), 1u) << "a later step's is kept for it too";
}

// Every shape of pipeline from 1 to 5 stages and 1 to 8 micro-batches, its
// stages uneven, runs its steps to the end: none deadlocks (the deterministic
// clock aborts, naming every waiting thread, if one does), none holds more
// micro-batches than 1F1B allows, and where the micro-batches are equal (the
// count divides the batch) each step takes exactly what the schedule run out
// to its dependencies takes (core/pipeline_schedule.h): the runtime is that
// schedule.
TEST(SimulatedPipelineTest, EveryShapeRunsTheScheduleWithoutDeadlock) {
  const int batch = 24;
  const TrainTestSplit data = testing::FakeData(240, 8, 10);
  for (int stages = 1; stages <= 5; ++stages) {
    for (int m = 1; m <= 8; ++m) {
      SCOPED_TRACE(std::to_string(stages) + " stages, " + std::to_string(m) + " micro-batches");
      const JobPlan plan = PipelinePlan(SgdMlpSpec(batch, stages), stages, m);
      DeterministicClock clock;
      std::vector<testing::FakeStage> kinds(stages);
      std::vector<double> forward_s, backward_s;
      const double per_micro_batch = static_cast<double>(batch) / m;
      for (int s = 0; s < stages; ++s) {
        kinds[s] = {s == 0, s == stages - 1, milliseconds(1 + s % 3), milliseconds(2 + 3 * ((s + 1) % 2))};
        forward_s.push_back(ToSeconds(kinds[s].forward) * per_micro_batch);
        backward_s.push_back(ToSeconds(kinds[s].backward) * per_micro_batch);
      }
      std::vector<std::unique_ptr<testing::FakeStageTrainer>> trainers;
      for (int s = 0; s < stages; ++s) trainers.push_back(std::make_unique<testing::FakeStageTrainer>(kinds[s], clock));
      const SimulatedRun run = RunThreeSteps(plan, trainers, data, clock);
      const auto& summaries = run.summaries;
      const auto& step_s = run.step_s;
      const std::string log = run.log;
      for (int s = 0; s < stages; ++s) {
        ASSERT_TRUE(summaries[s].ok()) << "stage " << s << ": " << summaries[s].status().ToString() << "\n" << log;
        EXPECT_EQ(summaries[s]->steps, 3);
        EXPECT_EQ(summaries[s]->stop_reason, "the job is over");
        EXPECT_LE(trainers[s]->most_in_flight(), std::min(m, stages - s)) << "stage " << s;
      }
      if (batch % m == 0) {
        const double expected = SimulatedStepSeconds(forward_s, backward_s, std::vector<double>(stages - 1, 0.0), m);
        for (double s : step_s) EXPECT_NEAR(s, expected, 1e-6);
      }
    }
  }
}

// A hybrid pipeline whose micro-batches are smaller than a group: devices
// dealt no sample of one pass it on empty, and the steps still end.
TEST(SimulatedPipelineTest, AGroupLargerThanAMicroBatchPassesItsEmptySharesOn) {
  const TrainTestSplit data = testing::FakeData(64, 8, 10);
  JobPlan plan = PipelinePlan(SgdMlpSpec(4, 5), 2, 4);
  plan.workers.clear();
  for (int r = 0; r < 5; ++r) plan.workers.push_back({r, "device-" + std::to_string(r), 1.0 + r, std::nullopt, {}});
  plan.pipeline = PipelineLayout{{{0, 1, {0, 1, 2}}, {1, 2, {3, 4}}}, 4};
  DeterministicClock clock;
  std::vector<std::unique_ptr<testing::FakeStageTrainer>> trainers;
  for (int r = 0; r < 5; ++r) {
    trainers.push_back(std::make_unique<testing::FakeStageTrainer>(testing::FakeStage{r < 3, r >= 3}, clock));
  }
  const SimulatedRun run = RunThreeSteps(plan, trainers, data, clock);
  const auto& summaries = run.summaries;
  for (int r = 0; r < 5; ++r) {
    ASSERT_TRUE(summaries[r].ok()) << "device " << r << ": " << summaries[r].status().ToString() << "\n" << run.log;
    EXPECT_EQ(summaries[r]->steps, 3);
  }
  // Micro-batches of one sample: the fastest device of each group takes them all.
  EXPECT_GT(summaries[0]->compute_s, 0);
  EXPECT_EQ(summaries[1]->compute_s, 0);
  EXPECT_EQ(summaries[2]->compute_s, 0);
  EXPECT_EQ(trainers[0]->Parameters()[0], trainers[2]->Parameters()[0]) << "a group steps alike";
  // Shown as dealt: nothing to the two, not the whole batch.
  ASSERT_EQ(run.progress.workers.size(), 5u);
  EXPECT_GT(run.progress.workers[0].batch_size, 0);
  EXPECT_EQ(run.progress.workers[1].batch_size, 0);
  EXPECT_EQ(run.progress.workers[2].batch_size, 0);
}

// Resumed on another profile, a rank on another device than before starts
// its figures at 0: a gateway was shown with the bytes and compute another
// device had had under that rank (a new user's trial).
// A head of two stages of one weight each, its devices not there yet: what
// it makes of a checkpoint it resumes from.
struct HeadOfTwoWeights {
  const TrainTestSplit data = testing::FakeData(64, 8, 10);
  const JobPlan plan = PipelinePlan(SgdMlpSpec(8, 2), 2, 2);
  DeterministicClock clock;
  const testing::FakeModel whole_model = [] {
    testing::FakeModel model;
    model.shapes.assign(2, {1});
    return model;
  }();
  testing::FakeTrainer whole{whole_model, clock};
  std::ostringstream log;
  PipelineHead head{plan, whole, data.test, data.train.size(), StageShapes(2, {{1}}), clock, log};
};

TEST(SimulatedPipelineTest, AResumedRankOnAnotherDeviceDoesNotTakeTheEarlierDevicesFigures) {
  HeadOfTwoWeights h;
  auto& [data, plan, clock, whole_model, whole, log, head] = h;
  JobCheckpoint c;
  c.iteration = 3;
  c.parameters.assign(whole.Parameters().size(), 0.5f);
  c.workers.resize(2);
  c.workers[0].energy_j = 5;
  c.workers[0].node = plan.workers[0].node;
  c.workers[1].energy_j = 7;
  c.workers[1].bytes_sent = 1000;
  c.workers[1].node = plan.workers[1].node + "-elsewhere";
  c.energy_joules = 12;
  ASSERT_TRUE(head.Restore(c).ok()) << log.str();
  const JobProgress p = head.Progress();
  ASSERT_EQ(p.workers.size(), 2u);
  EXPECT_DOUBLE_EQ(p.workers[0].energy_joules, 5) << "the same device goes on from its figures";
  EXPECT_DOUBLE_EQ(p.workers[1].energy_joules, 0);
  EXPECT_EQ(p.workers[1].bytes_sent, 0);
  // The job's joules are every run's, the other device's 7 among them: a
  // budget in joules began again on resuming under another profile.
  ASSERT_TRUE(p.energy_joules.has_value());
  EXPECT_DOUBLE_EQ(*p.energy_joules, 12);
  // So are its bytes, and those of a rank this run has not, and of the runs
  // before those (they had gone back at a resume under other stages: a
  // user's trial).
  EXPECT_EQ(p.departed_bytes_sent, 1000);
  c.workers.push_back(WorkerTotals{.bytes_sent = 300, .bytes_received = 40});
  c.departed_bytes_sent = 20;
  ASSERT_TRUE(head.Restore(c).ok()) << log.str();
  EXPECT_EQ(head.Progress().departed_bytes_sent, 1320);
  EXPECT_EQ(head.Progress().departed_bytes_received, 40);
}

// A stage agent told to stop (SIGTERM) leaves at once, even while it waits
// for the head; the head's next step says which stage it lost; and the stage
// left waiting mid-step for it ends with the head's Stop.
TEST(SimulatedPipelineTest, AStageToldToStopLeavesAndTheHeadSaysWhichWasLost) {
  const TrainTestSplit data = testing::FakeData(64, 8, 10);
  const JobPlan plan = PipelinePlan(SgdMlpSpec(8, 2), 2, 2);
  DeterministicClock clock;
  InMemoryNetwork network(clock);
  testing::FakeStageTrainer first({true, false}, clock), last({false, true}, clock);
  testing::FakeModel whole_model;
  whole_model.shapes.assign(2, {1});
  testing::FakeTrainer whole(whole_model, clock);
  std::ostringstream log;
  PipelineHead head(plan, whole, data.test, data.train.size(), StageShapes(2, {{1}}), clock, log);
  std::vector<StatusOr<StageSummary>> summaries(2, InternalError("not run"));
  std::atomic<bool> cancel[2] = {false, false};
  std::atomic<bool> head_cancel{false};
  Status second_step = Status::Ok();
  clock.Run("test", [&] {
    auto server = network.Serve("head", head);
    ASSERT_TRUE(server.ok());
    auto connector = network.Connector("head");
    std::vector<ClockThread> threads;
    testing::FakeStageTrainer* trainers[2] = {&first, &last};
    for (int r = 0; r < 2; ++r) {
      threads.push_back(clock.StartThread("device " + std::to_string(r), [&, r] {
        StageOptions options;
        options.rank = r;
        options.head = connector.get();
        summaries[r] = RunStage(plan, options, *trainers[r], data.train, clock, log, cancel[r]);
      }));
    }
    ASSERT_TRUE(head.Start(head_cancel).ok());
    ASSERT_TRUE(head.Advance().ok()) << log.str();
    cancel[1] = true;
    clock.SleepFor(std::chrono::seconds(1));
    second_step = head.Advance();
    // Its error, where the stages' state could not be had (a device lost), is the driver's to report.
    (void)head.Finish(FinalModel::kCurrent);
    for (auto& t : threads) t.Join();
    (*server)->Shutdown();
  });
  EXPECT_EQ(second_step.code(), StatusCode::kUnavailable);
  EXPECT_NE(second_step.message().find("stage 2 lost its only device at step 2 (rank 1)"), std::string::npos)
      << second_step.message();
  ASSERT_TRUE(summaries[1].ok()) << summaries[1].status().ToString();
  EXPECT_EQ(summaries[1]->stop_reason, "cancelled");
  EXPECT_EQ(summaries[1]->steps, 1);
  ASSERT_TRUE(summaries[0].ok()) << summaries[0].status().ToString();
  EXPECT_EQ(summaries[0]->stop_reason, "the job is over");
}


// Fake data whose samples are not zero, so that the weights learn and a step
// applied twice or on the wrong gradient shows.
TrainTestSplit LearningData() {
  TrainTestSplit data = testing::FakeData(240, 8, 10);
  for (size_t i = 0; i < data.train.pixels.size(); ++i) data.train.features.push_back(0.2f + 0.1f * (i * 37 % 9));
  return data;
}

// `run` is `reference` step for step: its first `steps` losses, and (with
// `weights`) its weights after, each within a relative 1e-4.
void ExpectSameRun(const SimulatedRun& run, const SimulatedRun& reference, size_t steps, bool weights = true) {
  ASSERT_GE(run.losses.size(), steps);
  ASSERT_GE(reference.losses.size(), steps);
  for (size_t k = 0; k < steps; ++k) {
    EXPECT_NEAR(run.losses[k], reference.losses[k], 1e-4 * std::abs(reference.losses[k])) << "step " << k + 1;
  }
  if (!weights) return;
  ASSERT_EQ(run.weights.size(), reference.weights.size());
  for (size_t i = 0; i < run.weights.size(); ++i) {
    EXPECT_NEAR(run.weights[i], reference.weights[i], 1e-4 * std::abs(reference.weights[i])) << "weight " << i;
  }
}

// How a device of a fake pipeline of `layers` layers takes other layers: a
// fake of them, as slow a layer as a stage of one (`devices`: each rank's
// pace, or none), padded as `padding` pads the last of them (a padded
// layer's floats, which a fake holds after its layers').
RankLayerTaker FakeLayerTaker(Clock& clock, int layers, testing::FakeDevice* devices = nullptr,
                              Duration forward = milliseconds(1), Duration backward = milliseconds(2),
                              std::map<int, int64_t> padding = {}) {
  return [&clock, layers, devices, forward, backward, padding](int rank, int first,
                                                               int end) -> StatusOr<std::unique_ptr<StageTrainer>> {
    const auto padded = padding.find(end - 1);
    return std::unique_ptr<StageTrainer>(std::make_unique<testing::FakeStageTrainer>(
        testing::FakeStage{first == 0, end == layers, forward, backward, end - first,
                           devices ? &devices[rank] : nullptr, padded == padding.end() ? 0 : padded->second},
        clock));
  };
}

// A hybrid pipeline of fake stages run `steps` steps on the deterministic
// clock, devices failing (dying, going silent or hanging, as `fault` says)
// as `dies_at_pass` says (rank -> its nth pass), and coming back, a fresh
// agent of the rank on a fresh device, as `back_after` says (rank -> the
// step after which).
SimulatedRun RunReplaying(const JobPlan& plan, const std::map<int, int>& dies_at_pass, int steps, Fault fault = Fault::kDies,
                          const std::map<int, int>& back_after = {}, Duration between_steps = {},
                          int rebalance_every = 0, const std::map<int, int>& reopen_after = {},
                          const std::map<int, Fault>& fault_of = {}) {
  const TrainTestSplit data = LearningData();
  const int stages = static_cast<int>(plan.pipeline->stages.size());
  DeterministicClock clock;
  std::vector<std::unique_ptr<testing::FakeStageTrainer>> fakes;
  std::vector<std::unique_ptr<StageTrainer>> dying;
  std::map<int, LinkGate*> gates;
  std::vector<std::unique_ptr<LinkGate>> silencers;
  std::vector<StageTrainer*> trainers;
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    const int s = *StageOfRank(*plan.pipeline, static_cast<int>(r));
    fakes.push_back(std::make_unique<testing::FakeStageTrainer>(
        testing::FakeStage{s == 0, s == stages - 1, milliseconds(1 + s), milliseconds(2)}, clock));
    trainers.push_back(fakes.back().get());
    if (auto d = dies_at_pass.find(static_cast<int>(r)); d != dies_at_pass.end()) {
      // `fault`, unless this rank's own is given.
      const auto own = fault_of.find(static_cast<int>(r));
      const Fault fault_here = own == fault_of.end() ? fault : own->second;
      const bool silent = fault_here == Fault::kSilent || fault_here == Fault::kPauses;
      if (silent) {
        silencers.push_back(std::make_unique<LinkGate>(clock));
        gates[static_cast<int>(r)] = silencers.back().get();
      }
      dying.push_back(std::make_unique<DyingStageTrainer>(
          *fakes.back(), d->second, silent ? silencers.back().get() : nullptr,
          fault_here == Fault::kHangs || fault_here == Fault::kPauses ? &clock : nullptr,
          fault_here == Fault::kPauses ? std::chrono::seconds(5) : Duration::zero(), fault_here == Fault::kRaises));
      trainers.back() = dying.back().get();
    }
  }
  std::map<int, ComesBack> back;
  for (const auto& [rank, after] : back_after) {
    const int s = *StageOfRank(*plan.pipeline, rank);
    fakes.push_back(std::make_unique<testing::FakeStageTrainer>(
        testing::FakeStage{s == 0, s == stages - 1, milliseconds(1 + s), milliseconds(2)}, clock));
    back[rank] = {after, fakes.back().get()};
  }
  // A device taking a lost neighbour's layers: a fake of all of them, as
  // slow a layer as its own stage's.
  const int layers = plan.pipeline->stages.back().end_layer;
  // Silent devices whose links come back say hello again, each session on a
  // fresh fake of its planned layers.
  Rejoining rejoining;
  if (!reopen_after.empty()) {
    rejoining.reopen_after = reopen_after;
    rejoining.fresh = [&](int r) -> std::unique_ptr<StageTrainer> {
      const int s = *StageOfRank(*plan.pipeline, r);
      return std::make_unique<testing::FakeStageTrainer>(
          testing::FakeStage{s == 0, s == stages - 1, milliseconds(1 + s), milliseconds(2)}, clock);
    };
  }
  return RunPipeline(plan, trainers, data, clock, steps,
                     {.gates = gates,
                      .take_layers = FakeLayerTaker(clock, layers),
                      .rebalance_every = rebalance_every,
                      .back = back,
                      .between_steps = between_steps,
                      .rejoining = rejoining});
}

// A plan of fake stages: `groups` the ranks of each stage, device r as slow as r + 1.
JobPlan HybridPlan(const std::vector<std::vector<int>>& groups, int micro_batches) {
  int devices = 0;
  for (const auto& g : groups) devices += static_cast<int>(g.size());
  JobPlan plan = PipelinePlan(SgdMlpSpec(24, devices), 1, micro_batches);
  plan.workers.clear();
  for (int r = 0; r < devices; ++r) plan.workers.push_back({r, "device-" + std::to_string(r), 1.0 + r, std::nullopt, {}});
  plan.pipeline->stages.clear();
  for (size_t s = 0; s < groups.size(); ++s) {
    plan.pipeline->stages.push_back({static_cast<int>(s), static_cast<int>(s) + 1, groups[s]});
  }
  return plan;
}

// A device of a two-device stage slowed fourfold from step 3, under the
// straggler factor, paces the whole pipeline: the head's measurement of the
// stages (every 4 steps) deals the stage's micro-batches anew by what each
// device computed a second, once (dealt so, in whole samples, nothing
// better is left), the steps after run faster than those slowed, and every
// step's loss is the run's that was never slowed: the group's gradient is
// the same sum, however its micro-batches are dealt. Slowed sixfold, dealt
// so it would compute nothing of a micro-batch of 6: let go of as a
// straggler instead, since idle in its group it could not be measured again.
TEST(SimulatedPipelineTest, AGroupDealsItsMicroBatchesAnewWhenADeviceDrifts) {
  JobPlan plan = HybridPlan({{0, 1}, {2}}, 4);
  plan.workers[2].slowdown = 1;  // the second stage quick: the first paces the steps
  const SimulatedRun whole_run = RunReplaying(plan, {}, 16, Fault::kDies, {}, {}, 4);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  EXPECT_EQ(whole_run.progress.replays->redealt, 0) << "dealt by their speeds as planned\n" << whole_run.log;
  double step_3_at = 0;
  for (int s = 0; s < 2; ++s) step_3_at += whole_run.step_s[s];
  const double planned = plan.workers[1].slowdown;
  plan.workers[1].slowdown_changes = {{step_3_at, 4 * planned}};
  const SimulatedRun run = RunReplaying(plan, {}, 16, Fault::kDies, {}, {}, 4);
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  ASSERT_EQ(run.losses.size(), 16u);
  ExpectSameRun(run, whole_run, 16, /*weights=*/false);
  EXPECT_EQ(run.progress.replays->stragglers, 0) << run.log;
  EXPECT_EQ(run.progress.replays->redealt, 1) << run.log;
  EXPECT_EQ(run.progress.replays->repartitions, 0) << "no layer moved\n" << run.log;
  EXPECT_NE(run.log.find("stage 1's devices computed rank 0 "), std::string::npos) << run.log;
  EXPECT_GT(run.step_s[4], 1.5 * whole_run.step_s[4]) << "slowed\n" << run.log;
  EXPECT_LT(run.step_s.back(), 0.8 * run.step_s[4]) << "dealt anew\n" << run.log;

  plan.workers[1].slowdown_changes = {{step_3_at, 6 * planned}};
  const SimulatedRun idle = RunReplaying(plan, {}, 16, Fault::kDies, {}, {}, 4);
  ASSERT_TRUE(idle.ended.ok()) << idle.ended.ToString() << "\n" << idle.log;
  ExpectSameRun(idle, whole_run, 16, /*weights=*/false);
  EXPECT_EQ(idle.progress.replays->stragglers, 1) << idle.log;
  EXPECT_EQ(idle.progress.replays->redealt, 0) << "let go of, not dealt anew\n" << idle.log;
  EXPECT_NE(idle.log.find("too few for a sample of a micro-batch dealt by them: let go of as a straggler"),
            std::string::npos)
      << idle.log;
  EXPECT_LT(idle.step_s.back(), 0.8 * idle.step_s[4]) << idle.log;
  // Slowed twentyfold, past the straggler factor: let go of by its pace,
  // and once; its group is not dealt anew with it (a new user's trial
  // counted one device twice).
  plan.workers[1].slowdown_changes = {{step_3_at, 20 * planned}};
  const SimulatedRun far = RunReplaying(plan, {}, 16, Fault::kDies, {}, {}, 4);
  ASSERT_TRUE(far.ended.ok()) << far.ended.ToString() << "\n" << far.log;
  EXPECT_EQ(far.progress.replays->stragglers, 1) << far.log;
  EXPECT_EQ(far.progress.replays->redealt, 0) << far.log;
  EXPECT_NE(far.log.find("(rank 1) ran its share "), std::string::npos) << far.log;
  EXPECT_EQ(far.log.find("too few for a sample"), std::string::npos) << far.log;
}

// The fourfold slowing in step 8 of a run whose measurements were to last 1,000
// steps: the drift ends the measurement once three of the device's last
// four steps show it, the group's micro-batches are dealt anew after step
// 10, and the short measurement that follows, of the shares dealt anew,
// finds nothing better: once.
TEST(SimulatedPipelineTest, AGroupDealsItsMicroBatchesAnewAsSoonAsADeviceDrifts) {
  JobPlan plan = HybridPlan({{0, 1}, {2}}, 4);
  plan.workers[2].slowdown = 1;
  const SimulatedRun whole_run = RunReplaying(plan, {}, 24, Fault::kDies, {}, {}, 1000);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  double step_8_at = 0;
  for (int s = 0; s < 7; ++s) step_8_at += whole_run.step_s[s];
  plan.workers[1].slowdown_changes = {{step_8_at, 4 * plan.workers[1].slowdown}};
  const SimulatedRun run = RunReplaying(plan, {}, 24, Fault::kDies, {}, {}, 1000);
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  ExpectSameRun(run, whole_run, 24, /*weights=*/false);
  EXPECT_EQ(run.progress.replays->redealt, 1) << run.log;
  EXPECT_GT(run.step_s[8], 1.5 * whole_run.step_s[8]) << "slowed\n" << run.log;
  EXPECT_LT(run.step_s[11], 0.8 * run.step_s[8]) << "dealt anew after step 10\n" << run.log;
  EXPECT_LT(run.step_s.back(), 0.8 * run.step_s[8]) << run.log;
}

// A device of a two-device stage goes silent in step 3 (behind a wall, its
// stream open): the head takes it for lost and cuts its stream. Its link back
// after step 5, its agent says hello again by itself (RunStageRejoining, as
// the agent runs a stage), and rejoins its stage between steps; every step's
// loss is the run's that lost no one.
TEST(SimulatedPipelineTest, ADeviceCutOffWhileSilentSaysHelloAgainByItselfAndRejoins) {
  const JobPlan plan = HybridPlan({{0, 1}, {2}}, 4);
  const SimulatedRun whole_run = RunReplaying(plan, {}, 8);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  const SimulatedRun run = RunReplaying(plan, {{1, 17}}, 8, Fault::kSilent, {}, {}, 0, {{1, 5}});
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  ExpectSameRun(run, whole_run, 8, /*weights=*/false);
  ASSERT_TRUE(run.progress.replays.has_value());
  EXPECT_EQ(run.progress.replays->count, 1);
  EXPECT_EQ(run.progress.replays->rejoined, 1) << run.log;
  EXPECT_NE(run.log.find("stage agent 1: the stream to the head broke"), std::string::npos) << run.log;
  EXPECT_NE(run.log.find("saying hello again, to rejoin"), std::string::npos) << run.log;
  EXPECT_NE(run.log.find("rank 1 is back and rejoins stage 1"), std::string::npos) << run.log;
  ASSERT_TRUE(run.summaries[1].ok()) << run.summaries[1].status().ToString();
  EXPECT_EQ(run.summaries[1]->stop_reason, "the job is over") << "it ended with the job";
}

// A device of a stage of several, lost at any pass of a step (its first
// forward of the step to its last backward, in the first stage, the middle
// one or the last), has its shares of the step computed again by the other
// of its stage, from what the head had dealt it, while the rest of the
// pipeline goes on: no device of another stage computes a pass again (each
// one's compute is the run's that lost no one, to the simulated
// microsecond), and every step's loss and the weights after are those of
// the run that lost no one, within 1e-4. The loss shows in /progress's
// replays.
TEST(SimulatedPipelineTest, ADeviceLostMidStepHasItsSharesComputedByTheOtherOfItsStage) {
  const JobPlan plan = HybridPlan({{0, 1}, {2, 3}, {4, 5}}, 4);
  const SimulatedRun whole_run = RunReplaying(plan, {}, 5);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString() << "\n" << whole_run.log;
  ASSERT_EQ(whole_run.losses.size(), 5u);
  EXPECT_EQ(whole_run.progress.replays->count, 0);
  EXPECT_GT(std::abs(whole_run.losses[4] - whole_run.losses[0]), 0.01 * whole_run.losses[0]) << "it learns";
  // Each device runs 8 passes a step: dying at its 17th to 24th is in step 3.
  for (int rank : {0, 3, 5}) {
    for (int pass = 17; pass <= 24; ++pass) {
      SCOPED_TRACE("rank " + std::to_string(rank) + " dies at its pass " + std::to_string(pass));
      const SimulatedRun run = RunReplaying(plan, {{rank, pass}}, 5);
      ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
      ASSERT_EQ(run.losses.size(), 5u);
      ExpectSameRun(run, whole_run, 5);
      ASSERT_TRUE(run.progress.replays.has_value());
      EXPECT_EQ(run.progress.replays->count, 1);
      EXPECT_EQ(run.progress.replays->micro_batches, 0) << "no micro-batch ran again on every stage";
      EXPECT_EQ(run.progress.replays->covered, 1);
      EXPECT_EQ(run.progress.replays->covered_shares, 4) << "its share of each micro-batch of the step";
      // Of them, computed again: each whose forward it had sent on, finished or not.
      const std::vector<Pass> order = OneForwardOneBackward(rank / 2, 3, 4);
      const auto begun = std::count_if(order.begin(), order.begin() + (pass - 17),
                                       [](const Pass& p) { return p.kind == PassKind::kForward; });
      if (rank != 5) {
        EXPECT_EQ(run.progress.replays->rerun_shares, begun);
      }
      const int stage = rank / 2, cover = rank % 2 == 0 ? rank + 1 : rank - 1;
      for (int r = 0; r < 6; ++r) {
        if (r / 2 == stage) continue;
        ASSERT_TRUE(run.summaries[r].ok() && whole_run.summaries[r].ok()) << "rank " << r;
        EXPECT_DOUBLE_EQ(run.summaries[r]->compute_s, whole_run.summaries[r]->compute_s)
            << "rank " << r << " of another stage ran a pass again";
      }
      ASSERT_TRUE(run.summaries[cover].ok());
      EXPECT_GT(run.summaries[cover]->compute_s, whole_run.summaries[cover]->compute_s) << "it took the lost one's shares";
      // The samples each trained on: the lost one's of steps 1 and 2, its
      // cover the rest of their stage's.
      const auto samples = [](const SimulatedRun& r, int rank) {
        for (const WorkerProgress& w : r.progress.workers) {
          if (w.rank == rank) return w.samples;
        }
        return int64_t{-1};
      };
      EXPECT_EQ(samples(run, rank), 2 * samples(whole_run, rank) / 5);
      EXPECT_EQ(samples(run, rank) + samples(run, cover), run.progress.samples);
      // And its share of a batch, where it stopped.
      for (const WorkerProgress& w : run.progress.workers) {
        if (w.rank == rank) {
          EXPECT_EQ(w.batch_size, samples(run, rank) / 2);
        }
      }
      // What was in flight: at most the step's; none when the first stage's
      // device dies before its first forward leaves it; the last micro-batch
      // when the last stage's dies at its last backward.
      const int64_t in_flight = run.progress.replays->in_flight_micro_batches;
      EXPECT_LE(in_flight, 4);
      if (rank == 0 && pass == 17) {
        EXPECT_EQ(in_flight, 0);
      }
      if (rank == 5 && pass == 24) {
        EXPECT_EQ(in_flight, 1);
      }
      EXPECT_GT(run.progress.replays->last_recovery_s, 0);
      ASSERT_EQ(run.progress.workers.size(), 6u) << "every device of the plan";
      EXPECT_EQ(std::count_if(run.progress.workers.begin(), run.progress.workers.end(),
                              [&](const WorkerProgress& w) { return !w.active && !w.layers && w.rank == rank; }),
                1)
          << "the lost device is out of the stages, and listed so";
      EXPECT_NE(run.log.find("lost in step 3; rank " + std::to_string(cover) +
                             " of its group computes its 4 shares of the step"),
                std::string::npos)
          << run.log;
      EXPECT_EQ(run.log.find("replaying step"), std::string::npos) << run.log;
    }
  }
}

// Under spec.faultTolerance.gradientEachMicroBatch each device of a group
// sends the head its gradient of each micro-batch as soon as its share is
// done: one lost mid-step has only the shares it had not finished computed
// again by its cover, where otherwise its share of every micro-batch of the
// step is, and every loss and weight is still the run's that lost no one
// (and the run's that sent its gradient once a step: the same sum).
TEST(SimulatedPipelineTest, ADeviceSendingItsGradientEachMicroBatchLostMidStepHasOnlyItsUnfinishedSharesCovered) {
  const JobPlan once_a_step = HybridPlan({{0, 1}, {2, 3}, {4, 5}}, 4);
  JobPlan plan = once_a_step;
  plan.spec.fault_tolerance.gradient_each_micro_batch = true;
  const SimulatedRun whole_run = RunReplaying(plan, {}, 5);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString() << "\n" << whole_run.log;
  ExpectSameRun(whole_run, RunReplaying(once_a_step, {}, 5), 5);
  // Each device runs 8 passes a step: dying at its 17th to 24th is in step 3.
  for (int rank : {0, 3, 5}) {
    const std::vector<Pass> order = OneForwardOneBackward(rank / 2, 3, 4);
    for (int pass = 17; pass <= 24; ++pass) {
      SCOPED_TRACE("rank " + std::to_string(rank) + " dies at its pass " + std::to_string(pass));
      const SimulatedRun run = RunReplaying(plan, {{rank, pass}}, 5);
      ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
      ExpectSameRun(run, whole_run, 5);
      ASSERT_TRUE(run.progress.replays.has_value());
      EXPECT_EQ(run.progress.replays->count, 1);
      EXPECT_EQ(run.progress.replays->micro_batches, 0) << "no micro-batch ran again on every stage";
      // Its backwards of the step done before it died: their gradient went.
      const auto finished = std::count_if(order.begin(), order.begin() + (pass - 17),
                                          [](const Pass& p) { return p.kind == PassKind::kBackward; });
      const auto begun = (pass - 17) - finished;  // its forwards
      EXPECT_EQ(run.progress.replays->covered_shares, 4 - finished) << "its shares not finished, no more";
      // Computed again of what it had computed: those in flight on it, its
      // forward sent on, its gradient not (the last stage's forward goes
      // nowhere: the head cannot tell it was computed).
      if (rank != 5) {
        EXPECT_EQ(run.progress.replays->rerun_shares, begun - finished);
      }
      EXPECT_LE(run.progress.replays->rerun_shares, begun - finished);
      if (finished > 0) {
        EXPECT_NE(run.log.find(" more came in its parts"), std::string::npos) << run.log;
      }
    }
  }
  // Two of a group of three lost in one step and the last stage's last
  // device later, or a cover lost while covering (the whole step again):
  // still the run that lost no one.
  JobPlan three = HybridPlan({{0, 1, 2}, {3, 4}}, 3);
  three.spec.fault_tolerance.gradient_each_micro_batch = true;
  const SimulatedRun three_whole = RunReplaying(three, {}, 5);
  const SimulatedRun together = RunReplaying(three, {{1, 9}, {2, 9}, {4, 20}}, 5);  // 6 passes a step
  ASSERT_TRUE(together.ended.ok()) << together.ended.ToString() << "\n" << together.log;
  ExpectSameRun(together, three_whole, 5, /*weights=*/false);
  EXPECT_GE(together.progress.replays->count, 2);
  JobPlan covering = HybridPlan({{0, 1, 2}, {3}}, 3);
  covering.spec.fault_tolerance.gradient_each_micro_batch = true;
  const SimulatedRun covering_whole = RunReplaying(covering, {}, 5);
  const SimulatedRun cover_lost = RunReplaying(covering, {{1, 9}, {0, 12}}, 5);
  ASSERT_TRUE(cover_lost.ended.ok()) << cover_lost.ended.ToString() << "\n" << cover_lost.log;
  ExpectSameRun(cover_lost, covering_whole, 5, /*weights=*/false);
  EXPECT_NE(cover_lost.log.find("replaying step 2 (attempt 2) on 2 devices"), std::string::npos) << cover_lost.log;
}

// A plan that says what it was planned from has the head plan a step's
// micro-batches again once a device is lost: the cost model's best count for
// the groups left (here, the fakes' passes costing in proportion to their
// samples and messages nothing, 24 of one sample rather than the plan's 4, to
// fill the pipeline of two devices of unequal speed), which the stages then
// cut the step into, so that the steps after take the time the re-plan
// predicts, less than the same loss's under a plan that says nothing. Every
// loss is still the run's that lost no one.
TEST(SimulatedPipelineTest, ALossHasTheHeadPlanTheMicroBatchesAgainForTheDevicesLeft) {
  JobPlan plan = HybridPlan({{0, 1}, {2}}, 4);
  const SimulatedRun whole_run = RunReplaying(plan, {}, 6);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  const SimulatedRun as_planned = RunReplaying(plan, {{0, 17}}, 6);  // rank 0's first forward of step 3
  ASSERT_TRUE(as_planned.ended.ok()) << as_planned.ended.ToString() << "\n" << as_planned.log;
  EXPECT_EQ(as_planned.progress.replays->replanned_micro_batches, 0) << "nothing to plan from";

  // The layers as the fakes run them on a device of speed 1 (the stage of
  // layer s: s + 1 ms forward and 2 ms backward a sample), each device as
  // slow as its slot.
  PlannedFrom from;
  for (int s = 0; s < 2; ++s) {
    const double f = (s + 1) * 1e-3, b = 2e-3;
    from.layers.push_back({"layer" + std::to_string(s), f, b, 40, 40, {}, 0, ""});
  }
  for (const WorkerSlot& slot : plan.workers) from.devices.push_back({slot.node, 1 / slot.slowdown, 0, 0, 0});
  from.state_factor = 2;
  plan.pipeline->planned_from = from;
  const edgetrain::PipelinePlan best = AtBestMicroBatches(ProblemOf(from, plan.spec), {{0, 1, {1}}, {1, 2, {2}}});
  ASSERT_NE(best.micro_batches, 4) << "the plan's count is not the best for the devices left";
  const SimulatedRun replanned = RunReplaying(plan, {{0, 17}}, 6);
  ASSERT_TRUE(replanned.ended.ok()) << replanned.ended.ToString() << "\n" << replanned.log;
  ExpectSameRun(replanned, whole_run, 6);
  ASSERT_TRUE(replanned.progress.replays.has_value());
  EXPECT_EQ(replanned.progress.replays->replanned_micro_batches, best.micro_batches);
  EXPECT_DOUBLE_EQ(replanned.progress.replays->replanned_samples_per_s, best.cost.samples_per_s);
  EXPECT_NE(replanned.log.find("planned again for the devices it now has (2): " + std::to_string(best.micro_batches) +
                               " micro-batches of " + std::to_string(best.micro_batch_size) + " (were 4)"),
            std::string::npos)
      << replanned.log;
  // Steps 4 to 6, after the loss: faster than at the plan's count (0.882 s
  // against 0.972 s when written), and as long as the prediction says.
  double before = 0, after = 0;
  for (size_t k = 3; k < 6; ++k) before += as_planned.step_s[k], after += replanned.step_s[k];
  EXPECT_LT(after, before);
  EXPECT_NEAR(after / 3, 24 / best.cost.samples_per_s, 0.05 * after / 3);
}

// What the plan was planned from, for fake stages as RunReplaying builds
// them: the stage of layer s takes s + 1 ms forward and 2 ms backward a
// sample on a device of speed 1, each device as slow as its slot.
PlannedFrom FakesPlannedFrom(const JobPlan& plan) {
  PlannedFrom from;
  for (int s = 0; s < plan.pipeline->stages.back().end_layer; ++s) {
    from.layers.push_back({"layer" + std::to_string(s), (s + 1) * 1e-3, 2e-3, 40, 40, {}, 0, ""});
  }
  for (const WorkerSlot& slot : plan.workers) from.devices.push_back({slot.node, 1 / slot.slowdown, 0, 0, 0});
  from.state_factor = 2;
  return from;
}

// With layers that may move, a loss has the head run the planner over the
// devices left, groups and cuts: the fastest device of the first stage lost,
// the stages as they are (layer 0 on rank 1, of speed 1/2; layer 1, the
// heavier, on rank 2, of 1/3) are predicted at 82 samples/s, and the
// planner's best, the two devices swapped, at 107. The head lays them out so
// before the next step, each device sent its new layers as the stages
// committed them. Every loss is the run's that lost no one, and the steps
// after are faster than those of the same loss with layers that never move.
TEST(SimulatedPipelineTest, ALossHasTheHeadRunThePlannerOverTheDevicesLeft) {
  JobPlan plan = HybridPlan({{0, 1}, {2}}, 4);
  plan.pipeline->planned_from = FakesPlannedFrom(plan);
  const SimulatedRun whole_run = RunReplaying(plan, {}, 6);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  const SimulatedRun kept = RunReplaying(plan, {{0, 17}}, 6);  // rank 0's first forward of step 3
  ASSERT_TRUE(kept.ended.ok()) << kept.ended.ToString() << "\n" << kept.log;
  EXPECT_EQ(kept.progress.replays->repartitions, 0) << "layers that never move: the stages stay";
  const SimulatedRun regrouped = RunReplaying(plan, {{0, 17}}, 6, Fault::kDies, {}, {}, /*rebalance_every=*/1000);
  ASSERT_TRUE(regrouped.ended.ok()) << regrouped.ended.ToString() << "\n" << regrouped.log;
  ExpectSameRun(regrouped, whole_run, 6);
  ASSERT_TRUE(regrouped.progress.replays.has_value());
  EXPECT_EQ(regrouped.progress.replays->repartitions, 1) << regrouped.log;
  EXPECT_NE(regrouped.log.find("stages laid out anew after step 3: layers 0-0 on rank 1 | layers 1-1 on rank 2 now "
                                "layers 0-0 on rank 2 | layers 1-1 on rank 1"),
            std::string::npos)
      << regrouped.log;
  ASSERT_EQ(regrouped.progress.workers.size(), 3u);
  for (const WorkerProgress& w : regrouped.progress.workers) {
    if (w.rank == 0) {
      EXPECT_FALSE(w.active || w.layers) << "lost: in no stage";
      continue;
    }
    EXPECT_EQ(w.layers, (w.rank == 2 ? std::pair{0, 1} : std::pair{1, 2})) << w.rank;
  }
  double before = 0, after = 0;
  for (size_t k = 4; k < 6; ++k) before += kept.step_s[k], after += regrouped.step_s[k];
  EXPECT_LT(after, 0.8 * before) << regrouped.log;
  // The second stage's device lost: its layer goes to the first stage's
  // group, one stage of both layers on ranks 0 and 1, which is already the
  // planner's best over them. The stages stay.
  const SimulatedRun rebuilt = RunReplaying(plan, {{2, 17}}, 6, Fault::kDies, {}, {}, /*rebalance_every=*/1000);
  ASSERT_TRUE(rebuilt.ended.ok()) << rebuilt.ended.ToString() << "\n" << rebuilt.log;
  EXPECT_EQ(rebuilt.progress.replays->restored_stages, 1) << rebuilt.log;
  EXPECT_NE(rebuilt.log.find("for the stages as they are, not 15% more: they stay"), std::string::npos) << rebuilt.log;
  EXPECT_EQ(rebuilt.log.find("laid out anew"), std::string::npos) << rebuilt.log;
}

// The head learns what its word to the stages and their answers cost a step
// from the steps before a loss, here its own turn between steps (100 ms, a
// third of a step's compute, of which the profile's messages know nothing),
// and its re-plan counts them: the steps after the loss take the predicted
// time with that turn, within 5%.
TEST(SimulatedPipelineTest, AReplanCountsTheOrdersAsTheRunsStepsTookThem) {
  JobPlan plan = HybridPlan({{0, 1}, {2}}, 4);
  PlannedFrom from;
  for (int s = 0; s < 2; ++s) from.layers.push_back({"layer" + std::to_string(s), (s + 1) * 1e-3, 2e-3, 40, 40, {}, 0, ""});
  for (const WorkerSlot& slot : plan.workers) from.devices.push_back({slot.node, 1 / slot.slowdown, 0, 0, 0});
  from.state_factor = 2;
  from.transport.message_s = 50e-6;  // as profiled, where the run's messages are instant
  plan.pipeline->planned_from = from;
  constexpr auto kTurn = milliseconds(100);
  // Rank 0 dies at its first forward of step 13, after 12 plain steps.
  const SimulatedRun run = RunReplaying(plan, {{0, 12 * 8 + 1}}, 16, Fault::kDies, {}, kTurn);
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  ASSERT_TRUE(run.progress.replays.has_value());
  const JobProgress::Replays& r = *run.progress.replays;
  EXPECT_NEAR(r.replanned_orders_s, 0.1, 1e-6) << run.log;
  EXPECT_NE(run.log.find("the head's word and the stages' answers 100.00 ms a step, as the run's last 12 steps took "
                         "them; two messages as profiled, 0.10 ms"),
            std::string::npos)
      << run.log;
  // Steps 14 to 16, each with the head's turn after it.
  double after = 0;
  for (size_t k = 13; k < 16; ++k) after += run.step_s[k] + ToSeconds(kTurn);
  EXPECT_NEAR(after / 3, 24 / r.replanned_samples_per_s, 0.05 * after / 3);
  // Without what the run taught it, the prediction is off by more than that.
  PipelineProblem profiled = ProblemOf(from, plan.spec);
  const edgetrain::PipelinePlan as_profiled = AtBestMicroBatches(profiled, {{0, 1, {1}}, {1, 2, {2}}});
  EXPECT_GT(std::abs(after / 3 - 24 / as_profiled.cost.samples_per_s), 0.2 * after / 3);
}

// The head learns each device's pace from the steps before a loss (here
// every pass takes 1.5 times what the profile timed, as a run's steps do
// beside the samples read and the activations copied that a profile of the
// layers leaves out), and its re-plan plans the devices left at it: the
// steps after the loss take the predicted time within 5%, where the profile
// alone is off by a third.
TEST(SimulatedPipelineTest, AReplanPlansEachDeviceLeftAtItsPaceInTheRun) {
  JobPlan plan = HybridPlan({{0, 1}, {2}}, 4);
  PlannedFrom from;
  for (int s = 0; s < 2; ++s) {
    from.layers.push_back({"layer" + std::to_string(s), (s + 1) * 1e-3 / 1.5, 2e-3 / 1.5, 40, 40, {}, 0, ""});
  }
  for (const WorkerSlot& slot : plan.workers) from.devices.push_back({slot.node, 1 / slot.slowdown, 0, 0, 0});
  from.state_factor = 2;
  plan.pipeline->planned_from = from;
  // Rank 0 dies at its first forward of step 13, after 12 steps.
  const SimulatedRun run = RunReplaying(plan, {{0, 12 * 8 + 1}}, 16);
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  ASSERT_TRUE(run.progress.replays.has_value());
  ASSERT_EQ(run.progress.workers.size(), 3u) << "ranks 1 and 2, and rank 0 lost";
  for (const WorkerProgress& w : run.progress.workers) {
    if (w.rank == 0) continue;
    ASSERT_TRUE(w.pace.has_value()) << "rank " << w.rank;
    EXPECT_NEAR(*w.pace, 1.5, 0.01) << "rank " << w.rank;
  }
  EXPECT_NE(run.log.find("each device at its pace in the run's steps against the profile's prediction: rank 1 1.50x, "
                         "rank 2 1.50x"),
            std::string::npos)
      << run.log;
  for (int rank : {1, 2}) EXPECT_NEAR(run.progress.replays->replanned_paces.at(rank), 1.5, 0.01) << rank;
  const double replanned = run.progress.replays->replanned_samples_per_s;
  double after = 0;  // steps 14 to 16
  for (size_t k = 13; k < 16; ++k) after += run.step_s[k];
  EXPECT_NEAR(after / 3, 24 / replanned, 0.05 * after / 3);
  PipelineProblem profiled = ProblemOf(from, plan.spec);
  const edgetrain::PipelinePlan as_profiled = AtBestMicroBatches(profiled, {{0, 1, {1}}, {1, 2, {2}}});
  EXPECT_GT(std::abs(after / 3 - 24 / as_profiled.cost.samples_per_s), 0.3 * after / 3);
}

// A device whose every other pass of each kind is crowded (`crowded`) by
// the agents beside it on this machine's cores: it takes half as long again
// on the clock, and its thread's CPU clock counts that too (shared caches
// and memory), where a device of its own would not. Its CPU clock counts its
// passes alone.
class CrowdedStageTrainer final : public WrappedStageTrainer {
 public:
  CrowdedStageTrainer(StageTrainer& device, Clock& clock, bool crowded)
      : WrappedStageTrainer(device), clock_(clock), crowded_(crowded) {}
  double cpu_seconds() const { return cpu_s_; }
  StatusOr<std::vector<float>> Forward(int64_t id, std::span<const float> input) override {
    return Pass(0, [&] { return device_.Forward(id, input); });
  }
  StatusOr<LossAndInputGradient> BackwardFromLoss(int64_t id, std::span<const int64_t> labels,
                                                  double scale) override {
    return Pass(1, [&] { return device_.BackwardFromLoss(id, labels, scale); });
  }
  StatusOr<std::vector<float>> Backward(int64_t id, std::span<const float> output_gradient) override {
    return Pass(2, [&] { return device_.Backward(id, output_gradient); });
  }

 private:
  template <typename F>
  auto Pass(size_t kind, F&& pass) -> decltype(pass()) {
    const TimePoint began = clock_.Now();
    auto result = pass();
    double took = ToSeconds(clock_.Now() - began);
    if (crowded_ && ++passes_[kind] % 2 == 0) {
      clock_.SleepFor(FromSeconds(took / 2));
      took *= 1.5;
    }
    cpu_s_ += took;
    return result;
  }
  Clock& clock_;
  const bool crowded_;
  std::array<int, 3> passes_{};  // forward, backward from the loss, backward
  double cpu_s_ = 0;             // read on the device's computing thread alone
};

// Each device's pass is costed at what its like passes cost alone
// (core/pass_costs.h): a device crowded on every other pass takes, and says
// it worked, what it does uncrowded, and the head learns the same pace of it
// (costed at each pass's CPU time, it would be a quarter slower).
TEST(SimulatedPipelineTest, ADeviceCrowdedOnThisMachineWorksAtItsOwnPace) {
  auto run = [](bool crowded) {
    JobPlan plan = HybridPlan({{0}, {1}}, 4);
    for (WorkerSlot& slot : plan.workers) slot.slowdown = 2 + slot.rank;  // time enough to hide a crowded pass
    PlannedFrom from;
    for (int s = 0; s < 2; ++s) {
      from.layers.push_back({"layer" + std::to_string(s), (s + 1) * 1e-3, 2e-3, 40, 40, {}, 0, ""});
    }
    for (const WorkerSlot& slot : plan.workers) from.devices.push_back({slot.node, 1 / slot.slowdown, 0, 0, 0});
    plan.pipeline->planned_from = from;
    const TrainTestSplit data = LearningData();
    DeterministicClock clock;
    std::vector<std::unique_ptr<testing::FakeStageTrainer>> fakes;
    std::vector<std::unique_ptr<CrowdedStageTrainer>> devices;
    std::vector<StageTrainer*> trainers;
    std::map<int, std::function<double()>> cpu_clocks;
    for (int s = 0; s < 2; ++s) {
      fakes.push_back(std::make_unique<testing::FakeStageTrainer>(
          testing::FakeStage{s == 0, s == 1, milliseconds(1 + s), milliseconds(2)}, clock));
      devices.push_back(std::make_unique<CrowdedStageTrainer>(*fakes.back(), clock, crowded));
      CrowdedStageTrainer* device = devices.back().get();
      trainers.push_back(device);
      cpu_clocks[s] = [device] { return device->cpu_seconds(); };
    }
    SimulatedRun result = RunPipeline(plan, trainers, data, clock, 24, {.cpu_clocks = cpu_clocks});
    EXPECT_TRUE(result.ended.ok()) << result.ended.ToString() << "\n" << result.log;
    return result;
  };
  const SimulatedRun alone = run(false);
  const SimulatedRun crowded = run(true);
  for (const SimulatedRun* r : {&alone, &crowded}) ASSERT_EQ(r->progress.workers.size(), 2u) << r->log;
  for (size_t w = 0; w < 2; ++w) {
    const WorkerProgress& a = alone.progress.workers[w];
    const WorkerProgress& c = crowded.progress.workers[w];
    ASSERT_TRUE(a.pace.has_value() && c.pace.has_value()) << "rank " << a.rank;
    EXPECT_NEAR(*c.pace, *a.pace, 0.02 * *a.pace) << "rank " << a.rank;
  }
  // Its steps take what they take uncrowded, the last 16 (past the
  // passes costed at what they measured, before four like ones were known).
  double alone_s = 0, crowded_s = 0;
  for (size_t k = 8; k < 24; ++k) {
    alone_s += alone.step_s[k];
    crowded_s += crowded.step_s[k];
  }
  EXPECT_NEAR(crowded_s, alone_s, 0.02 * alone_s);
}

// A group whose gradient takes 2 s on each device's uplink (80 kB at 0.32
// Mbit/s), twice the least deadline of four heartbeats: the gradient is
// announced, so the head gives it the time it takes on the wire rather than
// taking the devices, which send no heartbeat meanwhile, for silent; the run
// is the run on links without limit, step for step.
TEST(SimulatedPipelineTest, AStageSendingALargeMessageOnASlowLinkIsNotTakenForSilent) {
  JobPlan plan = HybridPlan({{0, 1}, {2}}, 2);
  const TrainTestSplit data = testing::FakeData(240, 8, 10);
  auto run = [&](std::optional<BandwidthTrace> uplink) {
    DeterministicClock clock;
    const testing::FakeStage large{true, false, milliseconds(1), milliseconds(2), 1, nullptr, 20000};
    testing::FakeStageTrainer first(large, clock), second(large, clock);
    testing::FakeStageTrainer last({false, true}, clock);
    return RunPipeline(plan, {&first, &second, &last}, data, clock, 4, {.uplink = uplink});
  };
  const SimulatedRun unlimited = run(std::nullopt);
  ASSERT_TRUE(unlimited.ended.ok()) << unlimited.ended.ToString();
  const SimulatedRun slow = run(BandwidthTrace::Constant(0.32));
  ASSERT_TRUE(slow.ended.ok()) << slow.ended.ToString() << "\n" << slow.log;
  ASSERT_EQ(slow.losses.size(), 4u);
  for (size_t k = 0; k < 4; ++k) EXPECT_NEAR(slow.losses[k], unlimited.losses[k], 1e-6) << "step " << k + 1;
  EXPECT_EQ(slow.log.find("silent for"), std::string::npos) << slow.log;
  EXPECT_EQ(slow.progress.replays->count, 0);
  // Every step took longer than the least deadline (1 s), for the gradients' time on the wire.
  EXPECT_GT(*std::min_element(slow.step_s.begin(), slow.step_s.end()), 1.5);
}

// A replica goes out in parts when the stage has nothing else to send: on a
// link where a replica takes 2 s (80 kB at 0.32 Mbit/s), a step waits at most
// for the part on the wire (16 kB, 0.4 s), not for the whole replica as when
// it went whole ahead of the step's activations, and the run trains as the
// one that replicates nothing. A replica cut off mid-way (its device lost)
// leaves the head the one before it
// (ADeviceLostWhileItsReplicaIsOnTheWireIsRebuiltFromTheOneBefore).
TEST(SimulatedPipelineTest, AReplicaOnASlowLinkDoesNotHoldThePipeline) {
  JobPlan plan = HybridPlan({{0}, {1}}, 2);
  const TrainTestSplit data = testing::FakeData(240, 8, 10);
  auto run = [&](int replicate_every) {
    plan.spec.fault_tolerance.replicate_every = replicate_every;
    DeterministicClock clock;
    testing::FakeStageTrainer first({true, false, milliseconds(20), milliseconds(20), 1, nullptr, 20000}, clock);
    testing::FakeStageTrainer last({false, true}, clock);
    return RunPipeline(plan, {&first, &last}, data, clock, 20, {.uplink = BandwidthTrace::Constant(0.32)});
  };
  const SimulatedRun none = run(0);
  ASSERT_TRUE(none.ended.ok()) << none.ended.ToString() << "\n" << none.log;
  const SimulatedRun replicated = run(2);
  ASSERT_TRUE(replicated.ended.ok()) << replicated.ended.ToString() << "\n" << replicated.log;
  ASSERT_EQ(replicated.losses.size(), 20u);
  for (size_t k = 0; k < 20; ++k) EXPECT_NEAR(replicated.losses[k], none.losses[k], 1e-6) << "step " << k + 1;
  double without = 0, with = 0;
  for (double t : none.step_s) without += t;
  for (double t : replicated.step_s) with += t;
  // 20 steps took 19.2 s without replicas, 21.6 s with replicas in parts
  // (22.3 s once the head's copies were paced between those relayed),
  // and 29.9 s when each replica went whole ahead of the activations (its
  // longest step 2.15 s against 0.96 s).
  EXPECT_LT(with, 1.2 * without);
  EXPECT_LT(*std::max_element(replicated.step_s.begin(), replicated.step_s.end()),
            *std::max_element(none.step_s.begin(), none.step_s.end()) + 0.45);
  // The head's copies as they are unless a job says otherwise: due every
  // step, paced by their time on this link, so that they cost the pipeline
  // little: 19.9 s against 19.2 s without, the relayed copy of step 1
  // included, where replicas every 2 steps (the relayed ones, and the
  // head's paced between) took 22.3 s.
  const SimulatedRun paced = run(100);
  ASSERT_TRUE(paced.ended.ok()) << paced.ended.ToString() << "\n" << paced.log;
  double paced_s = 0;
  for (double t : paced.step_s) paced_s += t;
  EXPECT_LT(paced_s, 1.05 * without) << paced_s;
}

// A head that takes a device's hello and has not welcomed it yet (it takes a
// device back only between steps, after its back-off).
class SilentHead final : public WorkerSessions {
 public:
  Status Admit(const v1::Hello&) override { return Status::Ok(); }
  Status Serve(const v1::Hello&, WorkerStream& stream) override {
    while (stream.Receive().ok()) {
    }
    return Status::Ok();
  }
};

// A device stopped (its agent's SIGTERM) while it awaits its welcome leaves
// at once: the wait had no end but the head's answer, and its pod was killed
// at the end of its grace (found in review).
// The first stage's device, rank 0 of a two-stage plan, against `head` on
// `clock`: `meanwhile(cancel)`, if given, runs on the test's thread while the
// device runs on its own; the device is then waited for, and when it was
// done is `*joined_at`, if asked.
StatusOr<StageSummary> AStageAgainst(WorkerSessions& head, DeterministicClock& clock, std::ostringstream& log,
                                     const std::function<void(std::atomic<bool>&)>& meanwhile = nullptr,
                                     TimePoint* joined_at = nullptr) {
  const JobPlan plan = HybridPlan({{0}, {1}}, 2);
  const TrainTestSplit data = testing::FakeData(240, 8, 10);
  testing::FakeStageTrainer trainer({true, false}, clock);
  InMemoryNetwork network(clock);
  std::atomic<bool> cancel{false};
  StatusOr<StageSummary> summary = InternalError("not run");
  clock.Run("test", [&] {
    auto server = network.Serve("head", head);
    ASSERT_TRUE(server.ok());
    auto connector = network.Connector("head");
    StageOptions options;
    options.rank = 0;
    options.head = connector.get();
    ClockThread device = clock.StartThread("device", [&] {
      summary = RunStage(plan, options, trainer, data.train, clock, log, cancel);
    });
    if (meanwhile) meanwhile(cancel);
    device.Join();
    if (joined_at) *joined_at = clock.Now();
    (*server)->Shutdown();
  });
  return summary;
}

TEST(SimulatedPipelineTest, ADeviceStoppedWhileItAwaitsItsWelcomeLeavesAtOnce) {
  SilentHead head;
  DeterministicClock clock;
  std::ostringstream log;
  TimePoint asked{}, left{};
  const StatusOr<StageSummary> summary = AStageAgainst(
      head, clock, log,
      [&](std::atomic<bool>& cancel) {
        clock.SleepFor(std::chrono::minutes(1));
        asked = clock.Now();
        cancel = true;
      },
      &left);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->stop_reason, "cancelled");
  EXPECT_LE(left - asked, StageOptions{}.cancel_recheck) << ToSeconds(left - asked);
}

// A head whose relayer sends a replica part it queued for the rank's earlier
// session before this session's answer, then says stop.
class RelayFirstHead final : public WorkerSessions {
 public:
  Status Admit(const v1::Hello&) override { return Status::Ok(); }
  Status Serve(const v1::Hello&, WorkerStream& stream) override {
    v1::CoordinatorMessage part;
    part.mutable_replica_part()->set_step(3);
    EDGETRAIN_RETURN_IF_ERROR(stream.Send(part));
    v1::CoordinatorMessage stop;
    stop.mutable_stop()->set_reason("done");
    EDGETRAIN_RETURN_IF_ERROR(stream.Send(stop));
    while (stream.Receive().ok()) {
    }
    return Status::Ok();
  }
};

// A replica part before a session's first answer is passed over: taken for
// the answer, it failed the stage for good, "the head did not answer with a
// stage welcome", where it rejoins (found in review).
TEST(SimulatedPipelineTest, AReplicaPartBeforeASessionsFirstAnswerIsPassedOver) {
  RelayFirstHead head;
  DeterministicClock clock;
  std::ostringstream log;
  const StatusOr<StageSummary> summary = AStageAgainst(head, clock, log);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString() << "\n" << log.str();
  EXPECT_EQ(summary->stop_reason, "done");
}

// A device whose replica is still going out on a slow link when the job ends
// ends well: the head, once it has said stop, shuts its server down, and the
// parts left fail to go. Their failure had been the device's: its agent said
// hello again for the head's whole return grace, and exited failing minutes
// after the job had succeeded (found in review).
TEST(SimulatedPipelineTest, AReplicaStillGoingOutWhenTheJobEndsFailsNoDevice) {
  JobPlan plan = HybridPlan({{0}, {1}}, 2);
  plan.spec.fault_tolerance.replicate_every = 1;
  const TrainTestSplit data = testing::FakeData(240, 8, 10);
  DeterministicClock clock;
  testing::FakeStageTrainer first({true, false, milliseconds(20), milliseconds(20), 1, nullptr, 20000}, clock);
  testing::FakeStageTrainer last({false, true}, clock);
  const SimulatedRun run = RunPipeline(plan, {&first, &last}, data, clock, 3,
                                       {.uplink = BandwidthTrace::Constant(0.32), .serving_ends_with_the_job = true});
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  for (size_t r = 0; r < run.summaries.size(); ++r) {
    ASSERT_TRUE(run.summaries[r].ok()) << "rank " << r << ": " << run.summaries[r].status().ToString();
    EXPECT_EQ(run.summaries[r]->stop_reason, "the job is over") << "rank " << r;
  }
}

// A pipeline of one stage has no neighbour to rebuild it on: its devices
// send no replicas, which it could never use (a one-stage MLP sent 239 MB of
// them in 15 s: a new user's trial). What each device sends is as when
// replicateEvery is 0.
TEST(SimulatedPipelineTest, APipelineOfOneStageSendsNoReplicas) {
  JobPlan plan = HybridPlan({{0, 1}}, 2);
  const TrainTestSplit data = testing::FakeData(240, 8, 10);
  auto sent = [&](int replicate_every) {
    plan.spec.fault_tolerance.replicate_every = replicate_every;
    DeterministicClock clock;
    testing::FakeStageTrainer a({true, true, milliseconds(20), milliseconds(20), 1, nullptr, 20000}, clock);
    testing::FakeStageTrainer b({true, true, milliseconds(20), milliseconds(20), 1, nullptr, 20000}, clock);
    const SimulatedRun run = RunPipeline(plan, {&a, &b}, data, clock, 6);
    EXPECT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
    int64_t bytes = 0;
    for (const WorkerProgress& w : run.progress.workers) bytes += w.bytes_sent;
    return bytes;
  };
  const int64_t none = sent(0);
  EXPECT_GT(none, 0);
  EXPECT_EQ(sent(1), none);
}

// The devices of a group each report their own share: its samples and its
// part of a batch, as the group dealt them; a device alone in its stage the
// whole. Every device showed the whole job's (a new user's trial).
TEST(SimulatedPipelineTest, EachDeviceOfAGroupReportsItsOwnShare) {
  JobPlan plan = HybridPlan({{0, 1}, {2}}, 2);
  const TrainTestSplit data = testing::FakeData(240, 8, 10);
  DeterministicClock clock;
  testing::FakeStageTrainer a({true, false}, clock), b({true, false}, clock), c({false, true}, clock);
  const SimulatedRun run = RunPipeline(plan, {&a, &b, &c}, data, clock, 5);
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  std::map<int, WorkerProgress> by_rank;
  for (const WorkerProgress& w : run.progress.workers) by_rank[w.rank] = w;
  ASSERT_EQ(by_rank.size(), 3u);
  EXPECT_EQ(run.progress.samples, 5 * 24);
  EXPECT_EQ(by_rank[0].samples + by_rank[1].samples, run.progress.samples) << "the group's shares make the whole";
  EXPECT_GT(by_rank[0].samples, 0);
  EXPECT_GT(by_rank[1].samples, 0);
  EXPECT_EQ(by_rank[0].batch_size + by_rank[1].batch_size, 24);
  EXPECT_EQ(by_rank[2].samples, run.progress.samples) << "alone in its stage: every sample";
  EXPECT_EQ(by_rank[2].batch_size, 24);
}

// A group's device that waits for its group's summed gradient is idle, as
// one that waits for a neighbour's micro-batch is: a pipeline of one stage
// on several devices, whose devices wait for nothing else, had shown 0%
// waiting beside a plan of 73% exchanging gradients (a user's trial).
TEST(SimulatedPipelineTest, AGroupsWaitForItsSummedGradientIsIdle) {
  JobPlan plan = HybridPlan({{0, 1}}, 2);
  const TrainTestSplit data = testing::FakeData(240, 8, 10);
  DeterministicClock clock;
  // Dealt shares by the plan's speeds, rank 1's passes twice as slow as it
  // says: rank 0 waits for its gradient every step.
  using std::chrono::milliseconds;
  testing::FakeStageTrainer a({true, true}, clock),
      b({.first = true, .last = true, .forward = milliseconds(4), .backward = milliseconds(8)}, clock);
  const SimulatedRun run = RunPipeline(plan, {&a, &b}, data, clock, 5);
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  ASSERT_EQ(run.progress.workers.size(), 2u);
  double idle_s = 0;
  for (const WorkerProgress& w : run.progress.workers) {
    EXPECT_NEAR(w.wall_s, w.compute_s + w.stall_s, 1e-9);
    idle_s += w.stall_s;
  }
  EXPECT_GT(idle_s, 0) << "the faster device waits for the other's gradient\n" << run.log;
}

// A device that goes silent mid-step, its stream open (its uplink drops
// everything, heartbeats too), is taken for lost past its learned deadline,
// never under four heartbeats (1 s): the step is replayed on the others of
// its stage within seconds, not when the run ends and its link comes back,
// and the run is the run that lost no one. Only it is taken: the devices
// waiting on it heartbeat. Its stream is cut, so what it sends when its link
// is back ends it.
TEST(SimulatedPipelineTest, ADeviceSilentMidStepIsTakenForLostAndReplayed) {
  const JobPlan plan = HybridPlan({{0, 1}, {2, 3}, {4, 5}}, 4);
  const SimulatedRun whole_run = RunReplaying(plan, {}, 5);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  // Step 3's passes (8 a step) of a device of the first, middle and last stage.
  for (const auto& [rank, pass] : std::vector<std::pair<int, int>>{{1, 17}, {3, 22}, {4, 20}}) {
    SCOPED_TRACE("rank " + std::to_string(rank) + " silent from its pass " + std::to_string(pass));
    const SimulatedRun run = RunReplaying(plan, {{rank, pass}}, 5, Fault::kSilent);
    ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
    ASSERT_EQ(run.losses.size(), 5u);
    ExpectSameRun(run, whole_run, 5, /*weights=*/false);
    ASSERT_TRUE(run.progress.replays.has_value());
    EXPECT_EQ(run.progress.replays->count, 1);
    EXPECT_GE(run.progress.replays->last_recovery_s, 1.0) << "no device is judged silent under four heartbeats";
    EXPECT_LT(run.progress.replays->last_recovery_s, 3.0) << run.log;
    EXPECT_NE(run.log.find("(rank " + std::to_string(rank) + ") silent for "), std::string::npos) << run.log;
    EXPECT_NE(run.log.find("in step 3, past its deadline of "), std::string::npos) << run.log;
    EXPECT_EQ(run.log.find("silent for "), run.log.rfind("silent for ")) << "one device taken, not its neighbours\n"
                                                                         << run.log;
    for (size_t r = 0; r < run.summaries.size(); ++r) {
      if (static_cast<int>(r) == rank) {
        EXPECT_FALSE(run.summaries[r].ok()) << "its stream was cut";
      } else {
        ASSERT_TRUE(run.summaries[r].ok()) << r << ": " << run.summaries[r].status().ToString();
        EXPECT_EQ(run.summaries[r]->stop_reason, "the job is over");
      }
    }
  }
}

// A device whose compute hangs mid-step while its link lives (its
// heartbeats going out, each saying how long its pass has run) is taken for
// hung once that pass outruns its deadline: 10 s here, the floor, its passes
// so far taking milliseconds. The step is replayed on the others of its
// stage, or a stage of one is rebuilt on its neighbour from its replica
// (of every step here), and the run is the run that lost no one. Without the pass its heartbeats
// report, the head waited on it for the hour it hung.
TEST(SimulatedPipelineTest, ADeviceWhoseComputeHangsWhileItsHeartbeatsComeIsTakenForHung) {
  JobPlan plan = HybridPlan({{0, 1}, {2, 3}, {4}}, 4);
  plan.spec.fault_tolerance.replicate_every = 1;  // the lone stage's replica is of the step before: nothing lost
  const SimulatedRun whole_run = RunReplaying(plan, {}, 5);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  // Step 3's passes (8 a step) of a device of the first and middle stage, and the last stage's only one.
  for (const auto& [rank, pass] : std::vector<std::pair<int, int>>{{1, 17}, {3, 22}, {4, 20}}) {
    SCOPED_TRACE("rank " + std::to_string(rank) + " hangs at its pass " + std::to_string(pass));
    const SimulatedRun run = RunReplaying(plan, {{rank, pass}}, 5, Fault::kHangs);
    ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
    ASSERT_EQ(run.losses.size(), 5u);
    ExpectSameRun(run, whole_run, 5, /*weights=*/false);
    ASSERT_TRUE(run.progress.replays.has_value());
    EXPECT_EQ(run.progress.replays->count, 1);
    EXPECT_EQ(run.progress.replays->hung, 1);
    EXPECT_EQ(run.progress.replays->restored_stages, rank == 4 ? 1 : 0);
    EXPECT_GE(run.progress.replays->last_recovery_s, 10.0) << "not before its floor";
    EXPECT_LT(run.progress.replays->last_recovery_s, 11.0) << run.log;
    EXPECT_NE(run.log.find("(rank " + std::to_string(rank) + ") has computed one pass for "), std::string::npos)
        << run.log;
    EXPECT_NE(run.log.find("its heartbeats still coming: taken for hung"), std::string::npos) << run.log;
    EXPECT_EQ(run.log.find("silent for "), std::string::npos) << "its heartbeats came\n" << run.log;
    EXPECT_FALSE(run.summaries[static_cast<size_t>(rank)].ok()) << "its stream was cut";
  }
}

// The only device of a one-stage pipeline stops whole for 5 s mid-step (as
// SIGSTOP and SIGCONT would have it), link and compute: its loss would end
// the job, so the head waits it out, up to the grace, rather than take it
// for lost after eight heartbeats; the run is the run that paused nothing.
// With two stages and a replica every step, its loss costs a step's updates
// at most, and it is taken for lost after eight heartbeats, as before.
TEST(SimulatedPipelineTest, AnOnlyDeviceWhoseLossWouldCostMoreThanItsPauseIsWaitedFor) {
  const JobPlan alone = HybridPlan({{0}}, 4);
  const SimulatedRun whole_run = RunReplaying(alone, {}, 5);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  const SimulatedRun paused = RunReplaying(alone, {{0, 17}}, 5, Fault::kPauses);  // in step 3
  ASSERT_TRUE(paused.ended.ok()) << paused.ended.ToString() << "\n" << paused.log;
  ExpectSameRun(paused, whole_run, 5);
  EXPECT_EQ(paused.progress.replays->count, 0) << paused.log;
  EXPECT_GE(paused.step_s[2], 5.0) << "the step waited for it";
  EXPECT_EQ(paused.log.find("taken for lost"), std::string::npos) << paused.log;

  JobPlan two = HybridPlan({{0}, {1}}, 4);
  two.spec.fault_tolerance.replicate_every = 1;
  const SimulatedRun lost = RunReplaying(two, {{1, 17}}, 5, Fault::kPauses);
  ASSERT_TRUE(lost.ended.ok()) << lost.ended.ToString() << "\n" << lost.log;
  EXPECT_EQ(lost.progress.replays->restored_stages, 1) << lost.log;
  EXPECT_NE(lost.log.find("past its deadline of 2 s (its stage's only device): taken for lost"), std::string::npos)
      << lost.log;
}

// A device slow to receive holds up the head's forwarding of its
// neighbours' micro-batches to it, and with it the reading of their
// messages: their silence is the head's own, and they are not taken for
// lost in its place. Taken so, the first stage's pair, allowed a second of
// silence where the slow device alone in its stage is allowed the grace,
// were lost one after the other, and the job ended (found in review).
TEST(SimulatedPipelineTest, ADeviceSlowToReceiveHasNoNeighbourTakenForLostInItsPlace) {
  const JobPlan plan = HybridPlan({{0, 1}, {2}}, 4);
  DeterministicClock clock;
  std::vector<std::unique_ptr<testing::FakeStageTrainer>> fakes;
  std::vector<StageTrainer*> trainers;
  for (int r = 0; r < 3; ++r) {
    fakes.push_back(std::make_unique<testing::FakeStageTrainer>(
        testing::FakeStage{r < 2, r == 2, milliseconds(1 + r / 2), milliseconds(2)}, clock));
    trainers.push_back(fakes.back().get());
  }
  const SimulatedRun run =
      RunPipeline(plan, trainers, LearningData(), clock, 3, {.slow_to_receive = {{2, std::chrono::seconds(3)}}});
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  EXPECT_EQ(run.log.find("taken for lost"), std::string::npos) << run.log;
  EXPECT_GE(run.step_s[0], 3.0) << "the step waited on the slow device";
}

// The last device of a group, covering the other lost mid-step, is its
// stage's only device: a pause of it is waited for as one's, all of the
// grace while its loss would end the job (no replica before the first
// step's end). Judged as one of a group, it was given a second of silence
// and taken for lost, and the job ended for want of its stage (found in
// review).
TEST(SimulatedPipelineTest, TheLastDeviceOfAGroupCoveringTheOtherIsWaitedForAsAnOnlyDevice) {
  const JobPlan plan = HybridPlan({{0, 1}, {2}}, 4);
  const SimulatedRun whole_run = RunReplaying(plan, {}, 4);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  const SimulatedRun run =
      RunReplaying(plan, {{0, 2}, {1, 6}}, 4, Fault::kDies, {}, {}, 0, {}, {{1, Fault::kPauses}});
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  ExpectSameRun(run, whole_run, 4, /*weights=*/false);
  EXPECT_GE(run.step_s[0], 5.0) << "the step waited for its pause";
  EXPECT_EQ(run.log.find("(rank 1) silent for"), std::string::npos) << run.log;
}

// A device of a group slowed fiftyfold by its profile from step 3 on (its
// slowdown from 2 to 100) runs its share far slower than the other's, which
// the shares are dealt against: after two such steps the head lets it go of
// as a straggler, between steps, and the other takes its share. The steps
// after take what they took before the slowing, give or take the one device's
// share, and every loss is the run's that lost no one: no step is replayed.
// Slowed two hundredfold, past the factor twice over, it goes after one step.
TEST(SimulatedPipelineTest, ADeviceFarSlowerThanItsGroupIsLetGoOfAndTheOthersTakeItsShare) {
  JobPlan plan = HybridPlan({{0, 1}, {2}}, 4);
  const SimulatedRun whole_run = RunReplaying(plan, {}, 8);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  EXPECT_EQ(whole_run.progress.replays->stragglers, 0) << "devices of unlike speeds, dealt by them, are not stragglers";
  double step_3_at = 0;
  for (int s = 0; s < 2; ++s) step_3_at += whole_run.step_s[s];
  plan.workers[1].slowdown_changes = {{step_3_at, 100.0}};
  const SimulatedRun run = RunReplaying(plan, {}, 8);
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  ASSERT_EQ(run.losses.size(), 8u);
  ExpectSameRun(run, whole_run, 8, /*weights=*/false);
  EXPECT_EQ(run.progress.replays->stragglers, 1) << run.log;
  EXPECT_EQ(run.progress.replays->count, 0) << "let go of between steps: nothing replayed";
  EXPECT_NE(run.log.find("(rank 1) ran its share "), std::string::npos) << run.log;
  EXPECT_NE(run.log.find("let go of as a straggler"), std::string::npos) << run.log;
  EXPECT_NE(run.log.find("rank 1 may rejoin no sooner than 60 s from now"), std::string::npos) << run.log;
  EXPECT_GT(run.step_s[2], 5 * whole_run.step_s[2]) << "slowed";
  EXPECT_GT(run.step_s[3], 5 * whole_run.step_s[3]) << "slowed, the second step running";
  EXPECT_LT(run.step_s.back(), 2 * whole_run.step_s.back()) << "the device left runs the stage alone\n" << run.log;
  ASSERT_EQ(run.progress.workers.size(), 3u);
  EXPECT_FALSE(run.progress.workers[1].active);
  // Two hundredfold, past the factor twice over: let go of after one such step.
  plan.workers[1].slowdown_changes = {{step_3_at, 400.0}};
  const SimulatedRun far = RunReplaying(plan, {}, 8);
  ASSERT_TRUE(far.ended.ok()) << far.ended.ToString() << "\n" << far.log;
  ExpectSameRun(far, whole_run, 8, /*weights=*/false);
  EXPECT_EQ(far.progress.replays->stragglers, 1) << far.log;
  EXPECT_NE(far.log.find("in its last step: let go of as a straggler"), std::string::npos) << far.log;
  EXPECT_GT(far.step_s[2], 5 * whole_run.step_s[2]) << "slowed";
  EXPECT_LT(far.step_s[3], 2 * whole_run.step_s[3]) << "the step after runs without it\n" << far.log;
}

// Two devices of a stage of three lost in the same step, and then, a step
// later, one of another stage: each replays and the run goes on as the run
// that lost no one. The last device of a stage lost ends the run, saying so,
// and so does any device lost with spec.faultTolerance.replay off.
TEST(SimulatedPipelineTest, DevicesLostTogetherAndTheLastOfAStage) {
  const JobPlan plan = HybridPlan({{0, 1, 2}, {3, 4}}, 3);
  const SimulatedRun whole_run = RunReplaying(plan, {}, 5);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  const SimulatedRun run = RunReplaying(plan, {{1, 9}, {2, 9}, {4, 20}}, 5);  // 6 passes a step
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  ExpectSameRun(run, whole_run, 5, /*weights=*/false);
  EXPECT_GE(run.progress.replays->count, 2);
  EXPECT_EQ(std::count_if(run.progress.workers.begin(), run.progress.workers.end(),
                          [](const WorkerProgress& w) { return w.layers.has_value(); }),
            2)
      << "two of five devices in the stages at the end";

  // Both devices of the last stage die at the first pass of step 1, before
  // the stage's first replica (after its first step).
  const SimulatedRun last = RunReplaying(plan, {{3, 1}, {4, 1}}, 5);
  EXPECT_EQ(last.ended.code(), StatusCode::kUnavailable) << last.log;
  EXPECT_NE(last.ended.message().find("stage 2 lost its only devices at step 1 (ranks 3 and 4), and the head has no "
                                      "replica of its layers yet (the first goes after the first step)"),
            std::string::npos)
      << last.ended.message();
  EXPECT_TRUE(last.losses.empty());
  // At the first pass of step 2 it has one, of step 1, though replicas come
  // every 100 steps: the stage is rebuilt from it, and the run goes on.
  const SimulatedRun second = RunReplaying(plan, {{3, 7}, {4, 7}}, 5);
  ASSERT_TRUE(second.ended.ok()) << second.ended.ToString() << "\n" << second.log;
  EXPECT_EQ(second.progress.replays->restored_stages, 1);
  EXPECT_EQ(second.progress.replays->steps_lost, 0) << "the replica is of the step before";

  // With replay off, the first loss ends the run, to be resumed from its checkpoint.
  JobPlan no_replay = plan;
  no_replay.spec.fault_tolerance.replay = false;
  const SimulatedRun off = RunReplaying(no_replay, {{1, 9}}, 5);
  EXPECT_EQ(off.ended.code(), StatusCode::kUnavailable);
  EXPECT_NE(off.ended.message().find("stage 1 (rank 1) was lost in step 2"), std::string::npos) << off.ended.message();
  EXPECT_NE(off.ended.message().find("spec.faultTolerance.replay is off"), std::string::npos) << off.ended.message();
}

// The user's module raises on a device's share of a micro-batch: the job's
// fault, which any device given that share meets alike, so the job fails
// with it (exit 2, as a job of one's), the device not taken for lost nor
// its shares handed to the other of its group, which had aborted alike (a
// user's trial).
TEST(SimulatedPipelineTest, AShareTheModuleRaisesOnFailsTheJobRatherThanLosingADevice) {
  JobPlan plan = HybridPlan({{0, 1}, {2}}, 4);
  plan.spec.model.kind = ModelKind::kTorchScript;  // a user's module: the fakes raise as its code would
  const SimulatedRun run = RunReplaying(plan, {{1, 9}}, 5, Fault::kRaises);
  EXPECT_EQ(run.ended.code(), StatusCode::kInvalidArgument) << run.ended.ToString() << "\n" << run.log;
  EXPECT_EQ(run.ended.message(),
            "stage 1 (rank 1): forward of micro-batch 0 failed: ValueError: raised (the module's own code)");
  EXPECT_EQ(run.losses.size(), 1u) << "step 2, whose first pass raised, not done";
  EXPECT_TRUE(!run.progress.replays || (run.progress.replays->covered == 0 && run.progress.replays->count == 0))
      << "nobody covered it, nothing replayed\n" << run.log;
  // A built-in model's layers raise nothing of a user's: the same error is
  // this runtime's, its device lost and covered by its group.
  plan.spec.model.kind = ModelKind::kMlp;
  const SimulatedRun builtin = RunReplaying(plan, {{1, 9}}, 5, Fault::kRaises);
  EXPECT_TRUE(builtin.ended.ok()) << builtin.ended.ToString() << "\n" << builtin.log;
  ASSERT_TRUE(builtin.progress.replays);
  EXPECT_EQ(builtin.progress.replays->covered, 1) << builtin.log;
}

// A pipeline of one stage whose only device dies ends, saying why: there is
// no other stage to rebuild its layers on.
TEST(SimulatedPipelineTest, APipelineOfOneStageEndsWithItsOnlyDeviceAndSaysWhy) {
  const SimulatedRun run = RunReplaying(HybridPlan({{0}}, 2), {{0, 5}}, 4);
  EXPECT_EQ(run.ended.code(), StatusCode::kUnavailable);
  EXPECT_NE(run.ended.message().find("stage 1 lost its only device at step 2 (rank 0): a pipeline of one stage has no "
                                     "other stage to rebuild it on"),
            std::string::npos)
      << run.ended.message();
}

// The device covering a lost one of its group is lost in the same step: the
// gradients of both their shares went with it, so the step runs again on
// every stage, on the device left of their group; every loss is still the
// run's that lost no one.
TEST(SimulatedPipelineTest, ADeviceLostWhileCoveringAnotherHasTheWholeStepRunAgain) {
  const JobPlan plan = HybridPlan({{0, 1, 2}, {3}}, 3);
  const SimulatedRun whole_run = RunReplaying(plan, {}, 5);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  // Six passes a step: rank 1 dies at the third of step 2, rank 0, the
  // fastest left, covers it, and dies at its last pass of the step.
  const SimulatedRun run = RunReplaying(plan, {{1, 9}, {0, 12}}, 5);
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  ExpectSameRun(run, whole_run, 5, /*weights=*/false);
  EXPECT_NE(run.log.find("(rank 1) lost in step 2; rank 0 of its group computes its"), std::string::npos) << run.log;
  EXPECT_NE(run.log.find("replaying step 2 (attempt 2) on 2 devices"), std::string::npos) << run.log;
  EXPECT_EQ(run.progress.replays->covered, 1);
  EXPECT_EQ(run.progress.replays->count, 2);
  EXPECT_EQ(run.progress.replays->micro_batches, 3) << "the whole step, once";
}

// A device that had sent its own gradient of the step, told then to cover
// another (hung at its last pass, and found so once its deadline passed),
// and hung itself at its first pass of the cover: the other's shares went
// with it. It had been taken for one with all it owed in (its own gradient),
// the other's never came, and the step waited for them for ever (found in
// review).
TEST(SimulatedPipelineTest, ADeviceLostCoveringAnotherAfterSendingItsOwnGradientHasTheWholeStepRunAgain) {
  const JobPlan plan = HybridPlan({{0, 1, 2}, {3}}, 3);
  const SimulatedRun whole_run = RunReplaying(plan, {}, 5);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  const SimulatedRun run = RunReplaying(plan, {{1, 12}, {0, 13}}, 5, Fault::kHangs);
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  ExpectSameRun(run, whole_run, 5, /*weights=*/false);
  EXPECT_NE(run.log.find("(rank 1) lost in step 2; rank 0 of its group computes its"), std::string::npos) << run.log;
  EXPECT_NE(run.log.find("replaying step 2 (attempt 2) on 2 devices"), std::string::npos) << run.log;
}

// A stage's only device lost, in the first, middle or last stage, at the
// first or last of its passes of step 3: its neighbour (the stage before, or
// after the first) takes its layers, from the replica its device sent after
// step 2 (replicateEvery 1), and the step is replayed on two stages. Nothing
// of the model is lost, so every step's loss and the weights after are the
// run's that lost no one, within 1e-4.
TEST(SimulatedPipelineTest, AStagesOnlyDeviceLostIsRebuiltOnItsNeighbourFromItsReplica) {
  JobPlan plan = HybridPlan({{0}, {1}, {2}}, 4);
  plan.spec.fault_tolerance.replicate_every = 1;
  const SimulatedRun whole_run = RunReplaying(plan, {}, 5);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString() << "\n" << whole_run.log;
  for (int rank : {0, 1, 2}) {
    for (int pass : {17, 24}) {  // 8 passes a step
      SCOPED_TRACE("rank " + std::to_string(rank) + " dies at its pass " + std::to_string(pass));
      const SimulatedRun run = RunReplaying(plan, {{rank, pass}}, 5);
      ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
      ASSERT_EQ(run.losses.size(), 5u);
      ExpectSameRun(run, whole_run, 5);
      ASSERT_TRUE(run.progress.replays.has_value());
      EXPECT_EQ(run.progress.replays->count, 1);
      EXPECT_EQ(run.progress.replays->restored_stages, 1);
      EXPECT_EQ(run.progress.replays->steps_lost, 0);
      const int host = rank == 0 ? 1 : rank - 1;
      EXPECT_NE(run.log.find("stage " + std::to_string(rank + 1) + " lost its only device at step 3 (rank " +
                             std::to_string(rank) + "); its layers " + std::to_string(rank) + "-" +
                             std::to_string(rank) + " go to stage " + std::to_string(host + 1) + ", now stage " +
                             std::to_string(std::min(rank, host) + 1) + " of 2"),
                std::string::npos)
          << run.log;
      EXPECT_NE(run.log.find("replaying step 3 (attempt 2) on 2 devices"), std::string::npos) << run.log;
    }
  }
}

// With a replica every 2 steps, the middle stage's device lost in step 4:
// its layer comes back as it was after step 2, so step 3's update to it is
// lost and the losses part from the run that lost no one, and the run goes
// on to its end on two stages.
TEST(SimulatedPipelineTest, AReplicaOlderThanTheStepCostsItsLayersTheUpdatesSince) {
  JobPlan plan = HybridPlan({{0}, {1}, {2}}, 4);
  plan.spec.fault_tolerance.replicate_every = 2;
  plan.spec.fault_tolerance.replicate_central_every = 2;  // the head's copies too, not paced by their cost
  const SimulatedRun whole_run = RunReplaying(plan, {}, 6);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  const SimulatedRun run = RunReplaying(plan, {{1, 25}}, 6);  // its first pass of step 4
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  ASSERT_EQ(run.losses.size(), 6u);
  ExpectSameRun(run, whole_run, 3, /*weights=*/false);
  EXPECT_GT(std::abs(run.losses[3] - whole_run.losses[3]), 1e-4 * whole_run.losses[3]) << "step 3's update lost";
  EXPECT_EQ(run.progress.replays->restored_stages, 1);
  EXPECT_EQ(run.progress.replays->steps_lost, 1);
  EXPECT_NE(run.log.find("its layers 1-1 go to stage 1, now stage 1 of 2 (layers 0-1) from the replica of step 2: 1 "
                         "step of their updates lost"),
            std::string::npos)
      << run.log;
}

// Issue 16: a device that comes back rejoins. A device of a stage of two is
// lost in step 2, and its agent connects again after step 3: between steps
// the head gives it its stage's committed state and the batches read since,
// and from step 5 on the stage runs on both again; every step's loss and the
// weights after are the run's that lost no one. A stage's only device lost
// and rebuilt on its neighbour, back after step 4, rejoins the stage that now
// holds its layers (and its neighbour's), taking them whole.
TEST(SimulatedPipelineTest, ADeviceThatComesBackRejoinsTheStageThatHoldsItsLayers) {
  const JobPlan plan = HybridPlan({{0, 1}, {2}}, 4);
  const SimulatedRun whole_run = RunReplaying(plan, {}, 7);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  const SimulatedRun run = RunReplaying(plan, {{1, 10}}, 7, Fault::kDies, {{1, 3}});  // 8 passes a step
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  ExpectSameRun(run, whole_run, 7);
  EXPECT_EQ(run.progress.workers.size(), 3u) << run.log;
  EXPECT_EQ(run.progress.replays->rejoined, 1);
  EXPECT_NE(run.log.find("pipeline: rank 1 is back and rejoins stage 1 (layers 0-0, now on 2 devices) after step "),
            std::string::npos)
      << run.log;
  ASSERT_TRUE(run.returned.at(1).ok()) << run.returned.at(1).status().ToString();
  EXPECT_GE(run.returned.at(1)->steps, 2) << "it trained again";
  EXPECT_EQ(run.returned.at(1)->stop_reason, "the job is over");

  JobPlan alone = HybridPlan({{0}, {1}, {2}}, 4);
  alone.spec.fault_tolerance.replicate_every = 1;
  const SimulatedRun whole_alone = RunReplaying(alone, {}, 7);
  ASSERT_TRUE(whole_alone.ended.ok()) << whole_alone.ended.ToString();
  const SimulatedRun rebuilt = RunReplaying(alone, {{1, 17}}, 7, Fault::kDies, {{1, 4}});  // its first pass of step 3
  ASSERT_TRUE(rebuilt.ended.ok()) << rebuilt.ended.ToString() << "\n" << rebuilt.log;
  ExpectSameRun(rebuilt, whole_alone, 7);
  EXPECT_EQ(rebuilt.progress.replays->restored_stages, 1);
  EXPECT_EQ(rebuilt.progress.replays->rejoined, 1);
  EXPECT_NE(rebuilt.log.find("pipeline: rank 1 is back and rejoins stage 1 (layers 0-1, now on 2 devices)"),
            std::string::npos)
      << rebuilt.log;
  // Its own log says so too, after the planned place it joined with.
  EXPECT_NE(rebuilt.log.find("stage agent 1: now stage 1 of 2, layers 0-1"), std::string::npos) << rebuilt.log;
  ASSERT_TRUE(rebuilt.returned.at(1).ok()) << rebuilt.returned.at(1).status().ToString();
  EXPECT_GE(rebuilt.returned.at(1)->steps, 2);
}

// A pipeline of fake stages (one layer a stage, as RunReplaying builds them)
// whose head goes away after step 4, its stages' streams broken as its node's
// are, and the devices of `lost_with_head` with it; another head then starts,
// with step 2's checkpoint if `old_checkpoint`, and trains steps 5 to 8.
// `padding`: floats the fakes of the first and the last stage hold besides
// their weight, so that their replicas go in several parts (only the last
// stage's layers can then be rebuilt on its neighbour: a fake holds its
// padding after its layers).
struct HeadReplaced {
  std::vector<double> losses;  // steps 1-8
  std::string log;
  JobProgress progress;        // the second head's
  double energy_before = 0;    // the first head's figure of the job's joules as it went
};
HeadReplaced ReplaceTheHeadAfterStep4(const JobPlan& plan, bool old_checkpoint, const std::set<int>& lost_with_head = {},
                                      int64_t padding = 0) {
  const TrainTestSplit data = LearningData();
  const int stages = static_cast<int>(plan.pipeline->stages.size());
  const int devices = static_cast<int>(plan.workers.size());
  DeterministicClock clock;
  InMemoryNetwork network(clock);
  auto fake = [&](int r) {
    const int s = *StageOfRank(*plan.pipeline, r);
    return std::make_unique<testing::FakeStageTrainer>(
        testing::FakeStage{s == 0, s == stages - 1, milliseconds(1 + s), milliseconds(2), 1, nullptr,
                           s == 0 || s == stages - 1 ? padding : 0},
        clock);
  };
  StageShapes shapes;
  testing::FakeModel whole_model;
  whole_model.shapes.clear();
  for (const PipelineStagePlan& stage : plan.pipeline->stages) {
    shapes.push_back(fake(stage.ranks.front())->ParameterShapes());
    whole_model.shapes.insert(whole_model.shapes.end(), shapes.back().begin(), shapes.back().end());
  }
  testing::FakeTrainer whole_a(whole_model, clock), whole_b(whole_model, clock);
  const int layers = plan.pipeline->stages.back().end_layer;
  const RankLayerTaker take_layers = FakeLayerTaker(clock, layers, nullptr, milliseconds(1), milliseconds(2),
                                                    {{layers - 1, padding}});
  std::ostringstream log;
  HeadReplaced run;
  std::atomic<bool> cancel{false};
  std::vector<std::unique_ptr<std::atomic<bool>>> gone;  // by rank: its agent goes with the first head
  for (int r = 0; r < devices; ++r) gone.push_back(std::make_unique<std::atomic<bool>>(false));
  clock.Run("test", [&] {
    auto connector = network.Connector("head");
    std::vector<ClockThread> agents;
    for (int r = 0; r < devices; ++r) {
      agents.push_back(clock.StartThread("device " + std::to_string(r), [&, r] {
        StageOptions options;
        options.rank = r;
        options.head = connector.get();
        options.take_layers = [&, r](int first, int end) { return take_layers(r, first, end); };
        const TrainerMaker sessions = [&, r]() -> StatusOr<std::unique_ptr<StageTrainer>> {
          return std::unique_ptr<StageTrainer>(fake(r));
        };
        auto summary =
            RunStageRejoining(plan, options, sessions, data.train, clock, log, *gone[r], std::chrono::seconds(30));
        EXPECT_TRUE(summary.ok()) << "rank " << r << ": " << summary.status().ToString();
      }));
    }
    JobCheckpoint step_2;
    {
      PipelineHead head(plan, whole_a, data.test, data.train.size(), shapes, clock, log);
      auto server = network.Serve("head", head);
      ASSERT_TRUE(server.ok());
      ASSERT_TRUE(head.Start(cancel).ok());
      for (int step = 1; step <= 4; ++step) {
        ASSERT_TRUE(head.Advance().ok()) << log.str();
        run.losses.push_back(head.LastStepLoss());
        if (step == 2) {
          head.Snapshot(step_2);
          step_2.iteration = 2;
          step_2.samples = 2 * plan.spec.data.batch_size;
        }
      }
      run.energy_before = head.Progress().energy_joules.value_or(0);
      // Gone without a word, and the devices on its node with it: their
      // streams end, as a node's do.
      for (int r : lost_with_head) gone[r]->store(true);
      clock.SleepFor(std::chrono::milliseconds(500));
      (*server)->Shutdown();
    }
    clock.SleepFor(std::chrono::seconds(1));
    PipelineHead head(plan, whole_b, data.test, data.train.size(), shapes, clock, log);
    if (old_checkpoint) {
      ASSERT_TRUE(head.Restore(step_2).ok());
    }
    auto server = network.Serve("head", head);
    ASSERT_TRUE(server.ok());
    const Status started = head.Start(cancel);
    ASSERT_TRUE(started.ok()) << started.ToString() << "\n" << log.str();
    EXPECT_EQ(head.Progress().iteration, 4) << log.str();
    EXPECT_TRUE(head.JobClockStart().has_value()) << "the job's clock is the stages'";
    for (int step = 5; step <= 8; ++step) {
      ASSERT_TRUE(head.Advance().ok()) << log.str();
      run.losses.push_back(head.LastStepLoss());
    }
    run.progress = head.Progress();
    ASSERT_TRUE(head.Finish(FinalModel::kCurrent).ok());
    for (auto& t : agents) t.Join();
    (*server)->Shutdown();
  });
  run.log = log.str();
  return run;
}

// A head that went away after step 4 (its stages' streams broken, each stage
// holding step 3 committed and step 4 finished, its gradient pending) is
// replaced by one that starts with no checkpoint, or with the checkpoint of
// step 2: the stages say hello again offering what they hold, and the new
// head trains on from step 4, the stages' state and the job's clock taken
// over. Steps 5 to 8 are those of the run that never lost its head, within
// 1e-4: the pending step is applied once, neither lost nor twice.
TEST(SimulatedPipelineTest, AHeadThatStartsBehindItsStagesTrainsOnFromTheirState) {
  JobPlan plan = HybridPlan({{0, 1}, {2}}, 4);
  plan.spec.fault_tolerance.node_loss_grace = std::chrono::seconds(10);
  const SimulatedRun whole_run = RunReplaying(plan, {}, 8);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  for (const bool with_old_checkpoint : {false, true}) {
    SCOPED_TRACE(with_old_checkpoint ? "the new head restores step 2's checkpoint" : "the new head has none");
    const HeadReplaced run = ReplaceTheHeadAfterStep4(plan, with_old_checkpoint);
    ASSERT_EQ(run.losses.size(), 8u) << run.log;
    for (size_t k = 0; k < 8; ++k) {
      EXPECT_NEAR(run.losses[k], whole_run.losses[k], 1e-4 * std::abs(whole_run.losses[k])) << "step " << k + 1;
    }
    EXPECT_NE(run.log.find("the stages hold the model at step 4, past the head's own (step " +
                           std::string(with_old_checkpoint ? "2" : "0") + "): training on from theirs"),
              std::string::npos)
        << run.log;
    EXPECT_EQ(run.progress.iteration, 8);
    EXPECT_EQ(run.progress.samples, whole_run.progress.samples) << "the batches' samples, the epochs' short last ones too";
    // The job's joules go on from the old head's word with step 4 (its
    // steps 1-3'), where the new head without a checkpoint had begun again
    // at its stages' joules since (a new user's trial).
    ASSERT_GT(run.energy_before, 0);
    // Short of the run that kept its head by step 4's joules, about (here
    // a quarter of steps 1-4'), where it had been short by steps 1-3' and more.
    const double job_j = run.progress.energy_joules.value_or(0);
    const double whole_j = whole_run.progress.energy_joules.value_or(0);
    EXPECT_GT(job_j, run.energy_before) << run.log;
    EXPECT_GE(job_j, whole_j - run.energy_before / 3) << run.log;
    EXPECT_LE(job_j, whole_j + 1e-6) << run.log;
  }
}

// Three stages of one device each, a replica a step: the head goes away
// after step 4 with the device of rank `lost` (its stage's only one), whose
// fakes hold `padding` floats besides their weights, and a new head with no
// checkpoint rebuilds that stage on its neighbour from the replica of step 3
// the neighbour keeps (`rebuilt`, its log line): steps 1-4 are the run that
// lost nothing's, and 5-8 within 1% of them, one step of its updates lost.
HeadReplaced ExpectRebuiltFromItsNeighboursReplica(int lost, int64_t padding, const std::string& rebuilt) {
  JobPlan plan = HybridPlan({{0}, {1}, {2}}, 4);
  plan.spec.fault_tolerance.node_loss_grace = std::chrono::seconds(2);
  plan.spec.fault_tolerance.replicate_every = 1;
  const SimulatedRun whole_run = RunReplaying(plan, {}, 8);
  EXPECT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  const HeadReplaced run = ReplaceTheHeadAfterStep4(plan, /*old_checkpoint=*/false, {lost}, padding);
  EXPECT_EQ(run.losses.size(), 8u) << run.log;
  if (run.losses.size() != 8u || whole_run.losses.size() < 8u) return run;
  for (size_t k = 0; k < 4; ++k) EXPECT_DOUBLE_EQ(run.losses[k], whole_run.losses[k]) << "step " << k + 1;
  for (size_t k = 4; k < 8; ++k) {
    EXPECT_NEAR(run.losses[k], whole_run.losses[k], 0.01 * std::abs(whole_run.losses[k])) << "step " << k + 1;
  }
  EXPECT_NE(run.log.find(rebuilt), std::string::npos) << run.log;
  EXPECT_TRUE(run.progress.replays.has_value());
  if (run.progress.replays) {
    EXPECT_EQ(run.progress.replays->restored_stages, 1);
  }
  EXPECT_EQ(run.progress.iteration, 8);
  return run;
}

// The head's node held the only device of the first of three stages too:
// gone with the head. The second stage's device keeps the replicas of the
// first's layers that the head relayed to it (one a step here), and the new
// head, with no checkpoint, has it take layer 0 from the one it keeps (of
// step 3: the head went before step 4's): trained on from step 4, one step of
// layer 0's updates lost, and the run goes on to step 8, its loss that of
// the run that lost nothing within 1%.
TEST(SimulatedPipelineTest, AStageLostWithItsHeadIsRebuiltFromTheReplicaItsNeighbourKeeps) {
  const HeadReplaced run = ExpectRebuiltFromItsNeighboursReplica(
      0, 0, "stage 1 (layers 0-0) is rebuilt on stage 2 from the replica of step 3 its devices keep");
  EXPECT_NE(run.log.find("the stages hold the model at step 4, past the head's own (step 0): training on from theirs"),
            std::string::npos)
      << run.log;
  ASSERT_TRUE(run.progress.replays.has_value());
  EXPECT_EQ(run.progress.replays->steps_lost, 1);
}

// The head's node held the only device of the last of three stages: gone
// with it. The middle stage's device keeps the replicas of both its
// neighbours' layers, which the head relayed to it as they came, each in
// several parts (their state padded past 16 kB; the simulated clock sends
// one neighbour's parts after the other's). The new head has it take layer
// 2 from the one it keeps (of step 3), and the run goes on to step 8, its
// loss that of the run that lost nothing within 1%.
TEST(SimulatedPipelineTest, AStageLostWithItsHeadIsRebuiltFromAReplicaItsNeighbourKeptInParts) {
  ExpectRebuiltFromItsNeighboursReplica(
      2, 10000, "stage 3 (layers 2-2) is rebuilt on stage 2 from the replica of step 3 its devices keep");
}

// The head's own copies every step (replicateCentralEvery 1), those it
// relays on to the neighbouring stage every 100 (replicateEvery): the middle
// stage's device lost in step 4 comes back from the head's copy of step 3,
// nothing of its updates lost, and every step's loss and the weights after
// are the run's that lost no one. The neighbour keeps only the relayed ones:
// a head lost after step 4 with the first stage's device is rebuilt from the
// replica of step 1.
TEST(SimulatedPipelineTest, TheHeadKeepsItsCopiesAtItsOwnPaceAndRelaysThemOnAtReplicateEvery) {
  JobPlan plan = HybridPlan({{0}, {1}, {2}}, 4);
  plan.spec.fault_tolerance.replicate_every = 100;
  plan.spec.fault_tolerance.replicate_central_every = 1;
  const SimulatedRun whole_run = RunReplaying(plan, {}, 6);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString();
  const SimulatedRun run = RunReplaying(plan, {{1, 25}}, 6);  // its first pass of step 4
  ASSERT_TRUE(run.ended.ok()) << run.ended.ToString() << "\n" << run.log;
  ExpectSameRun(run, whole_run, 6);
  EXPECT_EQ(run.progress.replays->restored_stages, 1);
  EXPECT_EQ(run.progress.replays->steps_lost, 0);
  EXPECT_NE(run.log.find("from the replica of step 3"), std::string::npos) << run.log;

  plan.spec.fault_tolerance.node_loss_grace = std::chrono::seconds(2);
  const HeadReplaced head_lost = ReplaceTheHeadAfterStep4(plan, /*old_checkpoint=*/false, /*lost_with_head=*/{0});
  ASSERT_EQ(head_lost.losses.size(), 8u) << head_lost.log;
  EXPECT_NE(head_lost.log.find("stage 1 (layers 0-0) is rebuilt on stage 2 from the replica of step 1 its devices keep"),
            std::string::npos)
      << head_lost.log;
}

// A head restarted from its checkpoint after a device was lost (its pod gone
// for good) resumes without it: the device does not arrive within
// nodeLossGrace, and its stage, which had no other, is rebuilt on its
// neighbour from the checkpoint. Every step's loss and the weights after are
// those of the resumed run that loses nothing.
TEST(SimulatedPipelineTest, AHeadResumedWithoutADeviceLostBeforeRebuildsItsStageFromTheCheckpoint) {
  JobPlan plan = HybridPlan({{0}, {1}, {2}}, 4);
  plan.spec.fault_tolerance.node_loss_grace = std::chrono::seconds(2);
  const TrainTestSplit data = LearningData();
  auto run = [&](bool without_1, const JobCheckpoint* resume, int steps) {
    DeterministicClock clock;
    std::vector<std::unique_ptr<testing::FakeStageTrainer>> fakes;
    std::vector<StageTrainer*> trainers;
    for (int s = 0; s < 3; ++s) {
      fakes.push_back(std::make_unique<testing::FakeStageTrainer>(
          testing::FakeStage{s == 0, s == 2, milliseconds(1 + s), milliseconds(2)}, clock));
      trainers.push_back(fakes.back().get());
    }
    return RunPipeline(plan, trainers, data, clock, steps,
                       {.take_layers = FakeLayerTaker(clock, 3),
                        .resume = resume,
                        .absent = without_1 ? std::set<int>{1} : std::set<int>{}});
  };
  const SimulatedRun before = run(false, nullptr, 3);
  ASSERT_TRUE(before.ended.ok()) << before.ended.ToString();
  ASSERT_EQ(before.checkpoint.iteration, 3);
  const SimulatedRun whole = run(false, &before.checkpoint, 3);
  ASSERT_TRUE(whole.ended.ok()) << whole.ended.ToString() << "\n" << whole.log;
  // A resumed run goes on from what each device did before, as it does from
  // the steps and the time: its compute, bytes and energy are over both runs
  // (a new user found a resumed run's 201 steps beside 5.7 s of compute, the
  // second run's alone). The two runs' three steps each compute alike.
  ASSERT_EQ(whole.progress.workers.size(), before.progress.workers.size());
  for (size_t r = 0; r < whole.progress.workers.size(); ++r) {
    const WorkerProgress &now = whole.progress.workers[r], &then = before.progress.workers[r];
    EXPECT_NEAR(now.compute_s, 2 * then.compute_s, 1e-6 * then.compute_s) << "rank " << r;
    EXPECT_GT(now.bytes_sent, then.bytes_sent * 3 / 2) << "rank " << r;
    EXPECT_GT(now.energy_joules, 1.5 * then.energy_joules) << "rank " << r;
  }
  ASSERT_TRUE(whole.progress.energy_joules && before.progress.energy_joules);
  EXPECT_GT(*whole.progress.energy_joules, 1.5 * *before.progress.energy_joules);
  // A checkpoint of a run on a device fewer (the profile changed in
  // between) carries the ranks it had; the device it lacked starts at 0.
  JobCheckpoint fewer = before.checkpoint;
  fewer.workers.pop_back();
  const SimulatedRun grown = run(false, &fewer, 3);
  ASSERT_TRUE(grown.ended.ok()) << grown.ended.ToString() << "\n" << grown.log;
  ASSERT_EQ(grown.progress.workers.size(), before.progress.workers.size());
  for (size_t r = 0; r < grown.progress.workers.size(); ++r) {
    const double times = r + 1 < grown.progress.workers.size() ? 2 : 1;
    EXPECT_NEAR(grown.progress.workers[r].compute_s, times * before.progress.workers[r].compute_s,
                1e-6 * before.progress.workers[r].compute_s)
        << "rank " << r;
  }
  const SimulatedRun without = run(true, &before.checkpoint, 3);
  ASSERT_TRUE(without.ended.ok()) << without.ended.ToString() << "\n" << without.log;
  ExpectSameRun(without, whole, 3);
  EXPECT_EQ(without.progress.replays->restored_stages, 1);
  EXPECT_EQ(without.progress.replays->steps_lost, 0) << "the checkpoint is where the run resumes from";
  // What it waited said as it was: the grace and what a head started again
  // adds (a new user's trial read "within nodeLossGrace" after 35 s of 5).
  EXPECT_NE(without.log.find("pipeline: stage 2 (rank 1) did not arrive within spec.faultTolerance.nodeLossGrace and "
                             "the "),
            std::string::npos)
      << without.log;
  EXPECT_NE(without.log.find(" in all): the run resumes without it"), std::string::npos) << without.log;

  // A fresh run does not start without it: nothing was trained to rebuild from.
  const SimulatedRun fresh = run(true, nullptr, 3);
  EXPECT_EQ(fresh.ended.code(), StatusCode::kUnavailable) << fresh.log;
  EXPECT_NE(fresh.ended.message().find("stage 2 (rank 1) did not arrive within spec.faultTolerance.nodeLossGrace"),
            std::string::npos)
      << fresh.ended.message();

  // With replay off it is not resumed without it.
  plan.spec.fault_tolerance.replay = false;
  const SimulatedRun off = run(true, &before.checkpoint, 3);
  EXPECT_EQ(off.ended.code(), StatusCode::kUnavailable) << off.log;
}

// A stage's only device lost while its replica is on the wire: the middle
// stage's device sends its replica of step 4 as step 5 begins, on a link so
// slow that it is still on the wire when the device goes silent (its first
// pass of step 5). The head never has that replica, so the layer comes back
// from the one of step 2, and steps 3 and 4's updates to it are lost; on a
// link without limit the replica of step 4 lands first, and nothing is.
TEST(SimulatedPipelineTest, ADeviceLostWhileItsReplicaIsOnTheWireIsRebuiltFromTheOneBefore) {
  JobPlan plan = HybridPlan({{0}, {1}, {2}}, 4);
  plan.spec.fault_tolerance.replicate_every = 2;
  const TrainTestSplit data = LearningData();
  auto run = [&](bool silent, std::optional<BandwidthTrace> uplink) {
    DeterministicClock clock;
    std::vector<std::unique_ptr<testing::FakeStageTrainer>> fakes;
    // The middle stage's state is large: its replica takes 2 s on the wire.
    for (int s = 0; s < 3; ++s) {
      fakes.push_back(std::make_unique<testing::FakeStageTrainer>(
          testing::FakeStage{s == 0, s == 2, milliseconds(1 + s), milliseconds(2), 1, nullptr, s == 1 ? 20000 : 0},
          clock));
    }
    LinkGate gate(clock);
    DyingStageTrainer dying(*fakes[1], 33, &gate);  // 8 passes a step
    std::vector<StageTrainer*> trainers = {fakes[0].get(), fakes[1].get(), fakes[2].get()};
    if (silent) trainers[1] = &dying;
    std::map<int, LinkGate*> gates;
    if (silent) gates[1] = &gate;
    return RunPipeline(
        plan, trainers, data, clock, 7,
        {.gates = gates,
         .take_layers = FakeLayerTaker(clock, 3, nullptr, milliseconds(1), milliseconds(2), {{1, 20000}}),
         .uplink = uplink});
  };
  const BandwidthTrace slow = BandwidthTrace::Constant(0.32);
  const SimulatedRun whole_run = run(false, slow);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString() << "\n" << whole_run.log;
  const SimulatedRun lost = run(true, slow);
  ASSERT_TRUE(lost.ended.ok()) << lost.ended.ToString() << "\n" << lost.log;
  ASSERT_EQ(lost.losses.size(), 7u);
  ExpectSameRun(lost, whole_run, 4, /*weights=*/false);
  EXPECT_EQ(lost.progress.replays->restored_stages, 1);
  EXPECT_EQ(lost.progress.replays->steps_lost, 2);
  EXPECT_NE(lost.log.find("stage 2 lost its only device at step 5 (rank 1); its layers 1-1 go to stage 1, now stage 1 "
                          "of 2 (layers 0-1) from the replica of step 2: 2 steps of their updates lost"),
            std::string::npos)
      << lost.log;
  // Its stage's only device: silent at least twice four heartbeats (2 s)
  // before it is taken, its layers' updates since the replica being what
  // its loss costs.
  EXPECT_NE(lost.log.find(", past its deadline of 2 s (its stage's only device): taken for lost"), std::string::npos)
      << lost.log;

  const SimulatedRun unlimited = run(true, std::nullopt);
  ASSERT_TRUE(unlimited.ended.ok()) << unlimited.ended.ToString() << "\n" << unlimited.log;
  EXPECT_EQ(unlimited.progress.replays->steps_lost, 0);
  EXPECT_NE(unlimited.log.find("from the replica of step 4: 0 steps of their updates lost"), std::string::npos)
      << unlimited.log;
}

// A stage's only device leaving between steps, seen when the head asks the
// stages for their state (an evaluation): the stage before takes its layer
// from the replica, the evaluation has every layer, and the run goes on to
// its steps on two stages.
TEST(SimulatedPipelineTest, AStagesOnlyDeviceLostBetweenStepsIsRebuiltBeforeTheStateIsFetched) {
  JobPlan plan = HybridPlan({{0}, {1}, {2}}, 4);
  plan.spec.fault_tolerance.replicate_every = 1;
  const TrainTestSplit data = testing::FakeData(240, 8, 10);
  DeterministicClock clock;
  InMemoryNetwork network(clock);
  std::vector<std::unique_ptr<testing::FakeStageTrainer>> fakes;
  for (int r = 0; r < 3; ++r) fakes.push_back(std::make_unique<testing::FakeStageTrainer>(testing::FakeStage{r == 0, r == 2}, clock));
  testing::FakeModel whole_model;
  whole_model.shapes.assign(3, {1});
  testing::FakeTrainer whole(whole_model, clock);
  std::ostringstream log;
  PipelineHead head(plan, whole, data.test, data.train.size(), StageShapes(3, {{1}}), clock, log);
  std::vector<StatusOr<StageSummary>> summaries(3, InternalError("not run"));
  std::atomic<bool> cancel[3] = {false, false, false};
  std::atomic<bool> head_cancel{false};
  Status evaluated = Status::Ok(), stepped = Status::Ok();
  clock.Run("test", [&] {
    auto server = network.Serve("head", head);
    ASSERT_TRUE(server.ok());
    auto connector = network.Connector("head");
    std::vector<ClockThread> threads;
    for (int r = 0; r < 3; ++r) {
      threads.push_back(clock.StartThread("device " + std::to_string(r), [&, r] {
        StageOptions options;
        options.rank = r;
        options.head = connector.get();
        options.take_layers = [&, r](int first, int end) { return FakeLayerTaker(clock, 3)(r, first, end); };
        summaries[r] = RunStage(plan, options, *fakes[r], data.train, clock, log, cancel[r]);
      }));
    }
    ASSERT_TRUE(head.Start(head_cancel).ok());
    for (int step = 0; step < 3; ++step) ASSERT_TRUE(head.Advance().ok()) << log.str();
    cancel[1] = true;
    clock.SleepFor(std::chrono::seconds(1));
    evaluated = head.Evaluate().status();
    for (int step = 0; step < 2 && stepped.ok(); ++step) stepped = head.Advance();
    ASSERT_TRUE(head.Finish(FinalModel::kCurrent).ok());
    for (auto& t : threads) t.Join();
    (*server)->Shutdown();
  });
  EXPECT_TRUE(evaluated.ok()) << evaluated.ToString() << "\n" << log.str();
  EXPECT_TRUE(stepped.ok()) << stepped.ToString() << "\n" << log.str();
  EXPECT_EQ(head.Progress().iteration, 5);
  // Step 3 stood at the head's next word, which its device did not live to hear.
  EXPECT_NE(log.str().find("its layers 1-1 go to stage 1, now stage 1 of 2 (layers 0-1) from the replica of step 2: 1 "
                           "step of their updates lost"),
            std::string::npos)
      << log.str();
  ASSERT_TRUE(summaries[0].ok()) << summaries[0].status().ToString();
  EXPECT_EQ(summaries[0]->steps, 5);
  EXPECT_EQ(summaries[0]->stop_reason, "the job is over");
}

// Three stages of two layers each, one device each, a replica every step
// and the stages measured every 8 steps: the last stage's device lost in
// step 6, before any measurement ended, the middle stage takes its layers,
// and the measurement that starts then, of the two stages left, moves a
// layer to the first: a re-cut over the survivors. No update was lost, so
// every step's loss is the run's that lost no one.
TEST(SimulatedPipelineTest, AfterAStageIsRebuiltTheSurvivorsAreCutAnew) {
  const TrainTestSplit data = LearningData();
  JobPlan plan = HybridPlan({{0}, {1}, {2}}, 4);
  plan.spec.fault_tolerance.replicate_every = 1;
  plan.pipeline->stages = {{0, 2, {0}}, {2, 4, {1}}, {4, 6, {2}}};
  auto run = [&](const std::map<int, int>& dies_at_pass, int rebalance_every) {
    DeterministicClock clock;
    std::vector<std::unique_ptr<testing::FakeStageTrainer>> fakes;
    std::vector<std::unique_ptr<StageTrainer>> dying;
    std::vector<StageTrainer*> trainers;
    for (int r = 0; r < 3; ++r) {
      fakes.push_back(std::make_unique<testing::FakeStageTrainer>(
          testing::FakeStage{r == 0, r == 2, milliseconds(1), milliseconds(2), 2}, clock));
      trainers.push_back(fakes.back().get());
      if (auto d = dies_at_pass.find(r); d != dies_at_pass.end()) {
        dying.push_back(std::make_unique<DyingStageTrainer>(*fakes.back(), d->second));
        trainers.back() = dying.back().get();
      }
    }
    return RunPipeline(plan, trainers, data, clock, 24,
                       {.take_layers = FakeLayerTaker(clock, 6), .rebalance_every = rebalance_every});
  };
  const SimulatedRun whole_run = run({}, 0);
  ASSERT_TRUE(whole_run.ended.ok()) << whole_run.ended.ToString() << "\n" << whole_run.log;
  const SimulatedRun survivors = run({{2, 41}}, 8);  // its first pass of step 6
  ASSERT_TRUE(survivors.ended.ok()) << survivors.ended.ToString() << "\n" << survivors.log;
  ASSERT_EQ(survivors.losses.size(), 24u);
  ExpectSameRun(survivors, whole_run, 24, /*weights=*/false);
  EXPECT_EQ(survivors.progress.replays->restored_stages, 1);
  EXPECT_EQ(survivors.progress.replays->repartitions, 1) << survivors.log;
  EXPECT_NE(survivors.log.find("its layers 4-5 go to stage 2, now stage 2 of 2 (layers 2-5)"), std::string::npos)
      << survivors.log;
  EXPECT_NE(survivors.log.find("over steps 6-13"), std::string::npos) << "measured afresh\n" << survivors.log;
  EXPECT_NE(survivors.log.find("0-1 | 2-5 now 0-3 | 4-5"), std::string::npos) << survivors.log;
}

// Two stages of two layers each, one device each, their compute even (the
// first's passes twice as long: the fakes' first stage has half the work,
// and its device is twice as fast), the head measuring them every
// `rebalance_every` steps (0: never).
struct TwoEvenStages {
  int rebalance_every = 0;
  testing::FakeDevice slowed = {};  // the second device's fake slowing
  // The second device's slowdown's changes from the plan (a cluster
  // profile's compute.changes), which the stage's emulated device applies.
  std::vector<SlowdownChange> changes = {};
  Duration rebalance_within = {};
  // Each layer's forward and backward a sample, as the plan's profile timed
  // them (the plan then says what it was planned from); none: a layout by hand.
  std::vector<double> layer_seconds = {};
  // With layer_seconds: the second device's link each way, bytes a second
  // (0: not limited), and the third layer's output, bytes a sample (the
  // others' are 4).
  double second_link = 0;
  int64_t third_out = 4;
  Duration per_pass = {};  // every pass's fixed cost, which the profile (layer_seconds) does not know
  int max_micro_batches = 4;  // the planner's most, with layer_seconds
  int replicate_every = 0;    // spec.faultTolerance.replicateEvery
  std::map<int, int> stop_after_step = {};  // Disturbances'
};

SimulatedRun RunTwoEvenStages(const TwoEvenStages& run) {
  const TrainTestSplit data = LearningData();
  JobPlan plan = HybridPlan({{0}, {1}}, 4);
  plan.spec.optimizer = {OptimizerKind::kAdam, 0.01, std::nullopt, 0};  // Adam: its moments move with the layers too
  plan.pipeline->stages = {{0, 2, {0}}, {2, 4, {1}}};
  if (!run.layer_seconds.empty()) {
    PlannedFrom from;
    for (size_t l = 0; l < run.layer_seconds.size(); ++l) {
      from.layers.push_back({"layer" + std::to_string(l), run.layer_seconds[l] / 3, 2 * run.layer_seconds[l] / 3, 4,
                             l == 2 ? run.third_out : 4, {}, 0, ""});
    }
    for (size_t r = 0; r < plan.workers.size(); ++r) {
      const double link = r == 1 ? run.second_link : 0;
      from.devices.push_back({plan.workers[r].node, 1 / plan.workers[r].slowdown, 0, link, link});
    }
    // The plan's own count at most: the fakes' passes have no fixed cost,
    // and the planner would cut a step into micro-batches of a sample.
    from.max_micro_batches = run.max_micro_batches;
    plan.pipeline->planned_from = std::move(from);
  }
  plan.workers[1].slowdown_changes = run.changes;
  plan.spec.fault_tolerance.replicate_every = run.replicate_every;
  DeterministicClock clock;
  testing::FakeDevice devices[2];
  devices[1] = run.slowed;
  std::vector<std::unique_ptr<testing::FakeStageTrainer>> fakes;
  std::vector<StageTrainer*> trainers;
  for (int r = 0; r < 2; ++r) {
    fakes.push_back(std::make_unique<testing::FakeStageTrainer>(
        testing::FakeStage{r == 0, r == 1, milliseconds(2 - r), milliseconds(4 - 2 * r), 2, &devices[r], 0,
                           run.per_pass},
        clock));
    trainers.push_back(fakes.back().get());
  }
  const RankLayerTaker take_layers = [&](int rank, int first, int end) -> StatusOr<std::unique_ptr<StageTrainer>> {
    return std::unique_ptr<StageTrainer>(std::make_unique<testing::FakeStageTrainer>(
        testing::FakeStage{first == 0, end == 4, milliseconds(2 - rank), milliseconds(4 - 2 * rank), end - first,
                           &devices[rank], 0, run.per_pass},
        clock));
  };
  return RunPipeline(plan, trainers, data, clock, 24,
                     {.take_layers = take_layers,
                      .rebalance_every = run.rebalance_every,
                      .rebalance_within = run.rebalance_within,
                      .stop_after_step = run.stop_after_step});
}

// A run whose second device was slowed fourfold from step 7 on has one
// layer moved off it, once (the cut it then measures is the one it
// predicted, and no other beats it by 15%), and its every step's loss is the
// run's that moved nothing, within 1e-4: layers move with their weights and
// optimizer state.
void ExpectOneLayerMovedOffTheSlowedDevice(const SimulatedRun& moved, const SimulatedRun& fixed) {
  ASSERT_TRUE(moved.ended.ok()) << moved.ended.ToString() << "\n" << moved.log;
  ASSERT_EQ(moved.losses.size(), 24u);
  ExpectSameRun(moved, fixed, 24);
  ASSERT_TRUE(moved.progress.replays.has_value());
  EXPECT_EQ(moved.progress.replays->repartitions, 1) << moved.log;
  EXPECT_NE(moved.log.find("now 0-2 | 3-3"), std::string::npos) << moved.log;
  ASSERT_EQ(moved.progress.workers.size(), 2u);
  EXPECT_EQ(moved.progress.workers[0].layers, (std::pair{0, 3})) << "/progress says where the layers are now";
  EXPECT_EQ(moved.progress.workers[1].layers, (std::pair{3, 4}));
  // Its steps after the move are faster than step 8's, slowed, before it.
  EXPECT_LT(moved.step_s.back(), 0.9 * moved.step_s[7]) << moved.log;
}

// The second device slowed fourfold from its pass 49 (step 7) by a fake.
TEST(SimulatedPipelineTest, ASlowedDeviceHasALayerMovedOffItOnceAndTheLossesStayTheSame) {
  const SimulatedRun fixed = RunTwoEvenStages({});
  ASSERT_TRUE(fixed.ended.ok()) << fixed.ended.ToString() << "\n" << fixed.log;
  ExpectOneLayerMovedOffTheSlowedDevice(RunTwoEvenStages({.rebalance_every = 4, .slowed = {0, 49, 4.0}}), fixed);
  // Unslowed, the stages are even and nothing moves.
  const SimulatedRun even = RunTwoEvenStages({.rebalance_every = 4});
  ASSERT_TRUE(even.ended.ok());
  EXPECT_EQ(even.progress.replays->repartitions, 0) << even.log;
}

// A checkpoint whose moments are not the model's length is another model's:
// refused, where the stages' slices of them were read past their end (found
// in review). Empty moments (plain SGD's) are the model's.
TEST(SimulatedPipelineTest, ACheckpointWhoseMomentsAreNotTheModelsIsRefused) {
  HeadOfTwoWeights h;
  JobCheckpoint c;
  c.parameters = {0.5f, 0.25f};
  c.optimizer.second = {0, 0, 0};  // three for two weights
  EXPECT_EQ(h.head.Restore(c).code(), StatusCode::kFailedPrecondition);
  c.optimizer.second.clear();
  EXPECT_TRUE(h.head.Restore(c).ok()) << h.log.str();
}

// A cut proposed at a measurement's end, and the stage it would move a layer
// into lost between steps, before the layer moves: the stage is rebuilt on
// its neighbour from its replica, the cut, of stages that are no more, is
// dropped, and the run trains on to its end (the head read the layout it
// had not been given: found in review).
TEST(SimulatedPipelineTest, ACutProposedBeforeItsStageIsLostBetweenStepsIsDropped) {
  // Where the cut is proposed, with nothing lost.
  const SimulatedRun moved = RunTwoEvenStages({.rebalance_every = 4, .slowed = {0, 49, 4.0}, .replicate_every = 1});
  ASSERT_TRUE(moved.ended.ok()) << moved.ended.ToString() << "\n" << moved.log;
  ASSERT_NE(moved.log.find("over steps 6-9; moving layers"), std::string::npos) << moved.log;
  ASSERT_NE(moved.log.find("layers moved at step 9: 0-1 | 2-3 now 0-2 | 3-3"), std::string::npos) << moved.log;
  const int proposed_at = 9;
  const SimulatedRun lost = RunTwoEvenStages({.rebalance_every = 4, .slowed = {0, 49, 4.0}, .replicate_every = 1,
                                              .stop_after_step = {{1, proposed_at}}});
  ASSERT_TRUE(lost.ended.ok()) << lost.ended.ToString() << "\n" << lost.log;
  EXPECT_EQ(lost.losses.size(), 24u);
  ASSERT_TRUE(lost.progress.replays.has_value());
  EXPECT_EQ(lost.progress.replays->restored_stages, 1) << lost.log;
  EXPECT_EQ(lost.log.find("now 0-2 | 3-3"), std::string::npos) << "the cut proposed is not made\n" << lost.log;
}

// A plan that says what it was planned from has its cuts judged by the
// planner's cost model, each device at the pace its compute measured
// against the profile: timed alike, the slowed device (threefold: slowed
// fourfold, the first device alone beats any cut, and the planner leaves the
// second out, below) has a layer moved off it as above; with the third layer
// timed ten times the others, moving one would give the first stage twelve
// units of compute where it has two, slower than the slowed stage is now,
// no layout of the planner's beats it, and nothing moves.
TEST(SimulatedPipelineTest, LayersMoveByTheCostModelWhereThePlanSaysWhatTheyCost) {
  const SimulatedRun fixed = RunTwoEvenStages({});
  ASSERT_TRUE(fixed.ended.ok()) << fixed.ended.ToString() << "\n" << fixed.log;
  const SimulatedRun alike =
      RunTwoEvenStages({.rebalance_every = 4, .slowed = {0, 49, 3.0}, .layer_seconds = {1e-3, 1e-3, 1e-3, 1e-3}});
  ExpectOneLayerMovedOffTheSlowedDevice(alike, fixed);
  EXPECT_NE(alike.log.find("links counted"), std::string::npos) << alike.log;
  const SimulatedRun heavy =
      RunTwoEvenStages({.rebalance_every = 4, .slowed = {0, 49, 3.0}, .layer_seconds = {1e-3, 1e-3, 1e-2, 1e-3}});
  ASSERT_TRUE(heavy.ended.ok()) << heavy.ended.ToString() << "\n" << heavy.log;
  EXPECT_EQ(heavy.progress.replays->repartitions, 0) << heavy.log;
  EXPECT_NE(heavy.log.find("links counted: layers stay"), std::string::npos) << "said why, once\n" << heavy.log;
}

// The same layers timed alike, the slowed device on a link of 10 kB/s each
// way, and the third layer's output 10 kB a sample: the cut that moves a
// layer off the slowed device would send that output and its gradient over
// the link, each micro-batch's taking seconds where its compute takes
// milliseconds, and is not moved to (compute alone moved it: a board slowed
// tenfold given the vgg's conv1, its activations then crossing Wi-Fi every
// step; a new user's trial). The planner's layout over the same devices
// is: the slowed device first, with the first layer alone, whose output of
// 4 bytes is all its link carries; and the losses stay the same.
TEST(SimulatedPipelineTest, LayersGoWhereTheirActivationsCrossNoThinLink) {
  const SimulatedRun fixed = RunTwoEvenStages({});
  ASSERT_TRUE(fixed.ended.ok()) << fixed.ended.ToString() << "\n" << fixed.log;
  const SimulatedRun thin = RunTwoEvenStages({.rebalance_every = 4,
                                              .slowed = {0, 49, 3.0},
                                              .layer_seconds = {1e-3, 1e-3, 1e-3, 1e-3},
                                              .second_link = 1e4,
                                              .third_out = 10'000});
  ASSERT_TRUE(thin.ended.ok()) << thin.ended.ToString() << "\n" << thin.log;
  ExpectSameRun(thin, fixed, 24);
  EXPECT_EQ(thin.progress.replays->repartitions, 1) << thin.log;
  EXPECT_EQ(thin.log.find("now 0-2 | 3-3"), std::string::npos) << thin.log;
  EXPECT_NE(thin.log.find("now layers 0-0 on rank 1 | layers 1-3 on rank 0"), std::string::npos) << thin.log;
  ASSERT_EQ(thin.progress.workers.size(), 2u);
  EXPECT_EQ(thin.progress.workers[0].layers, (std::pair{1, 4}));
  EXPECT_EQ(thin.progress.workers[1].layers, (std::pair{0, 1}));
  EXPECT_LT(thin.step_s.back(), 0.9 * thin.step_s[7]) << thin.log;
  // On the same link with outputs of 4 bytes, the cut moves a layer.
  ExpectOneLayerMovedOffTheSlowedDevice(RunTwoEvenStages({.rebalance_every = 4,
                                                          .slowed = {0, 49, 3.0},
                                                          .layer_seconds = {1e-3, 1e-3, 1e-3, 1e-3},
                                                          .second_link = 1e4}),
                                        fixed);
}

// A measurement of the stages ends after --rebalance-within too: the second
// device four times slower from its first pass (no drift inside a
// measurement to end it), 1,000 steps a measurement, which a run of 24 never
// reaches, never moves a layer; measurements of 3 s move one, once, and
// every step's loss is the run's that moved nothing.
TEST(SimulatedPipelineTest, AMeasurementThatOutlastsItsTimeEndsThenAndLayersMove) {
  const SimulatedRun fixed = RunTwoEvenStages({});
  ASSERT_TRUE(fixed.ended.ok()) << fixed.ended.ToString() << "\n" << fixed.log;
  const SimulatedRun by_steps = RunTwoEvenStages({.rebalance_every = 1000, .slowed = {0, 1, 4.0}});
  ASSERT_TRUE(by_steps.ended.ok());
  EXPECT_EQ(by_steps.progress.replays->repartitions, 0) << "1,000 steps never end\n" << by_steps.log;
  const SimulatedRun within = RunTwoEvenStages(
      {.rebalance_every = 1000, .slowed = {0, 1, 4.0}, .rebalance_within = std::chrono::seconds(3)});
  ASSERT_TRUE(within.ended.ok()) << within.ended.ToString() << "\n" << within.log;
  ExpectSameRun(within, fixed, 24);
  EXPECT_EQ(within.progress.replays->repartitions, 1) << within.log;
  EXPECT_NE(within.log.find("now 0-2 | 3-3"), std::string::npos) << within.log;
}

// A device whose compute changes within a measurement ends it once three of
// its last StepWindow::kRecent steps show it, however long the measurement
// was to be (1,000 steps here), and its steps since set its pace, not those
// before, which are most of the window: the second device slowed fourfold in
// step 15 has a layer moved off it after step 17, once, and the losses stay
// the same.
TEST(SimulatedPipelineTest, ADriftEndsItsMeasurementAtOnceAndLayersMove) {
  const SimulatedRun fixed = RunTwoEvenStages({});
  ASSERT_TRUE(fixed.ended.ok()) << fixed.ended.ToString() << "\n" << fixed.log;
  const SimulatedRun drifted = RunTwoEvenStages({.rebalance_every = 1000, .slowed = {0, 8 * 14 + 1, 4.0}});
  ASSERT_TRUE(drifted.ended.ok()) << drifted.ended.ToString() << "\n" << drifted.log;
  ExpectSameRun(drifted, fixed, 24);
  EXPECT_EQ(drifted.progress.replays->repartitions, 1) << drifted.log;
  EXPECT_NE(drifted.log.find("ended as rank 1's compute changed"), std::string::npos) << drifted.log;
  EXPECT_NE(drifted.log.find("now 0-2 | 3-3"), std::string::npos) << drifted.log;
  const size_t at = drifted.log.find("layers moved at step ");
  ASSERT_NE(at, std::string::npos) << drifted.log;
  EXPECT_LE(std::stoi(drifted.log.substr(at + 21)), 19) << drifted.log;
  EXPECT_LT(drifted.step_s.back(), 0.9 * drifted.step_s[14]) << "faster than step 15, slowed\n" << drifted.log;
}

// The same drift from the plan, as a cluster profile's compute.changes gives
// it: the second device's slowdown goes from 2 to 8 at the time its step 7
// begins, and the stage's emulated device slows from then on.
TEST(SimulatedPipelineTest, ADeviceSlowedByItsProfileMidRunHasALayerMovedOffItOnce) {
  const SimulatedRun fixed = RunTwoEvenStages({});
  ASSERT_TRUE(fixed.ended.ok()) << fixed.ended.ToString() << "\n" << fixed.log;
  double step_7_at = 0;
  for (int s = 0; s < 6; ++s) step_7_at += fixed.step_s[s];
  const SimulatedRun moved = RunTwoEvenStages({.rebalance_every = 4, .changes = {{step_7_at, 8.0}}});
  EXPECT_NEAR(moved.step_s[5], fixed.step_s[5], 1e-9) << "not slowed before";
  EXPECT_GT(moved.step_s[7], 1.5 * fixed.step_s[7]) << "slowed at its time";
  ExpectOneLayerMovedOffTheSlowedDevice(moved, fixed);
}

// The second device slowed fiftyfold from step 7, its link 10 kB/s each
// way: cuts moved between the same groups would leave it a layer, its
// stage's one layer then slower than the whole model on the first device
// (a board slowed tenfold beside a gateway kept the vgg's conv1; a new
// user's trial). The planner over the same devices at their measured paces
// lays the stages out on the first alone, the second let go of as a
// straggler, once, and every step's loss is the run's that moved nothing.
TEST(SimulatedPipelineTest, ADeviceSlowedPastUseIsLeftOutByThePlannersLayout) {
  const SimulatedRun fixed = RunTwoEvenStages({});
  ASSERT_TRUE(fixed.ended.ok()) << fixed.ended.ToString() << "\n" << fixed.log;
  const SimulatedRun out = RunTwoEvenStages(
      {.rebalance_every = 4, .slowed = {0, 49, 50.0}, .layer_seconds = {1e-3, 1e-3, 1e-3, 1e-3}, .second_link = 1e4});
  ASSERT_TRUE(out.ended.ok()) << out.ended.ToString() << "\n" << out.log;
  ASSERT_EQ(out.losses.size(), 24u);
  ExpectSameRun(out, fixed, 24);
  ASSERT_TRUE(out.progress.replays.has_value());
  EXPECT_EQ(out.progress.replays->repartitions, 1) << out.log;
  EXPECT_EQ(out.progress.replays->left_out, 1) << out.log;
  EXPECT_EQ(out.progress.replays->stragglers, 0) << "left out, not for running slower than its group\n" << out.log;
  EXPECT_NE(out.log.find("leaving rank 1 out"), std::string::npos) << out.log;
  ASSERT_EQ(out.progress.workers.size(), 2u);
  EXPECT_EQ(out.progress.workers[0].layers, (std::pair{0, 4})) << out.log;
  EXPECT_FALSE(out.progress.workers[1].active);
  EXPECT_GT(out.progress.workers[1].silent_s, 0) << "out, and silent since it was let go of";
  EXPECT_LT(out.step_s.back(), 0.5 * out.step_s[7]) << "faster than step 8, slowed\n" << out.log;
}

// The second device slowed twofold from step 7, every pass costing 20 ms
// besides its samples, which the profile does not know, and the planner free
// to cut a step into up to 24 micro-batches: at the paces measured it lays
// the stages out in 24 micro-batches of a sample, whose bubbles it predicts
// shorter; they pay 48 passes' fixed cost on each device a step, and
// measure slower than the layout before them, which is laid back out: a
// measure beats the model. Every step's loss is the run's that moved
// nothing. (A device back had the planner lay out the vgg's two stages
// again, predicted at 0.084 s a step; they took 0.165, where the gateway
// alone had taken 0.095, and at the paces measured the model still had them
// best: a new user's trial.)
TEST(SimulatedPipelineTest, ALayoutMeasuredSlowerThanOneMeasuredBeforeIsLaidBackOut) {
  const SimulatedRun fixed = RunTwoEvenStages({});
  ASSERT_TRUE(fixed.ended.ok()) << fixed.ended.ToString() << "\n" << fixed.log;
  const SimulatedRun back = RunTwoEvenStages({.rebalance_every = 4,
                                              .slowed = {0, 49, 2.0},
                                              .layer_seconds = {1e-3, 1e-3, 1e-3, 1e-3},
                                              .per_pass = milliseconds(20),
                                              .max_micro_batches = 24});
  ASSERT_TRUE(back.ended.ok()) << back.ended.ToString() << "\n" << back.log;
  ExpectSameRun(back, fixed, 24);
  EXPECT_NE(back.log.find("24 micro-batches a step"), std::string::npos) << back.log;
  EXPECT_NE(back.log.find("4 micro-batches a step, measured"), std::string::npos) << back.log;
  EXPECT_NE(back.log.find("laid back out so"), std::string::npos) << back.log;
  // And the planner's layout, measured, is not laid out again.
  EXPECT_NE(back.log.find("24 micro-batches a step, measured"), std::string::npos) << back.log;
  EXPECT_NE(back.log.find("when tried: the stages stay"), std::string::npos) << back.log;
}

using testing::Digits;

double RelativeDifference(std::span<const float> a, std::span<const float> b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::abs(b[i])));
  }
  return diff / scale;
}

// LibTorch stages over real gRPC on loopback, four micro-batches a step, as
// `layout` places them on devices of `slowdowns`, against the whole model on
// one device drawing the same batches: the same loss at every step and the
// same weights after, within 1e-4; devices of `dies_at_pass` (rank -> its
// nth pass) dying on the way (or, `silent`, going silent, their uplinks cut
// until the job is over), their steps replayed on the others. Replicas carry
// `moments` (float32 unless told: a restored stage then continues exactly),
// and `replica_bytes`, if given, gets the size of one of the first stage's.
// `planned_from`: what the layout was planned from, the head's layers free
// to move; a loss then has the head run the planner over the devices left,
// which must lay the stages out anew.
void ExpectToTrainAsOneDevice(const PipelineLayout& layout, const std::vector<double>& slowdowns,
                              const std::map<int, int>& dies_at_pass = {}, bool silent = false,
                              ReplicaMoments moments = ReplicaMoments::kFloat32, double* replica_bytes = nullptr,
                              const std::optional<PlannedFrom>& planned_from = std::nullopt,
                              bool gradient_each_micro_batch = false) {
  const std::string model = R"({"name": "mlp", "hidden": [32, 16]})";
  const std::string adam = R"({"name": "adam", "learningRate": 0.003, "weightDecay": 0})";
  JobPlan plan = PipelinePlan(Spec(model, "digits", 32, static_cast<int>(slowdowns.size()), adam), 3, 4);
  plan.pipeline = layout;
  plan.pipeline->planned_from = planned_from;
  // A replica every step: a stage's only device lost then costs nothing of the model.
  plan.spec.fault_tolerance.replicate_every = 1;
  plan.spec.fault_tolerance.replica_moments = moments;
  plan.spec.fault_tolerance.gradient_each_micro_batch = gradient_each_micro_batch;
  // bfloat16 moments round the restored stage's Adam state to about three
  // digits: its next steps move its weights a little differently.
  const double weights_within = moments == ReplicaMoments::kFloat32 ? 1e-4 : 1e-3;
  plan.workers.clear();
  for (size_t r = 0; r < slowdowns.size(); ++r) {
    plan.workers.push_back({static_cast<int>(r), "device-" + std::to_string(r), slowdowns[r], std::nullopt, {}});
  }
  ASSERT_TRUE(CheckPipelineLayout(layout, plan.workers.size()).ok());
  const TrainerOptions whole_options{plan.spec.model, Digits().train.info, plan.spec.seed, 1};
  const std::optional<int> layers = BuiltInLayerCount(plan.spec.model);
  ASSERT_TRUE(layers.has_value());
  ASSERT_EQ(*layers, layout.stages.back().end_layer);

  RealClock clock;
  auto whole = CreateTrainer(whole_options);
  ASSERT_TRUE(whole.ok());
  std::vector<std::unique_ptr<StageTrainer>> trainers(plan.workers.size());
  StageShapes shapes;
  for (const PipelineStagePlan& s : layout.stages) {
    for (int r : s.ranks) {
      auto stage = CreateStageTrainer({plan.spec.model, Digits().train.info, plan.spec.seed, 1, s.first_layer,
                                       s.end_layer});
      ASSERT_TRUE(stage.ok()) << stage.status().ToString();
      trainers[r] = std::move(*stage);
    }
    shapes.push_back(trainers[s.ranks.front()]->ParameterShapes());
  }
  std::vector<std::unique_ptr<DyingStageTrainer>> dying;
  std::vector<std::unique_ptr<LinkGate>> gates(trainers.size());
  std::vector<StageTrainer*> devices;
  for (size_t r = 0; r < trainers.size(); ++r) {
    devices.push_back(trainers[r].get());
    if (auto d = dies_at_pass.find(static_cast<int>(r)); d != dies_at_pass.end()) {
      if (silent) gates[r] = std::make_unique<LinkGate>(clock);
      dying.push_back(std::make_unique<DyingStageTrainer>(*trainers[r], d->second, gates[r].get()));
      devices.back() = dying.back().get();
    }
  }
  std::ostringstream log;
  PipelineHead head(plan, **whole, Digits().test, Digits().train.size(), shapes, clock, log);
  // A stage's only device dies once the head holds its replica of the step
  // before (its eight passes a step on): the loss then costs nothing of the
  // model, and the pipeline trains on as the one device.
  for (size_t d = 0; d < dying.size(); ++d) {
    const int rank = std::next(dies_at_pass.begin(), static_cast<std::ptrdiff_t>(d))->first;
    const auto stage = static_cast<size_t>(*StageOfRank(layout, rank));
    if (silent || layout.stages[stage].ranks.size() > 1) continue;
    dying[d]->DiesOnceReady(
        [&head, stage] {
          const auto [step, replica] = head.ReplicaLag(stage);
          return replica == step;
        },
        8);
  }
  if (planned_from) {
    PipelineHead::Rebalancing rebalancing;
    rebalancing.every = 1000;  // the stages never measured in 12 steps: only a loss moves layers
    for (int l = 0; l < *layers; ++l) {
      auto layer = CreateStageTrainer({plan.spec.model, Digits().train.info, plan.spec.seed, 1, l, l + 1});
      ASSERT_TRUE(layer.ok());
      rebalancing.layer_shapes.push_back((*layer)->ParameterShapes());
    }
    head.SetRebalancing(rebalancing);
  }
  // No device is let go of as a straggler: its share of this small model is
  // a fraction of a millisecond on the real clock, and on a busy machine one
  // late wake-up made a device 24 times its group's fastest for two steps
  // running (CI, and 7 runs of 60 beside three busy loops). Stragglers are
  // the simulated clock's tests'.
  head.SetStragglers({std::numeric_limits<double>::infinity(), std::chrono::minutes(1)});
  MetricsRegistry registry;
  std::vector<int> stage_of_rank;
  for (size_t r = 0; r < slowdowns.size(); ++r) stage_of_rank.push_back(*StageOfRank(layout, static_cast<int>(r)));
  PipelineMetrics metrics(registry, plan.job, stage_of_rank);
  head.SetMetrics(&metrics);
  // Plaintext: what the head's mutual TLS does is the data-parallel team's test's
  // (the same transport); here the relay.
  ConnectionMetrics connection_metrics(registry, plan.job);
  RefusalReport refusals("head", log, connection_metrics);
  auto server = StartTrainingServer("127.0.0.1:0", TransportSecurity::Insecure(), head, refusals);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto connector = GrpcConnector((*server)->address(), TransportSecurity::Insecure());
  std::atomic<bool> cancel{false};
  std::vector<StatusOr<StageSummary>> summaries(plan.workers.size(), InternalError("not run"));
  std::vector<std::thread> threads;
  // A log each: a string stream written by threads at once is corrupted (a
  // double free, once, under load).
  std::vector<std::ostringstream> stage_logs(plan.workers.size());
  // Each device's own /metrics, as its stage agent serves them.
  std::vector<MetricsRegistry> device_registries(plan.workers.size());
  std::vector<std::unique_ptr<DeviceEnergyMetrics>> device_energy;
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    device_energy.push_back(
        std::make_unique<DeviceEnergyMetrics>(device_registries[r], plan.job, static_cast<int>(r)));
  }
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    threads.emplace_back([&, r] {
      StageOptions options;
      options.rank = static_cast<int>(r);
      options.head = connector.get();
      options.heartbeat = milliseconds(100);  // silent is then 0.4 s, at the least
      options.gate = gates[r].get();
      options.energy_metrics = device_energy[r].get();
      options.take_layers = [&](int first, int end) {
        return CreateStageTrainer({plan.spec.model, Digits().train.info, plan.spec.seed, 1, first, end});
      };
      summaries[r] = RunStage(plan, options, *devices[r], Digits().train, clock, stage_logs[r], cancel);
    });
  }

  // One device: the whole model, the same batches, the same optimizer.
  auto one = CreateTrainer(whole_options);
  ASSERT_TRUE(one.ok());
  std::vector<int64_t> all(static_cast<size_t>(Digits().train.size()));
  std::iota(all.begin(), all.end(), int64_t{0});
  BatchOrder batches(all, 32, plan.spec.seed);
  const RowLayout rows((*one)->ParameterShapes(), SyncGranularity::kLayer);
  RowOptimizer optimizer(plan.spec.optimizer, rows);
  std::vector<float> x(32 * Digits().train.SampleSize()), gradient(rows.total_floats());
  std::vector<int64_t> y(32);

  ASSERT_TRUE(head.Start(cancel).ok()) << log.str();
  for (int step = 1; step <= 12; ++step) {
    ASSERT_TRUE(head.Advance().ok()) << log.str();
    const auto batch = batches.Next();
    for (size_t k = 0; k < batch.size(); ++k) {
      Digits().train.CopySamples(batch[k], 1, x.data() + k * Digits().train.SampleSize());
      y[k] = Digits().train.labels[batch[k]];
    }
    auto loss = (*one)->ComputeGradient(x.data(), y.data(), static_cast<int64_t>(batch.size()), gradient);
    ASSERT_TRUE(loss.ok());
    std::span<float> params = (*one)->Parameters();
    for (size_t r = 0; r < rows.size(); ++r) {
      const RowSpan& row = rows.row(r);
      optimizer.Apply(r, params.subspan(row.offset, row.length),
                      std::span<const float>(gradient).subspan(row.offset, row.length));
    }
    EXPECT_NEAR(head.LastStepLoss(), *loss, 1e-4 * *loss) << "step " << step;
  }
  auto accuracy = head.Evaluate();  // fetches the stages' weights into the head's model
  ASSERT_TRUE(accuracy.ok()) << accuracy.status().ToString();
  EXPECT_LT(RelativeDifference((*whole)->Parameters(), (*one)->Parameters()), weights_within);
  JobCheckpoint checkpoint;
  head.Snapshot(checkpoint);
  EXPECT_EQ(checkpoint.optimizer.steps, optimizer.state().steps) << "one row a tensor, as a job of one's";
  EXPECT_LT(RelativeDifference(checkpoint.optimizer.second, optimizer.state().second), 1e-3);

  ASSERT_TRUE(head.Finish(FinalModel::kCurrent).ok());
  for (auto& gate : gates) {
    if (gate) gate->Restore();  // the link is back: what it sends meets a stream the head has cut
  }
  for (auto& t : threads) t.join();
  (*server)->Shutdown();
  const JobProgress progress = head.Progress();
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    // Each device's energy by state on its own /metrics: what its steps
    // reported to the head, which counts it into the job's.
    const std::string exposition = device_registries[r].Render();
    double exported = 0;
    for (const char* state : {"communicate", "compute", "idle"}) {
      const std::string series = std::string("edgetrain_energy_joules_total{state=\"") + state +
                                 "\",trainingjob=\"pipeline-test\",worker=\"" + std::to_string(r) + "\"} ";
      const size_t at = exposition.find(series);
      ASSERT_NE(at, std::string::npos) << exposition;
      const double joules = std::stod(exposition.substr(at + series.size()));
      if (std::string_view(state) != "communicate") {
        EXPECT_GT(joules, 0) << "rank " << r << " " << state;
      }
      exported += joules;
    }
    const auto counted = std::find_if(progress.workers.begin(), progress.workers.end(),
                                      [&](const WorkerProgress& w) { return w.rank == static_cast<int>(r); });
    ASSERT_NE(counted, progress.workers.end()) << "rank " << r;
    if (dies_at_pass.count(static_cast<int>(r))) {
      // A step's word it sent when its link was cut never came in.
      EXPECT_GE(exported, counted->energy_joules * (1 - 1e-9)) << "rank " << r;
    } else {
      EXPECT_NEAR(exported, counted->energy_joules, 1e-9 * counted->energy_joules) << "rank " << r;
    }
  }
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    if (dies_at_pass.count(static_cast<int>(r))) {
      if (silent) {
        EXPECT_EQ(summaries[r].status().code(), StatusCode::kUnavailable) << summaries[r].status().ToString();
        EXPECT_NE(log.str().find("(rank " + std::to_string(r) + ") silent for "), std::string::npos) << log.str();
      } else {
        EXPECT_EQ(summaries[r].status().message(), "the device died");
      }
      continue;
    }
    ASSERT_TRUE(summaries[r].ok()) << "rank " << r << ": " << summaries[r].status().ToString() << "\n" << log.str();
    EXPECT_EQ(summaries[r]->steps, 12);
    EXPECT_GT(summaries[r]->compute_s, 0);
  }
  // Each device's compute and bubbles, and what the head relayed.
  const std::string text = registry.Render();
  const std::string replays = "edgetrain_pipeline_replays_total{trainingjob=\"pipeline-test\"} ";
  ASSERT_NE(text.find(replays), std::string::npos) << text;
  EXPECT_EQ(std::stod(text.substr(text.find(replays) + replays.size())), static_cast<double>(dies_at_pass.size()));
  // The shares its cover computed: of every micro-batch of the step, or of
  // those whose gradient had not gone in the device's parts.
  const std::string covered = "edgetrain_pipeline_covered_shares_total{trainingjob=\"pipeline-test\"} ";
  ASSERT_NE(text.find(covered), std::string::npos) << text;
  const double shares = std::stod(text.substr(text.find(covered) + covered.size()));
  if (gradient_each_micro_batch && !dies_at_pass.empty()) {
    // Of the four micro-batches, those whose gradient part had not reached
    // the head when the device died: the one it was computing, and on a busy
    // machine the part before it too, still on its way (1 run in 150 beside
    // two busy loops).
    const std::string came = " more came in its parts";
    const size_t at = log.str().find(came);
    ASSERT_NE(at, std::string::npos) << log.str();
    const int parts_in = std::stoi(log.str().substr(log.str().rfind(' ', at - 1) + 1));
    EXPECT_GE(parts_in, 1) << log.str();
    EXPECT_EQ(shares, 4 - parts_in) << "of the micro-batches whose part had not come in alone\n" << log.str();
  }
  // A device alone in its stage has its layers rebuilt on a neighbour from its replica.
  int alone = 0;
  for (const auto& [rank, pass] : dies_at_pass) alone += layout.stages[stage_of_rank[rank]].ranks.size() == 1;
  const std::string restored = "edgetrain_pipeline_restored_stages_total{trainingjob=\"pipeline-test\"} ";
  ASSERT_NE(text.find(restored), std::string::npos) << text;
  EXPECT_EQ(std::stod(text.substr(text.find(restored) + restored.size())), alone);
  // Every reason a repartition may have is a series from the start.
  EXPECT_NE(text.find("edgetrain_pipeline_repartitions_total{reason=\"imbalance\",trainingjob=\"pipeline-test\"} "),
            std::string::npos)
      << text;
  // And the updates of their layers lost with them, those since the replica,
  // as /progress counts them.
  const std::string steps_lost = "edgetrain_pipeline_steps_lost_total{trainingjob=\"pipeline-test\"} ";
  ASSERT_NE(text.find(steps_lost), std::string::npos) << text;
  const std::optional<JobProgress::Replays> recovered = head.Progress().replays;
  EXPECT_EQ(std::stod(text.substr(text.find(steps_lost) + steps_lost.size())),
            recovered ? static_cast<double>(recovered->steps_lost) : 0.0);
  // How many replicas come in whole depends on the run's timing (a replica's
  // parts go only when its stage has nothing else to send); each replica of
  // one stage is the same size.
  const std::string first_stage = "{stage=\"0\",trainingjob=\"pipeline-test\"} ";
  auto value = [&](const std::string& name) {
    const size_t at = text.find(name + first_stage);
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + name.size() + first_stage.size()));
  };
  if (replica_bytes) {
    const double replicas = value("edgetrain_pipeline_replicas_total");
    ASSERT_GT(replicas, 0) << text;
    *replica_bytes = value("edgetrain_pipeline_replica_bytes_total") / replicas;
    EXPECT_GT(value("edgetrain_pipeline_replica_seconds_total"), 0) << text;
  }
  if (alone > 0) {
    EXPECT_NE(log.str().find(" go to stage "), std::string::npos) << log.str();
  }
  if (planned_from && !dies_at_pass.empty()) {
    EXPECT_NE(log.str().find("stages laid out anew"), std::string::npos) << log.str();
  }
  // Each device's compute, over the series of the stages it was at: one
  // that took a lost neighbour's layers, its stage then another's, is at
  // that stage from then on (its series had grown on under the stage it
  // left: a new user's trial).
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    if (dies_at_pass.count(static_cast<int>(r))) continue;
    const std::string planned = "edgetrain_stage_compute_seconds_total{stage=\"" + std::to_string(stage_of_rank[r]) +
                                "\",trainingjob=\"pipeline-test\",worker=\"" + std::to_string(r) + "\"} ";
    ASSERT_NE(text.find(planned), std::string::npos) << planned << "\n" << text;
    double seconds = 0;
    int stages_at = 0;
    for (size_t s = 0; s < layout.stages.size(); ++s) {
      const std::string series = "edgetrain_stage_compute_seconds_total{stage=\"" + std::to_string(s) +
                                 "\",trainingjob=\"pipeline-test\",worker=\"" + std::to_string(r) + "\"} ";
      if (const size_t at = text.find(series); at != std::string::npos) {
        seconds += std::stod(text.substr(at + series.size()));
        ++stages_at;
      }
    }
    EXPECT_NEAR(seconds, summaries[r]->compute_s, 1e-6) << text;
    // Stages before its own that lost their only device are gone: it is
    // that many stages further up now, and has a series there (unless the
    // planner laid the stages out anew after).
    if (planned_from) continue;
    int gone_before = 0;
    for (const auto& [rank, pass] : dies_at_pass) {
      const int s = stage_of_rank[static_cast<size_t>(rank)];
      gone_before += layout.stages[static_cast<size_t>(s)].ranks.size() == 1 && s < stage_of_rank[r];
    }
    EXPECT_EQ(stages_at, gone_before > 0 ? 2 : 1) << text;
    const std::string now = "edgetrain_stage_compute_seconds_total{stage=\"" +
                            std::to_string(stage_of_rank[r] - gone_before) +
                            "\",trainingjob=\"pipeline-test\",worker=\"" + std::to_string(r) + "\"} ";
    EXPECT_NE(text.find(now), std::string::npos) << now << "\n" << text;
  }
  EXPECT_NE(text.find("edgetrain_stage_bubble_seconds_total{"), std::string::npos);
  EXPECT_NE(text.find("edgetrain_pipeline_micro_batches_in_flight{trainingjob=\"pipeline-test\"} 0"), std::string::npos)
      << "none in flight between steps";
  if (layout.stages.size() > 1) {
    EXPECT_EQ(text.find("edgetrain_pipeline_relayed_bytes_total{trainingjob=\"pipeline-test\"} 0\n"), std::string::npos);
  }
}

TEST(PipelineOverGrpcTest, ThreeStagesTrainStepForStepAsOneDevice) {
  ExpectToTrainAsOneDevice({{{0, 1, {0}}, {1, 2, {1}}, {2, 3, {2}}}, 4}, {1, 1, 1});
}

// Hybrid: the first stage on two devices, one twice as slow as the other,
// which take two thirds and a third of each micro-batch and step on the sum
// of their gradients (BSP, uncompressed, inside the stage).
TEST(PipelineOverGrpcTest, AStageOnTwoDevicesTrainsStepForStepAsOneDevice) {
  ExpectToTrainAsOneDevice({{{0, 2, {0, 1}}, {2, 3, {2}}}, 4}, {1, 2, 1});
}

// The faster device of the two-device first stage dies at its last backward
// of step 5 (its 40th pass; eight a step), when the last stage has finished
// the step: the other device computes its shares of the step again, from
// what the head had dealt it, the last stage's done passes standing; it then
// carries the stage alone, and the pipeline still trains as one device.
TEST(PipelineOverGrpcTest, ADeviceLostMidStepIsCoveredAndThePipelineStillTrainsAsOneDevice) {
  ExpectToTrainAsOneDevice({{{0, 2, {0, 1}}, {2, 3, {2}}}, 4}, {1, 2, 1}, {{0, 40}});
}

// The same under spec.faultTolerance.gradientEachMicroBatch: the device had
// sent its gradient of its first three micro-batches, each as it was done,
// and its cover computes its share of the last alone.
TEST(PipelineOverGrpcTest, ADeviceLostMidStepAfterSendingItsGradientEachMicroBatchHasOneShareCovered) {
  ExpectToTrainAsOneDevice({{{0, 2, {0, 1}}, {2, 3, {2}}}, 4}, {1, 2, 1}, {{0, 40}}, false, ReplicaMoments::kFloat32,
                           nullptr, std::nullopt, /*gradient_each_micro_batch=*/true);
}

// The same device going silent there instead, its stream open, as behind a
// wall: the head takes it for lost past its heartbeats, cuts its gRPC stream,
// and has the other device of its stage compute its shares.
TEST(PipelineOverGrpcTest, ADeviceSilentMidStepIsCutOffAndThePipelineStillTrainsAsOneDevice) {
  ExpectToTrainAsOneDevice({{{0, 2, {0, 1}}, {2, 3, {2}}}, 4}, {1, 2, 1}, {{0, 40}}, /*silent=*/true);
}

// Three stages of one device each, the middle one dying at its last backward
// of step 5: the first stage's device takes its layers from the replica of
// step 4, and the pipeline of two stages still trains as one device.
TEST(PipelineOverGrpcTest, AStagesOnlyDeviceLostIsRebuiltOnItsNeighbourAndThePipelineStillTrainsAsOneDevice) {
  ExpectToTrainAsOneDevice({{{0, 1, {0}}, {1, 2, {1}}, {2, 3, {2}}}, 4}, {1, 1, 1}, {{1, 40}});
}

// Two stages of one device each, the second dying mid-step: the first
// stage's device takes its layers, and the pipeline of one stage trains on as
// one device; no micro-batch is shown in flight after (the gauge stayed at
// the 1 or 2 it read at the loss: a new user's trial).
TEST(PipelineOverGrpcTest, APipelineLeftWithOneStageShowsNoMicroBatchInFlight) {
  ExpectToTrainAsOneDevice({{{0, 2, {0}}, {2, 3, {1}}}, 4}, {1, 1}, {{1, 40}});
}

// The same with replicas as they go by default, their optimizer's moments as
// bfloat16: two thirds of the bytes (8 a parameter with Adam, not 12), every
// step's loss still the run's that lost no one within 1e-4, the weights after
// within 1e-3.
TEST(PipelineOverGrpcTest, AStageRebuiltFromAReplicaOfBfloat16MomentsTrainsOnAsOneDeviceNearly) {
  double exact = 0, compact = 0;
  ExpectToTrainAsOneDevice({{{0, 1, {0}}, {1, 2, {1}}, {2, 3, {2}}}, 4}, {1, 1, 1}, {{1, 40}}, false,
                           ReplicaMoments::kFloat32, &exact);
  ExpectToTrainAsOneDevice({{{0, 1, {0}}, {1, 2, {1}}, {2, 3, {2}}}, 4}, {1, 1, 1}, {{1, 40}}, false,
                           ReplicaMoments::kBfloat16, &compact);
  ASSERT_GT(exact, 0);
  EXPECT_NEAR(compact / exact, 8.0 / 12, 0.02) << compact << " bytes against " << exact;
}

// Three stages of one device each, the middle one dying at its last
// backward of step 5: the first stage's device takes its layers, and the
// head then runs the planner over the two devices left. By the costs the
// layout says it was planned from (the first layer as heavy as the other
// two), the first stage holding two layers paces the pipeline; the planner's
// best is faster by more than 15%, and every device is sent its new layers,
// LibTorch's, with their weights and Adam's state. The pipeline still trains
// as one device.
TEST(PipelineOverGrpcTest, AfterALossThePlannersLayoutOverTheDevicesLeftStillTrainsAsOneDevice) {
  PlannedFrom from;
  for (int l = 0; l < 3; ++l) from.layers.push_back({"layer" + std::to_string(l), (3 - l) * 1e-3, (3 - l) * 1e-3, 4000, 400, {}, 0, ""});
  for (int r = 0; r < 3; ++r) from.devices.push_back({"device-" + std::to_string(r), 1, 0, 0, 0});
  ExpectToTrainAsOneDevice({{{0, 1, {0}}, {1, 2, {1}}, {2, 3, {2}}}, 4}, {1, 1, 1}, {{1, 40}}, false,
                           ReplicaMoments::kFloat32, nullptr, from);
}

// Plain synchronous data parallelism, as a pipeline of one stage on three devices.
TEST(PipelineOverGrpcTest, OneStageOnThreeDevicesTrainsStepForStepAsOneDevice) {
  ExpectToTrainAsOneDevice({{{0, 3, {0, 1, 2}}}, 2}, {1, 1, 1});
}

}  // namespace
}  // namespace edgetrain::agent

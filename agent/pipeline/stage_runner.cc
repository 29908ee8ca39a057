#include "agent/pipeline/stage_runner.h"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>

#include "agent/pipeline/wire_floats.h"
#include "agent/transport/shaped_stream.h"
#include "core/batch_order.h"
#include "core/pipeline_schedule.h"
#include "core/row_layout.h"
#include "core/row_optimizer.h"
#include "core/trace_shaper.h"

namespace edgetrain::agent {
namespace {

// What a stage was sent and has not used yet: micro-batches arrive whenever
// their neighbour is done with them, not in the order 1F1B takes them.
class Inbox {
 public:
  // `cancel` ends every wait (SIGTERM to the agent): the stage then leaves,
  // and the head, seeing its stream close, says which stage was lost.
  Inbox(Clock& clock, const std::atomic<bool>& cancel, Duration cancel_recheck)
      : arrived_(clock), cancel_(cancel), cancel_recheck_(cancel_recheck) {}

  void File(v1::CoordinatorMessage message) {
    std::lock_guard lock(mu_);
    if (message.has_forward() || message.has_backward()) {
      const v1::MicroBatch& m = message.has_forward() ? message.forward() : message.backward();
      micro_batches_[{message.has_forward(), m.step(), m.micro_batch()}] = std::move(message);
    } else if (message.has_gradient()) {
      gradients_[message.gradient().step()] = std::move(*message.mutable_gradient());
    } else {
      // A Stop ends a step still waiting for a neighbour that is gone.
      if (message.has_stop()) stopped_ = message.stop().reason();
      commands_.push_back(std::move(message));
    }
    arrived_.NotifyAll();
  }
  void Close(Status why) {
    std::lock_guard lock(mu_);
    closed_ = std::move(why);
    arrived_.NotifyAll();
  }

  // The micro-batch `forward` (or backward) `step`/`i`, once it is there.
  StatusOr<v1::MicroBatch> Await(bool forward, int64_t step, int i) {
    std::unique_lock lock(mu_);
    const Key key{forward, step, i};
    Wait(lock, [&] { return micro_batches_.count(key) > 0 || !closed_.ok() || stopped_; });
    auto found = micro_batches_.find(key);
    if (found == micro_batches_.end()) return Ended();
    v1::MicroBatch m = forward ? std::move(*found->second.mutable_forward()) : std::move(*found->second.mutable_backward());
    micro_batches_.erase(found);
    return m;
  }
  // The group's summed gradient of `step`, once the head has sent it.
  StatusOr<v1::GroupGradient> AwaitGradient(int64_t step) {
    std::unique_lock lock(mu_);
    Wait(lock, [&] { return gradients_.count(step) > 0 || !closed_.ok() || stopped_; });
    auto found = gradients_.find(step);
    if (found == gradients_.end()) return Ended();
    v1::GroupGradient g = std::move(found->second);
    gradients_.erase(found);
    return g;
  }
  // The head's next word: a command or Stop.
  StatusOr<v1::CoordinatorMessage> NextCommand() {
    std::unique_lock lock(mu_);
    Wait(lock, [&] { return !commands_.empty() || !closed_.ok(); });
    if (commands_.empty()) return Ended();
    v1::CoordinatorMessage m = std::move(commands_.front());
    commands_.pop_front();
    return m;
  }

 private:
  // Until `holds`, or the stage is cancelled: looked at every cancel_recheck_,
  // since a signal handler cannot notify a condition.
  template <typename Predicate>
  void Wait(std::unique_lock<std::mutex>& lock, Predicate holds) {
    while (!arrived_.WaitFor(lock, cancel_recheck_, holds) && !cancel_.load()) {
    }
  }
  Status Ended() const {
    if (stopped_) return CancelledError(*stopped_);
    return closed_.ok() ? CancelledError("cancelled") : closed_;
  }

  using Key = std::tuple<bool, int64_t, int>;
  std::mutex mu_;
  ClockCondition arrived_;
  const std::atomic<bool>& cancel_;
  const Duration cancel_recheck_;
  std::map<Key, v1::CoordinatorMessage> micro_batches_;
  std::map<int64_t, v1::GroupGradient> gradients_;
  std::optional<std::string> stopped_;  // the head's Stop, once it came
  std::deque<v1::CoordinatorMessage> commands_;
  Status closed_ = Status::Ok();
};

// What a stage sends, in order, from a thread of its own.
class Outbox {
 public:
  explicit Outbox(Clock& clock) : changed_(clock) {}

  void Post(v1::WorkerMessage message) {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(message));
    changed_.NotifyAll();
  }
  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    changed_.NotifyAll();
  }
  // Sends until closed and empty, or the stream fails.
  Status Drain(CoordinatorStream& stream) {
    for (;;) {
      v1::WorkerMessage next;
      {
        std::unique_lock lock(mu_);
        changed_.Wait(lock, [&] { return !queue_.empty() || closed_; });
        if (queue_.empty()) return Status::Ok();
        next = std::move(queue_.front());
        queue_.pop_front();
      }
      EDGETRAIN_RETURN_IF_ERROR(stream.Send(next));
    }
  }

 private:
  std::mutex mu_;
  ClockCondition changed_;
  std::deque<v1::WorkerMessage> queue_;
  bool closed_ = false;
};

class Stage {
 public:
  Stage(const JobPlan& plan, int index, const StageOptions& options, StageTrainer& trainer, const Dataset& train,
        Clock& clock, const std::atomic<bool>& cancel)
      : plan_(plan), index_(index), stages_(static_cast<int>(plan.pipeline->stages.size())),
        group_(plan.pipeline->stages[index].ranks),
        member_(static_cast<size_t>(std::find(group_.begin(), group_.end(), options.rank) - group_.begin())),
        options_(options),
        trainer_(trainer), train_(train), clock_(clock),
        slowdown_(plan.workers[options.rank].slowdown),
        batches_(All(train), plan.spec.data.batch_size, plan.spec.seed),
        layout_(trainer.ParameterShapes(), SyncGranularity::kLayer), optimizer_(plan.spec.optimizer, layout_),
        inbox_(clock, cancel, options.cancel_recheck), outbox_(clock) {
    for (int r : group_) speeds_.push_back(1 / plan.workers[r].slowdown);
  }

  StatusOr<StageSummary> Run(CoordinatorStream& stream, const std::atomic<bool>& cancel) {
    ClockThread receiver = clock_.StartThread("stage receiver " + std::to_string(options_.rank), [&] {
      for (;;) {
        auto message = stream.Receive();
        if (!message.ok()) {
          inbox_.Close(UnavailableError("the stream to the head broke: " + message.status().message()));
          return;
        }
        inbox_.File(std::move(*message));
      }
    });
    Status sent = Status::Ok();
    ClockThread sender = clock_.StartThread("stage sender " + std::to_string(options_.rank),
                                            [&] { sent = outbox_.Drain(stream); });
    Status ran = Commands(cancel);
    if (ran.code() == StatusCode::kCancelled) {
      // Told to stop mid-wait: by the head, or by a signal to the agent.
      summary_.stop_reason = ran.message();
      ran = Status::Ok();
    }
    outbox_.Close();
    sender.Join();
    stream.Close();
    receiver.Join();
    if (!ran.ok()) return ran;
    if (!sent.ok()) return sent;
    return summary_;
  }

  Status Welcome(const v1::StageWelcome& welcome) {
    if (welcome.has_state()) EDGETRAIN_RETURN_IF_ERROR(Install(welcome.state()));
    step_ = welcome.resume_after();
    // A resumed job starts a new pass over the data, as a job of one does.
    if (step_ > 0) batches_.Restart(plan_.spec.seed + static_cast<uint64_t>(step_));
    return Status::Ok();
  }

 private:
  static std::vector<int64_t> All(const Dataset& d) {
    std::vector<int64_t> all(static_cast<size_t>(d.size()));
    std::iota(all.begin(), all.end(), int64_t{0});
    return all;
  }

  Status Commands(const std::atomic<bool>& cancel) {
    while (!cancel.load()) {
      EDGETRAIN_ASSIGN_OR_RETURN(v1::CoordinatorMessage message, inbox_.NextCommand());
      if (message.has_stop()) {
        summary_.stop_reason = message.stop().reason();
        return Status::Ok();
      }
      if (!message.has_command()) return FailedPreconditionError("the head sent a stage what only a worker takes");
      if (message.command().has_send_state()) {
        v1::WorkerMessage state;
        *state.mutable_state() = State();
        outbox_.Post(std::move(state));
        continue;
      }
      if (message.command().step() != step_ + 1) {
        return FailedPreconditionError("the head asked for step " + std::to_string(message.command().step()) +
                                       " after step " + std::to_string(step_));
      }
      EDGETRAIN_RETURN_IF_ERROR(Step(step_ + 1));
      ++step_;
    }
    summary_.stop_reason = "cancelled";
    return Status::Ok();
  }

  Status Step(int64_t step) {
    const std::span<const int64_t> batch = batches_.Next();
    const int64_t m = static_cast<int64_t>(batch.size());
    const std::vector<MicroBatchSpan> spans = SplitBatch(m, plan_.pipeline->micro_batches);
    const int count = static_cast<int>(spans.size());
    v1::StepDone done;
    done.set_step(step);
    done.set_samples(m);
    double loss_sum = 0;
    const double compute_before = summary_.compute_s, idle_before = summary_.idle_s;
    for (const Pass& pass : OneForwardOneBackward(index_, stages_, count)) {
      // This device's share of the micro-batch, where it reads samples itself.
      const MicroBatchSpan span = Mine(spans[pass.micro_batch]);
      if (pass.kind == PassKind::kForward) {
        std::vector<float> input;
        int64_t n = span.end - span.begin;
        if (trainer_.IsFirst()) {
          input.resize(static_cast<size_t>(n * train_.SampleSize()));
          for (int64_t k = 0; k < n; ++k) {
            train_.CopySamples(batch[span.begin + k], 1, input.data() + k * train_.SampleSize());
          }
        } else {
          EDGETRAIN_ASSIGN_OR_RETURN(v1::MicroBatch in, Awaited(true, step, pass.micro_batch));
          n = in.samples();
          EDGETRAIN_ASSIGN_OR_RETURN(input, FloatsOf(in.values()));
        }
        held_[pass.micro_batch] = n;
        std::vector<float> output;
        // A device dealt none of a small micro-batch passes it on empty.
        if (n > 0) {
          EDGETRAIN_ASSIGN_OR_RETURN(output, Computed([&] { return trainer_.Forward(pass.micro_batch, input); }));
        }
        if (!trainer_.IsLast()) Send(true, step, pass.micro_batch, n, output);
      } else {
        const int64_t n = held_[pass.micro_batch];
        std::vector<float> input_gradient;
        if (trainer_.IsLast()) {
          std::vector<int64_t> labels(static_cast<size_t>(n));
          for (int64_t k = 0; k < n; ++k) labels[k] = train_.labels[batch[span.begin + k]];
          if (n > 0) {
            EDGETRAIN_ASSIGN_OR_RETURN(LossAndInputGradient r, Computed([&] {
                                         return trainer_.BackwardFromLoss(pass.micro_batch, labels,
                                                                          static_cast<double>(n) / m);
                                       }));
            loss_sum += r.loss * n;
            input_gradient = std::move(r.input_gradient);
          }
        } else {
          EDGETRAIN_ASSIGN_OR_RETURN(v1::MicroBatch g, Awaited(false, step, pass.micro_batch));
          EDGETRAIN_ASSIGN_OR_RETURN(const std::vector<float> output_gradient, FloatsOf(g.values()));
          if (n > 0) {
            EDGETRAIN_ASSIGN_OR_RETURN(input_gradient,
                                       Computed([&] { return trainer_.Backward(pass.micro_batch, output_gradient); }));
          }
        }
        if (!trainer_.IsFirst()) Send(false, step, pass.micro_batch, n, input_gradient);
      }
    }
    // The flush: every micro-batch's gradient is in, so the weights move once.
    std::span<float> params = trainer_.Parameters();
    std::span<const float> gradient = trainer_.Gradients();
    std::vector<float> sum;
    if (group_.size() > 1) {
      // The group's devices each hold the gradient of their shares: they step
      // on the sum, alike, and stay one copy of the stage.
      v1::WorkerMessage mine;
      mine.mutable_gradient()->set_step(step);
      mine.mutable_gradient()->set_values(FloatBytes(gradient));
      outbox_.Post(std::move(mine));
      EDGETRAIN_ASSIGN_OR_RETURN(v1::GroupGradient summed, inbox_.AwaitGradient(step));
      EDGETRAIN_ASSIGN_OR_RETURN(sum, FloatsOf(summed.values()));
      if (sum.size() != gradient.size()) return FailedPreconditionError("the head summed a gradient of another size");
      gradient = sum;
    }
    for (size_t r = 0; r < layout_.size(); ++r) {
      const RowSpan& row = layout_.row(r);
      optimizer_.Apply(r, params.subspan(static_cast<size_t>(row.offset), static_cast<size_t>(row.length)),
                       gradient.subspan(static_cast<size_t>(row.offset), static_cast<size_t>(row.length)));
    }
    trainer_.ZeroGradients();
    ++summary_.steps;
    done.set_loss_sum(loss_sum);
    done.set_compute_seconds(summary_.compute_s - compute_before);
    done.set_idle_seconds(summary_.idle_s - idle_before);
    v1::WorkerMessage message;
    *message.mutable_step_done() = std::move(done);
    outbox_.Post(std::move(message));
    return Status::Ok();
  }

  // Where this device reads its share of a micro-batch of the batch: the
  // group's devices deal it by speed, as the head does.
  MicroBatchSpan Mine(MicroBatchSpan whole) const {
    if (group_.size() == 1) return whole;
    const std::vector<int64_t> shares = ShareOut(whole.end - whole.begin, speeds_);
    int64_t begin = whole.begin;
    for (size_t j = 0; j < member_; ++j) begin += shares[j];
    return {begin, begin + shares[member_]};
  }

  // A pass, timed as compute, the emulated device's slowdown slept on top.
  template <typename F>
  auto Computed(F&& pass) -> decltype(pass()) {
    const TimePoint began = clock_.Now();
    auto result = pass();
    if (slowdown_ > 1) clock_.SleepFor(std::chrono::duration_cast<Duration>((clock_.Now() - began) * (slowdown_ - 1)));
    summary_.compute_s += ToSeconds(clock_.Now() - began);
    return result;
  }

  StatusOr<v1::MicroBatch> Awaited(bool forward, int64_t step, int i) {
    const TimePoint began = clock_.Now();
    auto m = inbox_.Await(forward, step, i);
    summary_.idle_s += ToSeconds(clock_.Now() - began);
    return m;
  }

  void Send(bool forward, int64_t step, int i, int64_t n, std::span<const float> values) {
    v1::WorkerMessage message;
    v1::MicroBatch* m = forward ? message.mutable_forward() : message.mutable_backward();
    m->set_step(step);
    m->set_micro_batch(i);
    m->set_samples(static_cast<int32_t>(n));
    m->set_values(FloatBytes(values));
    summary_.activation_bytes_sent += static_cast<int64_t>(values.size() * sizeof(float));
    outbox_.Post(std::move(message));
  }

  v1::StageState State() {
    v1::StageState s;
    s.set_parameters(FloatBytes(trainer_.Parameters()));
    const OptimizerState& o = optimizer_.state();
    s.set_first_moment(FloatBytes(o.first));
    s.set_second_moment(FloatBytes(o.second));
    for (int64_t steps : o.steps) s.add_row_steps(steps);
    return s;
  }

  Status Install(const v1::StageState& s) {
    EDGETRAIN_ASSIGN_OR_RETURN(const std::vector<float> params, FloatsOf(s.parameters()));
    std::span<float> mine = trainer_.Parameters();
    OptimizerState& o = optimizer_.mutable_state();
    EDGETRAIN_ASSIGN_OR_RETURN(std::vector<float> first, FloatsOf(s.first_moment()));
    EDGETRAIN_ASSIGN_OR_RETURN(std::vector<float> second, FloatsOf(s.second_moment()));
    if (params.size() != mine.size() || first.size() != o.first.size() || second.size() != o.second.size() ||
        static_cast<size_t>(s.row_steps_size()) != o.steps.size()) {
      return FailedPreconditionError("the head's state for stage " + std::to_string(index_ + 1) +
                                     " is of another model or optimizer");
    }
    std::copy(params.begin(), params.end(), mine.begin());
    o.first = std::move(first);
    o.second = std::move(second);
    o.steps.assign(s.row_steps().begin(), s.row_steps().end());
    return Status::Ok();
  }

  const JobPlan& plan_;
  const int index_;
  const int stages_;
  const std::vector<int> group_;  // the devices of this stage, this one among them
  const size_t member_;
  std::vector<double> speeds_;    // of the group's devices, which deal each micro-batch
  const StageOptions& options_;
  StageTrainer& trainer_;
  const Dataset& train_;
  Clock& clock_;
  const double slowdown_;
  BatchOrder batches_;
  const RowLayout layout_;
  RowOptimizer optimizer_;
  Inbox inbox_;
  Outbox outbox_;
  int64_t step_ = 0;
  std::map<int, int64_t> held_;  // samples of each micro-batch in flight here
  StageSummary summary_;
};

}  // namespace

StatusOr<StageSummary> RunStage(const JobPlan& plan, const StageOptions& options, StageTrainer& trainer,
                                const Dataset& train, Clock& clock, std::ostream& log,
                                const std::atomic<bool>& cancel) {
  if (!plan.pipeline) return FailedPreconditionError("the plan has no pipeline for a stage to take part in");
  EDGETRAIN_ASSIGN_OR_RETURN(int index, StageOfRank(*plan.pipeline, options.rank));
  const TimePoint began = clock.Now();
  std::optional<TraceShaper> uplink;  // outlives the stream that shapes with it
  std::unique_ptr<CoordinatorStream> stream;
  while (!stream && !cancel.load()) {
    auto connected = options.head->Connect(options.connect_attempt);
    if (connected.ok()) {
      stream = std::move(*connected);
    } else if (clock.Now() - began > options.connect_timeout) {
      return UnavailableError("the head at " + options.head->address() + " was unreachable for " +
                              std::to_string(static_cast<int>(ToSeconds(options.connect_timeout))) + " s");
    }
  }
  if (!stream) return StageSummary{.stop_reason = "cancelled"};
  if (options.uplink) {
    uplink.emplace(*options.uplink, clock.Now());
    stream = std::make_unique<ShapedCoordinatorStream>(std::move(stream), *uplink, clock);
  }
  v1::WorkerMessage hello;
  *hello.mutable_hello() = MakeHello(plan.job, plan.generation, options.rank);
  EDGETRAIN_RETURN_IF_ERROR(stream->Send(hello));
  EDGETRAIN_ASSIGN_OR_RETURN(v1::CoordinatorMessage first, stream->Receive());
  if (first.has_stop()) return StageSummary{.stop_reason = first.stop().reason()};
  if (!first.has_stage_welcome()) return FailedPreconditionError("the head did not answer with a stage welcome");
  Stage stage(plan, index, options, trainer, train, clock, cancel);
  EDGETRAIN_RETURN_IF_ERROR(stage.Welcome(first.stage_welcome()));
  log << "stage " << index + 1 << " of " << plan.pipeline->stages.size() << " (rank " << options.rank << ", layers "
      << plan.pipeline->stages[index].first_layer << "-" << plan.pipeline->stages[index].end_layer - 1
      << ") joined the pipeline\n";
  return stage.Run(*stream, cancel);
}

}  // namespace edgetrain::agent

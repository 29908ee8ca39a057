#include "agent/pipeline/stage_runner.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>

#include "agent/emulated_device.h"
#include "agent/pipeline/pass_watch.h"
#include "agent/pipeline/replica_parts.h"
#include "agent/pipeline/stage_inbox.h"
#include "agent/pipeline/stage_outbox.h"
#include "agent/pipeline/wire_floats.h"
#include "agent/transport/shaped_stream.h"
#include "core/batch_order.h"
#include "core/bfloat16.h"
#include "core/energy_model.h"
#include "core/pipeline_schedule.h"
#include "core/row_layout.h"
#include "core/row_optimizer.h"
#include "core/trace_shaper.h"

namespace edgetrain::agent {
namespace {

// The head's copies of a stage, paced by their cost (replicateCentralEvery
// unset): after one took a stage's device t to make, and its parts s on the
// link, the next waits kPacedReplicaMaking times t and kPacedReplicaLink
// times s from its last part sent. The device's time is dear: what the head
// spends keeping the copies, and the gRPC stream receiving them, it does
// not see (at 20 times the making, on 2 cores shared with the head, the
// vgg's three stages, a copy every step or so, trained 9-14% slower than
// with one every 100 steps). The link's is mostly the idle moments parts
// go in: at 100 times, a new user's vgg stage on Wi-Fi, 0.53 s a copy, kept
// only its first in a 45 s run and lost 66 steps of its updates with its
// device.
constexpr int kPacedReplicaMaking = 100;
constexpr int kPacedReplicaLink = 10;

class Stage {
 public:
  Stage(const JobPlan& plan, int index, const StageOptions& options, StageTrainer& trainer, const Dataset& train,
        Clock& clock, const std::atomic<bool>& cancel, TimePoint started, std::ostream& log)
      : log_(log), plan_(plan), index_(index), stages_(static_cast<int>(plan.pipeline->stages.size())),
        first_layer_(plan.pipeline->stages[index].first_layer), end_layer_(plan.pipeline->stages[index].end_layer),
        options_(options),
        trainer_(&trainer), train_(train), clock_(clock),
        device_(clock, plan.workers[options.rank].Slowdown(), options.thread_cpu_seconds, started),
        batches_(All(train), plan.spec.data.batch_size, plan.spec.seed),
        layout_(std::make_unique<RowLayout>(trainer.ParameterShapes(), SyncGranularity::kLayer)),
        optimizer_(std::make_unique<RowOptimizer>(plan.spec.optimizer, *layout_)),
        inbox_(clock, cancel, options.cancel_recheck), outbox_(clock, options.announce_bytes),
        energy_(plan.workers[options.rank].power, clock.Now()) {
    (void)SetGroup(plan.pipeline->stages[index].ranks);  // the plan's group holds this device
    // Offered on to the head after this one, should it go before a step.
    if (options_.held) job_energy_j_ = options_.held->job_energy_j;
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
                                            [&] { sent = outbox_.Drain(stream, options_.heartbeat, clock_, energy_, passes_); });
    Status ran = Commands(cancel);
    if (ran.code() == StatusCode::kCancelled) {
      // Told to stop mid-wait: by the head, or by a signal to the agent.
      summary_.stop_reason = ran.message();
      ran = Status::Ok();
    }
    // The head's stop ends the job, and its server with it: a replica still
    // going out is of use to no one, and what the sender had left fails to
    // go, which is no failure of this device's. Taken for one, the agent
    // said hello again for the head's whole return grace and exited failing
    // minutes after the job had succeeded (found in review).
    outbox_.Close(/*drop_idle=*/stopped_by_head_);
    sender.Join();
    stream.Close();
    receiver.Join();
    KeepHeld();
    if (!ran.ok()) return ran;
    if (!sent.ok() && !stopped_by_head_) return sent;
    return summary_;
  }

  Status Welcome(const v1::StageWelcome& welcome) {
    if (welcome.has_state()) EDGETRAIN_RETURN_IF_ERROR(Install(welcome.state()));
    if (welcome.keep_held()) EDGETRAIN_RETURN_IF_ERROR(InstallHeld(welcome.resume_after()));
    // Replicas kept of steps past where the job now goes on are of a run the
    // head gave up (it resumed an older checkpoint): a later takeover must
    // not rebuild a stage from them.
    if (options_.held) {
      std::erase_if(options_.held->replicas,
                    [&](const auto& kept) { return kept.second.step() > welcome.resume_after(); });
    }
    step_ = welcome.resume_after();
    job_elapsed_s_ = welcome.job_elapsed_seconds();
    job_elapsed_at_ = clock_.Now();
    // Its energy counts from training, not from loading its data.
    energy_.Restart(clock_.Now());
    reported_energy_ = {};
    // The job's order of batches from its start, up to where the stage goes
    // on: a resumed job reads the batches it would have uninterrupted, as a
    // job of one does, and a device rejoining mid-run the ones its stage's
    // others read, so that its share is of the same batch.
    batches_.Skip(step_);
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
      word_at_ = clock_.Now();
      work_at_word_ = WorkClock();
      not_work_s_ = 0;
      beyond_cpu_s_ = 0;
      if (message.has_stop()) {
        summary_.stop_reason = message.stop().reason();
        stopped_by_head_ = true;
        return Status::Ok();
      }
      if (!message.has_command()) return FailedPreconditionError("the head sent a stage what only a worker takes");
      const v1::StageCommand& command = message.command();
      if (command.has_layers()) {
        // Between steps: the last one stands.
        EDGETRAIN_RETURN_IF_ERROR(SaidIfTheModules(NotedIfTheModules(TakeLayers(command.layers()))));
        continue;
      }
      if (command.has_send_state()) {
        Commit();  // the head asks between steps: the last one stands
        v1::WorkerMessage state;
        *state.mutable_state() = State();
        state.mutable_state()->set_request(command.send_state());
        outbox_.Post(std::move(state));
        continue;
      }
      int64_t step = command.step();
      int attempt = 0;
      if (command.job_energy_joules() > 0) job_energy_j_ = command.job_energy_joules();
      if (command.has_replay()) {
        step = command.replay().step();
        attempt = command.replay().attempt();
        EDGETRAIN_RETURN_IF_ERROR(SetGroup({command.replay().group().begin(), command.replay().group().end()},
                                           {command.replay().speeds().begin(), command.replay().speeds().end()}));
        if (step == step_ && pending_step_ == step_) {
          // Finished here before a device elsewhere was lost: run again, uncommitted.
          DropPending();
          --step_;
          --summary_.steps;
        }
        if (command.replay().has_layers()) {
          EDGETRAIN_RETURN_IF_ERROR(SaidIfTheModules(NotedIfTheModules(TakeLayers(command.replay().layers()))));
        }
        // As the head planned them again for the devices left.
        if (command.replay().micro_batches() > 0) micro_batches_ = command.replay().micro_batches();
      }
      if (step != step_ + 1) {
        return FailedPreconditionError("the head asked for step " + std::to_string(step) + " after step " +
                                       std::to_string(step_));
      }
      Status ran = Step(step, attempt);
      if (ran.code() == StatusCode::kAborted) {
        // Replayed: what the attempt left here goes (micro-batches not
        // backwarded, its gradient), and the replay is the next command.
        trainer_->DropInFlight();
        trainer_->ZeroGradients();
        held_.clear();
        covered_.clear();
        continue;
      }
      EDGETRAIN_RETURN_IF_ERROR(SaidIfTheModules(ran));
      ++step_;
    }
    summary_.stop_reason = "cancelled";
    return Status::Ok();
  }

  // `status`, noted as the job's own fault where it is a user's module's
  // raise: the trainer's InvalidArgument (StageTrainer says so of its
  // passes and of building a stage), only ever of a TorchScript module.
  template <typename T>
  T NotedIfTheModules(T status) {
    // Every pass comes through here: an OK one costs no copy.
    if (status.ok() || plan_.spec.model.kind != ModelKind::kTorchScript) return status;
    if (Status s = StatusOf(status); s.code() == StatusCode::kInvalidArgument) module_failed_ = std::move(s);
    return status;
  }
  static Status StatusOf(const Status& s) { return s; }
  template <typename V>
  static Status StatusOf(const StatusOr<V>& s) { return s.status(); }

  // `ended`, the error this stage ends on, told to the head first where the
  // user's module raised: the head fails the job with it (exit 2) rather
  // than hand this device's shares or layers to another, to fail alike. The
  // stream is left for the head to end, or its last word may be dropped.
  Status SaidIfTheModules(Status ended) {
    if (ended.ok() || !module_failed_) return ended;
    v1::WorkerMessage failed;
    failed.mutable_failed()->set_reason(module_failed_->message());
    outbox_.Post(std::move(failed));
    inbox_.WaitForTheHeadsEnd(plan_.spec.fault_tolerance.ReachGrace());
    return ended;
  }

  // The group this device is in from now on, and the speeds it deals by:
  // `speeds` where the head gives them, else the plan's.
  Status SetGroup(std::vector<int> group, std::vector<double> speeds = {}) {
    const auto at = std::find(group.begin(), group.end(), options_.rank);
    if (at == group.end()) {
      return FailedPreconditionError("the head put rank " + std::to_string(options_.rank) + " in a group without it");
    }
    if (!speeds.empty() && speeds.size() != group.size()) {
      return FailedPreconditionError("the head gave " + std::to_string(speeds.size()) + " speeds for a group of " +
                                     std::to_string(group.size()));
    }
    const bool planned = speeds.empty();
    for (size_t j = 0; j < group.size(); ++j) {
      const int r = group[j];
      if (r < 0 || static_cast<size_t>(r) >= plan_.workers.size()) {
        return FailedPreconditionError("the head named rank " + std::to_string(r) + ", which the plan has not");
      }
      if (planned) speeds.push_back(1 / plan_.workers[r].slowdown);
      // Finite too: an infinite one dealt shares of NaN samples (found in review).
      if (!(speeds[j] > 0) || !std::isfinite(speeds[j])) {
        return FailedPreconditionError("the head gave rank " + std::to_string(r) + " no speed");
      }
    }
    member_ = static_cast<size_t>(at - group.begin());
    speeds_ = std::move(speeds);
    group_ = std::move(group);
    return Status::Ok();
  }

  // A step's weights move when the head's next word comes (the next step, a
  // request for the state): until then a device lost elsewhere in the
  // pipeline can have the step replayed without it, from the same weights.
  void Commit() {
    if (!pending_step_) return;
    // An emulated slower device takes the optimizer's step slowdown times as
    // long too, as the planner counts it (LayerCost::optimizer_s). Its time
    // is not in the stage's compute, which is its passes': the last step's
    // commit comes after its last StepDone, which would leave the head's
    // count of it short.
    const EmulatedDevice::Mark began = device_.Begin();
    passes_.Began(began.at);
    std::span<float> params = trainer_->Parameters();
    const std::span<const float> gradient = pending_sum_.empty() ? trainer_->Gradients() : pending_sum_;
    for (size_t r = 0; r < layout_->size(); ++r) {
      const RowSpan& row = layout_->row(r);
      optimizer_->Apply(r, params.subspan(static_cast<size_t>(row.offset), static_cast<size_t>(row.length)),
                        gradient.subspan(static_cast<size_t>(row.offset), static_cast<size_t>(row.length)));
    }
    Slowed(began, {PassWork::kOptimizerStep, 0});
    passes_.Ended(clock_.Now());
    DropPending();
  }
  void DropPending() {
    trainer_->ZeroGradients();
    pending_sum_.clear();
    pending_step_.reset();
  }

  // Every replicateCentralEvery steps (the head's copy of these layers,
  // should every device of the stage be lost) and every replicateEvery (the
  // copy it relays on to the neighbouring stage, should the head be lost
  // with them), the group's first device sends the head its committed
  // state. In parts that go only when the stage has nothing else to send:
  // on a slow link a replica whole (12 bytes a parameter with Adam, 8 with
  // its moments as bfloat16, the default) held the step's activations
  // behind it for seconds. One still going out when the next is due
  // finishes first, and the next is skipped (one to relay is made once it
  // is out). The first
  // goes after the first step: until then a stage whose device was lost had
  // no replica, and its job failed (an even split of the vgg, a step a
  // second, lost a stage at step 12 of a replica every 100: a new user's trial).
  //
  // With replicateCentralEvery not set, the head's copy is due every step
  // and paced by what the last cost (kPacedReplicaMaking, kPacedReplicaLink).
  // A stage's only device lost then costs few steps of its layers' updates
  // where making and sending a copy is short against a step, more where it
  // is not (a millisecond's step, a thin link), and the copies take at most
  // about a hundredth of the device's time making them and a tenth of its
  // link's, as far as a send blocks for its link (a shaped link, or gRPC's
  // flow control). Over an unlimited link only their making counts: the
  // vgg's last stage then sent about as many bytes of copies as of its own.
  void Replicate() {
    // Due for the head's own copy, or for the one it relays on to the
    // neighbouring stage: each a multiple of its own period.
    const FaultToleranceSpec& ft = plan_.spec.fault_tolerance;
    const int every = ft.replicate_every;
    const int central = ft.CentralEvery();
    const auto due = [&](int period) { return period > 0 && step_ % period == 0; };
    // A pipeline of one stage has no neighbour to rebuild it on: losing its
    // every device ends the job, and its replicas were never used (a one-stage
    // MLP sent 239 MB of them in 15 s: a new user's trial).
    if (stages_ < 2) return;
    // One the head relays on: due at step 1 and each multiple of
    // replicateEvery, and owed until made when the copy before it is still
    // going out then (the head relays the first at or after each multiple:
    // core/replica_relay.h).
    if (step_ == 1 || due(every)) relay_owed_ = true;
    const bool relayed = relay_owed_;
    if ((every <= 0 && central <= 0) || member_ != 0 || step_ == 0 || (!relayed && !due(central)) ||
        replicated_step_ == step_) {
      return;
    }
    // Skipped before the state is copied and serialized: the one going out
    // finishes first. And the head's copy alone, paced by its cost: not yet.
    const std::optional<StageOutbox::IdleSent> sent = outbox_.LastIdleSent();
    if (!sent) return;
    if (!relayed && ft.CentralPaced() &&
        clock_.Now() < sent->at + replica_making_ * kPacedReplicaMaking + sent->busy * kPacedReplicaLink) {
      return;
    }
    replicated_step_ = step_;
    relay_owed_ = false;
    const TimePoint making = clock_.Now();
    v1::StageReplica replica;
    replica.set_step(step_);
    replica.set_first_layer(first_layer_);
    replica.set_end_layer(end_layer_);
    v1::StageState& state = *replica.mutable_state() = State();
    if (plan_.spec.fault_tolerance.replica_moments == ReplicaMoments::kBfloat16) {
      const OptimizerState& o = optimizer_->state();
      state.set_first_moment(EncodeBfloat16(o.first));
      state.set_second_moment(EncodeBfloat16(o.second));
      state.set_moments_bfloat16(true);
    }
    const std::string bytes = replica.SerializeAsString();
    const auto total = static_cast<int64_t>(bytes.size());
    // Parts under the size that needs announcing, with room for their fields.
    const int64_t part_bytes = std::max<int64_t>(1024, options_.announce_bytes - 64);
    std::vector<v1::WorkerMessage> parts;
    for (int64_t offset = 0; offset < total; offset += part_bytes) {
      v1::ReplicaPart& part = *parts.emplace_back().mutable_replica_part();
      part.set_step(step_);
      part.set_first_layer(first_layer_);
      part.set_end_layer(end_layer_);
      part.set_offset(offset);
      part.set_total(total);
      part.set_data(bytes.substr(static_cast<size_t>(offset), static_cast<size_t>(std::min(part_bytes, total - offset))));
    }
    outbox_.PostWhenIdle(std::move(parts));
    replica_making_ = clock_.Now() - making;
  }

  // The stages as they now are: this group's index, and, when its layers
  // change, a trainer of its new layers. Its own weights and optimizer state
  // stay, and the layers it takes bring theirs: a lost neighbour's from the
  // head's replica, just before or after its own; or, when layers move as
  // devices drift, every layer it now holds, as the stages committed them.
  Status TakeLayers(const v1::StageLayers& l) {
    index_ = l.stage();
    stages_ = l.stages();
    if (l.first_layer() == first_layer_ && l.end_layer() == end_layer_) return Status::Ok();  // had them already
    const bool whole = l.taken_first_layer() == l.first_layer() && l.taken_end_layer() == l.end_layer();
    const bool before = l.taken_end_layer() == first_layer_ && l.taken_first_layer() == l.first_layer() &&
                        l.end_layer() == end_layer_;
    const bool after = l.taken_first_layer() == end_layer_ && l.taken_end_layer() == l.end_layer() &&
                       l.first_layer() == first_layer_;
    if (!whole && !before && !after) {
      return FailedPreconditionError("the head gave layers " + std::to_string(l.first_layer()) + "-" +
                                     std::to_string(l.end_layer() - 1) + " to a device of layers " +
                                     std::to_string(first_layer_) + "-" + std::to_string(end_layer_ - 1));
    }
    if (!options_.take_layers) return FailedPreconditionError("this device cannot take other layers");
    v1::StageState from_held;
    if (l.taken_from_held()) {
      EDGETRAIN_ASSIGN_OR_RETURN(from_held, HeldReplicaOf(l.taken_first_layer(), l.taken_end_layer()));
    }
    const v1::StageState& taken = l.taken_from_held() ? from_held : l.taken();
    Commit();  // the step before the replayed one stands
    EDGETRAIN_ASSIGN_OR_RETURN(std::unique_ptr<StageTrainer> wider, options_.take_layers(l.first_layer(), l.end_layer()));
    const v1::StageState joined = whole ? taken : before ? JoinStates(taken, State()) : JoinStates(State(), taken);
    auto layout = std::make_unique<RowLayout>(wider->ParameterShapes(), SyncGranularity::kLayer);
    auto optimizer = std::make_unique<RowOptimizer>(plan_.spec.optimizer, *layout);
    owned_ = std::move(wider);
    trainer_ = owned_.get();
    layout_ = std::move(layout);
    optimizer_ = std::move(optimizer);
    first_layer_ = l.first_layer();
    end_layer_ = l.end_layer();
    held_.clear();
    device_.ForgetCosts();
    EDGETRAIN_RETURN_IF_ERROR(Install(joined));
    // Said here too: its log had named only the layers it joined with, where
    // the head's said it took others (a user's trial read them as at odds).
    log_ << "stage agent " << options_.rank << ": now stage " << index_ + 1 << " of " << stages_ << ", layers "
         << first_layer_ << "-" << end_layer_ - 1
         << (whole    ? ""
             : before ? " (took a neighbour's layers before its own)"
                      : " (took a neighbour's layers after its own)")
         << "\n";
    return Status::Ok();
  }

  // One attempt at `step`. Aborted when the head replays it meanwhile.
  Status Step(int64_t step, int attempt) {
    Commit();
    Replicate();
    if (batch_step_ != step) {  // a replay runs the same batch again
      const std::span<const int64_t> next = batches_.Next();
      batch_.assign(next.begin(), next.end());
      batch_step_ = step;
    }
    now_step_ = step;
    now_attempt_ = attempt;
    spans_ = SplitBatch(static_cast<int64_t>(batch_.size()), micro_batches_);
    loss_sum_ = 0;
    own_forwards_ = 0;
    covered_.clear();
    parts_sent_ = false;
    gradient_since_part_ = false;
    v1::StepDone done;
    done.set_step(step);
    done.set_attempt(attempt);
    done.set_samples(static_cast<int64_t>(batch_.size()));
    for (const Pass& pass : OneForwardOneBackward(index_, stages_, static_cast<int>(spans_.size()))) {
      const int i = pass.micro_batch;
      // This device's share of the micro-batch, where it reads samples itself.
      const MicroBatchSpan span = ShareOf(spans_[i], member_);
      if (pass.kind == PassKind::kForward) {
        std::optional<v1::MicroBatch> in;
        if (!trainer_->IsFirst()) {
          EDGETRAIN_ASSIGN_OR_RETURN(in, Awaited(true, i));
        }
        EDGETRAIN_ASSIGN_OR_RETURN(held_[i], ForwardPass(i, i, span, in ? &*in : nullptr, StageInbox::kOwn));
        ++own_forwards_;
      } else {
        std::optional<v1::MicroBatch> gradient;
        if (!trainer_->IsLast()) {
          EDGETRAIN_ASSIGN_OR_RETURN(gradient, Awaited(false, i));
        }
        const double loss_before = loss_sum_;
        EDGETRAIN_RETURN_IF_ERROR(BackwardPass(i, i, span, held_[i], gradient ? &*gradient : nullptr, StageInbox::kOwn));
        if (SendsEachMicroBatch() && held_[i] > 0) SendPart(i, loss_sum_ - loss_before);
      }
    }
    // The flush: every micro-batch's gradient is in, so the weights move
    // once, when the head's next word commits the step.
    if (group_.size() > 1) {
      // The group's devices each hold the gradient of their shares: they step
      // on the sum, alike, and stay one copy of the stage. The exchange is
      // not the device's work: the cost model counts it apart, and a device
      // left alone does none. A lost device's shares it covers are.
      EDGETRAIN_RETURN_IF_ERROR(FinishCovers());
      EDGETRAIN_RETURN_IF_ERROR(ExchangeGradients());
    }
    pending_step_ = step;
    ++summary_.steps;
    done.set_loss_sum(loss_sum_);
    // Since the last StepDone: the time of an attempt given up counts too.
    done.set_compute_seconds(summary_.compute_s - reported_.compute_s);
    done.set_idle_seconds(summary_.idle_s - reported_.idle_s);
    const EnergySplit energy = energy_.Split(clock_.Now());
    done.set_energy_joules(energy.total_j() - reported_energy_.total_j());
    if (options_.energy_metrics) {
      options_.energy_metrics->Add(EnergyState::kCompute, energy.compute_j - reported_energy_.compute_j);
      options_.energy_metrics->Add(EnergyState::kCommunicate, energy.communicate_j - reported_energy_.communicate_j);
      options_.energy_metrics->Add(EnergyState::kIdle, energy.idle_j - reported_energy_.idle_j);
    }
    const double held_s = ToSeconds(clock_.Now() - word_at_);
    done.set_held_seconds(held_s);
    // On the thread's CPU clock a pass counts its CPU only: what the device
    // took beyond it is added.
    done.set_work_seconds(std::max(0.0, WorkClock() - work_at_word_ - not_work_s_ + beyond_cpu_s_));
    done.set_longest_pass_seconds(passes_.TakeLongest());
    reported_energy_ = energy;
    reported_ = summary_;
    v1::WorkerMessage message;
    *message.mutable_step_done() = std::move(done);
    outbox_.Post(std::move(message));
    return Status::Ok();
  }

  // The forward of micro-batch `i`'s share `span` (as trainer micro-batch
  // `id`): its samples read from the data on the first stage, else `in`, the
  // previous stage's output; its output sent on, as `share_of`'s share.
  // Returns its samples.
  StatusOr<int64_t> ForwardPass(int i, int64_t id, MicroBatchSpan span, const v1::MicroBatch* in, int share_of) {
    std::vector<float> input;
    int64_t n = span.end - span.begin;
    if (trainer_->IsFirst()) {
      input.resize(static_cast<size_t>(n * train_.SampleSize()));
      for (int64_t k = 0; k < n; ++k) {
        train_.CopySamples(batch_[static_cast<size_t>(span.begin + k)], 1, input.data() + k * train_.SampleSize());
      }
    } else {
      // A count off the wire, trusted, sized the last stage's labels (-1
      // aborted the agent on a vector of SIZE_MAX) and indexed the batch past
      // its end with more than this device was dealt (found in review). Fewer
      // came, in a test, in the attempt two devices of the stage before were
      // lost in, which was then replayed.
      if (in->samples() < 0 || (trainer_->IsLast() && in->samples() > n)) {
        return FailedPreconditionError("micro-batch " + std::to_string(i) + " of step " +
                                       std::to_string(now_step_) + " came with " + std::to_string(in->samples()) +
                                       " samples, where this device was dealt " + std::to_string(n));
      }
      n = in->samples();
      EDGETRAIN_ASSIGN_OR_RETURN(input, FloatsOf(in->values()));
    }
    std::vector<float> output;
    // A device dealt none of a small micro-batch passes it on empty.
    if (n > 0) {
      EDGETRAIN_ASSIGN_OR_RETURN(output,
                                 Computed({PassWork::kForward, n}, [&] { return trainer_->Forward(id, input); }));
    }
    if (!trainer_->IsLast()) Send(true, i, n, output, share_of);
    return n;
  }

  // Its backward, of its `n` samples: from the loss on the labels of `span`
  // on the last stage, else from `gradient`, the next stage's; its input's
  // gradient sent back.
  Status BackwardPass(int i, int64_t id, MicroBatchSpan span, int64_t n, const v1::MicroBatch* gradient, int share_of) {
    std::vector<float> input_gradient;
    if (trainer_->IsLast()) {
      std::vector<int64_t> labels(static_cast<size_t>(n));
      for (int64_t k = 0; k < n; ++k) labels[k] = train_.labels[batch_[static_cast<size_t>(span.begin + k)]];
      if (n > 0) {
        const auto m = static_cast<double>(batch_.size());
        EDGETRAIN_ASSIGN_OR_RETURN(LossAndInputGradient r, Computed({PassWork::kBackwardFromLoss, n}, [&] {
                                     return trainer_->BackwardFromLoss(id, labels, static_cast<double>(n) / m);
                                   }));
        loss_sum_ += r.loss * static_cast<double>(n);
        input_gradient = std::move(r.input_gradient);
      }
    } else {
      EDGETRAIN_ASSIGN_OR_RETURN(const std::vector<float> output_gradient, FloatsOf(gradient->values()));
      if (n > 0) {
        EDGETRAIN_ASSIGN_OR_RETURN(input_gradient, Computed({PassWork::kBackward, n}, [&] {
                                     return trainer_->Backward(id, output_gradient);
                                   }));
      }
    }
    if (n > 0) gradient_since_part_ = true;
    if (!trainer_->IsFirst()) Send(false, i, n, input_gradient, share_of);
    return Status::Ok();
  }

  // A lost device's shares of the step in progress, which this device
  // computes in its stead (StageCover): each micro-batch's forward, then its
  // backward, whenever their inputs are here, between its own passes.
  enum class Covering { kForwardDue, kBackwardDue, kDone };
  struct Covered {
    int rank = 0;
    size_t member = 0;               // its place in the group the step is dealt by
    std::vector<Covering> passes;    // by micro-batch
    std::vector<int64_t> samples;    // by micro-batch: of its share, once forwarded
    bool in_gradient = false;        // its gradient went to the head in one of this device's
    bool Done() const {
      return std::all_of(passes.begin(), passes.end(), [](Covering p) { return p == Covering::kDone; });
    }
  };

  // The covers the head has asked for since, taken up.
  Status TakeCovers() {
    for (const v1::StageCover& c : inbox_.TakeCovers(now_step_, now_attempt_)) {
      const auto at = std::find(group_.begin(), group_.end(), c.rank());
      if (at == group_.end() || c.rank() == options_.rank) {
        return FailedPreconditionError("the head asked rank " + std::to_string(options_.rank) +
                                       " to compute the shares of rank " + std::to_string(c.rank()) +
                                       ", not another of its group");
      }
      Covered& covered = covered_.emplace_back();
      covered.rank = c.rank();
      covered.member = static_cast<size_t>(at - group_.begin());
      covered.passes.assign(spans_.size(), Covering::kForwardDue);
      covered.samples.assign(spans_.size(), 0);
      // Its shares whose gradient came in its parts (gradientEachMicroBatch).
      for (const int done : c.done_micro_batches()) {
        if (done >= 0 && static_cast<size_t>(done) < covered.passes.size()) {
          covered.passes[static_cast<size_t>(done)] = Covering::kDone;
        }
      }
    }
    return Status::Ok();
  }

  // A pass of a covered share whose input is here, run: false if none is.
  // A covered share's micro-batch is one id of the trainer's, apart from
  // its own: ids from (member + 1) * 2^20 on. Its forward goes no sooner
  // than this device's own of the same micro-batch: on the first stage,
  // whose forwards wait for nothing, a cover ran all of them at once and
  // held every activation of the step besides 1F1B's own.
  StatusOr<bool> CoverOnePass() {
    EDGETRAIN_RETURN_IF_ERROR(TakeCovers());
    for (Covered& c : covered_) {
      for (size_t k = 0; k < spans_.size(); ++k) {
        const int i = static_cast<int>(k);
        const int64_t id = (static_cast<int64_t>(c.member) + 1) * (int64_t{1} << 20) + i;
        const MicroBatchSpan span = ShareOf(spans_[k], c.member);
        if (c.passes[k] == Covering::kForwardDue && i < own_forwards_) {
          std::optional<v1::MicroBatch> in;
          if (!trainer_->IsFirst() && !(in = inbox_.Take({true, now_step_, now_attempt_, i, c.rank}))) continue;
          EDGETRAIN_ASSIGN_OR_RETURN(c.samples[k], ForwardPass(i, id, span, in ? &*in : nullptr, c.rank));
          c.passes[k] = Covering::kBackwardDue;
          return true;
        }
        if (c.passes[k] == Covering::kBackwardDue) {
          std::optional<v1::MicroBatch> gradient;
          if (!trainer_->IsLast() && !(gradient = inbox_.Take({false, now_step_, now_attempt_, i, c.rank}))) continue;
          EDGETRAIN_RETURN_IF_ERROR(BackwardPass(i, id, span, c.samples[k], gradient ? &*gradient : nullptr, c.rank));
          c.passes[k] = Covering::kDone;
          return true;
        }
      }
    }
    return false;
  }

  // What the covered shares' passes that may go wait for (a forward ahead
  // of its own, whose input came, would wake every wait for nothing).
  std::vector<StageInbox::Key> CoverKeys() const {
    std::vector<StageInbox::Key> keys;
    for (const Covered& c : covered_) {
      for (size_t k = 0; k < spans_.size(); ++k) {
        const int i = static_cast<int>(k);
        if (c.passes[k] == Covering::kForwardDue && !trainer_->IsFirst() && i < own_forwards_) {
          keys.emplace_back(true, now_step_, now_attempt_, i, c.rank);
        }
        if (c.passes[k] == Covering::kBackwardDue && !trainer_->IsLast()) {
          keys.emplace_back(false, now_step_, now_attempt_, i, c.rank);
        }
      }
    }
    return keys;
  }

  // Every pass of the covered shares run, their inputs waited for.
  Status FinishCovers() {
    for (;;) {
      EDGETRAIN_ASSIGN_OR_RETURN(const bool ran, CoverOnePass());
      if (ran) continue;
      if (std::all_of(covered_.begin(), covered_.end(), [](const Covered& c) { return c.Done(); })) {
        return Status::Ok();
      }
      EDGETRAIN_RETURN_IF_ERROR(Waited(CoverKeys()));
    }
  }

  // The group's exchange, not the device's work: this device's gradient,
  // with its covered shares', to the head, and the group's sum back. A
  // cover that comes while it waits (a device of its group lost after this
  // one's gradient went) is computed then, as work, its gradient sent alone.
  Status ExchangeGradients() {
    SendGradient(true);
    for (;;) {
      if (std::optional<v1::GroupGradient> summed = inbox_.TakeGradient(now_step_, now_attempt_)) {
        EDGETRAIN_ASSIGN_OR_RETURN(pending_sum_, FloatsOf(summed->values()));
        if (pending_sum_.size() != trainer_->Gradients().size()) {
          return FailedPreconditionError("the head summed a gradient of another size");
        }
        return Status::Ok();
      }
      const size_t covers = covered_.size();
      EDGETRAIN_RETURN_IF_ERROR(TakeCovers());
      if (covered_.size() > covers) {
        trainer_->ZeroGradients();  // its own went: the covered shares' go alone
        EDGETRAIN_RETURN_IF_ERROR(FinishCovers());
        SendGradient(false);
        continue;
      }
      // Waiting on its group, as a bubble is waiting on a neighbour: a
      // pipeline of one stage on several devices showed 0% waiting, its wall
      // time its compute, beside a plan of 73% exchanging (a user's trial).
      EDGETRAIN_RETURN_IF_ERROR(Waited({}, /*gradient=*/true));
    }
  }
  // Whether its own gradient goes to the head a micro-batch at a time
  // (spec.faultTolerance.gradientEachMicroBatch): in a group, until it
  // covers a lost device, whose shares then share the trainer's gradient
  // with its own and go with the rest of its own at the flush.
  bool SendsEachMicroBatch() const {
    return plan_.spec.fault_tolerance.gradient_each_micro_batch && group_.size() > 1 && covered_.empty();
  }
  // Its own gradient since the last part, as soon as its share of
  // micro-batch `i` is done, with that share's loss on the last stage: its
  // loss takes with it only the micro-batches in flight on it.
  void SendPart(int i, double loss_sum) {
    const double began = WorkClock();
    v1::WorkerMessage mine;
    v1::GroupGradient& g = *mine.mutable_gradient();
    g.set_step(now_step_);
    g.set_attempt(now_attempt_);
    g.set_values(FloatBytes(trainer_->Gradients()));
    g.set_more(true);
    g.add_micro_batches(i);
    g.set_loss_sum(loss_sum);
    trainer_->ZeroGradients();
    parts_sent_ = true;
    gradient_since_part_ = false;
    outbox_.Post(std::move(mine));
    not_work_s_ += WorkClock() - began;  // the exchange's
  }

  // The gradient the trainer holds, to the head: of its own shares
  // (`own`), and of those covered not sent yet. Nothing of it, where its
  // parts took every pass's.
  void SendGradient(bool own) {
    const double began = WorkClock();
    v1::WorkerMessage mine;
    v1::GroupGradient& g = *mine.mutable_gradient();
    g.set_step(now_step_);
    g.set_attempt(now_attempt_);
    if (!parts_sent_ || gradient_since_part_) g.set_values(FloatBytes(trainer_->Gradients()));
    gradient_since_part_ = false;
    if (own) g.add_shares_of(options_.rank);
    for (Covered& c : covered_) {
      if (c.in_gradient) continue;
      g.add_shares_of(c.rank);
      c.in_gradient = true;
    }
    if (own && g.shares_of_size() == 1) g.clear_shares_of();  // its own alone
    outbox_.Post(std::move(mine));
    not_work_s_ += WorkClock() - began;  // the exchange's
  }

  // The share of micro-batch `whole` of the group's member `member`: the
  // group's devices deal it by speed, as the head does.
  MicroBatchSpan ShareOf(MicroBatchSpan whole, size_t member) const {
    if (group_.size() == 1) return whole;
    const std::vector<int64_t> shares = ShareOut(whole.end - whole.begin, speeds_);
    int64_t begin = whole.begin;
    for (size_t j = 0; j < member; ++j) begin += shares[j];
    return {begin, begin + shares[member]};
  }

  // A pass, timed as compute, on the emulated device (its slowdown slept
  // after it).
  template <typename F>
  auto Computed(PassWorkload workload, F&& pass) -> decltype(pass()) {
    const EmulatedDevice::Mark began = device_.Begin();
    energy_.BeginCompute(began.at);
    passes_.Began(began.at);
    auto result = NotedIfTheModules(pass());
    Slowed(began, workload);
    const TimePoint done = clock_.Now();
    passes_.Ended(done);
    energy_.EndCompute(done);
    summary_.compute_s += ToSeconds(done - began.at);
    return result;
  }
  // Work begun at `began`, slowed as the emulated device computes it.
  void Slowed(const EmulatedDevice::Mark& began, PassWorkload workload) {
    const EmulatedPass emulated = device_.Finish(began, workload);
    // The emulated device's time for the pass, not this machine's waits for
    // a core, which a slower device sleeps through: the pace the head learns
    // is the device's. (The work clock measured the CPU time as it was,
    // crowding and all, which the device's time is not: this may be less
    // than none.) A device no slower than this machine has no sleep to hide
    // them in, and its pass took what it took on the clock: counted at its
    // own time alone (its like passes' uncrowded CPU), its pace was a
    // quarter too quick, and its re-plan after a loss was predicted 1.1-1.4
    // times what the survivors then trained (bench/recovery, 2026-12-03).
    if (device_.costs_on_cpu()) beyond_cpu_s_ += emulated.device_s - emulated.measured_s;
  }

  // What a step's work (StepDone.work_seconds) is measured on: the
  // computing thread's CPU clock, or else the clock's seconds.
  double WorkClock() const {
    return options_.thread_cpu_seconds ? options_.thread_cpu_seconds()
                                       : ToSeconds(clock_.Now().time_since_epoch());
  }

  // This device's own micro-batch `i` of the step in progress, forward (or
  // backward), once it is here: covered shares whose inputs come meanwhile
  // are computed while it waits.
  StatusOr<v1::MicroBatch> Awaited(bool forward, int i) {
    const StageInbox::Key key{forward, now_step_, now_attempt_, i, StageInbox::kOwn};
    for (;;) {
      if (std::optional<v1::MicroBatch> m = inbox_.Take(key)) return std::move(*m);
      EDGETRAIN_ASSIGN_OR_RETURN(const bool ran, CoverOnePass());
      if (ran) continue;
      std::vector<StageInbox::Key> keys = CoverKeys();
      keys.push_back(key);
      EDGETRAIN_RETURN_IF_ERROR(Waited(keys));
    }
  }

  // A wait for a micro-batch or a cover, or (`gradient`) for the group's
  // summed gradient: the pipeline's bubbles, and not the device's work.
  Status Waited(const std::vector<StageInbox::Key>& keys, bool gradient = false) {
    const TimePoint began = clock_.Now();
    const double work_began = WorkClock();
    Status waited = inbox_.AwaitAny(keys, now_step_, now_attempt_, gradient);
    summary_.idle_s += ToSeconds(clock_.Now() - began);
    not_work_s_ += WorkClock() - work_began;
    return waited;
  }

  void Send(bool forward, int i, int64_t n, std::span<const float> values, int share_of) {
    v1::WorkerMessage message;
    v1::MicroBatch* m = forward ? message.mutable_forward() : message.mutable_backward();
    m->set_step(now_step_);
    m->set_attempt(now_attempt_);
    m->set_micro_batch(i);
    m->set_samples(static_cast<int32_t>(n));
    m->set_values(FloatBytes(values));
    if (share_of != StageInbox::kOwn) m->set_share_of(share_of);
    summary_.activation_bytes_sent += static_cast<int64_t>(values.size() * sizeof(float));
    outbox_.Post(std::move(message));
  }

  // The state of its planned layers it held from a session before, as the
  // head that took it over asks: at the step committed then, or the step
  // after, its gradient applied at the first step's commit as any pending one.
  Status InstallHeld(int64_t at) {
    const HeldLayers* held = options_.held;
    const bool pending = held && !held->pending_gradient.empty();
    if (!held || held->step == 0 || at < held->step || at > held->step + (pending ? 1 : 0)) {
      return FailedPreconditionError("the head asked this stage to train on from its state at step " +
                                     std::to_string(at) + ", which it does not hold");
    }
    EDGETRAIN_RETURN_IF_ERROR(Install(held->state));
    if (at == held->step + 1) {
      if (held->pending_gradient.size() != trainer_->Gradients().size()) {
        return FailedPreconditionError("the gradient this stage held is of other layers");
      }
      pending_sum_ = held->pending_gradient;
      pending_step_ = at;
    }
    return Status::Ok();
  }

  // The state of layers [first, end) from the neighbour's replica this
  // device kept (this session's, or one before), its moments as float32.
  StatusOr<v1::StageState> HeldReplicaOf(int first, int end) {
    std::map<std::pair<int, int>, v1::StageReplica> kept = inbox_.KeptReplicas();
    if (options_.held) kept.insert(options_.held->replicas.begin(), options_.held->replicas.end());  // this session's first
    const auto found = kept.find({first, end});
    if (found == kept.end()) {
      return FailedPreconditionError("the head asked this device to take layers " + std::to_string(first) + "-" +
                                     std::to_string(end - 1) + " from a replica of them it does not keep");
    }
    v1::StageState state = found->second.state();
    EDGETRAIN_RETURN_IF_ERROR(MomentsToFloat32(state));
    return state;
  }

  // At the end of a session: what it holds of its planned layers, for a
  // head that starts behind it. Layers other than those planned (a lost
  // neighbour's taken, or layers moved) are not offered. The neighbour's
  // replica it keeps is this session's, or the one before.
  void KeepHeld() {
    HeldLayers* held = options_.held;
    if (!held) return;
    std::map<std::pair<int, int>, v1::StageReplica> replicas = inbox_.KeptReplicas();
    replicas.insert(std::make_move_iterator(held->replicas.begin()), std::make_move_iterator(held->replicas.end()));
    *held = HeldLayers{};
    held->replicas = std::move(replicas);
    const PipelineStagePlan& planned = plan_.pipeline->stages[static_cast<size_t>(
        *StageOfRank(*plan_.pipeline, options_.rank))];
    if (first_layer_ != planned.first_layer || end_layer_ != planned.end_layer) return;
    // The trainer's weights are those committed: a pending step moves them
    // only at its commit.
    held->step = pending_step_ ? *pending_step_ - 1 : step_;
    if (held->step == 0) return;
    held->state = State();
    if (pending_step_) {
      const std::span<const float> g = pending_sum_.empty() ? trainer_->Gradients() : pending_sum_;
      held->pending_gradient.assign(g.begin(), g.end());
    }
    held->job_elapsed_s = job_elapsed_s_ + ToSeconds(clock_.Now() - job_elapsed_at_);
    held->job_energy_j = job_energy_j_;
  }

  v1::StageState State() {
    v1::StageState s;
    s.set_parameters(FloatBytes(trainer_->Parameters()));
    const OptimizerState& o = optimizer_->state();
    s.set_first_moment(FloatBytes(o.first));
    s.set_second_moment(FloatBytes(o.second));
    for (int64_t steps : o.steps) s.add_row_steps(steps);
    return s;
  }

  Status Install(const v1::StageState& s) {
    EDGETRAIN_ASSIGN_OR_RETURN(const std::vector<float> params, FloatsOf(s.parameters()));
    std::span<float> mine = trainer_->Parameters();
    OptimizerState& o = optimizer_->mutable_state();
    EDGETRAIN_ASSIGN_OR_RETURN(std::vector<float> first, FloatsOf(s.first_moment()));
    EDGETRAIN_ASSIGN_OR_RETURN(std::vector<float> second, FloatsOf(s.second_moment()));
    if (params.size() != mine.size() || first.size() != o.first.size() || second.size() != o.second.size() ||
        static_cast<size_t>(s.row_steps_size()) != o.steps.size()) {
      return FailedPreconditionError("the head's state for layers " + std::to_string(first_layer_) + "-" +
                                     std::to_string(end_layer_ - 1) + " is of another model or optimizer");
    }
    std::copy(params.begin(), params.end(), mine.begin());
    o.first = std::move(first);
    o.second = std::move(second);
    o.steps.assign(s.row_steps().begin(), s.row_steps().end());
    return Status::Ok();
  }

  std::ostream& log_;
  const JobPlan& plan_;
  int index_;   // of the stages as they now are
  int stages_;
  int first_layer_;  // this device's layers: [first_layer_, end_layer_)
  int end_layer_;
  std::vector<int> group_;       // the devices of this stage, this one among them
  size_t member_ = 0;
  std::vector<double> speeds_;   // of the group's devices, which deal each micro-batch
  const StageOptions& options_;
  StageTrainer* trainer_;                 // the caller's, or owned_ once it took a lost stage's layers
  std::unique_ptr<StageTrainer> owned_;
  const Dataset& train_;
  Clock& clock_;
  EmulatedDevice device_;
  BatchOrder batches_;
  std::unique_ptr<RowLayout> layout_;      // one row a tensor, of trainer_'s
  std::unique_ptr<RowOptimizer> optimizer_;  // over *layout_
  StageInbox inbox_;
  StageOutbox outbox_;
  PassWatch passes_;  // the computing thread's passes, as its heartbeats tell them
  EnergyMeter energy_;                // thread-safe: the passes here, the sends on the sending thread
  EnergySplit reported_energy_;       // its split at the last StepDone
  int64_t step_ = 0;                  // the last step finished here
  TimePoint word_at_{};               // when the head's last word was taken off the inbox
  double work_at_word_ = 0;           // WorkClock() when the head's last word was taken
  double not_work_s_ = 0;             // of it since then, the waits for micro-batches and the group's exchange
  double beyond_cpu_s_ = 0;           // since then, its own passes' device time beyond their measured CPU (CPU clock
                                      // only; a crowded pass is costed at its like ones alone, so this may be < 0)
  std::optional<int64_t> pending_step_;  // finished, its weights not moved yet
  std::optional<Status> module_failed_;  // a pass the user's module raised on: the job's fault
  std::vector<float> pending_sum_;    // its group's summed gradient; empty: the trainer's own
  std::vector<int64_t> batch_;        // the batch of step batch_step_
  int64_t batch_step_ = -1;
  int64_t replicated_step_ = 0;       // the step of the last replica sent
  Duration replica_making_{};         // what the last replica took to copy and serialize here
  bool relay_owed_ = false;           // one the head relays on is due (Replicate)
  int micro_batches_ = plan_.pipeline->micro_batches;  // a step's, as the head last said
  std::map<int, int64_t> held_;  // samples of each micro-batch in flight here
  // The step in progress: its attempt, its micro-batches, the loss of the
  // shares computed here (the last stage's), and the lost devices' shares
  // this device covers.
  int64_t now_step_ = 0;
  int now_attempt_ = 0;
  std::vector<MicroBatchSpan> spans_;
  double loss_sum_ = 0;
  int own_forwards_ = 0;  // this device's own forwards of the step so far (1F1B's are in order)
  std::vector<Covered> covered_;
  bool parts_sent_ = false;           // this step's own gradient went in parts
  bool gradient_since_part_ = false;  // a backward ran since the last part went
  double job_elapsed_s_ = 0;     // the job's training time, as the head's welcome said it
  TimePoint job_elapsed_at_{};   // and when
  double job_energy_j_ = 0;      // the job's energy, as the head last said it with a step
  StageSummary summary_;
  bool stopped_by_head_ = false;  // Commands ended on the head's stop, not a signal
  StageSummary reported_;  // as it was at the last StepDone
};

}  // namespace

StatusOr<StageSummary> RunStage(const JobPlan& plan, const StageOptions& options, StageTrainer& trainer,
                                const Dataset& train, Clock& clock, std::ostream& log,
                                const std::atomic<bool>& cancel) {
  if (!plan.pipeline) return FailedPreconditionError("the plan has no pipeline for a stage to take part in");
  EDGETRAIN_ASSIGN_OR_RETURN(int index, StageOfRank(*plan.pipeline, options.rank));
  const TimePoint began = clock.Now();
  const TimePoint started = options.started.value_or(began);
  std::optional<TraceShaper> uplink;  // outlives the stream that shapes with it
  std::unique_ptr<CoordinatorStream> stream;
  v1::CoordinatorMessage first;
  // Until the head welcomes it: a head that is not up yet, or that asks a
  // device back from a loss to say hello again once it has let it go
  // (Unavailable), is tried again, for connect_timeout in all.
  for (;;) {
    while (!stream && !cancel.load()) {
      auto connected = options.head->Connect(options.connect_attempt);
      if (connected.ok()) {
        stream = std::move(*connected);
      } else if (connected.status().code() != StatusCode::kUnavailable) {
        return connected.status();  // refused its certificate: trying again gives the same
      } else if (clock.Now() - began > options.connect_timeout) {
        return DeadlineExceededError("the head at " + options.head->address() + " was unreachable for " +
                                     std::to_string(static_cast<int>(ToSeconds(options.connect_timeout))) + " s");
      }
    }
    if (!stream) return StageSummary{.stop_reason = "cancelled"};
    // The gate under the shaping: a link cut while a message is on the wire
    // holds what had not arrived, as a wall does, rather than let it land.
    if (options.gate) stream = std::make_unique<GatedCoordinatorStream>(std::move(stream), *options.gate);
    if (options.uplink) {
      uplink.emplace(*options.uplink, started);
      stream = std::make_unique<ShapedCoordinatorStream>(std::move(stream), *uplink, clock,
                                                         [&cancel] { return cancel.load(); });
    }
    v1::WorkerMessage hello;
    *hello.mutable_hello() = MakeHello(plan.job, plan.generation, options.rank);
    hello.mutable_hello()->set_heartbeat_seconds(ToSeconds(options.heartbeat));
    if (options.held && options.held->step > 0) {
      hello.mutable_hello()->set_model_clock(options.held->step);
      hello.mutable_hello()->set_stage_step_pending(!options.held->pending_gradient.empty());
      hello.mutable_hello()->set_job_elapsed_seconds(options.held->job_elapsed_s);
      hello.mutable_hello()->set_job_energy_joules(options.held->job_energy_j);
    }
    if (options.held) {
      for (const auto& [layers, replica] : options.held->replicas) {
        v1::KeptReplica& kept = *hello.mutable_hello()->add_kept_replicas();
        kept.set_first_layer(layers.first);
        kept.set_end_layer(layers.second);
        kept.set_step(replica.step());
      }
    }
    // A hello the stream did not take is not an answer: the stream's end,
    // read next, says why (a head that refused it, or one gone again).
    (void)stream->Send(hello);
    // The welcome may be long in coming (a device let go of is taken back
    // only between steps, after its back-off; the first gather waits up to
    // nodeLossGrace): a stop asked meanwhile (the agent's SIGTERM) closes the
    // stream, which ends the wait. It had gone unheard until the pod's grace
    // ran out and the kubelet killed it (found in review).
    std::mutex watched;
    ClockCondition heard(clock);
    bool answered = false;  // guarded by `watched`
    ClockThread watch = clock.StartThread("stage " + std::to_string(options.rank) + " awaiting its welcome", [&] {
      std::unique_lock lock(watched);
      while (!answered && !cancel.load()) heard.WaitFor(lock, options.cancel_recheck);
      if (!answered) stream->Close();
    });
    StatusOr<v1::CoordinatorMessage> answer = stream->Receive();
    // A replica part the head's relayer queued for this rank's earlier
    // session may come before this one's first answer: passed over, under
    // the watch, where the stage had failed for good, taking it for the
    // head's answer (found in review). Its next replica comes at its period.
    while (answer.ok() && answer->has_replica_part()) answer = stream->Receive();
    {
      std::lock_guard lock(watched);
      answered = true;
      heard.NotifyAll();
    }
    watch.Join();
    if (cancel.load()) return StageSummary{.stop_reason = "cancelled"};
    if (answer.ok()) {
      first = std::move(*answer);
      break;
    }
    if (answer.status().code() != StatusCode::kUnavailable || clock.Now() - began > options.connect_timeout ||
        cancel.load()) {
      return answer.status();
    }
    stream->Close();
    stream.reset();
    uplink.reset();
    clock.SleepFor(options.connect_attempt);
  }
  if (first.has_stop()) return StageSummary{.stop_reason = first.stop().reason()};
  if (!first.has_stage_welcome()) return FailedPreconditionError("the head did not answer with a stage welcome");
  Stage stage(plan, index, options, trainer, train, clock, cancel, started, log);
  EDGETRAIN_RETURN_IF_ERROR(stage.Welcome(first.stage_welcome()));
  if (options.on_welcome) options.on_welcome();
  // As planned: a head that has moved layers since gives it others next,
  // said then (TakeLayers).
  log << "stage " << index + 1 << " of " << plan.pipeline->stages.size() << " (rank " << options.rank << ", layers "
      << plan.pipeline->stages[index].first_layer << "-" << plan.pipeline->stages[index].end_layer - 1
      << ") joined the pipeline, as planned\n";
  return stage.Run(*stream, cancel);
}

StatusOr<StageSummary> RunStageRejoining(const JobPlan& plan, StageOptions options, const TrainerMaker& fresh_trainer,
                                         const Dataset& train, Clock& clock, std::ostream& log,
                                         const std::atomic<bool>& cancel, Duration head_return_grace) {
  if (!options.started) options.started = clock.Now();
  // What it held of its layers when a session ended, offered to the head next.
  HeldLayers held;
  if (!options.held) options.held = &held;
  bool welcomed = false;
  options.on_welcome = [&welcomed] { welcomed = true; };
  for (;;) {
    EDGETRAIN_ASSIGN_OR_RETURN(std::unique_ptr<StageTrainer> trainer, fresh_trainer());
    welcomed = false;
    StatusOr<StageSummary> summary = RunStage(plan, options, *trainer, train, clock, log, cancel);
    // Only a session the head took it into, ended by a broken stream.
    if (summary.ok() || summary.status().code() != StatusCode::kUnavailable || !welcomed || cancel.load() ||
        !plan.spec.fault_tolerance.replay) {
      return summary;
    }
    // Its head may be what went away: restarted in its pod, it is back
    // after the kubelet's back-off.
    options.connect_timeout = std::max(options.connect_timeout, head_return_grace);
    log << "stage agent " << options.rank << ": " << summary.status().message() << "; saying hello again, to rejoin\n";
  }
}

}  // namespace edgetrain::agent

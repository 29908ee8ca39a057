#include "agent/dp/worker.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <random>

#include "agent/data/sample_directory.h"
#include "agent/dp/injected_samples.h"
#include "agent/emulated_device.h"
#include "agent/transport/message_parts.h"
#include "agent/transport/shaped_stream.h"
#include "core/arrival_rate.h"
#include "core/batch_sizing.h"
#include "core/bandwidth_estimator.h"
#include "core/energy_model.h"
#include "core/finite_step.h"
#include "core/injection.h"
#include "core/model_copy.h"
#include "core/partition.h"
#include "core/push_composer.h"
#include "core/row_layout.h"
#include "core/sample_stream.h"
#include "core/step_time_model.h"
#include "core/trace_shaper.h"

namespace edgetrain::agent {
namespace {

// Smoothing of the iteration time that sizes a push.
constexpr double kPaceWeight = 0.2;

// The largest batch a worker may be given (spec.data.computeWeighted), and
// what injection tops it up with (spec.data.injection).
int64_t LargestBatch(const JobPlan& plan) {
  const int64_t batch = plan.spec.data.batch_size * (plan.spec.data.compute_weighted ? kMostWeightedBatches : 1);
  const auto& injection = plan.spec.data.injection;
  return batch + (injection ? InjectedPerBatch(batch, injection->batch_share) : 0);
}

const WorkerSlot* SlotOf(const JobPlan& plan, int rank) {
  return static_cast<size_t>(rank) < plan.workers.size() ? &plan.workers[rank] : nullptr;
}

class WorkerRun {
 public:
  WorkerRun(const JobPlan& plan, const WorkerOptions& options, Trainer& trainer, const Dataset& train, Clock& clock,
            std::ostream& log, const std::atomic<bool>& cancel)
      : plan_(plan), options_(options), trainer_(trainer), train_(train), clock_(clock), log_(log), cancel_(cancel),
        layout_(trainer.ParameterShapes(), plan.spec.sync.granularity),
        device_(clock, SlotOf(plan, options.rank) ? SlotOf(plan, options.rank)->Slowdown() : DeviceSlowdown{},
                options.thread_cpu_seconds),
        rounds_(plan.spec.sync.policy == SyncPolicy::kDeadline),
        gradient_(static_cast<size_t>(layout_.total_floats())), changed_(clock),
        pushes_(layout_, plan.spec.sync.compression, plan.spec.sync.policy == SyncPolicy::kRog,
                plan.spec.sync.row_order),
        copy_(layout_), batch_x_(static_cast<size_t>(LargestBatch(plan) * train.SampleSize())),
        batch_y_(static_cast<size_t>(LargestBatch(plan))),
        metrics_(options.metrics ? *options.metrics : own_metrics_, plan.job, options.rank),
        energy_(SlotOf(plan, options.rank) ? SlotOf(plan, options.rank)->power : PowerProfile{}, clock.Now()) {
    auto parts = PartitionSamples(train.labels, train.info.classes, plan.spec.parallelism.workers,
                                  plan.spec.data.partition, plan.spec.seed);
    mine_ = std::move(parts[options.rank]);
    const uint64_t seed = plan.spec.seed * 7919 + static_cast<uint64_t>(options.rank);
    rng_.seed(seed);
    std::shuffle(mine_.begin(), mine_.end(), rng_);
    if (const auto& stream = plan.spec.data.stream) {
      const int batch = plan.spec.data.batch_size;
      if (stream->directory) {
        // A real source: what arrives is what its files hold, indexed in it.
        directory_.emplace(*stream->directory + "/worker-" + std::to_string(options.rank), train.info,
                           FeatureRangeOf(plan.spec.data));
        samples_.emplace(StreamRate::Constant(0), std::vector<int64_t>{}, seed, StreamBufferCapacity(*stream, batch));
      } else {
        samples_.emplace(options.stream_rate
                             ? *options.stream_rate
                             : StreamRate::Constant(stream->rates_per_second.at(static_cast<size_t>(options.rank))),
                         mine_, seed, StreamBufferCapacity(*stream, batch));
      }
      min_batch_ = StreamMinBatch(*stream, batch);
      samples_began_ = clock_.Now();
    }
    if (const auto& injection = plan.spec.data.injection) {
      injected_.emplace(*injection, train.SampleSize(), train.info.classes, plan.spec.data.batch_size);
    }
    if (options.uplink) uplink_.emplace(*options.uplink, clock_.Now());
    uplink_peak_mbps_ = options.uplink ? std::min(options.link_peak_mbps, options.uplink->PeakMbps())
                                       : options.link_peak_mbps;
  }

  StatusOr<WorkerSummary> Run() {
    const Duration grace = plan_.spec.fault_tolerance.CoordinatorPatience();
    const std::string where = options_.coordinator->address();
    auto unreachable = [&] {
      return UnavailableError("the coordinator at " + where + " has been unreachable for " +
                              std::to_string(static_cast<int>(ToSeconds(grace))) + " s");
    };
    // (Re)connect, as long as the coordinator has been gone less than the grace.
    TimePoint gone_since = clock_.Now();
    bool said_waiting = false;  // that the coordinator does not answer: once a run
    while (!cancel_.load()) {
      if (clock_.Now() - gone_since > grace) return unreachable();
      std::unique_ptr<CoordinatorStream> stream;
      while (!stream && !cancel_.load()) {
        auto connected = options_.coordinator->Connect(options_.timings.connect_attempt);
        if (connected.ok()) {
          stream = std::move(*connected);
        } else if (connected.status().code() != StatusCode::kUnavailable) {
          return connected.status();  // refused its certificate: trying again gives the same
        } else if (clock_.Now() - gone_since > grace) {
          return unreachable();
        } else if (!said_waiting) {
          // A worker that never gets in (a plaintext one before a TLS
          // coordinator, a wrong address) said nothing until its grace ran
          // out (a new user's trial).
          said_waiting = true;
          log_ << "worker " << options_.rank << ": " << connected.status().message() << " yet; trying for up to "
               << static_cast<int>(ToSeconds(grace)) << " s\n";
        }
      }
      if (!stream) break;
      // Told to stop, a send waiting on a link that is down gives up.
      if (uplink_) {
        stream = std::make_unique<ShapedCoordinatorStream>(std::move(stream), *uplink_, clock_,
                                                           [this] { return cancel_.load(); });
      }
      if (options_.gate) stream = std::make_unique<GatedCoordinatorStream>(std::move(stream), *options_.gate);

      v1::WorkerMessage hello;
      *hello.mutable_hello() = MakeHello(plan_.job, plan_.generation, options_.rank);
      {
        // How far along our copy of the model is (as it would be sent, what
        // was staged in it): a coordinator behind its team trains on from the
        // copy furthest along (core/model_takeover.h).
        std::lock_guard lock(mu_);
        if (started_ != TimePoint{}) {
          copy_.ApplyStaged(trainer_.Parameters());
          hello.mutable_hello()->set_model_clock(copy_.LeastClock());
          hello.mutable_hello()->set_job_elapsed_seconds(job_elapsed_at_welcome_s_ +
                                                         ToSeconds(clock_.Now() - welcomed_at_));
          hello.mutable_hello()->set_job_energy_joules(job_energy_heard_j_);
        }
      }
      const TimePoint hello_sent = clock_.Now();
      // Told to stop while the handshake waits - on its link, on a team
      // still gathering (up to the node-loss grace), on a copy of the model
      // asked for - the stream is closed, which ends the wait: the worker
      // had heeded SIGTERM only once the wait was over (found in review).
      // (SIGTERM sets a flag no one is notified of: looked at every 20 ms.)
      std::mutex handshake_mu;
      ClockCondition handshake_over(clock_);
      bool handshaking = true;
      ClockThread watch = clock_.StartThread("worker handshake watch " + std::to_string(options_.rank), [&] {
        std::unique_lock lock(handshake_mu);
        while (!handshake_over.WaitFor(lock, std::chrono::milliseconds(20), [&] { return !handshaking; })) {
          if (cancel_.load()) {
            stream->Close();
            return;
          }
        }
      });
      // A hello the stream did not take is no answer: the stream's end,
      // read next, says why. A coordinator that refused this worker's
      // certificate at once had its refusal read as "hello not sent", which
      // was tried again (and refused, and counted, twice: the full suite's).
      (void)stream->Send(hello);
      auto first = stream->Receive();
      if (first.ok() && first->has_send_model()) {
        (void)stream->Send(CopyOfModel());
        first = stream->Receive();
      }
      {
        std::lock_guard lock(handshake_mu);
        handshaking = false;
        handshake_over.NotifyAll();
      }
      watch.Join();
      if (cancel_.load()) {
        stream->Close();
        break;
      }
      if (!first.ok()) {
        if (first.status().code() == StatusCode::kFailedPrecondition) return first.status();
        if (first.status().code() == StatusCode::kCancelled) {
          // The coordinator refuses streams once the job has ended: so do we.
          std::lock_guard lock(mu_);
          stop_ = true;
          stop_reason_ = first.status().message();
          break;
        }
        log_ << "worker " << options_.rank << ": " << first.status().message() << "; retrying\n";
        // A coordinator still behind our plan takes a while to catch up: ask
        // once an attempt, not ten times (a stream that merely broke is
        // asked again at once, as before).
        clock_.SleepFor(CoordinatorBehindPlan(first.status()) ? options_.timings.connect_attempt
                                                              : options_.timings.connect_attempt / 10);
        continue;
      }
      if (!first->has_welcome()) return FailedPreconditionError("the coordinator did not answer with a welcome");
      EDGETRAIN_RETURN_IF_ERROR(CheckShapes(first->welcome()));
      // Counted as every later message is: a connection's first, the whole
      // model, had been left out, where the coordinator counts it sent
      // (found in review).
      metrics_.AddReceived(static_cast<int64_t>(first->ByteSizeLong()), first->welcome().rows_size());
      {
        std::lock_guard lock(mu_);
        EDGETRAIN_RETURN_IF_ERROR(InstallLocked(first->welcome()));
        broken_ = false;
        const bool first_stream = started_ == TimePoint{};
        if (first_stream) {
          // Its time counts from here, as the job's does from the team's
          // start: loading data and waiting for teammates are not training.
          // Its energy, from the team's start, as its Hello's distance from
          // that start places it on this clock (a Hello is small: its own
          // transit is left in): a device the team started without (its
          // link out) waited that long, idle, for its link, and one whose
          // Welcome crawled through a dip waited for it, idle.
          started_ = clock_.Now();
          energy_.Restart(std::min(started_, hello_sent - FromSeconds(first->welcome().waited_seconds())));
        }
        // What it reports with its pushes is this stream's: the coordinator
        // adds up a worker's streams (core/team_accounts.h); the first's
        // from its energy's start.
        stream_ = {clock_.Now(), compute_s_, stall_s_, first_stream ? 0.0 : energy_.Split(clock_.Now()).total_j()};
        // Its stream's counts from those of the last report it sent: the
        // coordinator kept the earlier stream's last report it took, and
        // what arrived or was dropped since (an outage's drops, as its
        // buffer filled) goes in this stream's first. Counted from the
        // reconnection, they were lost (found in review).
        if (!first_stream) stream_.reported = last_sent_;
      }
      ClockThread receiver = clock_.StartThread("worker receiver " + std::to_string(options_.rank),
                                                [&] { ReceiveLoop(*stream); });
      ClockThread sender = clock_.StartThread("worker sender " + std::to_string(options_.rank),
                                              [&] { SendLoop(*stream); });
      Status computed = ComputeLoop();
      bool stopped;
      {
        std::lock_guard lock(mu_);
        broken_ = true;  // ends the sender if the loop ended for another reason
        stopped = stop_;
        changed_.NotifyAll();
      }
      // Closing first frees a sender blocked on a cut or dead link.
      stream->Close();
      sender.Join();
      receiver.Join();
      EDGETRAIN_RETURN_IF_ERROR(computed);
      // Told to stop (SIGTERM) is no coordinator lost: it said "reconnecting"
      // on its way out (a user's trial).
      if (stopped || cancel_.load()) break;
      gone_since = clock_.Now();
      ++summary_.reconnects;
      metrics_.AddRejoin();
      log_ << "worker " << options_.rank << ": lost the coordinator; reconnecting\n";
    }
    std::lock_guard lock(mu_);
    summary_.iterations = iteration_;
    summary_.wall_s = started_ == TimePoint{} ? 0 : ToSeconds(clock_.Now() - started_);
    summary_.compute_s = compute_s_;
    summary_.stall_s = stall_s_;
    // Counted from its first welcome, as its time is: one never let in (a
    // plaintext worker before a TLS coordinator) reported 150 J of waiting
    // beside 0 s (a user's trial).
    summary_.energy_joules = started_ == TimePoint{} ? 0 : energy_.Split(clock_.Now()).total_j();
    summary_.stop_reason = stop_ ? stop_reason_ : "cancelled";
    return summary_;
  }

 private:
  Status CheckShapes(const v1::Welcome& welcome) const {
    const auto shapes = trainer_.ParameterShapes();
    bool same = static_cast<size_t>(welcome.tensors_size()) == shapes.size();
    for (size_t t = 0; same && t < shapes.size(); ++t) {
      same = std::equal(shapes[t].begin(), shapes[t].end(), welcome.tensors(t).dims().begin(),
                        welcome.tensors(t).dims().end());
    }
    return same ? Status::Ok()
                : FailedPreconditionError("the coordinator's model has other tensor shapes than this worker's");
  }

  // With mu_ held: rows into the model copy's staging area.
  Status Stage(const google::protobuf::RepeatedPtrField<v1::Row>& rows) {
    for (const v1::Row& row : rows) {
      EDGETRAIN_RETURN_IF_ERROR(copy_.Stage(row.id(), row.clock(), row.delta(),
                                            static_cast<RowEncoding>(row.encoding()), row.scale(), row.values()));
    }
    return Status::Ok();
  }

  // With mu_ held, on the thread that received it: a Welcome's rows are staged
  // (updates after it stage on top), and the worker restarts where it says.
  // What it had computed and not sent belongs to a model that is gone; a step
  // in flight is discarded when it ends (its welcome is no longer current).
  Status InstallLocked(const v1::Welcome& welcome) {
    EDGETRAIN_RETURN_IF_ERROR(Stage(welcome.rows()));
    // A resumed job's stream from a folder: the files trained on before.
    if (directory_ && !welcome.stream_read_through().empty()) directory_->SkipThrough(welcome.stream_read_through());
    bound_ = welcome.staleness_bound();
    welcome_ = welcome.welcome();
    iteration_ = welcome.resume_after();
    pushed_iteration_ = iteration_;
    job_elapsed_at_welcome_s_ = welcome.job_elapsed_seconds();
    welcomed_at_ = clock_.Now();
    DropUnsentLocked(iteration_);
    return Status::Ok();
  }

  // With mu_ held: what was computed and not pushed is for a model the team
  // has left; its gradient and the samples and loss it would have reported
  // go, and pushes start again after `iteration`.
  void DropUnsentLocked(int64_t iteration) {
    pushes_.Restart(iteration);
    samples_since_push_ = 0;
    loss_sum_ = 0;
    loss_count_ = 0;
  }

  void ReceiveLoop(CoordinatorStream& stream) {
    for (;;) {
      auto message = stream.Receive();
      const TimePoint arrived = clock_.Now();  // not after waiting for the lock: that would bunch arrivals
      std::lock_guard lock(mu_);
      if (!message.ok()) {
        broken_ = true;
        changed_.NotifyAll();
        return;
      }
      if (message->has_stop() && message->stop().resumes()) {
        // The coordinator was interrupted, the job not over: whichever
        // coordinator resumes it is reached as a lost one is.
        log_ << "worker " << options_.rank << ": " << message->stop().reason() << "\n";
        broken_ = true;
        changed_.NotifyAll();
        return;
      }
      if (message->has_stop()) {
        stop_ = true;
        stop_reason_ = message->stop().reason();
        changed_.NotifyAll();
        return;
      }
      metrics_.AddReceived(static_cast<int64_t>(message->ByteSizeLong()),
                           message->has_update() ? message->update().rows_size() : message->welcome().rows_size());
      if (message->has_welcome()) {
        // Counted out and taken back: it restarts where the team is.
        metrics_.AddRejoin();
        if (Status installed = InstallLocked(message->welcome()); !installed.ok()) {
          log_ << "worker " << options_.rank << ": bad welcome: " << installed.message() << "\n";
          broken_ = true;
        } else {
          log_ << "worker " << options_.rank << ": resynchronised at iteration " << iteration_ << "\n";
        }
      } else if (message->has_update()) {
        const v1::Update& update = message->update();
        // An update's parts come back to back: their arrivals time the downlink.
        if (update.part() == 0) {
          downlink_meter_.Begin(arrived);
          if (update.uplink_mbps() > 0) measured_uplink_mbps_ = update.uplink_mbps();
          bound_ = update.staleness_bound();  // 0 while it is the only one active
          if (update.job_energy_joules() > 0) job_energy_heard_j_ = update.job_energy_joules();
        } else {
          downlink_meter_.Continue(arrived, static_cast<int64_t>(message->ByteSizeLong()));
        }
        if (Status staged = Stage(update.rows()); !staged.ok()) {
          log_ << "worker " << options_.rank << ": bad update: " << staged.message() << "\n";
          broken_ = true;
        }
        for (uint32_t r : update.demanded()) pushes_.Demand(r);
        if (update.has_injected() && injected_) {
          if (Status kept = injected_->Keep(update.injected()); !kept.ok()) {
            log_ << "worker " << options_.rank << ": " << kept.message() << ": left out\n";
          }
        }
        // Only when the job weighs batches: the buffers are sized for it.
        if (update.batch_size() > 0 && plan_.spec.data.compute_weighted) {
          batch_cap_ = std::min<int64_t>(update.batch_size(), kMostWeightedBatches * plan_.spec.data.batch_size);
        }
        energy_.AddReceive(update.transfer_seconds());
        // An update comes in many parts; the compute loop waits only for the
        // rows its next iteration needs, so it is woken once they are here (its
        // wait times out anyway, and applies whatever is staged).
        if (!broken_ && !copy_.ReadyOnceAppliedFor(iteration_ + 1, bound_)) continue;
      }
      changed_.NotifyAll();
    }
  }

  Status ComputeLoop() {
    int64_t computing_welcome = 0;
    int64_t used_iteration = 0;
    int64_t cap = 0;  // this iteration's batch at most
    const int64_t batch = plan_.spec.data.batch_size;
    const int64_t sample = train_.SampleSize();
    for (;;) {
      // A stream's samples are waited for first: the model is then taken as
      // fresh as it is once they are here, not as it was before the wait.
      std::vector<int64_t> taken;
      if (samples_) {
        taken = TakeArrived();
        if (taken.empty()) return Status::Ok();  // the team stopped meanwhile
      }
      {
        std::unique_lock lock(mu_);
        const TimePoint waiting = clock_.Now();
        stalled_since_ = waiting;
        // The stall counter grows as the wait goes on, each recheck, not in one
        // lump when it ends: a rate over a scrape's window read 1.36-1.66, more
        // than all of the time, after a wait of seconds (a new user's trial).
        TimePoint credited = waiting;
        auto credit_stall = [&] {
          const TimePoint now = clock_.Now();
          metrics_.AddStall(ToSeconds(now - credited));
          credited = now;
          if (samples_) PublishStreamLocked();  // its samples go on arriving meanwhile
        };
        for (;;) {
          credit_stall();
          copy_.ApplyStaged(trainer_.Parameters());
          if (stop_ || broken_ || cancel_.load()) {
            credit_stall();
            stall_s_ += ToSeconds(credited - waiting);  // the metric's figure, to the same instant
            stalled_since_.reset();
            return Status::Ok();
          }
          if (copy_.ReadyFor(iteration_ + 1, bound_)) {
            if (!rounds_ || copy_.LeastClock() <= iteration_) break;
            // Policy deadline: the team closed rounds without this worker.
            // Its next gradient is for the round after its model's, and one
            // computed for an earlier round and not yet pushed is late for
            // every row: dropped here rather than sent. What is left when all
            // went (compression's error) is kept, and no row is owed for the
            // rounds skipped.
            if (pushed_iteration_ < iteration_) {
              DropUnsentLocked(copy_.LeastClock());
            } else {
              pushes_.SkipTo(copy_.LeastClock());
            }
            iteration_ = copy_.LeastClock();
            pushed_iteration_ = iteration_;
            break;
          }
          changed_.WaitFor(lock, options_.timings.stall_recheck);
        }
        stalled_since_.reset();
        credit_stall();
        stall_s_ += ToSeconds(credited - waiting);
        // The rows' clocks as this iteration uses them, for the staleness
        // histogram once the lock is released.
        used_clocks_.assign(copy_.clocks().begin(), copy_.clocks().end());
        used_iteration = iteration_;
        computing_welcome = welcome_;
        cap = batch_cap_;
      }
      // How stale each row is as this iteration uses it (the bound: at most S),
      // observed outside the lock, as one observation.
      metrics_.ObserveRowStaleness(used_iteration, used_clocks_);
      int64_t n = cap;
      if (samples_) {
        n = static_cast<int64_t>(taken.size());
        for (int64_t k = 0; k < n; ++k) CopySample(taken[k], k, sample);
      } else {
        // A batch from this worker's own partition, reshuffled on every pass.
        for (int64_t k = 0; k < cap; ++k) {
          if (cursor_ == mine_.size()) {
            std::shuffle(mine_.begin(), mine_.end(), rng_);
            cursor_ = 0;
          }
          CopySample(mine_[cursor_++], k, sample);
        }
      }
      if (injected_) n += TopUp(n);
      const EmulatedDevice::Mark began = device_.Begin();
      energy_.BeginCompute(began.at);
      EDGETRAIN_ASSIGN_OR_RETURN(double loss,
                                 trainer_.ComputeGradient(batch_x_.data(), batch_y_.data(), n, gradient_));
      // Weighted by its samples (ScaDLES): the batch's mean gradient counts
      // n / batch of a full batch's, so that the coordinator's mean over
      // pushes weighs each by its samples and steps as on the team's
      // aggregate batch (docs/streams.md).
      if (n != batch) {
        const float weight = static_cast<float>(n) / static_cast<float>(batch);
        for (float& g : gradient_) g *= weight;
      }
      // An emulated slower device: the step takes `slowdown` times as long.
      device_.Finish(began, {PassWork::kStep, n});
      const TimePoint done = clock_.Now();
      const Duration took = done - began.at;
      energy_.EndCompute(done);
      if (last_done_ != TimePoint{}) metrics_.ObserveIteration(ToSeconds(done - last_done_));
      last_done_ = done;
      metrics_.AddSamples(n);
      metrics_.SetLoss(loss);
      std::lock_guard lock(mu_);
      if (welcome_ != computing_welcome) continue;  // resynchronised meanwhile: a stale step
      // Not pushed: the coordinator would refuse its rows as not finite until
      // it turned the worker away, and every worker of a team whose model
      // computes NaN ended "lost the coordinator", the run exit 1 saying only
      // that every worker exited (a new user's trial). A job of one says the
      // same, at the same step. (A stale step's loss, computed on a model
      // since replaced, is dropped above with it.)
      EDGETRAIN_RETURN_IF_ERROR(FiniteStep(used_iteration + 1, loss));
      pushes_.Accumulate(gradient_);
      ++iteration_;
      samples_since_push_ += n;
      if (samples_) {
        const StreamCounts c = samples_->counts();
        taken_into_pushes_ = c.arrived - c.backlog;
      }
      summary_.samples += n;
      loss_sum_ += loss;
      ++loss_count_;
      compute_s_ += ToSeconds(took);
      pace_s_ = pace_s_ <= 0 ? ToSeconds(took) : pace_s_ + kPaceWeight * (ToSeconds(took) - pace_s_);
      step_time_.Observe(n, ToSeconds(took));
      changed_.NotifyAll();
    }
  }

  void CopySample(int64_t i, int64_t k, int64_t sample) {
    // A directory's samples are indexed in what was read from it.
    if (directory_) return directory_->CopySample(i, batch_x_.data() + k * sample, batch_y_[k]);
    train_.CopySamples(i, 1, batch_x_.data() + k * sample);
    batch_y_[k] = train_.labels[i];
  }

  // With mu_ held (by `lock`): the files that appeared in the stream's
  // directory join the buffer. They are read with the lock released: the
  // directory is this compute thread's alone, and the receiver and pusher
  // need the lock meanwhile. With no rate to say when samples come, the wait
  // between looks is the stall recheck.
  void LookInDirectory(std::unique_lock<std::mutex>& lock) {
    // Only as many as the buffer has room for: the rest wait on disk. But a
    // buffer of fewer samples than the least batch it trains on
    // (StreamMinBatch) takes a file that does not fit beside them, its oldest
    // samples then dropped (counted): its own make no batch, and the stream
    // had stood still for the whole budget, files of 256 rows waiting unread
    // beside 2 samples in a buffer of 256 (a user's trial).
    const int64_t backlog = samples_->counts().backlog;
    const int64_t room = backlog < min_batch_ ? samples_->capacity() : samples_->capacity() - backlog;
    // The samples the buffer has passed are not asked for again: the last
    // batch taken was copied before this look, on this thread. Samples arrive
    // in the buffer in the order read, so its oldest is the first still wanted
    // (an empty buffer wants none).
    const int64_t wanted = samples_->Oldest().value_or(std::numeric_limits<int64_t>::max());
    lock.unlock();
    directory_->ForgetBefore(wanted);
    const SampleDirectory::Scan scan = directory_->Look(room, samples_->capacity());
    lock.lock();
    // Said when it starts and when its reason changes, not at every look.
    if (scan.unreadable != unreadable_folder_ && !scan.unreadable.empty()) {
      log_ << "worker " << options_.rank << ": its stream's folder cannot be read: " << scan.unreadable
           << "; it looks again and trains on what comes once it can\n";
    }
    unreadable_folder_ = scan.unreadable;
    if (scan.skipped_as_read > 0) {
      log_ << "worker " << options_.rank << ": resumed: " << scan.skipped_as_read
           << " files of its stream's folder, named up to where the run it resumes had read and written before it "
              "resumed, are taken as read; files written since are read whatever their names (docs/streams.md)\n";
    }
    for (const std::string& refused : scan.refused) {
      ++refused_files_;
      metrics_.AddRefusedStreamFile();
      last_refused_ = refused;
      log_ << "worker " << options_.rank << ": a file of its stream was left out: " << refused << "\n";
    }
    for (const auto& [file, after] : scan.out_of_order) {
      log_ << "worker " << options_.rank << ": its stream's file " << file << " came after " << after
           << ", a later name: it is read, but a run resumed from a checkpoint goes by name (docs/streams.md), and "
           << "reads " << after << " again, or, had " << file << " come while the job was stopped, skips it\n";
    }
    for (const std::string& cut : scan.cut_short) {
      log_ << "worker " << options_.rank << ": a line of its stream was left out, the rows before it read: " << cut
           << "\n";
    }
    for (const auto& [file, rows] : scan.oversized) {
      log_ << "worker " << options_.rank << ": its stream's file " << file << " holds " << rows
           << " rows, more than its buffer of " << samples_->capacity() << ": its first "
           << rows - samples_->capacity() << " are dropped as it arrives (spec.data.stream.bufferCapacity, or smaller "
           << "files)\n";
    }
    samples_->Arrive(scan.first, scan.samples);
  }

  // Tops up the batch of `n` with injected samples after its own: how many.
  int64_t TopUp(int64_t n) {
    std::lock_guard lock(mu_);
    const int64_t m = injected_->TopUp(n, batch_x_.data(), batch_y_.data());
    if (m > 0) metrics_.AddInjected(m);
    return m;
  }

  // The next batch from the stream: waits on the clock until a batch's
  // minimum has arrived, as long as the team trains, and takes what has, up
  // to this worker's batch; nothing when the team stopped meanwhile. The
  // wait is the stream's, not the team's: counted apart from the stall.
  std::vector<int64_t> TakeArrived() {
    const TimePoint began = clock_.Now();
    std::unique_lock lock(mu_);
    data_waiting_since_ = began;
    // The wait's counter grows as the wait goes on, as the stall's does: a
    // stream that ran dry read 0% waiting until its wait ended, then a lump.
    TimePoint credited = began;
    auto credit_wait = [&] {
      const TimePoint at = clock_.Now();
      metrics_.AddDataWait(ToSeconds(at - credited));
      credited = at;
    };
    bool ready = false;
    for (;;) {
      const double now = ToSeconds(clock_.Now() - samples_began_);
      samples_->CatchUp(now);
      if (directory_) LookInDirectory(lock);
      PublishStreamLocked();
      credit_wait();
      if ((ready = samples_->counts().backlog >= min_batch_) || stop_ || broken_ || cancel_.load()) break;
      // At least a millisecond: a wait of nothing would spin at one instant of
      // a simulated clock. Never, as for a directory, which says nothing of
      // when its files come: the stall recheck, between looks.
      const double due = samples_->WhenBuffered(min_batch_) - now;
      changed_.WaitFor(lock, std::isfinite(due)
                                 ? std::min(options_.timings.stall_recheck, FromSeconds(std::max(due, 1e-3)))
                                 : options_.timings.stall_recheck);
    }
    credit_wait();
    data_waiting_since_.reset();
    data_wait_s_ += ToSeconds(credited - began);  // the metric's figure, to the same instant
    std::vector<int64_t> taken;
    if (ready && !stop_ && !broken_ && !cancel_.load()) taken = samples_->Take(batch_cap_);
    PublishStreamLocked();
    return taken;
  }

  // With mu_ held: the stream's counts over this worker's life, as of now, as
  // the metrics are (PublishStreamLocked): a worker held by its team pushes
  // only its keep-alives, and the counts it last drew stood still in them,
  // /progress and the summary showing 8 of a stream's 894 arrivals and none
  // of its 630 drops (a user's trial).
  v1::StreamStats StreamNowLocked() const {
    const StreamCounts c = samples_->CountsAt(ToSeconds(clock_.Now() - samples_began_));
    v1::StreamStats stream;
    stream.set_arrived(c.arrived);
    stream.set_dropped(c.dropped);
    stream.set_backlog(c.backlog);
    stream.set_refused_files(refused_files_);
    stream.set_last_refused(last_refused_);
    if (directory_) {
      // Through the samples of batches in this push or before, not those
      // taken into a batch in hand: at a Ctrl-C those were never trained
      // on, and a resumed run skipped their files (a new user's trial).
      const SampleDirectory::Through through = directory_->ReadThrough(taken_into_pushes_);
      stream.set_read_through(through.file);
      stream.set_arrived_for_good(through.samples);
    } else {
      stream.set_arrived_for_good(c.arrived);  // an emulated stream's arrive once
    }
    // A wait still going on counts too: a worker whose source ran dry
    // would otherwise report none.
    stream.set_wait_seconds(data_wait_s_ +
                            (data_waiting_since_ ? ToSeconds(clock_.Now() - *data_waiting_since_) : 0.0));
    return stream;
  }

  // With mu_ held: the stream's gauges and counters as they are now, the
  // samples that arrived since the worker last looked counted but not drawn:
  // while it waited on the team they stood still, the backlog read 0 at
  // every scrape, and then jumped.
  void PublishStreamLocked() {
    const StreamCounts c = samples_->CountsAt(ToSeconds(clock_.Now() - samples_began_));
    metrics_.SetStream(c.arrived, c.dropped, c.backlog);
  }

  // With mu_ held: what sizes a push. The coordinator's measure of where our
  // pushes arrive, once it has one; until then what our sends took, which is
  // right only when the link is shaped in our own transport (a kernel-shaped
  // link accepts bytes into its queue faster than it carries them).
  double UplinkMbps() const {
    return measured_uplink_mbps_ > 0 ? measured_uplink_mbps_ : uplink_estimate_.Mbps();
  }
  // With mu_ held: what is reported of the uplink (progress, metrics): 0 until
  // something was measured, then the lower of the two measures, each too high
  // in its own case — what our sends took (above), and where the coordinator
  // saw our pushes arrive (a reader that falls behind sees parts that queued
  // up arrive at once) — and never more than the emulated link carries.
  double MeasuredUplinkMbps() const {
    const bool sent = uplink_estimate_.observations() > 0, arrived = measured_uplink_mbps_ > 0;
    if (!sent && !arrived) return 0;
    const double lower = sent && arrived ? std::min(measured_uplink_mbps_, uplink_estimate_.Mbps())
                         : sent          ? uplink_estimate_.Mbps()
                                         : measured_uplink_mbps_;
    return std::min(lower, uplink_peak_mbps_);
  }

  // Our copy of the model, every row float32 with its clock: what a
  // coordinator that starts behind its team asks for (SendModel).
  v1::WorkerMessage CopyOfModel() {
    std::lock_guard lock(mu_);
    copy_.ApplyStaged(trainer_.Parameters());
    const std::span<const float> params = trainer_.Parameters();
    v1::WorkerMessage message;
    v1::ModelCopy* model = message.mutable_model();
    for (size_t r = 0; r < layout_.size(); ++r) {
      const RowSpan& span = layout_.row(r);
      v1::Row* row = model->add_rows();
      row->set_id(static_cast<uint32_t>(r));
      row->set_clock(copy_.clocks()[r]);
      EncodedRow encoded = EncodeRow(params.subspan(static_cast<size_t>(span.offset), static_cast<size_t>(span.length)),
                                     RowEncoding::kFloat32);
      row->set_encoding(static_cast<v1::Encoding>(encoded.encoding));
      row->set_scale(encoded.scale);
      row->set_values(std::move(encoded.bytes));
    }
    log_ << "worker " << options_.rank << ": sending the coordinator its copy of the model, at iteration "
         << copy_.LeastClock() << "\n";
    return message;
  }

  // With mu_ held: the push for everything computed up to iteration_.
  v1::WorkerMessage ComposePush() {
    composed_ = last_sent_;
    const int64_t t = iteration_;
    const double uplink = UplinkMbps();
    // What the uplink carries during one step's computation: a push is through
    // by the time the next is ready.
    const auto budget = static_cast<int64_t>(uplink * 1e6 / 8 * pace_s_);
    v1::WorkerMessage message;
    v1::Push* push = message.mutable_push();
    push->set_iteration(t);
    push->set_welcome(welcome_);
    for (OutgoingRow& out : pushes_.Compose(t, bound_, budget)) {
      v1::Row* row = push->add_rows();
      row->set_id(static_cast<uint32_t>(out.id));
      row->set_clock(t);
      row->set_encoding(static_cast<v1::Encoding>(out.encoded.encoding));
      row->set_scale(out.encoded.scale);
      row->set_values(std::move(out.encoded.bytes));
    }
    v1::WorkerStats* stats = push->mutable_stats();
    // The most it takes a batch now: what the coordinator dealt it under
    // computeWeighted, the job's batchSize otherwise.
    stats->set_batch_size(static_cast<int32_t>(batch_cap_));
    stats->set_samples(samples_since_push_);
    stats->set_loss_sum(loss_sum_);
    stats->set_loss_count(loss_count_);
    stats->set_uplink_mbps(MeasuredUplinkMbps());
    stats->set_downlink_mbps(std::min(downlink_meter_.Mbps(), uplink_peak_mbps_));
    stats->set_compute_seconds(compute_s_ - stream_.compute_s);
    // A stall still going on counts too: a worker waiting the whole time
    // would otherwise report none.
    const double stalling = stalled_since_ ? ToSeconds(clock_.Now() - *stalled_since_) : 0.0;
    stats->set_stall_seconds(stall_s_ + stalling - stream_.stall_s);
    stats->set_wall_seconds(ToSeconds(clock_.Now() - stream_.began));
    stats->set_step_seconds(pace_s_);
    const StepTime cost = step_time_.cost();
    stats->set_sample_seconds(cost.sample_seconds);
    stats->set_step_fixed_seconds(cost.fixed_seconds);
    if (const EncodingChoice& choice = pushes_.encoding(); choice.adaptive()) {
      v1::CompressionStats* c = stats->mutable_compression();
      c->set_encoding(static_cast<v1::Encoding>(choice.encoding()));
      c->set_topk_kept_norm(std::max(0.0, choice.kept_norm_share()));
      c->set_topk_pushes(choice.topk_pushes());
      c->set_pushes(choice.pushes());
      metrics_.SetPushEncoding(choice.encoding() == RowEncoding::kTopK, choice.kept_norm_share());
    }
    if (injected_) {
      stats->set_injection_wanted(static_cast<int32_t>(injected_->Wanted()));
      stats->set_injected_samples(injected_->used() - stream_.reported.injected);
      composed_.injected = injected_->used();
    }
    if (samples_) {
      // Counted since the stream opened, as its time is; the arrivals from
      // what had arrived for good as the last stream's last report said, so
      // that samples still in its buffer then are counted on the new stream
      // (the coordinator carried the earlier stream's for good alone).
      v1::StreamStats now = StreamNowLocked();
      composed_.counts = now;
      const v1::StreamStats& then = stream_.reported.counts;
      now.set_arrived(now.arrived() - then.arrived_for_good());
      now.set_arrived_for_good(now.arrived_for_good() - then.arrived_for_good());
      now.set_dropped(now.dropped() - then.dropped());
      now.set_refused_files(now.refused_files() - then.refused_files());
      now.set_wait_seconds(now.wait_seconds() - then.wait_seconds());
      *stats->mutable_stream() = std::move(now);
    }
    const EnergySplit e = energy_.Split(clock_.Now());
    stats->set_energy_joules(e.total_j() - stream_.energy_j);
    metrics_.SetEnergy(EnergyState::kCompute, e.compute_j);
    metrics_.SetEnergy(EnergyState::kCommunicate, e.communicate_j);
    metrics_.SetEnergy(EnergyState::kIdle, e.idle_j);
    samples_since_push_ = 0;
    loss_sum_ = 0;
    loss_count_ = 0;
    pushed_iteration_ = t;
    summary_.rows_sent += push->rows_size();
    return message;
  }

  // A push cut into messages of about `part_bytes` (PartBytes), so that even on
  // a slow link the coordinator hears from us several times a second and does
  // not take a slow link for a dead one; the first carries the stats.
  static std::vector<v1::WorkerMessage> Cut(v1::WorkerMessage whole, int64_t part_bytes) {
    const v1::Push& push = whole.push();
    return CutIntoParts<v1::WorkerMessage>(
        *whole.mutable_push()->mutable_rows(), part_bytes,
        [&](int part) {
          v1::WorkerMessage m;
          v1::Push* p = m.mutable_push();
          p->set_iteration(push.iteration());
          p->set_welcome(push.welcome());
          if (part == 0) *p->mutable_stats() = push.stats();
          return m;
        },
        [](v1::WorkerMessage& m) { return m.mutable_push(); });
  }

  void SendLoop(CoordinatorStream& stream) {
    for (;;) {
      std::vector<v1::WorkerMessage> parts;
      {
        std::unique_lock lock(mu_);
        changed_.WaitFor(lock, options_.timings.idle_push,
                         [&] { return stop_ || broken_ || iteration_ > pushed_iteration_; });
        if (stop_ || broken_) return;
        v1::WorkerMessage push = ComposePush();
        const int64_t part_bytes = PartBytes(static_cast<int64_t>(push.ByteSizeLong()), UplinkMbps());
        parts = Cut(std::move(push), part_bytes);
      }
      int64_t bytes = 0, rows = 0;
      const TimePoint began = clock_.Now();
      energy_.BeginSend(began);
      bool sent = true;
      size_t parts_sent = 0;
      for (const auto& part : parts) {
        bytes += static_cast<int64_t>(part.ByteSizeLong());
        rows += part.push().rows_size();
        if (!(sent = stream.Send(part).ok())) break;
        ++parts_sent;
      }
      const TimePoint end = clock_.Now();
      energy_.EndSend(end);
      metrics_.AddSent(bytes, rows);
      std::lock_guard lock(mu_);
      // The report goes in the first part: sent, it is what the next stream
      // counts from; not sent, its counts stay the next stream's to report
      // (taken as sent when composed, they were on neither: found in review).
      if (parts_sent > 0) last_sent_ = composed_;
      if (!sent) {
        broken_ = true;
        changed_.NotifyAll();
        return;
      }
      if (bytes >= kLeastTimedBytes) uplink_estimate_.Observe(bytes, end - began);
      metrics_.SetUplinkMbps(MeasuredUplinkMbps());
      summary_.bytes_sent += bytes;
    }
  }

  const JobPlan& plan_;
  const WorkerOptions& options_;
  Trainer& trainer_;
  const Dataset& train_;
  Clock& clock_;
  std::ostream& log_;
  const std::atomic<bool>& cancel_;
  const RowLayout layout_;
  EmulatedDevice device_;
  const bool rounds_;  // policy deadline: rounds may close without this worker
  std::optional<TraceShaper> uplink_;
  // What its link carries at most, when known (both ways follow the same trace).
  double uplink_peak_mbps_ = std::numeric_limits<double>::infinity();
  std::vector<int64_t> mine_;  // this worker's partition, in its current order
  size_t cursor_ = 0;
  std::mt19937_64 rng_;
  // spec.data.stream: its samples arrive so instead (guarded by mu_), and a
  // batch is what has arrived, at least min_batch_ and at most a batch.
  std::optional<SampleStream> samples_;
  std::optional<SampleDirectory> directory_;  // a stream's real source, when it has one
  int64_t refused_files_ = 0;                 // of directory_, left out for good
  // The stream's samples taken from its buffer up to the end of the last
  // batch whose gradient went into pushes_: what a push's readThrough counts.
  int64_t taken_into_pushes_ = 0;
  std::string last_refused_;
  std::string unreadable_folder_;  // why its stream's folder could not be listed at the last look; empty: it could
  int64_t min_batch_ = 0;
  TimePoint samples_began_{};
  double data_wait_s_ = 0;  // guarded by mu_
  std::optional<TimePoint> data_waiting_since_;  // guarded by mu_: a wait for samples going on
  // spec.data.injection: samples of labels its part lacks, from the
  // coordinator, for its batches (guarded by mu_).
  std::optional<InjectedSamples> injected_;
  TimePoint started_{};
  std::vector<float> gradient_;  // the compute loop's only
  TimePoint last_done_{};        // the compute loop's only

  std::mutex mu_;
  ClockCondition changed_;  // notified under mu_
  PushComposer pushes_;     // guarded by mu_, as is everything below
  ModelCopy copy_;
  int64_t welcome_ = 0;     // the Welcome the model descends from
  std::vector<float> batch_x_;
  std::vector<int64_t> batch_y_;
  MetricsRegistry own_metrics_;
  WorkerMetrics metrics_;   // thread-safe; bound once
  // The compute loop's own: row clocks an iteration used, and their staleness.
  std::vector<int64_t> used_clocks_;
  EnergyMeter energy_;      // thread-safe
  int bound_ = 0;
  int64_t iteration_ = 0;
  // The job's training time as the last Welcome said it, and when that came:
  // what a Hello offers a coordinator placed anew with this copy of the model.
  double job_elapsed_at_welcome_s_ = 0;
  TimePoint welcomed_at_{};
  // The job's energy as the coordinator last said it with an update; guarded
  // by mu_. Offered to a coordinator placed anew with the model's copy.
  double job_energy_heard_j_ = 0;
  int64_t pushed_iteration_ = 0;
  int64_t samples_since_push_ = 0;
  double loss_sum_ = 0;
  int64_t loss_count_ = 0;
  double compute_s_ = 0;
  double stall_s_ = 0;
  std::optional<TimePoint> stalled_since_;  // while the compute loop waits for rows
  // A stream's counts and injected samples over the worker's life, as a report gave them.
  struct Reported {
    v1::StreamStats counts = {};
    int64_t injected = 0;
  };
  struct StreamStart {
    TimePoint began{};
    double compute_s = 0, stall_s = 0, energy_j = 0;
    Reported reported = {};  // what this stream's reports count from
  } stream_;  // the totals when the current stream opened
  Reported last_sent_;  // in the last report sent
  Reported composed_;   // in the push being sent (ComposePush), last_sent_ once its first part is
  double pace_s_ = 0;  // EWMA of a step's compute time
  StepTimeModel step_time_;  // a step's fixed and per-sample cost: what compute-weighted batches deal by
  // This worker's batch: the job's, or what compute weighting gave it.
  int64_t batch_cap_ = plan_.spec.data.batch_size;
  BandwidthEstimator uplink_estimate_;
  double measured_uplink_mbps_ = 0;
  ArrivalRateMeter downlink_meter_;
  bool stop_ = false;
  bool broken_ = false;
  std::string stop_reason_;
  WorkerSummary summary_;
};

}  // namespace

StatusOr<WorkerSummary> RunWorker(const JobPlan& plan, const WorkerOptions& options, Trainer& trainer,
                                  const Dataset& train, Clock& clock, std::ostream& log,
                                  const std::atomic<bool>& cancel) {
  if (options.rank < 0 || options.rank >= plan.spec.parallelism.workers) {
    return InvalidArgumentError("rank " + std::to_string(options.rank) + " is outside the job's workers");
  }
  if (!options.coordinator) return InvalidArgumentError("a worker needs its coordinator's connector");
  WorkerRun run(plan, options, trainer, train, clock, log, cancel);
  return run.Run();
}

}  // namespace edgetrain::agent

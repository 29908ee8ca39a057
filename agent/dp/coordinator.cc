#include "agent/dp/coordinator.h"

#include <algorithm>
#include <limits>
#include <filesystem>
#include <optional>
#include <ostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "agent/storage/atomic_file.h"
#include "agent/storage/evaluation_log.h"
#include "agent/transport/message_parts.h"
#include "agent/transport/shaped_stream.h"
#include "core/arrival_rate.h"
#include "core/budget.h"
#include "core/row_codec.h"
#include "core/row_scheduler.h"

namespace edgetrain::agent {
namespace {

constexpr Duration kTick = std::chrono::milliseconds(20);
// Until a worker's pace is learned, its updates are budgeted for this long.
constexpr Duration kAssumedIteration = std::chrono::milliseconds(100);
// A job whose workers never come is a failed job, not a hung one.
constexpr Duration kFirstWorkerTimeout = std::chrono::seconds(120);
// Workers get this long to hear Stop; one behind a dead link is cut off by the
// server's shutdown instead.
// Messages smaller than this say more about latency and the shaper's burst than
// about bandwidth; they are not measured.
constexpr int64_t kMinMeasuredBytes = 32 * 1024;
constexpr Duration kStopGrace = std::chrono::seconds(3);

int DefaultStalenessBound(const SyncSpec& sync) {
  if (sync.policy == SyncPolicy::kBsp) return 0;
  return sync.staleness_bound.value_or(4);  // the CRD documents 4 as the default
}

std::string CheckpointPath(const JobPlan& plan) { return plan.output_dir + "/checkpoint.bin"; }

}  // namespace

struct Coordinator::Session {
  uint64_t epoch = 0;        // bumped by every new stream from this rank
  bool connected = false;
  bool counted_out = false;  // its deadline passed; back on its next push
  bool resync = false;       // send it a Welcome next
  int64_t sync = 0;          // Welcomes sent; pushes echo the one they build on
  int64_t resume_after = 0;  // what the next Welcome tells it
  std::vector<int64_t> sent_version;
  std::vector<bool> demanded;  // rows asked of it since its last push
  // What it holds of each row once what we sent arrives: a compressed job's
  // updates are differences from it. An uncompressed job keeps none.
  std::optional<ReplicaRecord> replica;
  // Workers push at least every 20 ms (worker.cc), so a link is judged dead only
  // after 200 ms of silence, whatever the learned pace.
  ArrivalDeadline deadline{std::chrono::seconds(10), std::chrono::milliseconds(200)};
  BandwidthEstimator downlink;  // from our send times: right only when we shape the link ourselves
  ArrivalRateMeter uplink;      // its pushes' arrivals: right under kernel shaping too
  std::optional<TraceShaper> shaper;  // its emulated link, coordinator -> worker
  v1::WorkerStats stats;
  int64_t iteration = 0;
  int64_t samples = 0;
  int64_t rows_sent = 0;
  int64_t bytes_sent = 0;      // its pushes
  int64_t bytes_received = 0;  // our messages to it
  double transfer_s = 0;     // downlink time not yet reported to the worker (energy)
  double energy_j = 0;       // modelled, over its earlier streams
  double stream_energy_j = 0;  // modelled, this stream
  double compute_s = 0, stall_s = 0, wall_s = 0;  // totals over its streams so far
  double stream_compute_s = 0, stream_stall_s = 0, stream_wall_s = 0;
};

Coordinator::Coordinator(const JobPlan& plan, Trainer& model, const Dataset& test, int64_t train_size, Clock& clock,
                         ProgressBoard& board, std::ostream& log, MetricsRegistry& metrics)
    : plan_(plan), model_(model), test_(test), train_size_(train_size), clock_(clock), board_(board), log_(log),
      metrics_(metrics, plan.job, plan.spec.parallelism.workers), world_(plan.spec.parallelism.workers),
      layout_(model.ParameterShapes(), plan.spec.sync.granularity),
      downlink_encoding_(EncodingFor(plan.spec.sync.compression)),
      params_(model.Parameters().begin(), model.Parameters().end()), optimizer_(plan.spec.optimizer, layout_),
      ledger_(world_, layout_.size(), DefaultStalenessBound(plan.spec.sync)), versions_(layout_.size(), 0) {
  // Workers join the ledger when their stream arrives (Serve), not before: the
  // team starts with those there (GatherTeam), later ones join where it is.
  for (int w = 0; w < world_; ++w) ledger_.Deactivate(w);
  accumulated_.assign(static_cast<size_t>(layout_.total_floats()), 0.0f);
  applied_clock_.assign(layout_.size(), 0);
  const TimePoint created = clock_.Now();  // emulated links follow their traces from here
  for (int w = 0; w < world_; ++w) {
    auto s = std::make_unique<Session>();
    s->sent_version.assign(layout_.size(), 0);
    s->demanded.assign(layout_.size(), false);
    if (downlink_encoding_ != RowEncoding::kFloat32) s->replica.emplace(layout_);
    if (static_cast<size_t>(w) < plan.workers.size() && plan.workers[w].link) {
      const LinkSpec& link = *plan.workers[w].link;
      auto text = ReadWholeFile(link.trace_path);
      auto trace = text.ok() ? BandwidthTrace::Parse(*text, link.trace_path) : StatusOr<BandwidthTrace>(text.status());
      if (trace.ok()) {
        s->shaper.emplace(trace->Shifted(link.offset_s).Scaled(link.scale), created);
      } else {
        log_ << "coordinator: worker " << w << "'s link is unshaped: " << trace.status().message() << "\n";
      }
    }
    sessions_.push_back(std::move(s));
  }
}

Coordinator::~Coordinator() = default;

Status Coordinator::Restore() {
  EDGETRAIN_ASSIGN_OR_RETURN(auto checkpoint, LoadCheckpoint(CheckpointPath(plan_)));
  if (!checkpoint) return Status::Ok();
  const CoordinatorCheckpoint& c = *checkpoint;
  if (c.job != plan_.job) return Status::Ok();  // another job's output folder: start afresh
  if (c.complete) {
    log_ << "coordinator: the last run of " << plan_.job << " completed; starting afresh\n";
    return Status::Ok();
  }
  const OptimizerState& fresh = optimizer_.state();
  if (c.parameters.size() != params_.size() || c.pushed.size() != static_cast<size_t>(world_) * layout_.size() ||
      c.versions.size() != layout_.size() || c.iterations.size() != static_cast<size_t>(world_) ||
      c.optimizer.first.size() != fresh.first.size() || c.optimizer.second.size() != fresh.second.size() ||
      c.optimizer.steps.size() != fresh.steps.size()) {
    return FailedPreconditionError(CheckpointPath(plan_) +
                                 " holds a different model, optimizer or team; move it away to start afresh");
  }
  std::lock_guard lock(mu_);
  params_ = c.parameters;
  optimizer_.mutable_state() = c.optimizer;
  versions_ = c.versions;
  for (int w = 0; w < world_; ++w) {
    for (size_t r = 0; r < layout_.size(); ++r) ledger_.RecordPush(w, r, c.pushed[static_cast<size_t>(w) * layout_.size() + r]);
    ledger_.RecordIteration(w, c.iterations[w]);
  }
  samples_ = c.samples;
  elapsed_before_ = c.elapsed_s;
  log_ << "coordinator: resumed from " << CheckpointPath(plan_) << " at iteration " << c.iteration << ", "
       << c.samples << " samples (move it away to start afresh)\n";
  return Status::Ok();
}

Status Coordinator::Admit(const v1::Hello& hello) {
  return CheckHello(hello, plan_.job, plan_.generation, world_);
}

v1::CoordinatorMessage Coordinator::MakeWelcome(int rank, int64_t resume_after, bool whole_model) {
  v1::CoordinatorMessage m;
  v1::Welcome* welcome = m.mutable_welcome();
  for (const auto& shape : model_.ParameterShapes()) {
    auto* t = welcome->add_tensors();
    for (int64_t d : shape) t->add_dims(d);
  }
  Session& s = *sessions_[rank];
  std::vector<bool> needed(layout_.size(), whole_model);
  for (size_t r : ledger_.SendableMandatory(rank)) needed[r] = true;
  for (size_t r = 0; r < layout_.size(); ++r) {
    // An update lost with the old stream may leave the worker's copy of a row
    // unknown; until the row goes whole again, it gets no differences.
    if (!needed[r]) {
      if (s.replica) s.replica->Forget(r);
      continue;
    }
    SetRowWhole(s, r, *welcome->add_rows());
    ledger_.RecordSent(rank, r);
    s.sent_version[r] = versions_[r];
  }
  welcome->set_resume_after(resume_after);
  welcome->set_staleness_bound(ledger_.bound());
  welcome->set_sync(s.sync);
  s.resync = false;
  return m;
}

bool Coordinator::HasWork(int rank) const {
  const Session& s = *sessions_[rank];
  if (s.resync) return true;
  // A row's clock can rise without its values changing (a teammate counted out):
  // what the worker now may have, it must be sent.
  if (!ledger_.SendableMandatory(rank).empty()) return true;
  for (size_t r = 0; r < layout_.size(); ++r) {
    if (versions_[r] > s.sent_version[r]) return true;
  }
  for (size_t r : ledger_.DemandFrom(rank)) {
    if (!s.demanded[r]) return true;
  }
  return false;
}

v1::CoordinatorMessage Coordinator::MakeUpdate(int rank) {
  Session& s = *sessions_[rank];
  std::vector<PullCandidate> candidates;
  candidates.reserve(layout_.size());
  std::vector<bool> mandatory(layout_.size(), false);
  for (size_t r : ledger_.SendableMandatory(rank)) mandatory[r] = true;
  for (size_t r = 0; r < layout_.size(); ++r) {
    const int64_t length = layout_.row(r).length;
    const int64_t bytes = s.replica && s.replica->Known(r) ? EncodedBytes(downlink_encoding_, length) : 4 * length;
    candidates.push_back({r, versions_[r] - s.sent_version[r], bytes, mandatory[r]});
  }
  // ROG: what the worker's downlink carries during one of its steps, as for its
  // pushes: an update is through before the next is due, so optional rows never
  // hold up mandatory ones behind them. SSP and BSP: every fresh row.
  const Duration step = s.stats.step_seconds() > 0 ? FromSeconds(s.stats.step_seconds()) : kAssumedIteration;
  const int64_t budget = plan_.spec.sync.policy == SyncPolicy::kRog
                             ? static_cast<int64_t>(DownlinkMbps(rank) * 1e6 / 8 * ToSeconds(step))
                             : std::numeric_limits<int64_t>::max() / 2;
  v1::CoordinatorMessage m;
  v1::Update* update = m.mutable_update();
  for (size_t r : SelectPullRows(candidates, budget)) {
    v1::Row& row = *update->add_rows();
    if (s.replica && s.replica->Known(r)) {
      SetRowDifference(s, r, row);
    } else {
      SetRowWhole(s, r, row);
    }
    ledger_.RecordSent(rank, r);
    s.sent_version[r] = versions_[r];
  }
  for (size_t r : ledger_.DemandFrom(rank)) {
    if (s.demanded[r]) continue;
    s.demanded[r] = true;
    update->add_demanded(static_cast<uint32_t>(r));
  }
  update->set_transfer_seconds(s.transfer_s);
  update->set_uplink_mbps(s.uplink.Mbps());
  s.transfer_s = 0;
  return m;
}

void Coordinator::SetRowWhole(Session& s, size_t r, v1::Row& row) const {
  const RowSpan& span = layout_.row(r);
  std::span<const float> values(params_.data() + span.offset, static_cast<size_t>(span.length));
  row.set_id(static_cast<uint32_t>(r));
  row.set_clock(ledger_.Clock(r));
  row.set_values(values.data(), sizeof(float) * values.size());
  if (s.replica) s.replica->RecordWhole(r, values);
}

void Coordinator::SetRowDifference(Session& s, size_t r, v1::Row& row) const {
  const RowSpan& span = layout_.row(r);
  EncodedRow encoded = s.replica->Difference(
      r, std::span<const float>(params_.data() + span.offset, static_cast<size_t>(span.length)), downlink_encoding_);
  row.set_id(static_cast<uint32_t>(r));
  row.set_clock(ledger_.Clock(r));
  row.set_delta(true);
  row.set_encoding(static_cast<v1::Encoding>(encoded.encoding));
  row.set_scale(encoded.scale);
  row.set_values(std::move(encoded.bytes));
}

StatusOr<bool> Coordinator::ApplyPush(int rank, const v1::Push& push) {
  Session& s = *sessions_[rank];
  bool stepped = false;
  for (const v1::Row& row : push.rows()) {
    if (row.id() >= layout_.size()) return InvalidArgumentError("row " + std::to_string(row.id()) + " does not exist");
    const RowSpan& span = layout_.row(row.id());
    float* acc = accumulated_.data() + span.offset;
    EDGETRAIN_RETURN_IF_ERROR(AddDecodedRow(static_cast<RowEncoding>(row.encoding()), row.scale(), row.values(),
                                            std::span<float>(acc, static_cast<size_t>(span.length))));
    ledger_.RecordPush(rank, row.id(), push.iteration());
    // A row steps when its clock advances — once every active worker's gradient
    // up to the new clock is in — on the mean over workers and iterations of what
    // was gathered, as one step on a batch of as many iterations as the clock
    // moved (at most S, and one under BSP; see RowOptimizer::Apply). Averaged
    // like BSP, however the rows arrived: steps on single arrivals followed each
    // worker's non-IID data in turn, and with Adam (whose step does not scale
    // with its gradient) drifted.
    const int64_t clock = ledger_.Clock(row.id());
    if (clock > applied_clock_[row.id()]) {
      const int64_t moved = std::clamp<int64_t>(clock - applied_clock_[row.id()], 1, std::max(1, ledger_.bound()));
      const int contributors = std::max(1, ledger_.active_count());
      std::span<float> gradient(acc, static_cast<size_t>(span.length));
      const float mean = 1.0f / static_cast<float>(contributors * moved);
      for (float& g : gradient) g *= mean;
      std::span<float> params(params_.data() + span.offset, static_cast<size_t>(span.length));
      optimizer_.Apply(row.id(), params, gradient, static_cast<double>(moved));
      std::fill(gradient.begin(), gradient.end(), 0.0f);
      applied_clock_[row.id()] = clock;
      ++versions_[row.id()];
      stepped = true;
    }
    s.demanded[row.id()] = false;
  }
  ledger_.RecordIteration(rank, push.iteration());
  s.iteration = std::max(s.iteration, push.iteration());
  s.rows_sent += push.rows_size();
  s.bytes_sent += static_cast<int64_t>(push.ByteSizeLong());
  metrics_.AddReceived(rank, static_cast<int64_t>(push.ByteSizeLong()), push.rows_size());
  if (!push.has_stats()) return stepped;  // a later chunk of the same push
  const v1::WorkerStats& st = push.stats();
  s.stats = st;
  s.samples += st.samples();
  samples_ += st.samples();
  loss_sum_ += st.loss_sum();
  loss_count_ += st.loss_count();
  s.stream_compute_s = st.compute_seconds();
  s.stream_stall_s = st.stall_seconds();
  s.stream_wall_s = st.wall_seconds();
  s.stream_energy_j = st.energy_joules();
  return true;  // a new iteration: what the team waits for from each worker may have changed
}

Status Coordinator::Serve(const v1::Hello& hello, WorkerStream& raw_stream) {
  const int rank = hello.rank();
  std::atomic<bool> gone{false};
  uint64_t epoch;
  v1::CoordinatorMessage welcome;
  {
    std::unique_lock lock(mu_);
    if (stopping_) return CancelledError("the job has ended");
    Session& s = *sessions_[rank];
    epoch = ++s.epoch;
    // A new stream from a known rank: the worker restarted or reconnected.
    s.compute_s += s.stream_compute_s;
    s.stall_s += s.stream_stall_s;
    s.wall_s += s.stream_wall_s;
    s.energy_j += s.stream_energy_j;
    s.stream_compute_s = s.stream_stall_s = s.stream_wall_s = s.stream_energy_j = 0;
    if (s.epoch > 1) metrics_.AddRejoin(rank);
    s.connected = true;
    s.counted_out = false;
    std::fill(s.demanded.begin(), s.demanded.end(), false);
    const int64_t resume_after = ledger_.Rejoin(rank);
    s.iteration = resume_after;
    s.deadline.Restart(clock_.Now());
    ++s.sync;
    s.resume_after = resume_after;
    log_ << "coordinator: worker " << rank << " joined at iteration " << resume_after << "\n";
    changed_.notify_all();  // GatherTeam() counts who is here
    // Until the team starts, its Welcome waits: see GatherTeam().
    changed_.wait(lock, [&] { return started_ || stopping_ || s.epoch != epoch; });
    if (stopping_) return CancelledError("the job has ended");
    if (s.epoch != epoch) return AbortedError("superseded by a newer stream of worker " + std::to_string(rank));
    welcome = MakeWelcome(rank, resume_after, /*whole_model=*/true);
  }

  std::optional<ShapedWorkerStream> shaped;
  if (sessions_[rank]->shaper) {
    shaped.emplace(raw_stream, *sessions_[rank]->shaper, clock_, [&] { return gone.load() || abandon_sends_.load(); });
  }
  WorkerStream& stream = shaped ? static_cast<WorkerStream&>(*shaped) : raw_stream;

  const TimePoint welcome_began = clock_.Now();
  Status sent = stream.Send(welcome);
  if (sent.ok()) {
    metrics_.AddSent(rank, static_cast<int64_t>(welcome.ByteSizeLong()), welcome.welcome().rows_size());
    // A whole model can take seconds on a slow link: its deadline counts from now.
    std::lock_guard lock(mu_);
    sessions_[rank]->transfer_s += ToSeconds(clock_.Now() - welcome_began);
    sessions_[rank]->bytes_received += static_cast<int64_t>(welcome.ByteSizeLong());
    sessions_[rank]->deadline.Restart(clock_.Now());
  }
  std::thread sender;
  if (sent.ok()) sender = std::thread([&] { SendLoop(rank, epoch, stream, gone); });
  while (sent.ok()) {
    auto message = raw_stream.Receive();
    if (!message.ok()) break;
    if (!message->has_push()) continue;
    std::lock_guard lock(mu_);
    Session& s = *sessions_[rank];
    if (s.epoch != epoch) break;  // superseded by a newer stream of the same worker
    // Senders are woken only when there may be something new to send: a push
    // comes in many chunks, and most change nothing a sender looks at. Run()'s
    // tick wakes them anyway, so a change missed here costs at most a tick.
    bool news = true;
    // A push's chunks are sent back to back: their arrivals time its uplink.
    if (message->push().has_stats()) {
      s.uplink.Begin(clock_.Now());
    } else {
      s.uplink.Continue(clock_.Now(), static_cast<int64_t>(message->ByteSizeLong()));
    }
    if (s.counted_out) {
      // Its link is back. What it pushed was computed on a stale model: dropped
      // (and so is all it sends until it has the next Welcome); it resumes with
      // the team, sent what it lacks for that.
      s.counted_out = false;
      s.resync = true;
      ++s.sync;
      s.resume_after = ledger_.Rejoin(rank, /*copy_lost=*/false);
      s.iteration = s.resume_after;
      s.deadline.Restart(clock_.Now());
      metrics_.AddRejoin(rank);
      log_ << "coordinator: worker " << rank << " is back; it rejoins at iteration " << s.resume_after << "\n";
    } else if (message->push().sync() != s.sync) {
      s.deadline.Arrived(clock_.Now());  // alive, but building on a model it no longer has
    } else if (!stopping_) {  // once stopping, the model is final
      s.deadline.Arrived(clock_.Now());
      StatusOr<bool> applied = ApplyPush(rank, message->push());
      if (!applied.ok()) {
        log_ << "coordinator: refusing worker " << rank << "'s push: " << applied.status().message() << "\n";
        break;
      }
      news = *applied;
    }
    if (news) changed_.notify_all();
  }
  {
    std::lock_guard lock(mu_);
    Session& s = *sessions_[rank];
    if (s.epoch == epoch) {
      s.connected = false;
      ledger_.Deactivate(rank);
      if (!stopping_) log_ << "coordinator: worker " << rank << " left\n";
    }
    gone = true;  // under mu_: the sender checks it in its wait predicate
  }
  changed_.notify_all();
  if (sender.joinable()) sender.join();
  return Status::Ok();
}

void Coordinator::SendLoop(int rank, uint64_t epoch, WorkerStream& stream, const std::atomic<bool>& gone) {
  for (;;) {
    v1::CoordinatorMessage message;
    int64_t part_bytes = 0;
    {
      std::unique_lock lock(mu_);
      Session& s = *sessions_[rank];
      changed_.wait(lock, [&] { return gone || stopping_ || s.epoch != epoch || HasWork(rank); });
      if (gone || s.epoch != epoch) return;
      if (stopping_) {
        message.mutable_stop()->set_reason("the job is over");
      } else {
        message = s.resync ? MakeWelcome(rank, s.resume_after, /*whole_model=*/false) : MakeUpdate(rank);
        if (message.has_update() && message.update().rows_size() == 0 && message.update().demanded_size() == 0) {
          // Nothing worth a message yet (rows changed, but none may go): look again later.
          changed_.wait_for(lock, kTick);
          continue;
        }
        if (message.has_update()) {
          part_bytes = PartBytes(static_cast<int64_t>(message.ByteSizeLong()), DownlinkMbps(rank));
        }
      }
    }
    const TimePoint began = clock_.Now();
    Status sent = Status::Ok();
    int64_t bytes = 0;
    int rows = 0;
    for (const auto& part : message.has_update() ? SplitUpdate(std::move(message), part_bytes) : std::vector{message}) {
      bytes += static_cast<int64_t>(part.ByteSizeLong());
      rows += part.has_update() ? part.update().rows_size() : part.has_welcome() ? part.welcome().rows_size() : 0;
      if (!(sent = stream.Send(part)).ok() || part.has_stop()) break;
    }
    const Duration took = clock_.Now() - began;
    if (!sent.ok() || message.has_stop()) return;
    metrics_.AddSent(rank, bytes, rows);
    std::lock_guard lock(mu_);
    Session& s = *sessions_[rank];
    s.bytes_received += bytes;
    s.transfer_s += ToSeconds(took);
    if (bytes >= kMinMeasuredBytes) s.downlink.Observe(bytes, took);
    metrics_.SetDownlinkMbps(rank, DownlinkMbps(rank));
  }
}

std::vector<v1::CoordinatorMessage> Coordinator::SplitUpdate(v1::CoordinatorMessage whole, int64_t part_bytes) {
  const v1::Update& update = whole.update();
  return CutIntoParts<v1::CoordinatorMessage>(
      *whole.mutable_update()->mutable_rows(), part_bytes,
      [&](int part) {
        v1::CoordinatorMessage m;
        v1::Update* u = m.mutable_update();
        u->set_part(part);
        if (part == 0) {
          *u->mutable_demanded() = update.demanded();
          u->set_transfer_seconds(update.transfer_seconds());
          u->set_uplink_mbps(update.uplink_mbps());
        }
        return m;
      },
      [](v1::CoordinatorMessage& m) { return m.mutable_update(); });
}

double Coordinator::DownlinkMbps(int rank) const {
  // The worker's own measure of what arrives, once it has one; until then what
  // our sends took, which is right when the link is shaped in our transport.
  const Session& s = *sessions_[rank];
  return s.stats.downlink_mbps() > 0 ? s.stats.downlink_mbps() : s.downlink.Mbps();
}

void Coordinator::CountOutOverdue(TimePoint now) {
  for (int w = 0; w < world_; ++w) {
    Session& s = *sessions_[w];
    if (!s.connected || s.counted_out || !ledger_.active(w) || !s.deadline.Overdue(now)) continue;
    s.counted_out = true;
    ledger_.Deactivate(w);
    log_ << "coordinator: worker " << w << " counted out: no push for " << ToSeconds(now - s.deadline.last_arrival())
         << " s, past its deadline of " << ToSeconds(s.deadline.Deadline()) << " s\n";
  }
}

int64_t Coordinator::TeamIteration() const {
  // Iterations of the whole team, in steps of one batch per worker.
  return samples_ / (int64_t{plan_.spec.data.batch_size} * world_);
}

JobProgress Coordinator::Progress(TimePoint now) const {
  JobProgress p = board_.Snapshot();
  p.state = JobState::kTraining;
  p.iteration = TeamIteration();
  p.samples = samples_;
  p.epoch = static_cast<int>(samples_ / std::max<int64_t>(1, train_size_));
  p.loss = last_loss_;
  p.elapsed_s = elapsed_before_ + ToSeconds(now - start_);
  p.samples_per_second = p.elapsed_s > 0 ? static_cast<double>(samples_) / p.elapsed_s : 0;
  p.workers.clear();
  for (int w = 0; w < world_; ++w) {
    const Session& s = *sessions_[w];
    WorkerProgress wp;
    wp.rank = w;
    wp.batch_size = plan_.spec.data.batch_size;
    wp.samples = s.samples;
    wp.bandwidth_mbps = s.stats.uplink_mbps();
    double wall = s.wall_s + s.stream_wall_s;
    wp.stall_fraction = wall > 0 ? (s.stall_s + s.stream_stall_s) / wall : 0;
    wp.stall_s = s.stall_s + s.stream_stall_s;
    wp.wall_s = wall;
    wp.iteration = s.iteration;
    wp.rows_sent = s.rows_sent;
    wp.bytes_sent = s.bytes_sent;
    wp.bytes_received = s.bytes_received;
    wp.active = s.connected && ledger_.active(w);
    wp.energy_joules = s.energy_j + s.stream_energy_j;
    p.workers.push_back(wp);
  }
  // Modelled: the workers' devices; the coordinator stands for the access point.
  double energy = 0;
  for (const auto& w : p.workers) energy += w.energy_joules;
  p.energy_joules = energy;
  return p;
}

CoordinatorCheckpoint Coordinator::Snapshot(TimePoint now) const {
  CoordinatorCheckpoint c;
  c.job = plan_.job;
  c.generation = plan_.generation;
  c.iteration = TeamIteration();
  c.samples = samples_;
  c.elapsed_s = elapsed_before_ + ToSeconds(now - start_);
  c.parameters = params_;
  c.optimizer = optimizer_.state();
  for (int w = 0; w < world_; ++w) {
    for (size_t r = 0; r < layout_.size(); ++r) c.pushed.push_back(ledger_.pushed(w, r));
    c.iterations.push_back(ledger_.iteration(w));
  }
  c.versions = versions_;
  return c;
}

Status Coordinator::EvaluateModel(JobProgress& progress) {
  {
    std::lock_guard lock(mu_);
    std::copy(params_.begin(), params_.end(), model_.Parameters().begin());
  }
  EDGETRAIN_ASSIGN_OR_RETURN(Evaluation e, model_.Evaluate(test_));
  progress.accuracy = e.accuracy;
  metrics_.SetAccuracy(e.accuracy);
  return Status::Ok();
}

Status Coordinator::GatherTeam(const std::atomic<bool>& cancel) {
  // The team starts together, as a rendezvous does: a worker that trained
  // alone while its teammates' pods were still starting would learn from its
  // own partition only (under a skewed split, a few classes) and set the pace
  // the others then join at. One not here within nodeLossGrace of the first is
  // treated as a node lost at the start: the team goes on without it, and it
  // joins where the team is when it comes. The job's clock starts here: loading
  // data and connecting are not training time, as for a job of one.
  const Duration window = plan_.spec.fault_tolerance.node_loss_grace;
  const TimePoint waiting_since = clock_.Now();
  std::optional<TimePoint> first_in;  // Serve wakes us as each worker joins
  std::unique_lock lock(mu_);
  bool announced = false;
  while (!cancel.load()) {
    const TimePoint now = clock_.Now();
    int here = 0;
    for (const auto& s : sessions_) here += s->connected ? 1 : 0;
    if (here > 0 && !first_in) first_in = now;
    if (!first_in) {
      if (now - waiting_since > kFirstWorkerTimeout) {
        return UnavailableError("no worker connected within " +
                                std::to_string(static_cast<int>(ToSeconds(kFirstWorkerTimeout))) + " s");
      }
    } else if (here == world_ || now - *first_in >= window) {
      started_ = true;
      start_ = now;
      log_ << "coordinator: the team starts with " << here << " of " << world_ << " workers";
      if (here < world_) log_ << "; the others join when they come";
      log_ << "\n";
      break;
    } else if (!announced) {
      announced = true;
      log_ << "coordinator: waiting up to " << ToSeconds(window) << " s for " << world_ - here << " more worker(s)\n";
    }
    changed_.wait_for(lock, kTick);
  }
  if (!started_) start_ = clock_.Now();  // cancelled while gathering
  lock.unlock();
  changed_.notify_all();
  return Status::Ok();
}

StatusOr<JobProgress> Coordinator::Run(const std::atomic<bool>& cancel) {
  // However Run ends, every sender and stream is told the job is over.
  struct StopOnExit {
    Coordinator& c;
    ~StopOnExit() {
      {
        std::lock_guard lock(c.mu_);
        c.stopping_ = true;
      }
      c.abandon_sends_ = true;
      c.changed_.notify_all();
    }
  } stop_on_exit{*this};
  std::error_code ec;
  std::filesystem::create_directories(plan_.output_dir, ec);
  if (ec) return FailedPreconditionError("cannot create output directory " + plan_.output_dir + ": " + ec.message());

  EDGETRAIN_RETURN_IF_ERROR(GatherTeam(cancel));
  const JobSpec& spec = plan_.spec;
  const int64_t per_iteration = int64_t{spec.data.batch_size} * world_;
  Budget budget(spec.budget, (train_size_ + per_iteration - 1) / per_iteration,
                start_ - FromSeconds(elapsed_before_));
  const int every_eval = spec.evaluation.every_iterations;
  const int every_checkpoint = spec.fault_tolerance.checkpoint_every;
  int64_t next_eval, next_checkpoint;
  {
    std::lock_guard lock(mu_);
    next_eval = (TeamIteration() / every_eval + 1) * every_eval;
    next_checkpoint = every_checkpoint > 0 ? (TeamIteration() / every_checkpoint + 1) * every_checkpoint : -1;
  }
  EDGETRAIN_ASSIGN_OR_RETURN(EvaluationLog evaluations,
                             EvaluationLog::Open(plan_.output_dir + "/evaluations.csv", elapsed_before_ > 0));
  // Zero: evaluate by iterations only.
  const Duration eval_period = spec.evaluation.every_seconds ? FromSeconds(*spec.evaluation.every_seconds) : Duration::zero();
  TimePoint last_eval = start_;
  JobProgress progress;
  std::optional<StopReason> stop;
  while (!stop) {
    clock_.SleepFor(kTick);
    const TimePoint now = clock_.Now();
    int64_t iteration;
    std::optional<CoordinatorCheckpoint> snapshot;
    {
      std::lock_guard lock(mu_);
      CountOutOverdue(now);
      if (loss_count_ > 0) {
        last_loss_ = loss_sum_ / static_cast<double>(loss_count_);
        loss_sum_ = 0;
        loss_count_ = 0;
      }
      std::optional<double> accuracy = progress.accuracy;
      progress = Progress(now);
      progress.accuracy = accuracy;
      iteration = TeamIteration();
      metrics_.SetLoss(last_loss_);
      metrics_.SetSamples(samples_);
      metrics_.SetActiveWorkers(ledger_.active_count());
      metrics_.SetEnergy(progress.energy_joules.value_or(0));
      if (next_checkpoint > 0 && iteration >= next_checkpoint) {
        snapshot = Snapshot(now);
        next_checkpoint = (iteration / every_checkpoint + 1) * every_checkpoint;
      }
    }
    changed_.notify_all();  // deadlines may have counted someone out
    if (snapshot) {
      EDGETRAIN_RETURN_IF_ERROR(SaveCheckpoint(CheckpointPath(plan_), *snapshot));
      metrics_.AddCheckpoint();
    }
    if (iteration >= next_eval || (eval_period > Duration::zero() && now - last_eval >= eval_period)) {
      EDGETRAIN_RETURN_IF_ERROR(EvaluateModel(progress));
      evaluations.Record(progress.elapsed_s, iteration, progress.samples, *progress.accuracy, progress.energy_joules);
      last_eval = now;
      next_eval = (iteration / every_eval + 1) * every_eval;
      if (budget.TargetReached(*progress.accuracy)) stop = StopReason::kTarget;
    }
    const TimePoint budget_now = now;
    if (!stop) stop = budget.Exhausted(budget_now, iteration);
    if (!stop && cancel.load()) stop = StopReason::kCancelled;
    progress.fraction = budget.Fraction(budget_now, iteration);
    auto eta = budget.Eta(budget_now, iteration);
    progress.eta_s = eta ? std::optional<double>(ToSeconds(*eta)) : std::nullopt;
    board_.Update([&](JobProgress& shown) { shown = progress; });
  }

  // Training ends here; telling the workers takes up to kStopGrace more and is
  // not counted (pushes that arrive meanwhile are not applied).
  const TimePoint end = clock_.Now();
  // Stop every worker: each sender sends Stop; streams then end.
  {
    std::unique_lock lock(mu_);
    stopping_ = true;
    changed_.notify_all();
    changed_.wait_for(lock, kStopGrace, [&] {
      return std::none_of(sessions_.begin(), sessions_.end(), [](const auto& s) { return s->connected; });
    });
  }
  abandon_sends_ = true;  // a worker that has not heard Stop by now is behind a dead link
  if (*stop == StopReason::kTarget) {
    // The model that reached the target is the final one, not the few updates
    // that landed while the decision was made.
    std::lock_guard lock(mu_);
    std::copy(model_.Parameters().begin(), model_.Parameters().end(), params_.begin());
  } else {
    EDGETRAIN_RETURN_IF_ERROR(EvaluateModel(progress));
    evaluations.Record(progress.elapsed_s, progress.iteration, progress.samples, *progress.accuracy,
                       progress.energy_joules);
  }
  CoordinatorCheckpoint final_state;
  {
    std::lock_guard lock(mu_);
    std::optional<double> accuracy = progress.accuracy;
    progress = Progress(end);
    progress.accuracy = accuracy;
    final_state = Snapshot(end);
    final_state.complete = true;
  }
  EDGETRAIN_RETURN_IF_ERROR(SaveCheckpoint(CheckpointPath(plan_), final_state));
  progress.model_path = plan_.output_dir + "/model.pt";
  EDGETRAIN_RETURN_IF_ERROR(model_.SaveModel(progress.model_path));
  nlohmann::json card = {{"model", NameOf(spec.model.kind)}, {"dataset", NameOf(spec.data.dataset)},
                         {"iteration", progress.iteration}, {"samples", progress.samples},
                         {"accuracy", *progress.accuracy}, {"workers", world_},
                         {"policy", NameOf(spec.sync.policy)}, {"weights", "model.pt"}};
  EDGETRAIN_RETURN_IF_ERROR(WriteFileAtomically(plan_.output_dir + "/model.json", card.dump(2) + "\n"));
  progress.reached_target = budget.TargetReached(*progress.accuracy);
  progress.stop_reason = std::string(NameOf(*stop));
  progress.state = JobState::kSucceeded;
  progress.fraction = budget.Fraction(end, progress.iteration);
  progress.eta_s = 0;
  board_.Update([&](JobProgress& shown) { shown = progress; });
  return progress;
}

}  // namespace edgetrain::agent

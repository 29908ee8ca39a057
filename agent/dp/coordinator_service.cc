#include "agent/dp/coordinator_service.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "agent/transport/message_parts.h"
#include "agent/transport/shaped_stream.h"
#include "core/duration_text.h"
#include "core/peer_figures.h"

namespace edgetrain::agent {
namespace {

void SetRow(const DownlinkRow& from, v1::Row& to) {
  to.set_id(static_cast<uint32_t>(from.id));
  to.set_clock(from.clock);
  to.set_delta(from.delta);
  to.set_encoding(static_cast<v1::Encoding>(from.encoded.encoding));
  to.set_scale(from.encoded.scale);
  to.set_values(from.encoded.bytes);
}

v1::CoordinatorMessage ToMessage(const WelcomeMessage& m, const std::vector<std::vector<int64_t>>& shapes) {
  v1::CoordinatorMessage out;
  v1::Welcome* welcome = out.mutable_welcome();
  for (const auto& shape : shapes) {
    auto* t = welcome->add_tensors();
    for (int64_t d : shape) t->add_dims(d);
  }
  for (const DownlinkRow& row : m.rows) SetRow(row, *welcome->add_rows());
  welcome->set_resume_after(m.resume_after);
  welcome->set_job_elapsed_seconds(m.job_elapsed_s);
  welcome->set_waited_seconds(m.waited_s);
  welcome->set_staleness_bound(m.staleness_bound);
  welcome->set_welcome(m.welcome);
  welcome->set_stream_read_through(m.stream_read_through);
  return out;
}

// An update in parts of about PartBytes, sent back to back, so the worker
// can time its downlink from their arrivals; part 0 carries the fields.
std::vector<v1::CoordinatorMessage> ToParts(const UpdateMessage& m) {
  v1::CoordinatorMessage whole;
  v1::Update* update = whole.mutable_update();
  for (const DownlinkRow& row : m.update.rows) SetRow(row, *update->add_rows());
  for (size_t r : m.update.demanded) update->add_demanded(static_cast<uint32_t>(r));
  update->set_transfer_seconds(m.transfer_seconds);
  update->set_uplink_mbps(m.uplink_mbps);
  update->set_staleness_bound(m.staleness_bound);
  const int64_t part_bytes = PartBytes(static_cast<int64_t>(whole.ByteSizeLong()), m.downlink_mbps);
  return CutIntoParts<v1::CoordinatorMessage>(
      *update->mutable_rows(), part_bytes,
      [&](int part) {
        v1::CoordinatorMessage p;
        v1::Update* u = p.mutable_update();
        u->set_part(part);
        if (part == 0) {
          *u->mutable_demanded() = whole.update().demanded();
          u->set_transfer_seconds(m.transfer_seconds);
          u->set_uplink_mbps(m.uplink_mbps);
          u->set_staleness_bound(m.staleness_bound);
          u->set_job_energy_joules(m.job_energy_j);
        }
        return p;
      },
      [](v1::CoordinatorMessage& p) { return p.mutable_update(); });
}

// A link's, Mbit/s: below a bit a second, none measured.
double LinkRate(double mbps) {
  const double m = Measure(mbps, 1e6);
  return m >= 1e-6 ? m : 0;
}

// A report's count (the samples since the one before, a stream's so far):
// at most 2^40, a device's at 10,000 samples a second for three years, so
// that its reports and streams add up to int64 only past eight million of them.
int64_t ReportCount(int64_t v) { return Count(v, int64_t{1} << 40); }

WorkerReport ToReport(const v1::WorkerStats& s) {
  WorkerReport r;
  r.batch_size = s.batch_size();
  r.samples = ReportCount(s.samples());
  if (std::isfinite(s.loss_sum()) && s.loss_count() > 0) {
    r.loss_sum = s.loss_sum();
    r.loss_count = s.loss_count();
  }
  r.uplink_mbps = LinkRate(s.uplink_mbps());
  r.downlink_mbps = LinkRate(s.downlink_mbps());
  r.compute_s = Measure(s.compute_seconds(), kLongestSeconds);
  r.stall_s = Measure(s.stall_seconds(), kLongestSeconds);
  r.wall_s = Measure(s.wall_seconds(), kLongestSeconds);
  r.energy_j = Measure(s.energy_joules(), kMostJoules);
  r.step_s = Measure(s.step_seconds(), kLongestSeconds);
  r.injected = ReportCount(s.injected_samples());
  if (s.has_compression()) {
    const v1::CompressionStats& c = s.compression();
    r.compression = CompressionProgress{c.encoding() == v1::ENCODING_TOPK ? "topk" : "int8", c.topk_kept_norm(),
                                        c.topk_pushes(), c.pushes()};
  }
  if (s.has_stream()) {
    const v1::StreamStats& st = s.stream();
    r.stream = StreamProgress{ReportCount(st.arrived()),
                              ReportCount(st.dropped()),
                              ReportCount(st.backlog()),
                              Measure(st.wait_seconds(), kLongestSeconds),
                              ReportCount(st.refused_files()),
                              st.last_refused(),
                              st.read_through(),
                              ReportCount(st.arrived_for_good())};
  }
  return r;
}

ArrivingPush ToArriving(const v1::WorkerMessage& message, TimePoint arrived) {
  const v1::Push& push = message.push();
  ArrivingPush a;
  a.arrived = arrived;
  a.iteration = push.iteration();
  a.welcome = push.welcome();
  a.bytes = static_cast<int64_t>(message.ByteSizeLong());
  a.rows.reserve(static_cast<size_t>(push.rows_size()));
  for (const v1::Row& row : push.rows()) {
    a.rows.push_back({row.id(), static_cast<RowEncoding>(row.encoding()), row.scale(), row.values()});
  }
  if (push.has_stats()) a.report = ToReport(push.stats());
  return a;
}

}  // namespace

// Every row float32, each with its id, clock, encoding, scale and the length
// of its bytes (a few dozen bytes of protobuf at most), and a push's stats.
int64_t LargestWorkerMessage(const RowLayout& layout) {
  return 4 * layout.total_floats() + 32 * static_cast<int64_t>(layout.size()) + 64 * 1024;
}

CoordinatorService::CoordinatorService(const JobPlan& plan, Coordinator& coordinator, Clock& clock,
                                       const std::vector<std::optional<BandwidthTrace>>& downlinks)
    : plan_(plan), coordinator_(coordinator), largest_worker_message_(LargestWorkerMessage(coordinator.layout())),
      clock_(clock),
      downlinks_(static_cast<size_t>(plan.spec.parallelism.workers)),
      batch_sizer_(plan.spec.data.compute_weighted ? std::make_unique<BatchSizer>(plan) : nullptr) {
  const TimePoint now = clock.Now();
  for (size_t w = 0; w < downlinks.size() && w < downlinks_.size(); ++w) {
    if (downlinks[w]) downlinks_[w] = std::make_shared<TraceShaper>(*downlinks[w], now);
  }
}

Status CoordinatorService::AdoptPlan(const JobPlan& next,
                                     const std::vector<std::optional<BandwidthTrace>>& downlinks) {
  EDGETRAIN_RETURN_IF_ERROR(coordinator_.AdoptPlan(next));
  const TimePoint now = clock_.Now();
  std::lock_guard lock(mu_);
  for (size_t w = 0; w < downlinks_.size(); ++w) {
    downlinks_[w] = w < downlinks.size() && downlinks[w] ? std::make_shared<TraceShaper>(*downlinks[w], now) : nullptr;
  }
  return Status::Ok();
}

void CoordinatorService::InjectFrom(const Dataset& train) {
  injection_ = std::make_unique<InjectionSender>(plan_, train);
}

int64_t CoordinatorService::LargestMessageRead() const { return 2 * largest_worker_message_ + 1024 * 1024; }

Status CoordinatorService::Admit(const v1::Hello& hello) {
  return CheckHello(hello, plan_.job, coordinator_.slot_since(hello.rank()), coordinator_.plan_generation(),
                    plan_.spec.parallelism.workers);
}

Status CoordinatorService::Serve(const v1::Hello& hello, WorkerStream& raw_stream) {
  const int w = hello.rank();
  // Its offer as figures that can be: a NaN job clock made a duration of
  // nothing a conversion defines (found in review).
  EDGETRAIN_ASSIGN_OR_RETURN(Coordinator::Joined joined,
                             coordinator_.Join(w, hello.plan_generation(), std::max<int64_t>(0, hello.model_clock()),
                                               Measure(hello.job_elapsed_seconds(), kLongestSeconds),
                                               Measure(hello.job_energy_joules(), kMostJoules)));
  std::atomic<bool> gone{false};
  std::shared_ptr<TraceShaper> downlink;
  {
    std::lock_guard lock(mu_);
    downlink = downlinks_[w];
  }
  std::optional<ShapedWorkerStream> shaped;
  if (downlink) {
    shaped.emplace(raw_stream, *downlink, clock_, [&] { return gone.load() || coordinator_.abandoning_sends(); });
  }
  WorkerStream& stream = shaped ? static_cast<WorkerStream&>(*shaped) : raw_stream;

  if (joined.send_model) {
    // The team trains on from this worker's copy of the model (core/model_takeover.h).
    StatusOr<WelcomeMessage> taken = TakeModelOf(w, joined.stream, stream, raw_stream);
    if (!taken.ok()) {
      coordinator_.Left(w, joined.stream);
      return taken.status();
    }
    joined.welcome = std::move(*taken);
  }
  const v1::CoordinatorMessage welcome = ToMessage(joined.welcome, coordinator_.tensor_shapes());
  const TimePoint began = clock_.Now();
  Status sent = stream.Send(welcome);
  ClockThread sender;
  if (sent.ok()) {
    coordinator_.Delivered(w, static_cast<int64_t>(welcome.ByteSizeLong()), welcome.welcome().rows_size(),
                           clock_.Now() - began, /*opened_stream=*/true, /*shaped_here=*/shaped.has_value());
    sender = clock_.StartThread("coordinator sender " + std::to_string(w),
                                [&] { SendLoop(w, joined.stream, stream, shaped.has_value()); });
    for (;;) {
      auto message = raw_stream.Receive();
      const TimePoint arrived = clock_.Now();
      if (!message.ok()) break;
      if (const auto bytes = static_cast<int64_t>(message->ByteSizeLong()); bytes > largest_worker_message_) {
        coordinator_.RefuseOversized(w, joined.stream, bytes, largest_worker_message_);
        break;
      }
      if (!message->has_push()) continue;
      if (!coordinator_.Receive(w, joined.stream, ToArriving(*message, arrived)).ok()) break;
      // Of a push the coordinator took, on the rank's current stream: a
      // superseded or fenced-out one's (another device's, once its slot is
      // given anew) had dealt this rank's batches and injection too (found
      // in review).
      if (message->push().has_stats()) {
        const v1::WorkerStats& stats = message->push().stats();
        if (injection_) injection_->Wanted(w, stats.injection_wanted());
        // Measured as its other figures are: a NaN reached the batches' casts to integers.
        if (batch_sizer_) {
          batch_sizer_->Heard(w, {Measure(stats.step_fixed_seconds(), kLongestSeconds),
                                  Measure(stats.sample_seconds(), kLongestSeconds)});
        }
      }
    }
  }
  gone = true;
  coordinator_.Left(w, joined.stream);
  sender.Join();
  return Status::Ok();
}

StatusOr<WelcomeMessage> CoordinatorService::TakeModelOf(int w, uint64_t stream_number, WorkerStream& stream,
                                                         WorkerStream& raw_stream) {
  v1::CoordinatorMessage ask;
  ask.mutable_send_model();
  EDGETRAIN_RETURN_IF_ERROR(stream.Send(ask));
  StatusOr<v1::WorkerMessage> answer = raw_stream.Receive();
  if (!answer.ok()) return answer.status();
  if (!answer->has_model()) return InvalidArgumentError("asked for its copy of the model, it sent something else");
  ArrivingCopy copy;
  copy.rows.reserve(static_cast<size_t>(answer->model().rows_size()));
  for (const v1::Row& row : answer->model().rows()) {
    copy.rows.push_back({row.id(), static_cast<RowEncoding>(row.encoding()), row.scale(), row.values()});
    copy.clocks.push_back(row.clock());
  }
  return coordinator_.TakeModel(w, stream_number, copy);
}

void CoordinatorService::SendLoop(int w, uint64_t stream_number, WorkerStream& stream, bool shaped_here) {
  while (std::optional<OutgoingMessage> next = coordinator_.Next(w, stream_number)) {
    std::vector<v1::CoordinatorMessage> parts;
    if (const auto* update = std::get_if<UpdateMessage>(&*next)) {
      parts = ToParts(*update);
      if (injection_ && !parts.empty()) injection_->Fill(w, *parts.front().mutable_update());
      if (batch_sizer_ && !parts.empty()) batch_sizer_->Fill(w, *parts.front().mutable_update());
    } else if (const auto* welcome = std::get_if<WelcomeMessage>(&*next)) {
      parts.push_back(ToMessage(*welcome, coordinator_.tensor_shapes()));
    } else {
      const StopMessage& stop = std::get<StopMessage>(*next);
      v1::Stop* message = parts.emplace_back().mutable_stop();
      message->set_reason(stop.reason);
      message->set_resumes(stop.resumes);
      (void)stream.Send(parts.back());
      return;
    }
    const TimePoint began = clock_.Now();
    int64_t bytes = 0;
    int rows = 0;
    for (const auto& part : parts) {
      bytes += static_cast<int64_t>(part.ByteSizeLong());
      rows += part.has_update() ? part.update().rows_size() : part.welcome().rows_size();
      if (!stream.Send(part).ok()) return;
    }
    coordinator_.Delivered(w, bytes, rows, clock_.Now() - began, /*opened_stream=*/false, shaped_here);
  }
}

}  // namespace edgetrain::agent

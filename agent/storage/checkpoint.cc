#include "agent/storage/checkpoint.h"

#include <cstring>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "agent/storage/atomic_file.h"
#include "agent/storage/crc32.h"
#include "core/number_text.h"
#include "edgetrain/v1/checkpoint.pb.h"

namespace edgetrain::agent {
namespace {

constexpr std::string_view kMagic = "EDGETRAIN-CHECKPOINT 2\n";
constexpr std::string_view kFirstFormatMagic = "EDGETRAIN-CHECKPOINT 1\n";

template <typename T, typename Repeated>
std::vector<T> ToVector(const Repeated& r) {
  return std::vector<T>(r.begin(), r.end());
}

// The first format (0.1): a JSON header line, length-prefixed arrays, FNV-1a 64.
StatusOr<JobCheckpoint> DecodeFirstFormat(std::string_view bytes, const std::string& source) {
  auto damaged = [&](const std::string& why) { return DataLossError(source + ": damaged checkpoint (" + why + ")"); };
  if (bytes.size() < kFirstFormatMagic.size() + sizeof(uint64_t)) return damaged("truncated");
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - sizeof stored, sizeof stored);
  std::string_view body = bytes.substr(0, bytes.size() - sizeof stored);
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : body) h = (h ^ c) * 1099511628211ull;
  if (h != stored) return damaged("checksum mismatch: torn or altered");
  std::string_view in = body.substr(kFirstFormatMagic.size());
  const size_t nl = in.find('\n');
  if (nl == std::string_view::npos) return damaged("no header");
  const nlohmann::json header = nlohmann::json::parse(in.substr(0, nl), nullptr, false);
  in.remove_prefix(nl + 1);
  JobCheckpoint c;
  try {
    c.job = header.at("job").get<std::string>();
    c.plan_generation = header.at("generation").get<int64_t>();
    c.iteration = header.at("iteration").get<int64_t>();
    c.samples = header.at("samples").get<int64_t>();
    c.elapsed_s = header.at("elapsedSeconds").get<double>();
    c.complete = header.at("complete").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    return damaged(std::string("header: ") + e.what());
  }
  auto read = [&in]<typename T>(std::vector<T>& v) {
    uint64_t n = 0;
    if (in.size() < sizeof n) return false;
    std::memcpy(&n, in.data(), sizeof n);
    in.remove_prefix(sizeof n);
    if (n > in.size() / sizeof(T)) return false;
    v.resize(n);
    std::memcpy(v.data(), in.data(), n * sizeof(T));
    in.remove_prefix(n * sizeof(T));
    return true;
  };
  LedgerState ledger;
  if (!read(c.parameters) || !read(c.optimizer.first) || !read(c.optimizer.second) || !read(c.optimizer.steps) ||
      !read(ledger.pushed) || !read(ledger.iterations) || !read(c.versions) || !in.empty()) {
    return damaged("sections do not add up");
  }
  ledger.workers = static_cast<int>(ledger.iterations.size());
  c.ledger = std::move(ledger);
  return c;
}

}  // namespace

StatusOr<std::string> EncodeCheckpoint(const JobCheckpoint& c) {
  v1::Checkpoint m;
  m.set_job(c.job);
  m.set_plan_generation(c.plan_generation);
  m.set_iteration(c.iteration);
  m.set_samples(c.samples);
  m.set_elapsed_seconds(c.elapsed_s);
  m.set_complete(c.complete);
  m.mutable_parameters()->Add(c.parameters.begin(), c.parameters.end());
  m.mutable_optimizer()->mutable_first()->Add(c.optimizer.first.begin(), c.optimizer.first.end());
  m.mutable_optimizer()->mutable_second()->Add(c.optimizer.second.begin(), c.optimizer.second.end());
  m.mutable_optimizer()->mutable_steps()->Add(c.optimizer.steps.begin(), c.optimizer.steps.end());
  m.mutable_versions()->Add(c.versions.begin(), c.versions.end());
  if (c.ledger) {
    v1::TeamLedger* team = m.mutable_team();
    team->set_workers(c.ledger->workers);
    team->mutable_pushed()->Add(c.ledger->pushed.begin(), c.ledger->pushed.end());
    team->mutable_iterations()->Add(c.ledger->iterations.begin(), c.ledger->iterations.end());
  }
  m.set_energy_joules(c.energy_joules);
  m.set_spec_json(c.spec_json);
  m.set_devices_json(c.devices_json);
  m.set_buffers(c.buffers);
  if (c.module_crc32) m.set_module_crc32(*c.module_crc32);
  m.set_departed_bytes_sent(c.departed_bytes_sent);
  m.set_departed_bytes_received(c.departed_bytes_received);
  m.mutable_class_names()->Add(c.class_names.begin(), c.class_names.end());
  for (const std::vector<int64_t>& shape : c.parameter_shapes) {
    m.add_parameter_shapes()->mutable_dims()->Add(shape.begin(), shape.end());
  }
  if (c.accuracy && c.evaluated_iteration) {
    m.set_accuracy(*c.accuracy);
    m.set_evaluated_iteration(*c.evaluated_iteration);
  }
  if (c.loss) m.set_loss(*c.loss);
  m.set_samples_per_epoch(c.samples_per_epoch);
  for (const WorkerTotals& w : c.workers) {
    v1::WorkerTotals* t = m.add_workers();
    t->set_iteration(w.iteration);
    t->set_samples(w.samples);
    t->set_rows_sent(w.rows_sent);
    t->set_bytes_sent(w.bytes_sent);
    t->set_bytes_received(w.bytes_received);
    t->set_compute_seconds(w.compute_s);
    t->set_stall_seconds(w.stall_s);
    t->set_wall_seconds(w.wall_s);
    t->set_energy_joules(w.energy_j);
    t->set_held_team_seconds(w.held_team_s);
    t->set_stream_read_through(w.stream_read_through);
    t->set_stream_arrived(w.stream_arrived);
    t->set_stream_dropped(w.stream_dropped);
    t->set_stream_wait_seconds(w.stream_wait_s);
    t->set_stream_refused_files(w.stream_refused_files);
    t->set_stream_last_refused(w.stream_last_refused);
    t->set_node(w.node);
    t->set_injected_samples(w.injected);
  }
  // protobuf serialises nothing past INT_MAX bytes: the model and its
  // optimizer's state (Adam's moments: three floats a parameter, about 170
  // million parameters) had been written as a checkpoint of nothing, which
  // the next run refused as another job's (found in review).
  if (const size_t size = m.ByteSizeLong(); size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return FailedPreconditionError("the checkpoint would be " + std::to_string(size >> 20) +
                                   " MiB, more than one can hold (2 GiB): the model and its optimizer's state are "
                                   "too large to be checkpointed");
  }
  // Serialised straight after the magic: a copy of the message, then of the
  // whole, had held four copies of the state at once, where the checkpoint,
  // the message and the bytes are three (found in review).
  std::string out(kMagic);
  out.reserve(kMagic.size() + m.ByteSizeLong() + sizeof(uint32_t));
  m.AppendToString(&out);
  const uint32_t crc = Crc32(std::string_view(out).substr(kMagic.size()));
  out.append(reinterpret_cast<const char*>(&crc), sizeof crc);
  return out;
}

StatusOr<JobCheckpoint> DecodeCheckpoint(std::string_view bytes, const std::string& source) {
  if (bytes.substr(0, kFirstFormatMagic.size()) == kFirstFormatMagic) return DecodeFirstFormat(bytes, source);
  auto damaged = [&](const std::string& why) { return DataLossError(source + ": damaged checkpoint (" + why + ")"); };
  if (bytes.substr(0, kMagic.size()) != kMagic) return damaged("not an edgetrain checkpoint");
  if (bytes.size() < kMagic.size() + sizeof(uint32_t)) return damaged("truncated");
  uint32_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - sizeof stored, sizeof stored);
  const std::string_view message = bytes.substr(kMagic.size(), bytes.size() - kMagic.size() - sizeof stored);
  if (Crc32(message) != stored) return damaged("CRC-32 mismatch: torn or altered");
  v1::Checkpoint m;
  if (!m.ParseFromArray(message.data(), static_cast<int>(message.size()))) return damaged("unreadable message");
  JobCheckpoint c;
  c.job = m.job();
  c.plan_generation = m.plan_generation();
  c.iteration = m.iteration();
  c.samples = m.samples();
  c.elapsed_s = m.elapsed_seconds();
  c.complete = m.complete();
  c.parameters = ToVector<float>(m.parameters());
  c.optimizer.first = ToVector<float>(m.optimizer().first());
  c.optimizer.second = ToVector<float>(m.optimizer().second());
  c.optimizer.steps = ToVector<int64_t>(m.optimizer().steps());
  c.versions = ToVector<int64_t>(m.versions());
  c.energy_joules = m.energy_joules();
  c.spec_json = m.spec_json();
  c.devices_json = m.devices_json();
  c.buffers = m.buffers();
  if (m.has_module_crc32()) c.module_crc32 = m.module_crc32();
  c.departed_bytes_sent = m.departed_bytes_sent();
  c.departed_bytes_received = m.departed_bytes_received();
  c.class_names.assign(m.class_names().begin(), m.class_names().end());
  for (const v1::ParameterShape& shape : m.parameter_shapes()) {
    c.parameter_shapes.push_back(ToVector<int64_t>(shape.dims()));
  }
  if (m.has_accuracy() && m.has_evaluated_iteration()) {
    c.accuracy = m.accuracy();
    c.evaluated_iteration = m.evaluated_iteration();
  }
  if (m.has_loss()) c.loss = m.loss();
  c.samples_per_epoch = m.samples_per_epoch();
  for (const v1::WorkerTotals& t : m.workers()) {
    c.workers.push_back({t.iteration(), t.samples(), t.rows_sent(), t.bytes_sent(), t.bytes_received(),
                         t.compute_seconds(), t.stall_seconds(), t.wall_seconds(), t.energy_joules(),
                         t.held_team_seconds(), t.stream_read_through(), t.stream_arrived(), t.stream_dropped(),
                         t.stream_wait_seconds(), t.stream_refused_files(), t.stream_last_refused(), t.node(),
                         t.injected_samples()});
  }
  if (m.has_team()) {
    c.ledger = LedgerState{m.team().workers(), ToVector<int64_t>(m.team().pushed()),
                           ToVector<int64_t>(m.team().iterations())};
  }
  return c;
}

namespace {

std::string ShapesText(const std::vector<std::vector<int64_t>>& shapes) {
  std::string text;
  for (const std::vector<int64_t>& shape : shapes) {
    text += text.empty() ? "[" : ", [";
    for (size_t d = 0; d < shape.size(); ++d) text += (d ? "x" : "") + std::to_string(shape[d]);
    text += "]";
  }
  return text;
}

}  // namespace

Status ParametersFit(const JobCheckpoint& c, const std::vector<std::vector<int64_t>>& shapes) {
  int64_t parameters = 0;
  for (const std::vector<int64_t>& shape : shapes) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    parameters += n;
  }
  if (static_cast<int64_t>(c.parameters.size()) != parameters) {
    // Shaped, where the checkpoint says how, as own-model.md promises: the
    // counts alone left the layer that changed to be guessed (a new user's trial).
    const bool shaped = !c.parameter_shapes.empty();
    return FailedPreconditionError(
        "holds a model of " + WithThousands(static_cast<int64_t>(c.parameters.size())) + " parameters" +
        (shaped ? " shaped " + ShapesText(c.parameter_shapes) : std::string()) + ", and this job's has " +
        WithThousands(parameters) + (shaped ? " shaped " + ShapesText(shapes) : std::string()));
  }
  if (!c.parameter_shapes.empty() && c.parameter_shapes != shapes) {
    return FailedPreconditionError("holds a model whose parameters are shaped " + ShapesText(c.parameter_shapes) +
                                   ", in that order, and this job's are " + ShapesText(shapes) +
                                   ": its module's layers changed, or their order");
  }
  return Status::Ok();
}

Status SaveCheckpoint(const std::string& path, const JobCheckpoint& c) {
  EDGETRAIN_ASSIGN_OR_RETURN(const std::string encoded, EncodeCheckpoint(c));
  return WriteFileAtomically(path, encoded);
}

StatusOr<std::optional<JobCheckpoint>> LoadCheckpoint(const std::string& path) {
  // Absent only when the system says so: a folder that cannot be looked in
  // (its permissions, a share gone stale) had been taken for one with no
  // checkpoint, and the run started afresh and wrote over it (found in
  // review).
  std::error_code ec;
  const bool there = std::filesystem::exists(path, ec);
  if (ec) return UnavailableError("cannot tell whether " + path + " is there: " + ec.message());
  if (!there) return std::optional<JobCheckpoint>();
  EDGETRAIN_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path));
  EDGETRAIN_ASSIGN_OR_RETURN(JobCheckpoint c, DecodeCheckpoint(bytes, path));
  return std::optional<JobCheckpoint>(std::move(c));
}

}  // namespace edgetrain::agent

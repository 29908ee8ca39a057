#include "core/job_spec.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/duration_text.h"

namespace edgetrain {
namespace {

using Json = nlohmann::json;

template <typename E, size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

constexpr NameTable<ModelKind, 4> kModelNames{{{ModelKind::kMlp, "mlp"},
                                                {ModelKind::kCnn, "cnn"},
                                                {ModelKind::kVgg, "vgg"},
                                                {ModelKind::kTorchScript, "torchscript"}}};
constexpr NameTable<DatasetName, 2> kDatasetNames{
    {{DatasetName::kFashionMnist, "fashion-mnist"}, {DatasetName::kDigits, "digits"}}};
constexpr NameTable<DataFormat, 4> kFormatNames{{{DataFormat::kIdx, "idx"},
                                                 {DataFormat::kCsv, "csv"},
                                                 {DataFormat::kImages, "images"},
                                                 {DataFormat::kNpy, "npy"}}};
constexpr NameTable<PartitionKind, 3> kPartitionNames{
    {{PartitionKind::kIid, "iid"}, {PartitionKind::kDirichlet, "dirichlet"}, {PartitionKind::kLabels, "labels"}}};
constexpr NameTable<ReplicaMoments, 2> kReplicaMomentsNames{
    {{ReplicaMoments::kBfloat16, "bfloat16"}, {ReplicaMoments::kFloat32, "float32"}}};
constexpr NameTable<StreamBuffer, 2> kStreamBufferNames{
    {{StreamBuffer::kTruncate, "truncate"}, {StreamBuffer::kPersist, "persist"}}};
constexpr NameTable<ParallelismMode, 4> kModeNames{{{ParallelismMode::kDataParallel, "dataParallel"},
                                                   {ParallelismMode::kPipeline, "pipeline"},
                                                   {ParallelismMode::kHybrid, "hybrid"},
                                                   {ParallelismMode::kAuto, "auto"}}};
constexpr NameTable<SyncGranularity, 3> kGranularityNames{{{SyncGranularity::kRow, "row"},
                                                           {SyncGranularity::kLayer, "layer"},
                                                           {SyncGranularity::kModel, "model"}}};
constexpr NameTable<SyncPolicy, 4> kPolicyNames{{{SyncPolicy::kRog, "rog"},
                                                  {SyncPolicy::kBsp, "bsp"},
                                                  {SyncPolicy::kSsp, "ssp"},
                                                  {SyncPolicy::kDeadline, "deadline"}}};
constexpr NameTable<Compression, 7> kCompressionNames{{{Compression::kNone, "none"},
                                                       {Compression::kFp16, "fp16"},
                                                       {Compression::kInt8, "int8"},
                                                       {Compression::kInt4, "int4"},
                                                       {Compression::kSign, "sign"},
                                                       {Compression::kTopK, "topk"},
                                                       {Compression::kAdaptive, "adaptive"}}};
constexpr NameTable<RowOrder, 2> kRowOrderNames{
    {{RowOrder::kImportance, "importance"}, {RowOrder::kStaleness, "staleness"}}};
constexpr NameTable<OptimizerKind, 2> kOptimizerNames{
    {{OptimizerKind::kSgd, "sgd"}, {OptimizerKind::kAdam, "adam"}}};

template <typename E, size_t N>
std::string_view Lookup(const NameTable<E, N>& table, E v) {
  for (const auto& [value, name] : table)
    if (value == v) return name;
  return "?";
}

// Reads fields of a JSON object, recording the first error with its field path.
// The spec was validated against the CRD before it got here, so an error means a
// plan file was written by something else or by hand.
class Reader {
 public:
  Reader(const Json& object, std::string path) : object_(object), path_(std::move(path)) {}

  const Json* Find(const char* key) const {
    if (!object_.is_object()) return nullptr;
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  Reader Child(const char* key) const {
    static const Json kEmpty = Json::object();
    const Json* child = Find(key);
    return Reader(child ? *child : kEmpty, path_ + "." + key, status_);
  }
  bool Has(const char* key) const { return Find(key) != nullptr; }

  template <typename T>
  void Get(const char* key, T& out) {
    const Json* v = Find(key);
    if (!v) return Fail(key, "required field is missing");
    Convert(key, *v, out);
  }
  template <typename T>
  void Get(const char* key, std::optional<T>& out) {
    const Json* v = Find(key);
    if (!v) return;
    T value{};
    Convert(key, *v, value);
    out = value;
  }
  template <typename E, size_t N>
  void GetEnum(const char* key, const NameTable<E, N>& table, E& out) {
    std::string name;
    Get(key, name);
    if (!status_->ok()) return;
    for (const auto& [value, n] : table) {
      if (n == name) {
        out = value;
        return;
      }
    }
    Fail(key, "unknown value \"" + name + "\"");
  }
  void GetDuration(const char* key, std::optional<Duration>& out) {
    std::optional<std::string> text;
    Get(key, text);
    if (!text) return;
    auto d = ParseDuration(*text);
    if (!d.ok()) return Fail(key, d.status().message());
    out = *d;
  }

  Status status() const { return *status_; }

 private:
  Reader(const Json& object, std::string path, std::shared_ptr<Status> status)
      : object_(object), path_(std::move(path)), status_(std::move(status)) {}

  void Fail(const char* key, const std::string& why) {
    if (status_->ok()) *status_ = InvalidArgumentError(path_ + "." + key + ": " + why);
  }
  template <typename T>
  void Convert(const char* key, const Json& v, T& out) {
    // A whole number past what the field holds was narrowed in silence:
    // checkpointEvery 4294967297 checkpointed every step (found in review).
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const bool outside = v.is_number_unsigned()  ? !std::in_range<T>(v.get<uint64_t>())
                           : v.is_number_integer() ? !std::in_range<T>(v.get<int64_t>())
                                                   : false;
      if (outside) {
        Fail(key, v.dump() + " is beyond what it takes, " + std::to_string(std::numeric_limits<T>::min()) + " to " +
                      std::to_string(std::numeric_limits<T>::max()));
        return;
      }
      // Nor a number with a fraction or an exponent, which get<T>() casts:
      // 1e10 became -2147483648, and checkpoints stopped (found in review).
      if (v.is_number_float()) {
        const double d = v.get<double>();
        // 2^digits is one past the largest: exact in a double, as the
        // largest of an int64_t is not.
        const double past = std::ldexp(1.0, std::numeric_limits<T>::digits);
        if (!std::isfinite(d) || d != std::trunc(d) || d >= past ||
            d < static_cast<double>(std::numeric_limits<T>::min())) {
          Fail(key, v.dump() + " is not a whole number from " + std::to_string(std::numeric_limits<T>::min()) +
                        " to " + std::to_string(std::numeric_limits<T>::max()));
          return;
        }
        out = static_cast<T>(d);
        return;
      }
    }
    try {
      out = v.get<T>();
    } catch (const Json::exception& e) {
      Fail(key, std::string("wrong type: ") + e.what());
    }
  }
  // A list's values each as one of its type is (a vgg's widths).
  template <typename U>
  void Convert(const char* key, const Json& v, std::vector<U>& out) {
    if (!v.is_array()) return Fail(key, "wrong type: " + std::string(v.type_name()) + ", not a list");
    std::vector<U> values(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      Convert(key, v[i], values[i]);
      if (!status_->ok()) return;
    }
    out = std::move(values);
  }

  const Json& object_;
  std::string path_;
  std::shared_ptr<Status> status_ = std::make_shared<Status>();
};

void ReadModel(Reader model, ModelSpec& out) {
  if (model.Has("torchscript")) {
    out.kind = ModelKind::kTorchScript;
    Reader torchscript = model.Child("torchscript");
    torchscript.Get("path", out.torchscript_path);
    if (torchscript.Has("inputShape")) torchscript.Get("inputShape", out.torchscript_input_shape);
    torchscript.Get("classes", out.torchscript_classes);
    return;
  }
  model.GetEnum("name", kModelNames, out.kind);
  if (model.Has("hidden")) model.Get("hidden", out.hidden);
  if (model.Has("channels")) model.Get("channels", out.channels);
  if (model.Has("widths")) model.Get("widths", out.widths);
}

void ReadData(Reader data, DataSpec& out) {
  if (data.Has("format")) {
    DataSource& files = out.files.emplace();
    data.GetEnum("format", kFormatNames, files.format);
    for (auto [key, split] : {std::pair{"train", &files.train}, std::pair{"test", &files.test}}) {
      Reader f = data.Child(key);
      for (auto [name, field] : {std::pair{"path", &split->path}, std::pair{"features", &split->features},
                                 std::pair{"labels", &split->labels}}) {
        if (f.Has(name)) f.Get(name, *field);
      }
    }
    data.Get("inputShape", files.input_shape);
    data.Get("classes", files.classes);
  } else {
    data.GetEnum("dataset", kDatasetNames, out.dataset);
  }
  data.Get("batchSize", out.batch_size);
  Reader partition = data.Child("partition");
  partition.GetEnum("kind", kPartitionNames, out.partition.kind);
  partition.Get("alpha", out.partition.alpha);
  partition.Get("labelsPerWorker", out.partition.labels_per_worker);
  if (data.Has("stream")) {
    out.stream.emplace();
    Reader stream = data.Child("stream");
    if (stream.Has("ratesPerSecond")) stream.Get("ratesPerSecond", out.stream->rates_per_second);
    stream.Get("directory", out.stream->directory);
    stream.GetEnum("buffer", kStreamBufferNames, out.stream->buffer);
    stream.Get("bufferCapacity", out.stream->buffer_capacity);
    stream.Get("minBatchSize", out.stream->min_batch_size);
  }
  if (data.Has("computeWeighted")) data.Get("computeWeighted", out.compute_weighted);
  if (data.Has("injection")) {
    out.injection.emplace();
    Reader injection = data.Child("injection");
    injection.Get("labelShare", out.injection->label_share);
    injection.Get("batchShare", out.injection->batch_share);
  }
}

// spec.optimizer, read by the job's decoder and alone.
void ReadOptimizer(Reader optimizer, OptimizerSpec& out) {
  optimizer.GetEnum("name", kOptimizerNames, out.kind);
  optimizer.Get("learningRate", out.learning_rate);
  optimizer.Get("momentum", out.momentum);
  optimizer.Get("weightDecay", out.weight_decay);
}

}  // namespace

std::string_view NameOf(ModelKind v) { return Lookup(kModelNames, v); }
std::string_view NameOf(DatasetName v) { return Lookup(kDatasetNames, v); }
std::string_view NameOf(DataFormat v) { return Lookup(kFormatNames, v); }

std::string DescribeData(const DataSpec& data) {
  if (!data.files) return std::string(NameOf(data.dataset));
  const DataFiles& f = data.files->train;
  return std::string(NameOf(data.files->format)) + " data (" + (f.path.empty() ? f.features : f.path) + ")";
}
std::string_view NameOf(PartitionKind v) { return Lookup(kPartitionNames, v); }
std::string_view NameOf(StreamBuffer v) { return Lookup(kStreamBufferNames, v); }
std::string_view NameOf(ReplicaMoments v) { return Lookup(kReplicaMomentsNames, v); }

int StreamMinBatch(const StreamSpec& stream, int batch_size) {
  return std::min(batch_size, stream.min_batch_size.value_or((batch_size + 7) / 8));
}

int64_t StreamBufferCapacity(const StreamSpec& stream, int batch_size) {
  if (stream.buffer == StreamBuffer::kTruncate) return batch_size;
  return std::max<int64_t>(batch_size, stream.buffer_capacity.value_or(int64_t{8} * batch_size));
}
std::string_view NameOf(ParallelismMode v) { return Lookup(kModeNames, v); }
std::string_view NameOf(SyncGranularity v) { return Lookup(kGranularityNames, v); }
std::string_view NameOf(SyncPolicy v) { return Lookup(kPolicyNames, v); }
std::string_view NameOf(Compression v) { return Lookup(kCompressionNames, v); }
std::string_view NameOf(RowOrder v) { return Lookup(kRowOrderNames, v); }
std::string_view NameOf(OptimizerKind v) { return Lookup(kOptimizerNames, v); }

StatusOr<JobSpec> DecodeJobSpec(std::string_view json) {
  Json root = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return InvalidArgumentError("spec: not a JSON object");

  JobSpec spec;
  Reader r(root, "spec");

  ReadModel(r.Child("model"), spec.model);

  ReadData(r.Child("data"), spec.data);

  Reader parallelism = r.Child("parallelism");
  parallelism.GetEnum("mode", kModeNames, spec.parallelism.mode);
  parallelism.Get("workers", spec.parallelism.workers);
  // Added after the plans of running jobs were written: absent, the planner's.
  if (parallelism.Has("stages")) parallelism.Get("stages", spec.parallelism.stages);
  // auto and hybrid split the model and share its batches over the workers'
  // devices; with one worker there is neither, and it is a job of one (the
  // planner, given no device to plan on, failed the run, and the operator
  // would have retried it for ever: a user's trial, and for hybrid a review).
  // A pipeline of one worker is refused (the CRD's rule).
  if ((spec.parallelism.mode == ParallelismMode::kAuto || spec.parallelism.mode == ParallelismMode::kHybrid) &&
      spec.parallelism.workers == 1) {
    spec.parallelism.mode = ParallelismMode::kDataParallel;
  }

  Reader sync = r.Child("sync");
  sync.GetEnum("granularity", kGranularityNames, spec.sync.granularity);
  sync.GetEnum("policy", kPolicyNames, spec.sync.policy);
  sync.Get("stalenessBound", spec.sync.staleness_bound);
  sync.GetEnum("compression", kCompressionNames, spec.sync.compression);
  if (sync.Has("rowOrder")) sync.GetEnum("rowOrder", kRowOrderNames, spec.sync.row_order);
  sync.Get("quorum", spec.sync.quorum);
  sync.Get("deadlineSlack", spec.sync.deadline_slack);

  Reader optimizer = r.Child("optimizer");
  ReadOptimizer(optimizer, spec.optimizer);

  Reader budget = r.Child("budget");
  budget.GetDuration("wallClock", spec.budget.wall_clock);
  budget.Get("epochs", spec.budget.epochs);
  budget.Get("targetAccuracy", spec.budget.target_accuracy);
  budget.Get("energyJoules", spec.budget.energy_joules);

  r.Child("evaluation").Get("everyIterations", spec.evaluation.every_iterations);
  r.Child("evaluation").Get("everySeconds", spec.evaluation.every_seconds);

  Reader ft = r.Child("faultTolerance");
  ft.Get("replicateEvery", spec.fault_tolerance.replicate_every);
  ft.Get("replicateCentralEvery", spec.fault_tolerance.replicate_central_every);
  // Added after the plans of running jobs were written: absent, the default.
  if (ft.Has("replicaMoments")) {
    ft.GetEnum("replicaMoments", kReplicaMomentsNames, spec.fault_tolerance.replica_moments);
  }
  ft.Get("replay", spec.fault_tolerance.replay);
  if (ft.Has("gradientEachMicroBatch")) ft.Get("gradientEachMicroBatch", spec.fault_tolerance.gradient_each_micro_batch);
  ft.Get("checkpointEvery", spec.fault_tolerance.checkpoint_every);
  ft.Get("maxRecoveries", spec.fault_tolerance.max_recoveries);
  std::optional<Duration> grace;
  ft.GetDuration("nodeLossGrace", grace);
  spec.fault_tolerance.node_loss_grace = grace.value_or(Duration::zero());

  r.Child("output").Get("path", spec.output.path);
  r.Get("seed", spec.seed);

  if (!r.status().ok()) return r.status();
  return spec;
}

namespace {

// One part of a spec alone, as the agent's commands take it: errors name
// "<field>.<key>".
template <typename T>
StatusOr<T> DecodePart(std::string_view json, const std::string& field, void (*read)(Reader, T&)) {
  const Json root = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return InvalidArgumentError(field + ": not a JSON object");
  T part;
  Reader r(root, field);
  read(r, part);  // a copy of r, sharing its status
  if (!r.status().ok()) return r.status();
  return part;
}

}  // namespace

StatusOr<ModelSpec> DecodeModelSpec(std::string_view json) { return DecodePart<ModelSpec>(json, "model", ReadModel); }

StatusOr<DataSpec> DecodeDataSpec(std::string_view json) {
  // A manifest's spec.data as written, as the agent's subcommands take it
  // (docs/launch-contract.md): what the CRD defaults and the decoder needs, a
  // batch's size (64) and the partition's kind (iid), is filled in as the API
  // server fills it. Without, `{"dataset": "digits", "batchSize": 32}` was
  // refused for its partition's kind (a new user's trial).
  Json root = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (root.is_object()) {
    if (!root.contains("batchSize")) root["batchSize"] = 64;
    if (!root.contains("partition")) root["partition"] = Json::object();
    if (root["partition"].is_object() && !root["partition"].contains("kind")) root["partition"]["kind"] = "iid";
  }
  return DecodePart<DataSpec>(root.is_discarded() ? std::string(json) : root.dump(), "data", ReadData);
}

StatusOr<OptimizerSpec> DecodeOptimizerSpec(std::string_view json) {
  return DecodePart<OptimizerSpec>(json, "optimizer", ReadOptimizer);
}

}  // namespace edgetrain

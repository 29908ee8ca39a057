#pragma once
// What a TrainingJob asks for, as plain values: the part of the manifest's spec
// that training itself needs. The CRD (crds/trainingjob.yaml) is the source of
// truth for names, ranges and defaults; api/ validates a manifest against it and
// hands the defaulted spec here, so nothing below re-states a default.
// Kubernetes-only fields (placement, pod template) are not part of this.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/time.h"

namespace edgetrain {

enum class ModelKind { kMlp, kCnn, kVgg, kTorchScript };
enum class DatasetName { kFashionMnist, kDigits };
// How a data set's files lay out samples and labels (docs/own-model.md).
enum class DataFormat { kIdx, kCsv, kImages, kNpy };
enum class PartitionKind { kIid, kDirichlet, kLabels };
enum class StreamBuffer { kTruncate, kPersist };
enum class ParallelismMode { kDataParallel, kPipeline, kHybrid, kAuto };
enum class SyncGranularity { kRow, kLayer, kModel };
enum class SyncPolicy { kRog, kBsp, kSsp, kDeadline };
// kAdaptive: each worker chooses top-k or int8 for its pushes, interval by
// interval, by what top-k would keep of its gradient (core/compression_choice.h).
enum class Compression { kNone, kFp16, kInt8, kSign, kTopK, kAdaptive, kInt4 };
enum class RowOrder { kImportance, kStaleness };
enum class OptimizerKind { kSgd, kAdam };

struct ModelSpec {
  ModelKind kind = ModelKind::kMlp;
  std::vector<int> hidden;    // mlp: widths of the hidden layers
  std::vector<int> channels;  // cnn: output channels of each conv block
  // vgg: output channels of each conv, two convs to a pooled block. Defaulted
  // here so that specs written {kind, hidden, channels} may leave it out.
  std::vector<int> widths = {};
  // torchscript (kind kTorchScript only): the module's file, and the sample
  // shape and classes the manifest says it takes, when it says: they are the
  // data's, and CheckModelFitsData refuses a manifest where they differ.
  std::string torchscript_path = {};
  std::vector<int> torchscript_input_shape = {};
  std::optional<int> torchscript_classes = {};
};

struct PartitionSpec {
  PartitionKind kind = PartitionKind::kIid;
  std::optional<double> alpha;  // dirichlet concentration; smaller = more skewed
  std::optional<int> labels_per_worker = {};  // labels: how many labels each worker sees
};

// Samples that arrive as streams (docs/streams.md).
struct StreamSpec {
  std::vector<double> rates_per_second;  // one per worker; empty: each worker's node's (WorkerSlot::stream)
  // A real source instead of an emulated rate: a folder whose worker-RANK/
  // sub-folder receives each worker's samples as CSV files (agent/data/sample_directory.h).
  std::optional<std::string> directory = {};
  // What a worker does with samples that arrive faster than it trains:
  // truncate keeps one batch's worth, persist up to buffer_capacity.
  StreamBuffer buffer = StreamBuffer::kPersist;
  std::optional<int64_t> buffer_capacity = {};  // persist; default StreamBufferCapacity
  std::optional<int> min_batch_size = {};       // default StreamMinBatch
};

// A stream's defaults, from the batch size (its cap): a batch is taken once
// an eighth of one has arrived, and persist keeps eight batches.
int StreamMinBatch(const StreamSpec& stream, int batch_size);
int64_t StreamBufferCapacity(const StreamSpec& stream, int batch_size);

// One split's files. Formats that keep features and labels apart (idx, npy)
// name both; those that keep a sample whole (csv: a file of rows; images: a
// folder of class folders) name `path`.
struct DataFiles {
  std::string path;
  std::string features;
  std::string labels;
};

// A data set from files rather than a built-in one.
struct DataSource {
  DataFormat format = DataFormat::kCsv;
  DataFiles train;
  DataFiles test;
  std::vector<int> input_shape;  // one sample's shape: [C, H, W], [H, W] or [N]
  int classes = 0;               // labels are 0 .. classes-1
};

// Data injection (ScaDLES; core/injection.h): each batch is topped up with
// `batch_share` of its size in samples from `label_share` of the labels its
// worker's part lacks, sent by the coordinator.
// The defaults are what bench/streams measured within 2 points of IID data
// on both non-IID splits over three seeds, where a quarter of a batch was
// 3.7 points short on the split that leaves two labels unseen
// (docs/benchmarks.md); ScaDLES's smaller shares left labels unseen.
struct InjectionSpec {
  double label_share = 1.0;
  double batch_share = 0.5;
};

// Exactly one of `dataset` (a built-in set) and `files` is set; the CRD's rule
// refuses a manifest with both or neither.
struct DataSpec {
  DatasetName dataset = DatasetName::kFashionMnist;
  std::optional<DataSource> files;
  int batch_size = 0;
  PartitionSpec partition;
  std::optional<StreamSpec> stream;
  std::optional<InjectionSpec> injection;  // off when absent
  // DLion's compute-weighted batches (core/batch_sizing.h): each worker's
  // batch follows its measured speed, the team's aggregate kept.
  bool compute_weighted = false;
};

inline constexpr std::string_view kPlannedStages = "planned";

struct ParallelismSpec {
  ParallelismMode mode = ParallelismMode::kDataParallel;
  int workers = 1;
  // A pipeline, hybrid or auto job's stages: the planner's (kPlannedStages),
  // the even split ("even": one device a stage, the layers dealt out
  // evenly), one stage on every device ("data-parallel"), or a layout by
  // hand, "0-1:0,1/2:2" (core/parallelism_choice.h's ParseStageLayout). All
  // but the planner's stay as given: no layers move.
  std::string stages{kPlannedStages};
};

// Whether `stages` (spec.parallelism.stages, or --stages) are kept as given
// rather than the planner's to cut and move.
inline bool StagesFixed(std::string_view stages) { return stages != kPlannedStages; }

struct SyncSpec {
  SyncGranularity granularity = SyncGranularity::kRow;
  SyncPolicy policy = SyncPolicy::kDeadline;  // docs/data-parallelism.md says why
  std::optional<int> staleness_bound;
  Compression compression = Compression::kNone;
  RowOrder row_order = RowOrder::kImportance;
  // deadline (core/round_deadline.h): the share of the counted workers whose
  // push sets a round's deadline, and the slack the rest get; the CRD
  // documents their defaults, which RoundDeadline holds.
  std::optional<double> quorum;
  std::optional<double> deadline_slack;
};

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::kAdam;
  double learning_rate = 0;
  std::optional<double> momentum;
  double weight_decay = 0;
};

struct BudgetSpec {
  std::optional<Duration> wall_clock;
  std::optional<int> epochs;
  std::optional<double> target_accuracy;
  double energy_joules = 0;  // 0: no energy budget
};

struct EvaluationSpec {
  int every_iterations = 0;
  std::optional<double> every_seconds;
};

// How a pipeline stage's replica carries its optimizer's moments. Its weights
// are always float32: they are the model the loss goes on from. The moments
// are a running statistic of the gradients, and bfloat16 keeps their range in
// half the bytes: a replica of 8 bytes a parameter with Adam rather than 12,
// sent sooner in a stage's idle moments, so that less is lost since it.
enum class ReplicaMoments { kBfloat16, kFloat32 };

struct FaultToleranceSpec {
  int replicate_every = 0;
  // The head's own copies of each stage (spec.faultTolerance.
  // replicateCentralEvery); replicate_every paces only the copies relayed on
  // to the neighbouring stage (docs/pipeline.md). Unset, a copy is due
  // every step and paced by what it costs the stage's device
  // (CentralPaced): a stage's only device lost cost 63-85 steps of its
  // layers' updates at one every 100 (bench/recovery).
  std::optional<int> replicate_central_every;
  int CentralEvery() const { return replicate_central_every.value_or(replicate_every > 0 ? 1 : 0); }
  bool CentralPaced() const { return !replicate_central_every && replicate_every > 0; }
  ReplicaMoments replica_moments = ReplicaMoments::kBfloat16;
  bool replay = true;
  // A group's devices send the head each micro-batch's gradient as it is
  // done (spec.faultTolerance.gradientEachMicroBatch): one lost mid-step
  // then takes with it only its micro-batches in flight, at the price of
  // its gradient sent once a micro-batch rather than once a step.
  bool gradient_each_micro_batch = false;
  int checkpoint_every = 0;  // 0: no periodic checkpoints
  int max_recoveries = 0;
  Duration node_loss_grace{};

  // How long an agent keeps trying to reach its coordinator (or a stage its
  // head) before it gives up: the node-loss grace, or two minutes without one.
  Duration ReachGrace() const {
    return node_loss_grace > Duration::zero() ? node_loss_grace : std::chrono::seconds(120);
  }
  // How long a data-parallel worker keeps trying to reach its coordinator,
  // which outlives its node: once the node is declared lost (Kubernetes' own
  // node-monitor grace, 40 s by default, then the node-loss grace) the
  // operator places it anew, and it trains on from its workers' copy of the
  // model, which a worker that gave up would take with it. So the grace
  // twice, and two minutes for the node to be declared lost and a pod to start.
  Duration CoordinatorPatience() const { return 2 * ReachGrace() + std::chrono::minutes(2); }
};

struct OutputSpec {
  std::optional<std::string> path;
};

// "fashion-mnist", or for files "csv data (train.csv)": what a person reads
// in a one-line description of the job.
std::string DescribeData(const DataSpec& data);

struct JobSpec {
  ModelSpec model;
  DataSpec data;
  ParallelismSpec parallelism;
  SyncSpec sync;
  OptimizerSpec optimizer;
  BudgetSpec budget;
  EvaluationSpec evaluation;
  FaultToleranceSpec fault_tolerance;
  OutputSpec output;
  uint64_t seed = 0;
};

// The names used in manifests ("mlp", "fashion-mnist", "dataParallel", ...).
std::string_view NameOf(ModelKind v);
std::string_view NameOf(DatasetName v);
std::string_view NameOf(DataFormat v);
std::string_view NameOf(PartitionKind v);
std::string_view NameOf(StreamBuffer v);
std::string_view NameOf(ReplicaMoments v);
std::string_view NameOf(ParallelismMode v);
std::string_view NameOf(SyncGranularity v);
std::string_view NameOf(SyncPolicy v);
std::string_view NameOf(Compression v);
std::string_view NameOf(RowOrder v);
std::string_view NameOf(OptimizerKind v);

// Decodes a defaulted spec (the JSON form of a manifest's `spec`, as api/ emits it
// and as plan files carry it). Errors name the field path.
StatusOr<JobSpec> DecodeJobSpec(std::string_view json);
// The model alone, as a manifest's spec.model ({"name": "vgg", "widths": [...]}):
// what `edgetrain-agent profile-layers` is told to measure. Errors name
// "model.<field>".
StatusOr<ModelSpec> DecodeModelSpec(std::string_view json);
// The data alone, as a manifest's defaulted spec.data.
StatusOr<DataSpec> DecodeDataSpec(std::string_view json);
// The optimizer alone, as a manifest's spec.optimizer: what profile-layers
// times each layer's step of.
StatusOr<OptimizerSpec> DecodeOptimizerSpec(std::string_view json);

}  // namespace edgetrain

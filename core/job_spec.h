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

#include "core/clock.h"
#include "core/status.h"

namespace edgetrain {

enum class ModelKind { kMlp, kCnn };
enum class DatasetName { kFashionMnist, kDigits };
enum class PartitionKind { kIid, kDirichlet };
enum class ParallelismMode { kDataParallel, kPipeline, kHybrid, kAuto };
enum class SyncGranularity { kRow, kLayer, kModel };
enum class SyncPolicy { kRog, kBsp, kSsp, kDeadline };
enum class LateGradients { kDrop, kFold };
enum class AbsentWorkers { kLeaveOut, kMemory };
enum class Compression { kNone, kFp16, kInt8, kSign, kTopK };
enum class RowOrder { kImportance, kStaleness };
enum class OptimizerKind { kSgd, kAdam };

struct ModelSpec {
  ModelKind kind = ModelKind::kMlp;
  std::vector<int> hidden;    // mlp: widths of the hidden layers
  std::vector<int> channels;  // cnn: output channels of each conv block
};

struct PartitionSpec {
  PartitionKind kind = PartitionKind::kIid;
  std::optional<double> alpha;  // dirichlet concentration; smaller = more skewed
};

struct StreamSpec {
  std::vector<double> rates_per_second;  // one per worker
};

struct DataSpec {
  DatasetName dataset = DatasetName::kFashionMnist;
  int batch_size = 0;
  PartitionSpec partition;
  std::optional<StreamSpec> stream;
};

struct ParallelismSpec {
  ParallelismMode mode = ParallelismMode::kDataParallel;
  int workers = 1;
};

struct SyncSpec {
  SyncGranularity granularity = SyncGranularity::kRow;
  SyncPolicy policy = SyncPolicy::kRog;
  std::optional<int> staleness_bound;
  Compression compression = Compression::kNone;
  RowOrder row_order = RowOrder::kImportance;
  // deadline (docs/data-parallelism.md, "Rounds that close at a deadline"):
  // the share of the active workers whose whole push opens a round's
  // deadline, and how much longer than they took the rest are given.
  double quorum = 0.5;
  double deadline_slack = 0.5;
  LateGradients late_gradients = LateGradients::kDrop;
  AbsentWorkers absent_workers = AbsentWorkers::kLeaveOut;
  // deadline: while a round is open, a worker whose gradient is in may
  // compute another on the same model, up to this many a round, each counted
  // in the round's mean if it arrives before the round closes.
  int batches_per_round = 1;
  // deadline with stalenessBound S > 0: a worker computes round t on the
  // model of round t - 1 - S at the oldest; with `predict`, on that model
  // moved on by its last steps to where it will be when its gradient is
  // applied (weight prediction).
  bool predict = false;
  // deadline: a worker whose uplink is slower than the quorum's pushes the
  // most important rows its link carries in the time the quorum's take, and
  // keeps the rest for a later round (per-link sizing, error feedback).
  bool link_sized_pushes = false;
  // deadline with local steps: each worker steps its own model with the
  // job's optimizer, at most this many times on one global model (0: no
  // local steps, one fresh gradient a round), and pushes what it moved; the
  // coordinator moves the global model by the mean of the pushes times the
  // outer learning rate, with Nesterov momentum when it is above 0.
  int local_steps = 0;
  double outer_learning_rate = 1.0;
  double outer_momentum = 0.0;
  // Set: the workers' local steps are plain SGD at this rate, their pushes
  // the sum of their gradients, and the job's optimizer runs at the
  // coordinator on the mean of the pushes (server-side Adam, FedAdam).
  std::optional<double> inner_learning_rate;
  // Local steps: a worker computes on the global model moved on by this
  // many of its last steps (0: on the model as it came).
  double lookahead = 0;
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

struct FaultToleranceSpec {
  int replicate_every = 0;
  bool replay = true;
  int checkpoint_every = 0;  // 0: no periodic checkpoints
  int max_recoveries = 0;
  Duration node_loss_grace{};
};

struct OutputSpec {
  std::optional<std::string> path;
};

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
std::string_view NameOf(PartitionKind v);
std::string_view NameOf(ParallelismMode v);
std::string_view NameOf(SyncGranularity v);
std::string_view NameOf(SyncPolicy v);
std::string_view NameOf(Compression v);
std::string_view NameOf(RowOrder v);
std::string_view NameOf(LateGradients v);
std::string_view NameOf(AbsentWorkers v);
std::string_view NameOf(OptimizerKind v);

// Decodes a defaulted spec (the JSON form of a manifest's `spec`, as api/ emits it
// and as plan files carry it). Errors name the field path.
StatusOr<JobSpec> DecodeJobSpec(std::string_view json);

}  // namespace edgetrain

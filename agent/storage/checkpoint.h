#pragma once
// A job's checkpoint: everything needed to resume it where it stood — the
// model, the optimizer's state, the job's counters and, for a data-parallel
// team, the staleness ledger. The same for a job of one and a team's
// coordinator (agent/job_driver.h writes both). On disk: a magic line, the
// edgetrain.v1.Checkpoint message (proto/edgetrain/v1/checkpoint.proto), and
// the CRC-32 of the message, written atomically (atomic_file.h); a torn or
// damaged file is refused as DATA_LOSS instead of resumed from. Checkpoints of
// the first format (before 0.2) are still read.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/row_optimizer.h"
#include "core/team_accounts.h"
#include "core/status.h"

namespace edgetrain::agent {

// What a team's coordinator adds: who pushed what (core/staleness_ledger.h).
struct LedgerState {
  int workers = 0;
  std::vector<int64_t> pushed;      // workers * rows
  std::vector<int64_t> iterations;  // per worker
};

struct JobCheckpoint {
  std::string job;
  int64_t plan_generation = 0;
  int64_t iteration = 0;  // the job's, when written
  int64_t samples = 0;
  double elapsed_s = 0;   // of training, over every run so far
  bool complete = false;  // written when the job ended: nothing to resume
  std::vector<float> parameters;
  OptimizerState optimizer;
  std::vector<int64_t> versions;  // per row: steps applied
  std::optional<LedgerState> ledger;  // a team's only
  double energy_joules = 0;           // modelled, over every run so far
  std::vector<WorkerTotals> workers;  // a team's: what each has done
  std::string spec_json;              // the spec it was written under; empty in older checkpoints
  std::string devices_json;           // the devices its run was started on (JobPlan's devices_record); may be empty
  // The last evaluation before it was written, and of which iteration; none in older checkpoints.
  std::optional<double> accuracy;
  std::optional<int64_t> evaluated_iteration;
  std::optional<double> loss;  // the training loss as smoothed when it was written; none before any step
  // Samples a pass over the training data trained then (TrainingEngine::
  // SamplesPerEpoch); 0 in older checkpoints.
  int64_t samples_per_epoch = 0;
  // A job of one's model's buffers (Trainer::SaveBuffers); empty without
  // them, and in older checkpoints.
  std::string buffers;
  // Its parameter tensors' shapes, in the order `parameters` holds them;
  // empty in older checkpoints.
  std::vector<std::vector<int64_t>> parameter_shapes;
  // A TorchScript job's module file's CRC-32 when it was written (ModuleCrc);
  // none for a built-in model, and in older checkpoints.
  std::optional<uint32_t> module_crc32;
  // A pipeline's: bytes of devices of the runs before that the run which
  // wrote it had not, which no row of `workers` carries on.
  int64_t departed_bytes_sent = 0, departed_bytes_received = 0;
  // The classes' names then, label i the i-th; empty where the data names
  // none, and in older checkpoints.
  std::vector<std::string> class_names;
};

// FailedPrecondition for a checkpoint larger than a protobuf message can be
// (2 GiB): serialised, it was empty, and written as a checkpoint of nothing.
StatusOr<std::string> EncodeCheckpoint(const JobCheckpoint& c);
StatusOr<JobCheckpoint> DecodeCheckpoint(std::string_view bytes, const std::string& source);

// FailedPrecondition where `c` holds a model of other than `shapes`' floats,
// saying both counts: a user who exported their module anew with other
// layers and resumed was told only "a different model, optimizer or team"
// (a user's trial). And where it holds as many, shaped otherwise: a module
// whose layers were registered in another order took up the checkpoint's
// weights into the wrong ones, 0.81 accuracy falling to 0.22, unsaid
// (another).
Status ParametersFit(const JobCheckpoint& c, const std::vector<std::vector<int64_t>>& shapes);

Status SaveCheckpoint(const std::string& path, const JobCheckpoint& c);
// nullopt when there is no checkpoint at `path`.
StatusOr<std::optional<JobCheckpoint>> LoadCheckpoint(const std::string& path);

}  // namespace edgetrain::agent

#pragma once
// The coordinator's checkpoint: everything needed to resume a data-parallel job
// where it stood — the model, the optimizer's state, the staleness ledger and the
// job's counters. Written atomically (agent/storage/atomic_file.h) and sealed with
// a checksum, so a torn or damaged file is refused as DATA_LOSS instead of
// resuming from garbage.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/row_optimizer.h"
#include "core/status.h"

namespace edgetrain::agent {

struct CoordinatorCheckpoint {
  std::string job;
  int64_t generation = 0;
  int64_t iteration = 0;  // the team's, when written
  int64_t samples = 0;
  double elapsed_s = 0;
  bool complete = false;  // written when the job ended: nothing to resume
  std::vector<float> parameters;
  OptimizerState optimizer;
  std::vector<int64_t> pushed;      // staleness ledger, workers * rows
  std::vector<int64_t> iterations;  // per worker
  std::vector<int64_t> versions;    // per row
};

std::string EncodeCheckpoint(const CoordinatorCheckpoint& c);
StatusOr<CoordinatorCheckpoint> DecodeCheckpoint(std::string_view bytes, const std::string& source);

Status SaveCheckpoint(const std::string& path, const CoordinatorCheckpoint& c);
// nullopt when there is no checkpoint at `path`.
StatusOr<std::optional<CoordinatorCheckpoint>> LoadCheckpoint(const std::string& path);

}  // namespace edgetrain::agent

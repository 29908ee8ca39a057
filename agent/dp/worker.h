#pragma once
// A worker of row-granular data parallelism.
//
// It computes gradients on its own partition of the data, adds them to a
// residual per row (error feedback: what it has computed and not yet sent), and
// pushes rows in priority order (core/row_scheduler.h) within what its uplink
// carries in one of its iterations, so pushing overlaps the next computation. It
// computes iteration t only when every row of its model copy has a clock of at
// least t - 1 - S (core/staleness_ledger.h); while it waits it counts stall time.
// When its stream breaks it reconnects, and a Welcome — at the start or after
// being counted out — replaces its whole model and restarts it where the team is.
//
// Threads: the caller's computes (Run); one receives updates; one sends pushes.

#include <atomic>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "agent/data/dataset.h"
#include "agent/torch/trainer.h"
#include "agent/telemetry/metrics.h"
#include "agent/transport/link_gate.h"
#include "agent/transport/transport.h"
#include "core/clock.h"
#include "core/job_plan.h"
#include "core/row_codec.h"
#include "core/row_scheduler.h"

namespace edgetrain::agent {

struct WorkerOptions {
  int rank = 0;
  std::string coordinator;  // HOST:PORT
  TransportSecurity security;
  // Fault injection: the worker's uplink passes this gate (tests, drills).
  LinkGate* gate = nullptr;
  // Where its metrics go (served at /metrics); a private registry when null.
  MetricsRegistry* metrics = nullptr;
};

struct WorkerSummary {
  int64_t iterations = 0;
  int64_t samples = 0;
  double compute_s = 0;
  double stall_s = 0;
  double wall_s = 0;
  int64_t rows_sent = 0;
  int64_t bytes_sent = 0;
  int reconnects = 0;
  double energy_joules = 0;  // modelled
  std::string stop_reason;
};

// Trains until the coordinator says stop or `cancel` is set.
StatusOr<WorkerSummary> RunWorker(const JobPlan& plan, const WorkerOptions& options, Trainer& trainer,
                                  const Dataset& train, Clock& clock, std::ostream& log,
                                  const std::atomic<bool>& cancel);

}  // namespace edgetrain::agent

#pragma once
// A worker of row-granular data parallelism.
//
// It computes gradients on its own partition of the data and pushes them row
// by row (core/push_composer.h), within what its uplink carries in one of its
// iterations, so pushing overlaps the next computation. It computes iteration
// t only when every row of its model copy is fresh enough for t
// (core/model_copy.h); while it waits it counts stall time. When its stream
// breaks it reconnects; a Welcome — at the start, or after being counted out —
// replaces its whole model and restarts it where the team is.
//
// Threads: the caller's computes (Run); one receives updates; one sends pushes.

#include <atomic>
#include <functional>
#include <limits>
#include <optional>
#include <ostream>
#include <string>

#include "agent/data/dataset.h"
#include "agent/telemetry/metrics.h"
#include "agent/torch/trainer.h"
#include "agent/transport/link_gate.h"
#include "agent/transport/transport.h"
#include "core/bandwidth_trace.h"
#include "core/stream_rate.h"
#include "core/clock.h"
#include "core/job_plan.h"

namespace edgetrain::agent {

// The worker's waits; long in production, short where a test needs it.
struct WorkerTimings {
  // How long one attempt to reach the coordinator waits.
  Duration connect_attempt = std::chrono::seconds(1);
  // A worker with nothing new still pushes this often: rows that did not fit
  // the last push go out on an idle link, and the coordinator hears that it
  // is alive while it waits for rows (its deadline counts pushes).
  Duration idle_push = std::chrono::milliseconds(20);
  // A stalled compute loop looks again at least this often.
  Duration stall_recheck = std::chrono::milliseconds(50);
};

struct WorkerOptions {
  int rank = 0;
  CoordinatorConnector* coordinator = nullptr;  // required
  // Its emulated uplink, worker to coordinator, which it shapes; none: the
  // link is real, unshaped, or shaped by the kernel.
  std::optional<BandwidthTrace> uplink;
  // The most its link ever carries, when known (an emulated link's trace
  // peak, whoever shapes it): no estimate of it is reported above this.
  double link_peak_mbps = std::numeric_limits<double>::infinity();
  // spec.data.stream: the rate its samples arrive at (the job's, or its
  // node's); none: the job's ratesPerSecond for its rank.
  std::optional<StreamRate> stream_rate;
  // Fault injection: the worker's uplink passes this gate (tests, drills).
  LinkGate* gate = nullptr;
  // Where its metrics go (served at /metrics); a private registry when null.
  MetricsRegistry* metrics = nullptr;
  WorkerTimings timings;
  // What its emulated device costs a step on (agent/emulated_device.h): the
  // computing thread's CPU clock; none: the clock's time.
  std::function<double()> thread_cpu_seconds;
};

struct WorkerSummary {
  int64_t iterations = 0;  // its own: a fast worker makes more than the team's
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

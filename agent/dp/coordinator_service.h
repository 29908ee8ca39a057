#pragma once
// The coordinator's side of its workers' streams: the thin layer between the
// transport and the team's state (coordinator.h). For each stream it checks
// the hello, asks for the worker's copy of the model when the coordinator
// would train on from it, sends the Welcome, then reads pushes on the stream's own thread
// and sends updates from a thread of its own; it turns messages into plain
// values and back, cuts updates into parts, and shapes each worker's downlink
// when its link is emulated.

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "agent/dp/batch_sizer.h"
#include "agent/dp/coordinator.h"
#include "agent/dp/injection_sender.h"
#include "agent/transport/transport.h"
#include "core/bandwidth_trace.h"
#include "core/clock.h"
#include "core/trace_shaper.h"

namespace edgetrain::agent {

class CoordinatorService final : public WorkerSessions {
 public:
  // `downlinks[w]`: worker w's emulated link, coordinator to worker, which
  // follows its trace from now on; none: unshaped.
  CoordinatorService(const JobPlan& plan, Coordinator& coordinator, Clock& clock,
                     const std::vector<std::optional<BandwidthTrace>>& downlinks);

  Status Admit(const v1::Hello& hello) override;
  Status Serve(const v1::Hello& hello, WorkerStream& stream) override;
  // Twice the largest message a worker of this model sends (LargestWorkerMessage),
  // and a MiB: what is larger is refused by the transport, uncounted; what
  // lies between is refused here, counted (too_big).
  int64_t LargestMessageRead() const override;

  // Data injection (spec.data.injection): the workers' updates carry samples
  // from the pool kept of `train`, which outlives this service.
  void InjectFrom(const Dataset& train);

  // A new generation of the plan (Coordinator::AdoptPlan), with its workers'
  // emulated links: streams opened from now on follow the new ones.
  Status AdoptPlan(const JobPlan& next, const std::vector<std::optional<BandwidthTrace>>& downlinks);

 private:
  void SendLoop(int w, uint64_t stream_number, WorkerStream& stream, bool shaped_here);
  // Asks `w` for its copy of the model (SendModel, on `stream`), reads the
  // answer (on `raw_stream`) and hands it to the coordinator: w's Welcome.
  StatusOr<WelcomeMessage> TakeModelOf(int w, uint64_t stream_number, WorkerStream& stream, WorkerStream& raw_stream);

  const JobPlan& plan_;
  Coordinator& coordinator_;
  // The largest message a worker of this model sends: its copy of the model
  // (every row float32, with its framing), which a push never exceeds.
  const int64_t largest_worker_message_;
  Clock& clock_;
  std::mutex mu_;
  // Per worker; null: unshaped. Guarded by mu_; a stream keeps the one it opened with.
  std::vector<std::shared_ptr<TraceShaper>> downlinks_;
  std::unique_ptr<InjectionSender> injection_;  // set before the first stream is served
  std::unique_ptr<BatchSizer> batch_sizer_;     // spec.data.computeWeighted
};

}  // namespace edgetrain::agent

#pragma once
// What the agents' own transport costs a message and a byte, measured on this
// machine over a real gRPC stream on loopback, shaped as a pipeline's
// messages travel: posted by one thread to a sending thread, received by a
// receiving thread that wakes the one waiting (agent/pipeline/stage_runner.cc),
// answered by the other end's serving thread. The pipeline planner counts it
// beside the layers' compute (core/transport_cost.h). Timed on an idle
// machine, it misses what the runtime spends around its messages when every
// agent computes at once (docs/pipeline.md, the cost model).

#include <cstdint>

#include "core/transport_cost.h"
#include "core/status.h"

namespace edgetrain::agent {

struct TransportProbeOptions {
  int round_trips = 100;            // of an empty message; the median counts
  int64_t large_bytes = 1 << 20;    // a large message's payload, for the stream's rate
  int large_round_trips = 10;       // of it; the median counts
};

// message_s: half the median round trip of an empty message; bytes_per_s: the
// large message's bytes over half what its round trip took beyond an empty
// one's (0, not limited, when no slower). An error when no loopback stream
// could be opened.
StatusOr<TransportCost> MeasureTransport(const TransportProbeOptions& options = {});

}  // namespace edgetrain::agent

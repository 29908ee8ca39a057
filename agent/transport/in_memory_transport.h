#pragma once
// Streams between a coordinator and its workers inside one process, on a
// clock: the transport of the engine's tests, where a coordinator and N workers
// run as threads of a DeterministicClock (core/deterministic_clock.h) and an
// hour of a team's life takes milliseconds. It keeps gRPC's contract as
// agent/transport/transport.h states it: a stream opens with a hello that the
// coordinator admits or refuses with a status, delivers in order, and ends for
// both sides when either closes it or the server shuts down. Messages are
// copied, as if serialized.

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/transport/transport.h"
#include "core/clock.h"

namespace edgetrain::agent {

class InMemoryNetwork {
 public:
  explicit InMemoryNetwork(Clock& clock);
  ~InMemoryNetwork();

  // Serves `sessions` at `address`, a name; each stream on a thread of the clock's.
  StatusOr<std::unique_ptr<TrainingServer>> Serve(const std::string& address, WorkerSessions& sessions);
  // Reaches the server at `address` once there is one.
  std::unique_ptr<CoordinatorConnector> Connector(const std::string& address);
  // Hears every message a coordinator reads from its streams from now on (a
  // test's count of what was delivered). Set before streams open.
  void OnPushRead(std::function<void(const v1::WorkerMessage&)> tap);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace edgetrain::agent

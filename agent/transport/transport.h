#pragma once
// How agents talk, without saying over what. The data-parallel engine sees only
// these streams of edgetrain.v1 messages; gRPC lives in grpc_transport.cc alone,
// link shaping in shaped_stream.h, and no LibTorch type crosses here.

#include <functional>
#include <memory>
#include <string>

#include "core/clock.h"
#include "core/status.h"
#include "edgetrain/v1/training.pb.h"

namespace edgetrain::agent {

// Where credentials come from: the one place TLS is switched on.
struct TransportSecurity {
  bool tls = false;
  std::string ca_pem;    // to verify the peer
  std::string cert_pem;  // our certificate and key (server; client for mutual TLS)
  std::string key_pem;
};

// A worker's stream to its coordinator. One thread may Send while another
// Receives; neither may be called from two threads at once.
class CoordinatorStream {
 public:
  virtual ~CoordinatorStream() = default;
  virtual Status Send(const v1::WorkerMessage& message) = 0;
  // Blocks for the next message. When the stream has ended: the coordinator's
  // status (e.g. FAILED_PRECONDITION for a refused hello), or CANCELLED after Close.
  virtual StatusOr<v1::CoordinatorMessage> Receive() = 0;
  // Ends the stream from this side; a blocked Receive returns.
  virtual void Close() = 0;
};

// The coordinator's end of one worker's stream.
class WorkerStream {
 public:
  virtual ~WorkerStream() = default;
  virtual Status Send(const v1::CoordinatorMessage& message) = 0;
  // Blocks for the next message; an error once the worker has gone.
  virtual StatusOr<v1::WorkerMessage> Receive() = 0;
};

// What the coordinator does with a stream: Admit decides on the hello (a non-OK
// status refuses the stream with that status); Serve then runs on the stream's
// own thread until the worker leaves or the job ends.
class WorkerSessions {
 public:
  virtual ~WorkerSessions() = default;
  virtual Status Admit(const v1::Hello& hello) = 0;
  virtual Status Serve(const v1::Hello& hello, WorkerStream& stream) = 0;
};

class TrainingServer {
 public:
  virtual ~TrainingServer() = default;
  // The bound address with the port the OS chose.
  virtual const std::string& address() const = 0;
  // Ends every stream (their Serve calls see errors) and stops accepting.
  virtual void Shutdown() = 0;
};

StatusOr<std::unique_ptr<TrainingServer>> StartTrainingServer(const std::string& address,
                                                              const TransportSecurity& security,
                                                              WorkerSessions& sessions);

// How a worker reaches its coordinator: over gRPC, or inside a test's process
// (in_memory_transport.h).
class CoordinatorConnector {
 public:
  virtual ~CoordinatorConnector() = default;
  // Opens a stream, waiting up to `timeout` for the coordinator to be
  // reachable. The caller sends the Hello.
  virtual StatusOr<std::unique_ptr<CoordinatorStream>> Connect(Duration timeout) = 0;
  // Where the coordinator is, for messages.
  virtual const std::string& address() const = 0;
};

// The coordinator at `address` (HOST:PORT), over gRPC.
std::unique_ptr<CoordinatorConnector> GrpcConnector(std::string address, TransportSecurity security);

// The hello this build speaks, and the check every coordinator applies to one.
v1::Hello MakeHello(const std::string& job, int64_t plan_generation, int rank);
// A hello's plan generation must lie between the one its rank's slot was given
// at (`slot_since`) and the job's current one.
Status CheckHello(const v1::Hello& hello, const std::string& job, int64_t slot_since, int64_t plan_generation,
                  int world);
// Whether CheckHello's refusal (as it crossed the wire) says the coordinator
// has not adopted the worker's newer plan yet: worth asking again, but only
// once the kubelet may have refreshed the coordinator's copy, not at once.
bool CoordinatorBehindPlan(const Status& refusal);

}  // namespace edgetrain::agent

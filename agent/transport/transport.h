#pragma once
// How agents talk, without saying over what. The data-parallel engine sees only
// these streams of edgetrain.v1 messages; gRPC lives in grpc_transport.cc alone,
// link shaping in shaped_stream.h, and no LibTorch type crosses here.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/status.h"
#include "edgetrain/v1/training.pb.h"
#include "pki/tls_folder.h"

namespace edgetrain::agent {

// Where credentials come from: the one place TLS is switched on. A team's
// agents talk over mutual TLS with the job's identity (pki/job_identity.h);
// plaintext only when a person asked for it (--insecure).
struct TransportSecurity {
  bool tls = false;
  std::string job;       // the identity a peer's certificate must carry
  pki::TlsFolder files;  // the job's authority, our certificate and key; no
                         // certificate (empty paths) only to test a peer without one
  Duration reload = std::chrono::seconds(60);  // how often the files are looked at again (a rotation)

  static TransportSecurity Insecure() { return {}; }
  static TransportSecurity MutualTls(std::string job, const std::string& tls_dir, Duration reload) {
    return {true, std::move(job), pki::TlsFolderAt(tls_dir), reload};
  }
};

// A connection turned away before its hello: its certificate was not the job's.
struct RefusedPeer {
  std::string address;  // gRPC's peer string (ipv4:10.0.0.2:51234)
  std::string reason;   // the metric's label (pki::ReasonOf)
  std::string detail;   // what its certificate said
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
  // Ends the stream from this side, for a worker taken for lost while its
  // stream is still open (silent behind a dead link): a Send blocked on the
  // worker's full window and a blocked Receive return at once, and a worker
  // whose link comes back finds its stream ended. Any thread may call it.
  virtual void Cut() = 0;
};

// What the coordinator does with a stream: Admit decides on the hello (a non-OK
// status refuses the stream with that status); Serve then runs on the stream's
// own thread until the worker leaves or the job ends.
class WorkerSessions {
 public:
  virtual ~WorkerSessions() = default;
  virtual Status Admit(const v1::Hello& hello) = 0;
  virtual Status Serve(const v1::Hello& hello, WorkerStream& stream) = 0;
  // The largest message the transport reads in from a peer of these
  // sessions; a larger one it refuses (gRPC: RESOURCE_EXHAUSTED to the
  // sender) before it is parsed. Whole models and a pipeline's activations
  // need far more than gRPC's 4 MiB default.
  virtual int64_t LargestMessageRead() const { return kLargestTransportMessage; }
  static constexpr int64_t kLargestTransportMessage = 512 * 1024 * 1024;
};

// Told of each connection the transport refused for its identity: the agent
// logs it and counts it (RefusalReport, agent/telemetry).
class RefusalObserver {
 public:
  virtual ~RefusalObserver() = default;
  virtual void Refused(const RefusedPeer& peer) = 0;
};

class TrainingServer {
 public:
  virtual ~TrainingServer() = default;
  // The bound address with the port the OS chose.
  virtual const std::string& address() const = 0;
  // Ends every stream (their Serve calls see errors) and stops accepting.
  virtual void Shutdown() = 0;
};

// With `keepalive`, the server pings each peer after that long without a
// word and ends its streams when the ping goes unanswered as long: a pipeline
// head blocked writing to a device behind a dark link, or holding its half-
// open stream, learns of it then, where it had waited for TCP to give up,
// about 15 minutes (found in review).
StatusOr<std::unique_ptr<TrainingServer>> StartTrainingServer(const std::string& address,
                                                              const TransportSecurity& security,
                                                              WorkerSessions& sessions, RefusalObserver& refusals,
                                                              std::optional<Duration> keepalive = std::nullopt);

// How a worker reaches its coordinator: over gRPC, or inside a test's process
// (in_memory_transport.h).
class CoordinatorConnector {
 public:
  virtual ~CoordinatorConnector() = default;
  // Opens a stream, waiting up to `timeout` for the coordinator to be
  // reachable. The caller sends the Hello. Unavailable: not reachable now,
  // worth trying again; InvalidArgument: this agent refused what the
  // coordinator's certificate is, which trying again does not change.
  virtual StatusOr<std::unique_ptr<CoordinatorStream>> Connect(Duration timeout) = 0;
  // Where the coordinator is, for messages.
  virtual const std::string& address() const = 0;
};

// The coordinator at `address` (HOST:PORT), over gRPC. A stream with no word
// for `keepalive` is pinged, and ends when no answer comes within as long
// again (AgentFlags::keepalive).
std::unique_ptr<CoordinatorConnector> GrpcConnector(std::string address, TransportSecurity security,
                                                    Duration keepalive = std::chrono::seconds(10));

// The hello this build speaks, and the check every coordinator applies to one.
v1::Hello MakeHello(const std::string& job, int64_t plan_generation, int rank);
// A hello's plan generation must lie between the one its rank's slot was given
// at (`slot_since`) and the job's current one.
Status CheckHello(const v1::Hello& hello, const std::string& job, int64_t slot_since, int64_t plan_generation,
                  int world);
// CheckHello's test that a hello of `generation` is of its slot's plan, not
// one from before the slot was given anew at `slot_since`.
Status CheckSlotHeld(int64_t generation, int64_t slot_since, int64_t plan_generation);
// Whether CheckHello's refusal (as it crossed the wire) says the coordinator
// has not adopted the worker's newer plan yet: worth asking again, but only
// once the kubelet may have refreshed the coordinator's copy, not at once.
bool CoordinatorBehindPlan(const Status& refusal);

}  // namespace edgetrain::agent

// The gRPC implementation of agent/transport: the only file that includes gRPC.
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <utility>

#include "agent/transport/peer_protocol.h"
#include "agent/transport/transport.h"
#include "http/socket_address.h"
#include "pki/job_identity.h"
#include "edgetrain/v1/training.grpc.pb.h"

namespace edgetrain::agent {
namespace {

// Messages carry whole models on a (re)join; the default 4 MiB limit is too small.
constexpr int kMaxMessageBytes = 512 * 1024 * 1024;

Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return Status::Ok();
  StatusCode code = StatusCode::kUnavailable;
  switch (s.error_code()) {
    case grpc::StatusCode::FAILED_PRECONDITION: code = StatusCode::kFailedPrecondition; break;
    // Turned away for its certificate: no retry will change that.
    case grpc::StatusCode::UNAUTHENTICATED: code = StatusCode::kFailedPrecondition; break;
    case grpc::StatusCode::INVALID_ARGUMENT: code = StatusCode::kInvalidArgument; break;
    case grpc::StatusCode::CANCELLED: code = StatusCode::kCancelled; break;
    case grpc::StatusCode::ABORTED: code = StatusCode::kAborted; break;
    case grpc::StatusCode::DEADLINE_EXCEEDED: code = StatusCode::kDeadlineExceeded; break;
    // A peer that has no such call (another program at the address, or an
    // agent of another version), and a message larger than the peer reads:
    // the same again at every try, where taken for a link's failure they
    // were retried for the whole grace (found in review).
    case grpc::StatusCode::UNIMPLEMENTED: code = StatusCode::kFailedPrecondition; break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      if (s.error_message().find("larger than max") != std::string::npos) code = StatusCode::kFailedPrecondition;
      break;
    default: break;
  }
  return Status(code, s.error_message());
}

grpc::Status ToGrpc(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  switch (s.code()) {
    case StatusCode::kFailedPrecondition: return {grpc::StatusCode::FAILED_PRECONDITION, s.message()};
    case StatusCode::kInvalidArgument: return {grpc::StatusCode::INVALID_ARGUMENT, s.message()};
    case StatusCode::kCancelled: return {grpc::StatusCode::CANCELLED, s.message()};
    case StatusCode::kAborted: return {grpc::StatusCode::ABORTED, s.message()};
    default: return {grpc::StatusCode::UNAVAILABLE, s.message()};
  }
}

// Whole seconds, rounded up, as the credentials watch says them.
unsigned ReloadSeconds(const TransportSecurity& security) {
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::chrono::ceil<std::chrono::seconds>(security.reload).count()));
}

// gRPC watches the files and takes a replaced certificate up for new
// handshakes: a rotation leaves open streams as they are.
std::shared_ptr<grpc::experimental::FileWatcherCertificateProvider> WatchFiles(const TransportSecurity& security) {
  const pki::TlsFolder& f = security.files;
  if (f.cert_path.empty()) {
    return std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(f.ca_path, ReloadSeconds(security));
  }
  return std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(f.key_path, f.cert_path, f.ca_path,
                                                                              ReloadSeconds(security));
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const TransportSecurity& security) {
  if (!security.tls) return grpc::InsecureServerCredentials();
  grpc::experimental::TlsServerCredentialsOptions options(WatchFiles(security));
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  // The handshake asks for the worker's certificate and proves it holds the
  // key; whether the certificate is this job's is judged per stream
  // (GrpcTrainService::Train), so that a refusal has a reason, a log line and
  // a metric rather than a failed handshake nobody hears of.
  options.set_cert_request_type(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_BUT_DONT_VERIFY);
  return grpc::experimental::TlsServerCredentials(options);
}

// Why a worker last refused the coordinator it dialled, if it did: set by
// the verifier on gRPC's threads, taken by the connector once the attempt
// has failed.
class CoordinatorRefusal {
 public:
  void Set(pki::PeerCheck check) {
    std::lock_guard lock(mu_);
    last_ = std::move(check);
  }
  bool Refused() {
    std::lock_guard lock(mu_);
    return last_.has_value();
  }
  std::optional<pki::PeerCheck> Take() {
    std::lock_guard lock(mu_);
    return std::exchange(last_, std::nullopt);
  }

 private:
  std::mutex mu_;
  std::optional<pki::PeerCheck> last_;
};

// The coordinator must hold a certificate of this job's authority that names
// the job, whatever address was dialled. It is judged as the coordinator
// judges a worker's (pki::CheckPeer, against the authority as its file holds
// it now) in place of gRPC's own check, which fails the handshake without
// saying why: a worker given another job's credentials retried for its
// whole grace with nothing but gRPC's "certificate verify failed" in its log
// (a new user's trial).
class CoordinatorCertificateCheck final : public grpc::experimental::ExternalCertificateVerifier {
 public:
  CoordinatorCertificateCheck(TransportSecurity security, std::shared_ptr<CoordinatorRefusal> refusal)
      : security_(std::move(security)), refusal_(std::move(refusal)) {}

  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request, std::function<void(grpc::Status)>,
              grpc::Status* sync_status) override {
    StatusOr<std::string> ca_pem = pki::ReadAuthority(security_.files);
    if (!ca_pem.ok()) {  // this agent's own files: no fault of the coordinator's
      *sync_status = grpc::Status(grpc::StatusCode::UNAVAILABLE, ca_pem.status().message());
      return true;
    }
    const grpc::string_ref pem = request->peer_cert();
    pki::PeerCheck check = pki::CheckPeer(std::string(pem.data(), pem.size()), security_.job, *ca_pem,
                                          std::chrono::system_clock::now(), pki::PeerRole::kCoordinator);
    if (check.accepted()) {
      *sync_status = grpc::Status::OK;
    } else {
      *sync_status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, check.detail);
      refusal_->Set(std::move(check));
    }
    return true;  // judged synchronously
  }
  void Cancel(grpc::experimental::TlsCustomVerificationCheckRequest*) override {}

 private:
  const TransportSecurity security_;
  std::shared_ptr<CoordinatorRefusal> refusal_;
};

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const TransportSecurity& security,
                                                             std::shared_ptr<CoordinatorRefusal> refusal) {
  if (!security.tls) return grpc::InsecureChannelCredentials();
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(WatchFiles(security));
  options.watch_root_certs();
  if (!security.files.cert_path.empty()) options.watch_identity_key_cert_pairs();
  // The chain, its dates and the job's name are all CoordinatorCertificateCheck's.
  options.set_verify_server_certs(false);
  options.set_certificate_verifier(
      grpc::experimental::ExternalCertificateVerifier::Create<CoordinatorCertificateCheck>(security, std::move(refusal)));
  return grpc::experimental::TlsCredentials(options);
}

class GrpcWorkerStream final : public WorkerStream {
 public:
  GrpcWorkerStream(grpc::ServerContext& context,
                   grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream)
      : context_(context), stream_(stream) {}
  Status Send(const v1::CoordinatorMessage& message) override {
    return stream_->Write(message) ? Status::Ok() : UnavailableError("the worker's stream is closed");
  }
  StatusOr<v1::WorkerMessage> Receive() override {
    v1::WorkerMessage message;
    if (!stream_->Read(&message)) return UnavailableError("the worker closed its stream");
    return message;
  }
  void Cut() override { context_.TryCancel(); }

 private:
  grpc::ServerContext& context_;
  grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream_;
};

class GrpcTrainService final : public v1::Coordinator::Service {
 public:
  GrpcTrainService(WorkerSessions& sessions, TransportSecurity security, RefusalObserver& refusals)
      : sessions_(sessions), security_(std::move(security)), refusals_(refusals) {}

  grpc::Status Train(grpc::ServerContext* context,
                     grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream) override {
    if (security_.tls) {
      if (grpc::Status refused = CheckPeer(*context); !refused.ok()) return refused;
    }
    v1::WorkerMessage first;
    if (!stream->Read(&first)) return {grpc::StatusCode::CANCELLED, "the stream ended before its hello"};
    if (!first.has_hello()) return {grpc::StatusCode::FAILED_PRECONDITION, "a stream must open with a hello"};
    if (Status admitted = sessions_.Admit(first.hello()); !admitted.ok()) return ToGrpc(admitted);
    GrpcWorkerStream worker(*context, stream);
    return ToGrpc(sessions_.Serve(first.hello(), worker));
  }

 private:
  // The peer's certificate judged against the job's authority as its file
  // holds it now (a rotated authority is taken up with the next stream).
  grpc::Status CheckPeer(const grpc::ServerContext& context) {
    std::string peer_pem;
    if (auto auth = context.auth_context()) {
      const std::vector<grpc::string_ref> pems = auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
      if (!pems.empty()) peer_pem.assign(pems.front().data(), pems.front().size());
    }
    StatusOr<std::string> ca_pem = pki::ReadAuthority(security_.files);
    // This agent's own files failing is no fault of the peer's: it may try again.
    if (!ca_pem.ok()) return {grpc::StatusCode::UNAVAILABLE, "job \"" + security_.job + "\"'s coordinator " +
                                                               ca_pem.status().message()};
    const pki::PeerCheck check = pki::CheckPeer(peer_pem, security_.job, *ca_pem, std::chrono::system_clock::now());
    if (check.accepted()) return grpc::Status::OK;
    refusals_.Refused({context.peer(), pki::ReasonOf(check.verdict), check.detail});
    return {grpc::StatusCode::UNAUTHENTICATED, "job \"" + security_.job + "\" refused the connection: " + check.detail};
  }

  WorkerSessions& sessions_;
  const TransportSecurity security_;
  RefusalObserver& refusals_;
};

class GrpcTrainingServer final : public TrainingServer {
 public:
  GrpcTrainingServer(std::unique_ptr<GrpcTrainService> service, std::unique_ptr<grpc::Server> server,
                     std::string address)
      : service_(std::move(service)), server_(std::move(server)), address_(std::move(address)) {}
  ~GrpcTrainingServer() override { Shutdown(); }
  const std::string& address() const override { return address_; }
  void Shutdown() override {
    std::call_once(shutdown_, [this] {
      // Streams still open are cancelled at once: nobody waits on a dead link.
      server_->Shutdown(std::chrono::system_clock::now());
      server_->Wait();
    });
  }

 private:
  std::unique_ptr<GrpcTrainService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::once_flag shutdown_;
};

class GrpcCoordinatorStream final : public CoordinatorStream {
 public:
  GrpcCoordinatorStream(std::shared_ptr<grpc::Channel> channel, std::unique_ptr<v1::Coordinator::Stub> stub)
      : channel_(std::move(channel)), stub_(std::move(stub)) {
    stream_ = stub_->Train(&context_);
  }
  ~GrpcCoordinatorStream() override {
    Close();
    std::lock_guard lock(mu_);
    if (!finished_) stream_->Finish();
  }
  Status Send(const v1::WorkerMessage& message) override {
    // Not beside Finish, which Receive calls once a read has failed: gRPC's
    // sync streams allow a read beside a write, not a Finish (found in
    // review). A write on a call that has ended returns at once, and Close
    // (TryCancel) ends one held by a link, so the lock is not held long.
    std::lock_guard lock(mu_);
    if (!finished_ && stream_->Write(message)) return Status::Ok();
    return UnavailableError("the stream to the coordinator is closed");
  }
  StatusOr<v1::CoordinatorMessage> Receive() override {
    v1::CoordinatorMessage message;
    if (stream_->Read(&message)) return message;
    std::lock_guard lock(mu_);
    if (!finished_) {
      final_status_ = FromGrpc(stream_->Finish());
      finished_ = true;
      if (final_status_.ok()) final_status_ = UnavailableError("the coordinator ended the stream");
    }
    return final_status_;
  }
  void Close() override { context_.TryCancel(); }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>> stream_;
  std::mutex mu_;
  bool finished_ = false;  // guarded by mu_
  Status final_status_;    // guarded by mu_
};

}  // namespace

StatusOr<std::unique_ptr<TrainingServer>> StartTrainingServer(const std::string& address,
                                                              const TransportSecurity& security,
                                                              WorkerSessions& sessions, RefusalObserver& refusals,
                                                              std::optional<Duration> keepalive) {
  auto service = std::make_unique<GrpcTrainService>(sessions, security, refusals);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, ServerCredentials(security), &port);
  builder.RegisterService(service.get());
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<int64_t>(sessions.LargestMessageRead(), WorkerSessions::kLargestTransportMessage)));
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  // Accept the workers' keepalive pings (below), even on idle streams.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // gRPC sets SO_REUSEPORT by default, with which a second agent told the
  // same --listen port bound it too, and the kernel split the workers'
  // connections between the two (found writing the test of a port in use).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  if (keepalive) {
    const auto ms = static_cast<int>(std::clamp<int64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(*keepalive).count(), 1, std::numeric_limits<int>::max()));
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, ms);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, ms);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  // Said with why, as the system says it: gRPC says only that it failed, and
  // a port in use read the same as an address not this machine's (found in
  // review).
  if (!server || port == 0) {
    const std::string why = http::WhyNoListening(address);
    return UnavailableError("cannot listen for workers on " + address + (why.empty() ? "" : ": " + why));
  }
  std::string bound = address.substr(0, address.rfind(':')) + ":" + std::to_string(port);
  return std::unique_ptr<TrainingServer>(std::make_unique<GrpcTrainingServer>(std::move(service), std::move(server), bound));
}

namespace {

// Why the peer at `address` cannot be this agent's coordinator, from what
// answers there, or nullopt when nothing says so (a coordinator not up yet).
// It is greeted as an agent of the other kind would greet it: a TLS agent
// asks whether a plaintext server listens, a plaintext one whether a TLS one.
std::optional<std::string> WrongPeer(const std::string& address, const TransportSecurity& security) {
  constexpr Duration kWait = std::chrono::milliseconds(500);
  PeerProtocol peer = ProbePeerProtocol(address, /*greet_as_tls=*/!security.tls, kWait);
  // An HTTP/1 server answers HTTP/2's preface (a request line), not a ClientHello.
  if (peer == PeerProtocol::kUnknown && !security.tls) peer = ProbePeerProtocol(address, false, kWait);
  const std::string both = "start both with the job's credentials (--tls-dir), or both with --insecure";
  if (peer == PeerProtocol::kTls && !security.tls) {
    return "the coordinator at " + address + " speaks TLS, and this agent was started with --insecure: " + both;
  }
  if (peer == PeerProtocol::kPlaintextHttp2 && security.tls) {
    return "the coordinator at " + address + " speaks plaintext (it was started with --insecure), and this agent "
           "TLS: " + both;
  }
  if (peer == PeerProtocol::kHttp1) {
    return address + " answers HTTP/1 (an agent's /metrics and /progress?), not a coordinator's gRPC: give the "
           "address the coordinator listens on for its team (its --listen)";
  }
  return std::nullopt;
}

StatusOr<std::unique_ptr<CoordinatorStream>> ConnectToCoordinator(
    const std::string& address, const TransportSecurity& security,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials, CoordinatorRefusal& refusal,
    Duration connect_timeout, Duration keepalive) {
  // A refusal an earlier attempt's channel recorded as it went is not this
  // attempt's: left, it turned a later failure to reach a restarting
  // coordinator into a refusal for good (found in review).
  (void)refusal.Take();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // Reconnect quickly after a coordinator restart; our own deadlines judge links.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A network that silently drops everything, or a node that died without
  // closing its connections, would otherwise leave a stream open until TCP
  // gives up, about 15 minutes later: ping after `keepalive` of silence.
  const auto keepalive_ms = static_cast<int>(std::clamp<int64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(keepalive).count(), 1, std::numeric_limits<int>::max()));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, keepalive_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, keepalive_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  if (security.tls) args.SetSslTargetNameOverride(pki::TlsServerName(security.job));
  auto channel = grpc::CreateCustomChannel(address, credentials, args);
  auto deadline = std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::milliseconds>(connect_timeout);
  // Connected, refused, or the deadline: a refusal ends the wait at once, and
  // so does a peer of the wrong kind, looked for at the first failure.
  bool connected = false;
  bool probed = false;
  for (grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);;) {
    if (state == GRPC_CHANNEL_READY) {
      connected = true;
      break;
    }
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE && refusal.Refused()) break;
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE && !probed) {
      probed = true;
      if (std::optional<std::string> wrong = WrongPeer(address, security)) return InvalidArgumentError(*wrong);
    }
    if (!channel->WaitForStateChange(state, deadline)) break;
    state = channel->GetState(/*try_to_connect=*/true);
  }
  if (!connected) {
    // Refused, trying again gives the same until someone hands out other
    // credentials: said at once, naming what the certificate was.
    if (std::optional<pki::PeerCheck> refused = refusal.Take()) {
      // Out of its dates, the coordinator's certificate is to be renewed:
      // "both must hold the job's credentials" sent a user whose both did
      // to look elsewhere (a user's trial).
      const bool dated = refused->verdict == pki::PeerVerdict::kExpired ||
                         refused->verdict == pki::PeerVerdict::kNotYetValid;
      // An authority out of its dates is the whole job's to renew: "give the
      // coordinator a certificate valid now" sent a user to renew the one
      // certificate that was fine (a user's trial).
      const std::string mend =
          dated && refused->authority_at_fault
              ? "give job \"" + security.job + "\" new credentials, an authority valid now and every agent a "
                "certificate of it (edgetrain credentials), or check this machine's clock"
          : dated ? "give the coordinator a certificate of job \"" + security.job +
                      "\" valid now (edgetrain credentials; under the operator, its Secret is renewed before it "
                      "ends), or check this machine's clock"
                : "this agent's --tls-dir (" + std::filesystem::path(security.files.ca_path).parent_path().string() +
                      ") and the coordinator's must both hold job \"" + security.job + "\"'s credentials";
      return InvalidArgumentError("refused the coordinator at " + address + ": it holds " + refused->detail + "; " +
                                  mend);
    }
    // Still connecting at the deadline: a peer that took the connection and
    // answered nothing gRPC took for an answer (an HTTP/1 server, waiting
    // for the rest of a request line) is looked at now.
    if (!probed) {
      if (std::optional<std::string> wrong = WrongPeer(address, security)) return InvalidArgumentError(*wrong);
    }
    return UnavailableError("cannot reach the coordinator at " + address);
  }
  auto stub = v1::Coordinator::NewStub(channel);
  return std::unique_ptr<CoordinatorStream>(std::make_unique<GrpcCoordinatorStream>(std::move(channel), std::move(stub)));
}

class GrpcCoordinatorConnector final : public CoordinatorConnector {
 public:
  GrpcCoordinatorConnector(std::string address, TransportSecurity security, Duration keepalive)
      : address_(std::move(address)),
        security_(std::move(security)),
        keepalive_(keepalive),
        refusal_(std::make_shared<CoordinatorRefusal>()),
        credentials_(ChannelCredentials(security_, refusal_)) {}
  StatusOr<std::unique_ptr<CoordinatorStream>> Connect(Duration timeout) override {
    return ConnectToCoordinator(address_, security_, credentials_, *refusal_, timeout, keepalive_);
  }
  const std::string& address() const override { return address_; }

 private:
  std::string address_;
  TransportSecurity security_;
  Duration keepalive_;
  std::shared_ptr<CoordinatorRefusal> refusal_;  // shared with the credentials' verifier
  // Made once: its file watcher follows a rotation for every reconnection.
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
};

}  // namespace

std::unique_ptr<CoordinatorConnector> GrpcConnector(std::string address, TransportSecurity security,
                                                    Duration keepalive) {
  return std::make_unique<GrpcCoordinatorConnector>(std::move(address), std::move(security), keepalive);
}

}  // namespace edgetrain::agent

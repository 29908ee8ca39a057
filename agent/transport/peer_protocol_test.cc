#include "agent/transport/peer_protocol.h"

#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>

#include "agent/transport/transport.h"
#include "http/http_server.h"
#include "http/socket_address.h"
#include "pki/tls_folder.h"

namespace edgetrain::agent {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A coordinator's server that takes every stream and lets it end.
class Sessions final : public WorkerSessions, public RefusalObserver {
 public:
  Status Admit(const v1::Hello&) override { return Status::Ok(); }
  Status Serve(const v1::Hello&, WorkerStream& stream) override {
    while (stream.Receive().ok()) {
    }
    return Status::Ok();
  }
  void Refused(const RefusedPeer&) override {}
};

// The job's credentials in a fresh folder, as `edgetrain credentials` makes them.
TransportSecurity JobCredentials(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/peer-protocol-" + name;
  std::filesystem::remove_all(dir);
  const auto now = std::chrono::system_clock::now();
  EXPECT_TRUE(pki::WriteNewJobCredentials(dir, "probed", now - std::chrono::hours(1), now + std::chrono::hours(1)).ok());
  return TransportSecurity::MutualTls("probed", dir, seconds(60));
}

struct Server {
  Sessions sessions;
  std::unique_ptr<TrainingServer> server;
  explicit Server(const TransportSecurity& security) {
    auto started = StartTrainingServer("127.0.0.1:0", security, sessions, sessions);
    EXPECT_TRUE(started.ok()) << started.status().ToString();
    if (started.ok()) server = std::move(*started);
  }
  ~Server() {
    if (server) server->Shutdown();
  }
  const std::string& address() const { return server->address(); }
};

// A server that cannot listen says why, in the system's words: gRPC's
// failure said only "cannot listen" (found in review). A port another
// listens on is one: gRPC's SO_REUSEPORT had let a second bind it too.
TEST(PeerProtocolTest, AServerThatCannotListenSaysWhy) {
  Server first(TransportSecurity::Insecure());
  Sessions sessions;
  auto second = StartTrainingServer(first.address(), TransportSecurity::Insecure(), sessions, sessions);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().message(), "cannot listen for workers on " + first.address() + ": Address already in use");
}

TEST(PeerProtocolTest, EachServerIsToldByWhatItAnswers) {
  Server plaintext(TransportSecurity::Insecure());
  EXPECT_EQ(ProbePeerProtocol(plaintext.address(), /*greet_as_tls=*/false, seconds(5)), PeerProtocol::kPlaintextHttp2);

  Server tls(JobCredentials("tls-server"));
  EXPECT_EQ(ProbePeerProtocol(tls.address(), /*greet_as_tls=*/true, seconds(5)), PeerProtocol::kTls);

  auto http = http::HttpServer::Start("127.0.0.1:0");
  ASSERT_TRUE(http.ok()) << http.status().ToString();
  EXPECT_EQ(ProbePeerProtocol((*http)->address(), /*greet_as_tls=*/false, seconds(5)), PeerProtocol::kHttp1);

  // Nothing listening: no answer names nothing.
  const std::string closed = "127.0.0.1:" + std::to_string(http::FreeLoopbackPort());
  EXPECT_EQ(ProbePeerProtocol(closed, true, milliseconds(500)), PeerProtocol::kUnknown);
  EXPECT_EQ(ProbePeerProtocol("no-such-host.invalid:1", false, milliseconds(500)), PeerProtocol::kUnknown);
}

// An agent of the other kind than its coordinator, or given its HTTP port,
// is told so at once: InvalidArgument, which a worker ends on with exit 2,
// where it had retried for its whole grace, "cannot reach the coordinator"
// (a user's trial). A coordinator that is not there is still worth waiting for.
TEST(PeerProtocolTest, AConnectionToTheWrongKindOfPeerSaysWhichAtOnce) {
  Server tls(JobCredentials("tls-coordinator"));
  auto insecure = GrpcConnector(tls.address(), TransportSecurity::Insecure())->Connect(seconds(2));
  ASSERT_FALSE(insecure.ok());
  EXPECT_EQ(insecure.status().code(), StatusCode::kInvalidArgument) << insecure.status().ToString();
  EXPECT_EQ(insecure.status().message(), "the coordinator at " + tls.address() +
                                             " speaks TLS, and this agent was started with --insecure: start both "
                                             "with the job's credentials (--tls-dir), or both with --insecure");

  Server plaintext(TransportSecurity::Insecure());
  auto secure = GrpcConnector(plaintext.address(), JobCredentials("tls-worker"))->Connect(seconds(2));
  ASSERT_FALSE(secure.ok());
  EXPECT_EQ(secure.status().code(), StatusCode::kInvalidArgument) << secure.status().ToString();
  EXPECT_NE(secure.status().message().find(" speaks plaintext (it was started with --insecure), and this agent TLS"),
            std::string::npos)
      << secure.status().message();

  auto http = http::HttpServer::Start("127.0.0.1:0");
  ASSERT_TRUE(http.ok());
  for (const TransportSecurity& security : {TransportSecurity::Insecure(), JobCredentials("http-port")}) {
    auto dialled = GrpcConnector((*http)->address(), security)->Connect(milliseconds(700));
    ASSERT_FALSE(dialled.ok());
    EXPECT_EQ(dialled.status().code(), StatusCode::kInvalidArgument) << dialled.status().ToString();
    EXPECT_NE(dialled.status().message().find("answers HTTP/1"), std::string::npos) << dialled.status().message();
  }

  const std::string closed = "127.0.0.1:" + std::to_string(http::FreeLoopbackPort());
  auto nobody = GrpcConnector(closed, TransportSecurity::Insecure())->Connect(milliseconds(300));
  EXPECT_EQ(nobody.status().code(), StatusCode::kUnavailable) << nobody.status().ToString();
}

}  // namespace
}  // namespace edgetrain::agent

#include "http/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "http/http_client.h"

namespace edgetrain::http {
namespace {

TEST(HttpServerTest, ServesHandlersOnAnOsChosenPort) {
  auto server = HttpServer::Start("127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string& address = (*server)->address();
  EXPECT_EQ(address.rfind("127.0.0.1:", 0), 0u);
  EXPECT_NE(address, "127.0.0.1:0");
  int calls = 0;
  (*server)->Handle("/progress", [&] {
    ++calls;
    return HttpResponse{200, "application/json", "{\"iteration\": " + std::to_string(calls) + "}"};
  });

  auto first = HttpGet(address, "/progress");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->body, "{\"iteration\": 1}");
  auto second = HttpGet(address, "/progress");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->body, "{\"iteration\": 2}");

  auto missing = HttpGet(address, "/progress/extra");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
}

TEST(HttpServerTest, TwoServersGetDifferentPortsAndAStoppedOneIsUnavailable) {
  std::string gone;
  {
    auto a = HttpServer::Start("127.0.0.1:0");
    auto b = HttpServer::Start("127.0.0.1:0");
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_NE((*a)->address(), (*b)->address());
    gone = (*a)->address();
  }
  auto reply = HttpGet(gone, "/healthz");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(HttpServer::Start("no-port").ok());
}

// A peer that takes the connection and never answers (a frozen agent, its
// kernel still accepting) is given up on after the timeout asked for, which
// the operator's --progress-timeout sets: not the default 3 s.
TEST(HttpClientTest, APeerThatNeverAnswersIsGivenUpOnAfterTheTimeoutAsked) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
  ASSERT_EQ(::listen(fd, 4), 0);  // the kernel completes connections; nobody accepts
  socklen_t size = sizeof at;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&at), &size), 0);
  const std::string address = "127.0.0.1:" + std::to_string(ntohs(at.sin_port));
  const auto began = std::chrono::steady_clock::now();
  auto reply = HttpGet(address, "/progress", std::chrono::milliseconds(200));
  const auto took = std::chrono::steady_clock::now() - began;
  ::close(fd);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(reply.status().message().find("no answer read within 0.2 s"), std::string::npos)
      << reply.status().message();
  EXPECT_LT(took, std::chrono::seconds(2)) << "given up after the timeout asked, not the default";
}

// Connected, half a request line sent, then silent: a scraper stuck behind a
// dead link.
int StalledClient(const std::string& address) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  EXPECT_EQ(::send(fd, "GET /metr", 9, MSG_NOSIGNAL), 9);
  return fd;
}

TEST(HttpServerTest, APortAlreadyServedIsRefusedNotShared) {
  auto first = HttpServer::Start("127.0.0.1:0");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const std::string taken = (*first)->address();
  auto second = HttpServer::Start(taken);
  ASSERT_FALSE(second.ok()) << "a second server bound " << taken;
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("in use"), std::string::npos) << second.status().ToString();
}

// Hundreds of clients that send half a request and wait hold no worker: 60
// had held all 8 of the pool's threads, 2 s each and again as they came back,
// and the operator's liveness probe went unanswered (a security review).
// Past the most that may wait at once, the longest waiting are dropped, so
// a request sent whole still gets in.
TEST(HttpServerTest, HundredsOfStalledClientsDoNotStallARequestSentWhole) {
  auto server = HttpServer::Start("127.0.0.1:0");
  ASSERT_TRUE(server.ok());
  (*server)->Handle("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  std::vector<int> stalled;
  for (int i = 0; i < 300; ++i) stalled.push_back(StalledClient((*server)->address()));
  auto reply = HttpGet((*server)->address(), "/healthz");
  for (int fd : stalled) ::close(fd);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "ok\n");
}

TEST(HttpServerTest, AServerDestroyedAtOnceStops) {
  // Destroyed before its thread may have reached its accept loop: the
  // destructor neither hangs nor leaves the port answering.
  for (int i = 0; i < 20; ++i) {
    std::string address;
    {
      auto server = HttpServer::Start("127.0.0.1:0");
      ASSERT_TRUE(server.ok()) << server.status().ToString();
      address = (*server)->address();
    }
    EXPECT_FALSE(HttpGet(address, "/healthz").ok()) << address << " still answers";
  }
}

}  // namespace
}  // namespace edgetrain::http
